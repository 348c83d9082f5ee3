"""The ``kafkasec`` command on an install without the ``wire`` extra (``pip install kafkasec``):
the state-file commands work, and the commands that need the codec say in one line which extra to
install. kio is hidden from a child interpreter, as if it had never been installed (tests/
test_packaging.py checks the same on a real wheel in a fresh virtualenv)."""

import os
import subprocess
import sys

import pytest

HIDE_KIO = """\
import sys


class HideKio:
    # A meta path finder that answers "not installed" for kio and its submodules.
    def find_spec(self, name, path=None, target=None):
        if name == "kio" or name.startswith("kio."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, HideKio())
"""

WIRE_HINT = "pip install 'kafkasec[wire]'"


@pytest.fixture
def kafkasec_without_kio(tmp_path):
    hide = tmp_path / "hide_kio"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_KIO, encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hide), os.environ.get("PYTHONPATH")]))}

    def run(*argv):
        return subprocess.run([sys.executable, "-m", "kafkasec.cli", *argv], capture_output=True, text=True,
                              env=environment, cwd=tmp_path, timeout=60)

    check = run("--version")
    assert check.returncode == 0, check.stderr
    probe = subprocess.run([sys.executable, "-c", "import kio"], capture_output=True, text=True, env=environment)
    assert probe.returncode != 0, "kio is still importable: the test would prove nothing"
    return run


def test_state_file_commands_work_without_the_wire_codec(kafkasec_without_kio, tmp_path):
    state = str(tmp_path / "security.db")
    added = kafkasec_without_kio("acls", "--add", "--allow-principal", "User:alice", "--operation", "Read",
                                 "--topic", "orders", "--state", state)
    assert added.returncode == 0, added.stderr
    listed = kafkasec_without_kio("acls", "--list", "--state", state)
    assert listed.returncode == 0, listed.stderr
    assert "principal=User:alice" in listed.stdout
    users = kafkasec_without_kio("scram", "--describe", "--state", state)
    assert users.returncode == 0, users.stderr
    principal = kafkasec_without_kio("principal", "--help")
    assert principal.returncode == 0, principal.stderr


@pytest.mark.parametrize("argv", [
    ("acls", "--list", "--bootstrap-server", "127.0.0.1:1"),
    ("scram", "--describe", "--bootstrap-server", "127.0.0.1:1"),
    ("tokens", "--describe", "--bootstrap-server", "127.0.0.1:1"),
    ("serve", "--state", "served.db"),
])
def test_commands_that_need_the_codec_name_the_extra_in_one_line(kafkasec_without_kio, argv):
    answer = kafkasec_without_kio(*argv)
    assert answer.returncode == 1
    assert answer.stdout == ""
    assert answer.stderr.count("\n") == 1, answer.stderr
    assert answer.stderr.startswith("kafkasec: error: ")
    assert WIRE_HINT in answer.stderr
    assert "Traceback" not in answer.stderr
