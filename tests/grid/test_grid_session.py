"""local_session on a local master, each in a fresh Python (Spark's settings are read when its
JVM starts): the executors run this Python, not the first ``python3`` on the PATH; a
``PYSPARK_PYTHON`` without kafkasec still runs the grids' UDF (the package is shipped on local
masters too); the user's ``spark.sql.shuffle.partitions`` is kept; and ``kafkasec grid``'s
``--conf`` wins over everything while ``--spark-ui`` serves the UI on the port asked."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pyspark")

from spark_support import worker_python  # noqa: E402

from kafkasec.testing import free_port  # noqa: E402

pytestmark = pytest.mark.slow

UDF_ON_LOCAL = textwrap.dedent('''
    from kafkasec import AclBinding, StandardAuthorizer
    from spark_udfs.spark import authorized_operations_udf, local_session

    session = local_session("local[2]", "session-test")
    authorizer = StandardAuthorizer()
    authorizer.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
    udf = authorized_operations_udf(session, authorizer)
    pairs = session.createDataFrame([("User:alice", "10.0.0.1", "TOPIC", "orders"), ("User:bob", "10.0.0.1", "TOPIC", "orders")],
                                    "principal string, host string, resource_type string, resource_name string")
    answers = [row.bits for row in pairs.select(udf("principal", "host", "resource_type", "resource_name").alias("bits")).collect()]
    print("answers", answers)
    print("shuffle.partitions", session.conf.get("spark.sql.shuffle.partitions"))
''')
READ_AND_DESCRIBE = (1 << 3) | (1 << 8)


def run_python(code: str, directory, *arguments: str, **environment: str) -> subprocess.CompletedProcess:
    """``code`` run by this Python in ``directory``, with ``environment`` (and no PYSPARK_PYTHON
    unless it names one); it must succeed."""
    script = directory / "driver.py"
    script.write_text(code)
    inherited = {key: value for key, value in os.environ.items() if key != "PYSPARK_PYTHON"}
    finished = subprocess.run([sys.executable, str(script), *arguments], capture_output=True, text=True, timeout=300,
                              cwd=directory, env={**inherited, "SPARK_LOCAL_IP": "127.0.0.1", **environment})
    assert finished.returncode == 0, finished.stderr[-4000:]
    return finished


def test_the_executors_run_this_python_not_the_first_python3_on_the_path(tmp_path):
    """PySpark's own default is ``python3`` from the PATH; here that is a script that fails,
    as another Python without pyarrow would. The user's shuffle partitions (spark-submit's
    --conf, through PYSPARK_SUBMIT_ARGS) are kept on a local master."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "python3").write_text("#!/bin/sh\necho 'not the driver Python' >&2\nexit 3\n")
    (elsewhere / "python3").chmod(0o755)
    finished = run_python(UDF_ON_LOCAL, tmp_path, PATH=f"{elsewhere}{os.pathsep}{os.environ['PATH']}",
                          PYSPARK_SUBMIT_ARGS="--conf spark.sql.shuffle.partitions=5 pyspark-shell")
    assert f"answers [{READ_AND_DESCRIBE}, 0]" in finished.stdout
    assert "shuffle.partitions 5" in finished.stdout


def test_a_pyspark_python_without_kafkasec_runs_the_udf_on_a_local_master(tmp_path):
    """The user's PYSPARK_PYTHON is kept; it has pyspark, py4j, numpy and pyarrow only, as a
    platform team's workers: what the UDF imports is shipped to it as to a cluster's."""
    python = worker_python(tmp_path)
    finished = run_python(UDF_ON_LOCAL, tmp_path, PYSPARK_PYTHON=str(python))
    assert f"answers [{READ_AND_DESCRIBE}, 0]" in finished.stdout


GRID_COMMAND = textwrap.dedent('''
    import sys
    import urllib.request

    import spark_udfs.spark
    from kafkasec.cli import main

    start = spark_udfs.spark.local_session

    def local_session(*args, **kwargs):
        session = start(*args, **kwargs)
        url = session.sparkContext.uiWebUrl
        print("shuffle.partitions", session.conf.get("spark.sql.shuffle.partitions"))
        print("ui", url, urllib.request.urlopen(url + "/jobs/", timeout=30).status if url else None)
        return session

    spark_udfs.spark.local_session = local_session
    sys.exit(main(sys.argv[1:]))
''')


def test_kafkasec_grid_conf_wins_and_spark_ui_serves_the_ui(tmp_path):
    from kafkasec import AclBinding, KafkaSecurity

    with KafkaSecurity.from_config({"kafkasec.state.path": str(tmp_path / "state.db")}) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
    (tmp_path / "p.csv").write_text("principal\nUser:alice\n")
    (tmp_path / "r.csv").write_text("resource_type,resource_name\nTOPIC,orders\n")
    port = free_port()
    finished = run_python(
        GRID_COMMAND, tmp_path, "--state", str(tmp_path / "state.db"), "grid", "--principals", str(tmp_path / "p.csv"),
        "--resources", str(tmp_path / "r.csv"), "--output", str(tmp_path / "out"), "--master", "local[2]",
        "--conf", "spark.sql.shuffle.partitions=7", "--spark-ui", "--conf", f"spark.ui.port={port}",
        PYSPARK_SUBMIT_ARGS="--conf spark.sql.shuffle.partitions=5 pyspark-shell",
    )
    assert "shuffle.partitions 7" in finished.stdout
    assert re.search(rf"^ui http://[^ ]+:{port} 200$", finished.stdout, re.MULTILINE), finished.stdout
    assert re.search(rf"^the Spark UI is at http://[^ ]+:{port}$", finished.stderr, re.MULTILINE), finished.stderr
