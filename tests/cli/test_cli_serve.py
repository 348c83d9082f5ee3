"""``kafkasec serve`` as a process: it listens, serves, forwards with --controller-port, stops on
SIGTERM, and refuses bad command lines clearly."""

import asyncio
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time

import pytest

from kafkasec.protocol import wire

from cli_runner import Cli
from server_support import PASSWORDS, add_users, open_security, run


@pytest.fixture
def files(tmp_path):
    state = tmp_path / "state.db"
    with open_security(state) as security:
        add_users(security)
    (tmp_path / "server.properties").write_text("super.users=User:admin;User:broker\n", encoding="utf-8")
    (tmp_path / "catalogue.json").write_text(json.dumps({"topics": [{"name": "orders"}, {"name": "audit"}]}), encoding="utf-8")
    (tmp_path / "broker.pw").write_text(PASSWORDS["broker"] + "\n", encoding="utf-8")
    return tmp_path


def start(files, *extra):
    command = [sys.executable, "-m", "kafkasec.cli", "--state", str(files / "state.db"), "--config",
               str(files / "server.properties"), "serve", "--port", "0", "--catalogue", str(files / "catalogue.json"), *extra]
    # Run in the test's own directory, where nothing but the test's files may appear.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=files)
    listeners = {}
    for _ in range(2 if "--controller-port" in extra else 1):
        line = process.stdout.readline()
        assert line.startswith("kafkasec serve: "), line + process.stderr.read()
        name, address = line.split()[2], line.split()[-1]
        listeners[name] = address
    return process, listeners


def test_a_controller_and_a_broker_as_two_processes(files):
    """The broker forwards an ACL change to the controller process; both follow the log."""
    controller, controller_listeners = start(files, "--process-roles", "controller", "--node-id", "0")
    try:
        assert list(controller_listeners) == ["CONTROLLER"]
        broker, listeners = start(files, "--node-id", "1", "--controller-bootstrap-server", controller_listeners["CONTROLLER"],
                                  "--broker-user", "broker", "--broker-password-file", str(files / "broker.pw"))
        try:
            assert run(topics_and_acl_change(Address(listeners["SASL_PLAINTEXT"]))) == (["audit", "orders"], 0)
        finally:
            stop(broker)
    finally:
        stop(controller)
    with open_security(files / "state.db") as security:
        assert [str(binding.entry.principal) for binding in security.acls()] == ["User:alice"]


def stop(process) -> str:
    """SIGTERM, a clean exit, and the process's log (stderr)."""
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0
    log = process.stderr.read()
    assert "kafkasec serve: stopped" in log
    return log


def serve_log_with(files, settings: str) -> str:
    """The log of a ``serve`` whose properties have ``settings`` added, once it has served
    topics_and_acl_change and stopped."""
    properties = files / "server.properties"
    properties.write_text(properties.read_text(encoding="utf-8") + settings, encoding="utf-8")
    process, listeners = start(files)
    try:
        assert run(topics_and_acl_change(Address(listeners["SASL_PLAINTEXT"]))) == (["audit", "orders"], 0)
    finally:
        log = stop(process)
    return log


class Address:
    def __init__(self, bootstrap):
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)


async def topics_and_acl_change(address):
    from server_support import logged_in

    async with await logged_in(address, "admin") as connection:
        metadata = await connection.request(wire.build(wire.request_schema(3, 12), topics=None))
        creation_type = wire.item_type(wire.request_schema(30, 3), "creations")
        created = await connection.request(wire.build(wire.request_schema(30, 3), creations=(wire.build(
            creation_type, resource_type=2, resource_name="orders", resource_pattern_type=3,
            principal="User:alice", host="*", operation=3, permission_type=3,
        ),)))
        return sorted(topic.name for topic in metadata.topics), int(created.results[0].error_code)


def test_serve_listens_serves_and_stops(files):
    process, listeners = start(files)
    try:
        assert list(listeners) == ["SASL_PLAINTEXT"]
        assert run(topics_and_acl_change(Address(listeners["SASL_PLAINTEXT"]))) == (["audit", "orders"], 0)
    finally:
        stop(process)
    with open_security(files / "state.db") as security:
        assert [str(binding.entry.principal) for binding in security.acls()] == ["User:alice"]
    assert not (files / ".hypothesis").exists()  # kio's hypothesis hooks once made it


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; polls without inotify")
def test_an_idle_serve_sleeps(files):
    """No client, no change: nothing wakes the process (its state follower waits on inotify).
    Before, a 5 ms poll of the state file cost 1.2 % of a core (37 ticks in 30 s)."""
    process, _ = start(files)
    try:
        time.sleep(1)  # past start-up
        before = cpu_seconds(process.pid)
        time.sleep(6)
        assert cpu_seconds(process.pid) - before <= 0.03  # 0.5 % of a core
    finally:
        stop(process)


def cpu_seconds(pid):
    """CPU time the process ``pid`` has spent, user and system (/proc/PID/stat's utime, stime)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("mechanism", [[], ["--broker-mechanism", "SCRAM-SHA-256"]])
def test_serve_with_a_controller_forwards_admin_writes(files, mechanism):
    process, listeners = start(files, "--controller-port", "0", "--broker-user", "broker", "--broker-password-file",
                               str(files / "broker.pw"), *mechanism)
    try:
        assert list(listeners) == ["CONTROLLER", "SASL_PLAINTEXT"]
        assert run(topics_and_acl_change(Address(listeners["SASL_PLAINTEXT"]))) == (["audit", "orders"], 0)
    finally:
        stop(process)


@pytest.mark.parametrize(
    "arguments, status, message",
    [
        (["serve", "--broker-user", "b"], 1, "go with --controller-port"),
        (["serve", "--controller-port", "0"], 1, "needs --broker-user"),
        (["serve", "--controller-bootstrap-server", "127.0.0.1:9093"], 1, "needs --broker-user"),
        (["serve", "--controller-bootstrap-server", "nowhere", "--broker-user", "b", "--broker-password-file", "f"], 1,
         "takes HOST:PORT"),
        (["serve", "--controller-port", "0", "--controller-bootstrap-server", "127.0.0.1:9093"], 1, "exclude each other"),
        (["serve", "--process-roles", "controller", "--controller-port", "0"], 1, "forwards to nobody"),
        (["serve", "--catalogue", "missing.json"], 1, "missing.json"),
        (["serve", "--security-protocol", "SSH"], 1, "invalid choice"),
        (["--config", "listeners.properties", "serve", "--port", "9092"], 1, "--port and --security-protocol go without it"),
        (["--config", "bad-listeners.properties", "serve"], 1, "No security protocol defined for listener CLIENT"),
        (["serve", "--upstream-config", "upstream.properties"], 1, "--upstream-config goes with --upstream"),
        (["serve", "--upstream", "nowhere"], 1, "--upstream: a bootstrap server is HOST:PORT, not 'nowhere'"),
        (["serve", "--upstream", "127.0.0.1:9092", "--catalogue", "c.json"], 1, "no controller, no --catalogue"),
        (["serve", "--upstream", "127.0.0.1:1"], 1, "the upstream does not answer: upstream broker 127.0.0.1:1 unreachable"),
        (["serve", "--upstream", "127.0.0.1:1", "--upstream-config", "bad-upstream.properties"], 1,
         "security.protocol must be one of"),
        (["--config", "unadvertised.properties", "serve", "--upstream", "127.0.0.1:1"], 1,
         "names APIs as Kafka spells them (DeleteRecords, ...), not Deleterecords"),
        (["--config", "bad-loop.properties", "serve"], 1, "kafkasec.server.event.loop is one of auto, uvloop, asyncio, not 'trio'"),
    ],
)
def test_bad_command_lines(files, capsys, monkeypatch, arguments, status, message):
    (files / "listeners.properties").write_text("listeners=PLAINTEXT://127.0.0.1:0\n", encoding="utf-8")
    (files / "bad-listeners.properties").write_text("listeners=CLIENT://127.0.0.1:0\n", encoding="utf-8")
    (files / "bad-upstream.properties").write_text("security.protocol=SASL_SSH\n", encoding="utf-8")
    (files / "unadvertised.properties").write_text("kafkasec.upstream.unadvertised.apis=Deleterecords\n", encoding="utf-8")
    (files / "bad-loop.properties").write_text("kafkasec.server.event.loop=trio\n", encoding="utf-8")
    monkeypatch.chdir(files)  # the properties files above are named relative to it
    got, _, err = Cli(str(files / "state.db"), capsys, monkeypatch)(*arguments)
    assert got == status and message in err


def test_a_bad_catalogue_is_one_clear_line(files, capsys, monkeypatch):
    (files / "bad.json").write_text('{"topics": [{"name": "bad/name"}]}', encoding="utf-8")
    status, _, err = Cli(str(files / "state.db"), capsys, monkeypatch)("serve", "--catalogue", str(files / "bad.json"))
    assert status == 1 and "illegal" in err and "Traceback" not in err


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_serve_runs_on_the_event_loop_its_setting_names(files, event_loop):
    if event_loop == "uvloop":
        pytest.importorskip("uvloop")
    assert f"event loop: {event_loop}" in serve_log_with(files, f"kafkasec.server.event.loop={event_loop}\n")


@pytest.mark.parametrize("tuned", [True, False])
def test_serve_freezes_what_it_loaded_and_tunes_malloc_and_the_collector_unless_told_not_to(files, tuned):
    log = serve_log_with(files, "" if tuned else ("kafkasec.server.gc.freeze=false\nkafkasec.server.malloc.mmap.threshold=0\n"
                                                  "kafkasec.server.gc.threshold=0\n"))
    frozen = re.search(r"(\d+) objects loaded at start are left out of garbage collection", log)
    malloc = "buffers below 33554432 bytes are kept in the heap, and up to 67108864 freed bytes with the process" in log
    collector = "the garbage collector runs after 50000 more objects are made than freed" in log
    if tuned:
        assert frozen is not None and int(frozen.group(1)) > 10_000
        assert malloc or platform.libc_ver()[0] != "glibc"
        assert collector
    else:
        assert frozen is None and not malloc and not collector


def test_serve_logs_a_refused_login_at_info(files):
    from kafkasec.errors import SaslAuthenticationError
    from kafkasec.server import KafkaConnection

    process, listeners = start(files)

    async def wrong_password(address):
        connection = await KafkaConnection.open(address.host, address.port)
        try:
            await connection.login("SCRAM-SHA-256", "alice", "not-her-password")
        finally:
            await connection.close()

    try:
        with pytest.raises(SaslAuthenticationError):
            run(wrong_password(Address(listeners["SASL_PLAINTEXT"])))
    finally:
        log = stop(process)
    assert "INFO kafkasec.server" in log and "login failed" in log and "not-her-password" not in log


def test_serve_opens_the_listeners_kafkas_settings_name(files):
    (files / "server.properties").write_text(
        "super.users=User:admin;User:broker\n"
        "listeners=INTERNAL://127.0.0.1:0,OPEN://127.0.0.1:0\n"
        "listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT,OPEN:PLAINTEXT\n",
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "kafkasec.cli", "--state", str(files / "state.db"), "--config",
               str(files / "server.properties"), "serve", "--catalogue", str(files / "catalogue.json")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=files)
    try:
        lines = [process.stdout.readline() for _ in range(2)]
        listeners = {line.split()[2]: line.split()[-1] for line in lines}
        assert sorted(listeners) == ["INTERNAL", "OPEN"], lines
        assert run(topics_and_acl_change(Address(listeners["INTERNAL"]))) == (["audit", "orders"], 0)

        async def anonymous_metadata():
            from kafkasec.server import KafkaConnection

            address = Address(listeners["OPEN"])
            async with await KafkaConnection.open(address.host, address.port) as connection:
                return (await connection.request(wire.build(wire.request_schema(3, 12), topics=None))).topics

        assert run(anonymous_metadata()) == ()  # User:ANONYMOUS may describe nothing
    finally:
        stop(process)


def test_serve_as_a_gateway_prints_its_listeners_serves_and_stops_with_clients_connected(files, tansu):
    """``serve --upstream``: a line per listener and per upstream broker; a client connected to
    each when SIGTERM comes does not hold the shutdown (an upstream reader once did)."""
    command = [sys.executable, "-m", "kafkasec", "--state", str(files / "state.db"), "--config",
               str(files / "server.properties"), "serve", "--port", "0", "--upstream", tansu.bootstrap]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=files)
    try:
        listening, broker = process.stdout.readline().split(), process.stdout.readline().split()
        assert listening[2:4] == ["SASL_PLAINTEXT", "listening"], listening
        assert broker[2:6] == ["SASL_PLAINTEXT", "upstream", "broker", "111"], broker

        async def connected_to_both():
            from server_support import logged_in

            connections = [await logged_in(Address(address), "admin") for address in (listening[-1], broker[-1])]
            for connection in connections:
                metadata = await connection.request(wire.build(wire.request_schema(3, 12), topics=None))
                assert [b.port for b in metadata.brokers] == [Address(broker[-1]).port]
            process.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(process.wait, 10) == 0
            for connection in connections:
                await connection.close()

        run(connected_to_both())
        assert "kafkasec serve: stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
