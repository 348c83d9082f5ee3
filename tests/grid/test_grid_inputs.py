"""``kafkasec grid`` checks every input before Spark starts: a bad --state, --bootstrap-server
or --master is one line and exit 1 within seconds. Spark is never started here: its session
factory is replaced by one that fails the test if it is called."""

import socket
import time

import pytest

from kafkasec.cli import main
from kafkasec.cli.grid import MASTER_CONNECT_TIMEOUT_S, _start_spark, check_master
from kafkasec.cli.options import CommandError, UsageError

BOUND_S = MASTER_CONNECT_TIMEOUT_S + 5  # the connection check, and the command's own start-up


@pytest.fixture
def grid(tmp_path, capsys, monkeypatch):
    """Runs ``kafkasec <global options> grid <options>`` on small inputs; (status, stderr, seconds)."""

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started before the inputs were checked")

    monkeypatch.setattr("spark_udfs.spark.local_session", no_spark)
    (tmp_path / "p.csv").write_text("principal\nUser:a\n")
    (tmp_path / "r.csv").write_text("resource_type,resource_name\nTOPIC,t\n")
    state = tmp_path / "state.db"
    assert main(["--state", str(state), "acls", "--add", "--allow-principal", "User:a", "--topic", "t"]) == 0
    capsys.readouterr()

    def run(*options, before=("--state", str(state))):
        started = time.monotonic()
        status = main([*before, "grid", "--principals", str(tmp_path / "p.csv"), "--resources", str(tmp_path / "r.csv"),
                       "--output", str(tmp_path / "out"), *options])
        seconds = time.monotonic() - started
        out, err = capsys.readouterr()
        assert out == "" and not (tmp_path / "out").exists()
        return status, err, seconds

    run.directory = tmp_path
    return run


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("master", "message"),
    [
        ("bogus://x", "--master bogus://x: not a Spark master URL"),
        ("local[x]", "--master local[x]: not a Spark master URL"),
        ("local[0]", "--master local[0]: not a Spark master URL"),
        ("spark://", "is not HOST:PORT"),
        ("spark://host-without-port", "'host-without-port' is not HOST:PORT"),
        ("k8s://", "not a Spark master URL"),
    ],
)
def test_a_bad_master_is_one_line_before_spark(grid, master, message):
    status, err, seconds = grid("--master", master)
    assert status == 1 and err.count("\n") == 1 and message in err, err
    assert seconds < BOUND_S


def test_an_unreachable_standalone_master_is_one_line_before_spark(grid):
    port = _unused_port()
    status, err, seconds = grid("--master", f"spark://127.0.0.1:{port}")
    assert status == 1 and err.count("\n") == 1, err
    assert f"--master spark://127.0.0.1:{port}: no Spark master accepts a connection" in err
    assert f"127.0.0.1:{port} (" in err
    assert seconds < BOUND_S


def test_a_missing_state_file_is_reported_before_spark(grid):
    missing = str(grid.directory / "missing.db")
    status, err, seconds = grid(before=("--state", missing))
    assert status == 1 and err == f"kafkasec: error: no state file at {missing}: nothing to read " \
        "(a command that writes, such as acls --add, creates it)\n"
    assert seconds < BOUND_S


def test_an_unreachable_bootstrap_server_is_reported_before_spark(grid):
    port = _unused_port()
    status, err, seconds = grid(before=("--bootstrap-server", f"127.0.0.1:{port}"))
    assert status == 1 and err.count("\n") == 1 and f"no bootstrap server answered: 127.0.0.1:{port}" in err, err
    assert seconds < BOUND_S


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("spark.ui.port", "argument --conf: 'spark.ui.port' is not KEY=VALUE"),
        ("=7", "argument --conf: '=7' is not KEY=VALUE"),
        ("sprak.ui.port=4050", "argument --conf: 'sprak.ui.port' is not a Spark setting (those start with spark.)"),
    ],
)
def test_a_malformed_conf_is_one_line_before_spark(grid, setting, message):
    status, err, seconds = grid("--conf", "spark.sql.shuffle.partitions=7", "--conf", setting)
    assert status == 1 and err.count("\n") == 1 and message in err, err
    assert seconds < BOUND_S


@pytest.mark.parametrize("master", ["local", "local[1]", "local[*]", "local[4,2]", "local[*, 3]",
                                    "local-cluster[2,1,1024]", "yarn", "k8s://https://10.0.0.1:6443"])
def test_the_masters_spark_takes_pass_the_check(master):
    check_master(master)


def test_a_listening_standalone_master_passes_the_check():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_master(f"spark://127.0.0.1:1,127.0.0.1:{listening.getsockname()[1]}")  # one of the HA masters answers


def test_check_master_raises_usage_errors_for_forms():
    with pytest.raises(UsageError):
        check_master("spark://127.0.0.1:99999")


def test_a_spark_that_fails_to_start_is_one_line_with_its_cause():
    """What the check cannot see is Spark's to find; its Py4J error (the JVM's stack trace
    after the message) becomes one line naming the master and Spark's message."""

    def failing():
        raise Exception("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
                        ": org.apache.spark.SparkException: All masters are unresponsive! Giving up.\n"
                        "\tat org.apache.spark.scheduler.TaskSchedulerImpl.error(TaskSchedulerImpl.scala:1)\n")

    with pytest.raises(CommandError) as raised:
        _start_spark(failing, "spark://10.0.0.5:7077")
    assert str(raised.value) == ("Spark did not start on --master spark://10.0.0.5:7077: "
                                 "org.apache.spark.SparkException: All masters are unresponsive! Giving up.")
