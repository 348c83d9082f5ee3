"""``kafkasec scram``: kafka-configs.sh's syntax and text, passwords kept out of argv, export and
import, and bad input refused with nothing written. Each test runs ``main`` on a state file and
reads the credentials back through KafkaSecurity; one runs the command in a subprocess."""

import json
import subprocess
import sys

import pytest

from kafkasec import KafkaSecurity
from kafkasec.cli.scram import desanitize, sanitize
from kafkasec.scram import ScramFormatter, ScramMechanism

from cli_runner import Cli as CliRunner

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
BOTH = "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]"


class Cli(CliRunner):
    """The runner for ``kafkasec scram``, which also reads the credentials back."""

    command = ("scram",)

    def stored(self) -> dict:
        """{(user, mechanism): iterations} in the state file, read by a fresh KafkaSecurity."""
        with KafkaSecurity(state_path=self.state) as security:
            return {
                (d.user, i.mechanism): i.iterations
                for d in security.describe_user_scram_credentials().all().values()
                for i in d.infos
            }

    def credential(self, user, mechanism):
        with KafkaSecurity(state_path=self.state) as security:
            return security.scram_credential(user, mechanism)


@pytest.fixture
def cli(tmp_path, capsys, monkeypatch):
    return Cli(str(tmp_path / "state.db"), capsys, monkeypatch)


def logs_in(credential, mechanism, password):
    """Whether ``password`` gives ``credential`` (the keys a SCRAM server checks)."""
    formatter = ScramFormatter(mechanism)
    salted = formatter.salted_password(password, credential.salt, credential.iterations)
    return formatter.credential(credential.salt, salted, credential.iterations) == credential


def test_alter_and_describe_as_kafka_configs(cli):
    status, out, err = cli("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", BOTH)
    assert (status, out, err) == (0, "Completed updating config for user alice.\n", "")
    assert cli.stored() == {("alice", SHA256): 8192, ("alice", SHA512): 4096}
    assert logs_in(cli.credential("alice", SHA256), SHA256, "alice-secret")
    assert logs_in(cli.credential("alice", SHA512), SHA512, "alice-secret")
    cli("--alter", "--entity-name", "bob", "--add-config", "SCRAM-SHA-512=[iterations=-1,password=b]")

    expected_alice = "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    expected_bob = "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n"
    assert cli("--describe", "--entity-type", "users") == (0, expected_alice + expected_bob, "")
    assert cli("--describe", "--entity-name", "bob") == (0, expected_bob, "")
    assert cli("--describe", "--entity-name", "nobody") == (0, "", "")  # as kafka-configs.sh: nothing
    status, out, _ = cli("--describe", "--entity-name", "bob", "--entity-name", "bob")
    assert out == (
        "Error retrieving SCRAM credential configs for user-principal 'bob': DuplicateResourceError: "
        "Cannot describe SCRAM credentials for the same user twice in a single request: bob\n"
    )

    assert cli("--alter", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-512") == (
        0, "Completed updating config for user alice.\n", ""
    )
    assert cli.stored() == {("alice", SHA256): 8192, ("bob", SHA512): 4096}


def test_kafka_configs_value_syntax(cli):
    """Spaces around '=' and ',', brackets dropped from values (a Kafka quirk), last value wins."""
    config = " SCRAM-SHA-256 = [iterations=8192,password=w] , SCRAM-SHA-256=[password=pass,word],SCRAM-SHA-512=[password=a]b],"
    assert cli("--alter", "--entity-name", "alice", "--add-config", config)[0] == 0
    assert cli.stored() == {("alice", SHA256): 4096, ("alice", SHA512): 4096}
    assert logs_in(cli.credential("alice", SHA256), SHA256, "pass,word")  # a comma inside brackets
    assert logs_in(cli.credential("alice", SHA512), SHA512, "ab")  # kafka-configs.sh drops the ']'
    # Kafka's split cannot read brackets inside brackets either.
    status, _, err = cli("--alter", "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[password=p[a]ss]")
    assert status == 1 and 'format "key=val"' in err


def test_iterations_after_the_password_are_read_as_kafka_reads_them_and_warned_about(cli):
    """ConfigCommand's pattern takes password= to the end: 'x,iterations=8192' is the password."""
    status, out, err = cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[password=x,iterations=8192]")
    assert (status, out) == (0, "Completed updating config for user alice.\n")
    assert err.startswith("kafkasec: warning: in SCRAM-SHA-256, iterations= after password= is part of the password")
    assert "the iterations are 4096" in err and "x,iterations" not in err  # the warning never repeats a password
    assert cli.stored() == {("alice", SHA256): 4096}
    assert logs_in(cli.credential("alice", SHA256), SHA256, "x,iterations=8192")
    assert cli("--alter", "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=x]")[2] == ""


def test_the_password_from_a_prompt(cli, monkeypatch):
    answers = iter(["prompted", "prompted"])
    prompts = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or next(answers))
    status, out, err = cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192],SCRAM-SHA-512=[]")
    assert status == 0 and "prompted" not in out + err
    assert prompts == ["Password for user 'alice': ", "Again, to confirm: "]  # asked once for both
    assert logs_in(cli.credential("alice", SHA256), SHA256, "prompted")
    assert logs_in(cli.credential("alice", SHA512), SHA512, "prompted")

    answers = iter(["one", "two"])
    status, _, err = cli("--alter", "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[]")
    assert status == 1 and err == "kafkasec: error: the passwords do not match; nothing was changed\n"
    assert ("bob", SHA256) not in cli.stored()


def test_the_password_from_standard_input(cli):
    status, out, err = cli(
        "--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-512=[iterations=16384]", "--password-stdin",
        stdin="from stdin\nignored\n",
    )
    assert (status, out) == (0, "Completed updating config for user alice.\n")
    assert logs_in(cli.credential("alice", SHA512), SHA512, "from stdin")
    status, _, err = cli("--alter", "--entity-name", "bob", "--add-config", "SCRAM-SHA-512=[]", "--password-stdin", stdin="")
    assert status == 1 and "standard input has no password" in err
    status, _, err = cli("--alter", "--entity-name", "bob", "--add-config", "SCRAM-SHA-512=[]", "--password-stdin", stdin="\n")
    assert (status, err) == (1, "kafkasec: error: UNACCEPTABLE_CREDENTIAL (93): Password must not be empty\n")
    assert cli.stored() == {("alice", SHA512): 16384}


def test_the_state_file_and_the_output_hold_no_password(cli, tmp_path):
    outputs = [cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[password=hunter2-secret]")]
    outputs.append(cli("--describe"))
    outputs.append(cli("--export"))
    outputs.append(cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=99999,password=hunter2-secret]"))
    outputs.append(cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=x,password=hunter2-secret]"))
    outputs.append(cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[password=hunter2-secret,iterations=5000]"))
    assert all("hunter2" not in out + err for _, out, err in outputs)
    assert all(b"hunter2" not in path.read_bytes() for path in tmp_path.iterdir())


@pytest.mark.parametrize(
    "arguments, status, message",
    [
        (["--add-config", "SCRAM-SHA-256=[iterations=1000,password=p]"], 1,
         "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"),
        (["--add-config", "SCRAM-SHA-256=[password=p],SCRAM-SHA-512=[iterations=16385,password=p]"], 1,
         "UNACCEPTABLE_CREDENTIAL (93): Too many iterations"),
        (["--add-config", "SCRAM-SHA-256=[password=p]", "--delete-config", "SCRAM-SHA-512"], 1,
         "RESOURCE_NOT_FOUND (91): Attempt to delete a user credential that does not exist"),
        (["--add-config", "SCRAM-SHA-256=[password=p]", "--delete-config", "SCRAM-SHA-256"], 1,
         "SCRAM-SHA-256 is both added and deleted"),
        (["--add-config", "SCRAM-SHA-256=[secret=p]"], 1, "Invalid credential property SCRAM-SHA-256: expected"),
        (["--add-config", "SCRAM-SHA-256=[iterations=,password=p]"], 1,
         "Invalid credential property SCRAM-SHA-256: iterations must be a number"),
        (["--add-config", "SCRAM-SHA-256"], 1, 'all configs to be added must be in the format "key=val"'),
        (["--add-config", "consumer_byte_rate=1024"], 1, "Unexpected config names: consumer_byte_rate"),
        (["--add-config", "scram-sha-256=[password=p]"], 1, "Unexpected config names: scram-sha-256"),
        (["--add-config", "SCRAM SHA=[password=p]"], 1, "Invalid character found for config key: SCRAM SHA"),
        (["--delete-config", "SCRAM-SHA-1"], 1, "can be deleted with kafkasec scram. Unexpected config names: SCRAM-SHA-1"),
    ],
)
def test_bad_alterations_change_nothing(cli, arguments, status, message):
    cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=old]")
    before = cli.credential("alice", SHA256)
    result, out, err = cli("--alter", "--entity-name", "alice", *arguments)
    assert (result, out) == (status, "")
    assert err.startswith("kafkasec: error: ") and message in err and err.count("\n") == 1
    assert cli.stored() == {("alice", SHA256): 8192}
    assert cli.credential("alice", SHA256) == before


def test_an_empty_user_name_is_refused(cli):
    status, _, err = cli("--alter", "--entity-name", "", "--add-config", "SCRAM-SHA-256=[password=p]")
    assert (status, err) == (1, "kafkasec: error: UNACCEPTABLE_CREDENTIAL (93): Username must not be empty\n")


@pytest.mark.parametrize(
    "arguments, message",
    [
        ([], "Command must include exactly one action: --describe, --alter, --export, --import."),
        (["--alter", "--describe"], "Command must include exactly one action"),
        (["--describe", "--add-config", "SCRAM-SHA-256=[password=p]"], 'Option "--describe" can\'t be used with option "--add-config"'),
        (["--export", "--password-stdin"], 'Option "--export" can\'t be used with option "--password-stdin"'),
        (["--import", "f", "--entity-name", "a"], 'Option "--import" can\'t be used with option "--entity-name"'),
        (["--alter", "--add-config", "SCRAM-SHA-256=[password=p]"], "An entity-name or default entity must be specified"),
        (["--alter", "--entity-name", "a", "--entity-name", "b", "--delete-config", "SCRAM-SHA-256"], "exactly one --entity-name"),
        (["--alter", "--entity-name", "a"], "At least one of --add-config or --delete-config must be specified with --alter"),
        (["--describe", "--entity-type", "topics"], "Invalid entity type topics"),
        (["--alter", "--entity-name", "a", "--add-config", "SCRAM-SHA-256=[password=p]", "--password-stdin"],
         "--password-stdin needs a credential without password="),
    ],
)
def test_usage_errors_open_no_state(cli, tmp_path, arguments, message):
    status, out, err = cli(*arguments)
    assert status == 1 and out == "" and message in err
    assert not any(tmp_path.iterdir())


def test_sanitize_as_kafka():
    # Kafka's Sanitizer: URLEncoder (UTF-8), then '*' and '+' (a space) percent-encoded.
    cases = {"alice": "alice", "bob smith": "bob%20smith", "a*b": "a%2Ab", "x+y": "x%2By", "ü~@": "%C3%BC%7E%40", "a.b_c-d": "a.b_c-d"}
    for user, sanitized in cases.items():
        assert sanitize(user) == sanitized
        assert desanitize(sanitized) == user
    assert desanitize("bob+smith") == "bob smith" and desanitize("a*b") == "a*b"  # URLDecoder's leniency
    for bad in ("", "a%2", "a%zz", "a b", "%C3"):
        with pytest.raises(ValueError):
            desanitize(bad)


def test_export_then_import_reproduces_the_credentials(cli, tmp_path, capsys, monkeypatch):
    users = ["alice", "bob smith", "ünïcode*", "a=b,c"]
    for user in users:
        cli("--alter", "--entity-name", user, "--add-config", "SCRAM-SHA-512=[iterations=8192,password=pw]")
    cli("--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[password=pw]")
    status, exported, _ = cli("--export")
    assert status == 0 and len(exported.splitlines()) == 5
    assert exported.splitlines()[0].startswith("a%3Db%2Cc SCRAM-SHA-512=salt=")
    status, only_alice, _ = cli("--export", "--entity-name", "alice", "--entity-name", "alice", "--entity-name", "nobody")
    assert [line.split()[1].split("=")[0] for line in only_alice.splitlines()] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]

    path = tmp_path / "credentials.txt"
    path.write_text("# exported\n\n" + exported, encoding="utf-8")
    fresh = Cli(str(tmp_path / "fresh.db"), capsys, monkeypatch)
    assert fresh("--import", str(path)) == (0, "Imported 5 SCRAM credentials of 4 users.\n", "")
    for user in users:
        assert fresh.credential(user, SHA512) == cli.credential(user, SHA512)
        assert logs_in(fresh.credential(user, SHA512), SHA512, "pw")
    assert fresh.stored() == cli.stored()
    status, again, _ = fresh("--export")
    assert again == exported
    assert Cli(str(tmp_path / "piped.db"), capsys, monkeypatch)("--import", "-", stdin=exported)[0] == 0


@pytest.mark.parametrize(
    "line, message",
    [
        ("alice", "expected '<user> <MECHANISM>=salt=...,stored_key=...,server_key=...,iterations=...'"),
        ("bob smith SCRAM-SHA-256=x", "expected '<user>"),
        ("al%zz SCRAM-SHA-256=salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=4096", "not a URL-encoded user name"),
        ("alice SCRAM-SHA-1=salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=4096", "not 'SCRAM-SHA-1'"),
        ("alice SCRAM-SHA-256=salt=YQ==,stored_key=YQ==,iterations=4096", "missing server_key"),
        ("alice SCRAM-SHA-256=salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=100", "iterations must be from 4096 to 16384"),
        ("alice SCRAM-SHA-256=salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=4096", "a second SCRAM-SHA-256 credential for 'alice'"),
    ],
)
def test_a_bad_import_line_imports_nothing(cli, tmp_path, line, message):
    good = "alice SCRAM-SHA-256=salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=4096"
    path = tmp_path / "in.txt"
    path.write_text(f"{good}\n{line}\n", encoding="utf-8")
    status, out, err = cli("--import", str(path))
    assert (status, out) == (1, "")
    assert err.startswith(f"kafkasec: error: {path}: line 2: ") and message in err and "nothing was imported" in err
    assert cli.stored() == {}


def test_import_of_a_missing_file_is_one_line(cli, tmp_path):
    status, _, err = cli("--import", str(tmp_path / "missing.txt"))
    assert status == 1 and err.startswith("kafkasec: error: ") and err.count("\n") == 1


def test_the_installed_command(tmp_path):
    state = str(tmp_path / "state.db")
    run = [sys.executable, "-m", "kafkasec.cli", "--state", state, "scram"]
    alter = subprocess.run(
        [*run, "--alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[]", "--password-stdin"],
        input="piped-secret\n", capture_output=True, text=True, check=False,
    )
    assert (alter.returncode, alter.stdout) == (0, "Completed updating config for user alice.\n")
    describe = subprocess.run([*run, "--describe"], capture_output=True, text=True, check=False)
    assert describe.stdout == "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096\n"


def test_describe_as_json_and_csv(cli):
    assert cli("--alter", "--add-config", BOTH, "--entity-type", "users", "--entity-name", "alice")[0] == 0
    status, out, _ = cli("--describe", "-o", "json")
    assert status == 0 and json.loads(out) == [
        {"user": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 8192, "error": None},
        {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 4096, "error": None},
    ]
    status, out, _ = cli("--describe", "--entity-type", "users", "--entity-name", "nobody", "-o", "csv")
    assert out.splitlines() == ["user,mechanism,iterations,error"]  # no credential: no record, as kafka-configs.sh prints none


def test_user_shorthands_as_kafka_configs(cli):
    """kafka-configs.sh's --user NAME is --entity-type users --entity-name NAME; --all describes
    as --describe does (a credential has no static configs)."""
    status, out, err = cli("--alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[password=alice-secret]")
    assert (status, out, err) == (0, "Completed updating config for user alice.\n", "")
    assert cli.stored() == {("alice", SHA256): 4096}
    expected = "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096\n"
    assert cli("--describe", "--user", "alice") == (0, expected, "")
    assert cli("--describe", "--all", "--entity-type", "users") == (0, expected, "")
    assert cli("--describe", "--all", "--user", "alice") == (0, expected, "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--describe", "--user", "alice", "--entity-name", "bob"], "should not be used in conjunction with specific entity flags"),
        (["--describe", "--user", "alice", "--entity-type", "users"], "should not be used in conjunction with specific entity flags"),
        (["--alter", "--user-defaults", "--add-config", "SCRAM-SHA-256=[password=p]"], "not allowed with User SCRAM Credentials"),
        (["--describe", "--entity-default"], "not allowed with User SCRAM Credentials"),
        (["--alter", "--all", "--user", "alice", "--delete-config", "SCRAM-SHA-256"], 'Option "--alter" can\'t be used with option "--all"'),
    ],
)
def test_user_shorthands_refused_as_kafka_configs(cli, argv, message):
    status, out, err = cli(*argv)
    assert (status, out) == (1, "")
    assert message in err
    assert cli.stored() == {}


def test_suggestion_names_an_option_of_the_command(cli):
    """A misspelt option is matched against the options of the command given, not of any command
    (``--user`` once drew ``--cluster``, an acls option)."""
    assert cli("--describe", "--entity-nme", "alice")[2] == "kafkasec: error: unknown option --entity-nme; did you mean --entity-name?\n"
    assert cli("--describe", "--topik", "t") == (1, "", "kafkasec: error: unknown option --topik\n")


def test_a_prompt_without_a_terminal_is_one_line(tmp_path):
    """With no terminal (a new session has none), the password prompt is refused in one line,
    without Python's GetPassWarning, and nothing is stored."""
    state = tmp_path / "state.db"
    run = subprocess.run(
        [sys.executable, "-m", "kafkasec", "--state", str(state), "scram", "--alter", "--user", "alice",
         "--add-config", "SCRAM-SHA-256=[]"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, start_new_session=True, timeout=60, check=False,
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "kafkasec: error: no terminal to ask for the password on; nothing was changed (see --password-stdin)\n"
