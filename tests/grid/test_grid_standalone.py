"""Grids on a standalone Spark cluster started by the test from pyspark's own scripts: a master
and a worker on 127.0.0.1 whose Python has pyspark, py4j, numpy and pyarrow but not kafkasec.
The grid ships what its UDF needs, the Arrow UDF answers as the authorizer does, dense grids
are the same with broadcasts and with shuffled joins on 1 GB executors, a grid whose class
table would not fit a 512m executor is never broadcast there, ``kafkasec grid --master
spark://...`` writes the grid that local mode writes, and refuses an --output that only the
driver has (the worker runs in its own mount namespace, see :func:`standalone`)."""

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
import pyspark  # noqa: E402
from spark_support import worker_python  # noqa: E402

from kafkasec.testing import free_port  # noqa: E402

pytestmark = pytest.mark.slow


def wait_for(process, text: str, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} did not appear: {log.read_text(errors='replace')[-2000:]}")


def private_disk(directory: Path) -> list[str]:
    """The command prefix that runs a process in its own mount namespace with an empty tmpfs
    over ``directory``, or [] where this machine cannot (unshare needs CAP_SYS_ADMIN)."""
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", 'mount -t tmpfs executors-disk "$1"', "sh", str(directory)],
                           capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        return []
    return ["unshare", "--mount", "sh", "-c", 'mount -t tmpfs executors-disk "$1" && shift && exec "$@"', "sh",
            str(directory)]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """(master URL, the workers' Python, a scratch directory, ``driver_only``): a directory that
    the worker and its executors see as their own empty disk (a tmpfs in the worker's mount
    namespace), so what they write there never reaches the driver's directory of that name, as
    on a cluster whose executors write to their own machines' disks; None where this machine
    cannot make a mount namespace."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    directory = tmp_path_factory.mktemp("standalone")
    python = worker_python(directory)
    refused = subprocess.run([str(python), "-c", "import kafkasec"], capture_output=True, text=True, cwd=directory)
    assert refused.returncode != 0 and "No module named 'kafkasec'" in refused.stderr
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    port = free_port()
    environment = {**os.environ, "SPARK_WORKER_DIR": str(directory / "work"), "SPARK_LOCAL_IP": "127.0.0.1"}
    master_log, worker_log = directory / "master.log", directory / "worker.log"
    driver_only = directory / "driver-only"
    driver_only.mkdir()
    own_disk = private_disk(driver_only)
    master = subprocess.Popen(
        [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(free_port())],
        stdout=master_log.open("w"), stderr=subprocess.STDOUT, env=environment,
    )
    worker = None
    try:
        wait_for(master, "I have been elected leader", master_log)
        url = f"spark://127.0.0.1:{port}"
        worker = subprocess.Popen(
            [*own_disk, str(spark_class), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
             "--memory", "2g", "--webui-port", str(free_port()), url],
            stdout=worker_log.open("w"), stderr=subprocess.STDOUT, env=environment,
        )
        wait_for(worker, "Successfully registered with master", worker_log)
        yield url, python, directory, driver_only if own_disk else None
    finally:
        for process in (worker, master):
            if process is not None:
                process.terminate()
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()


def driver_environment(python: Path, executor_memory: str = "1g") -> dict:
    """Two executors of ``executor_memory`` and one core each, running the workers' Python."""
    return {
        **os.environ,
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_SUBMIT_ARGS": f"--conf spark.executor.memory={executor_memory} --conf spark.executor.cores=1 "
                               "--conf spark.cores.max=2 --conf spark.ui.enabled=false pyspark-shell",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


DRIVER = textwrap.dedent('''
    import sys
    from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
    from kafkasec.acl import operations_to_bitfield
    from spark_udfs import spark as grids
    from spark_udfs.spark import authorized_operations_udf, compact_frames, local_session
    from spark_udfs.compact import CompactGrid

    session = local_session(sys.argv[1], "standalone-test")
    authorizer = StandardAuthorizer()
    acls = [AclBinding.of("TOPIC", f"t-{n % 40}", "LITERAL", f"User:u{n % 30}", "*", "READ", "ALLOW") for n in range(300)]
    acls += [AclBinding.of("TOPIC", "t-", "PREFIXED", "User:*", "fd00:0:0:0:0:0:0:d77", "DESCRIBE", "ALLOW"),
             AclBinding.of("GROUP", "g", "LITERAL", "User:u1", "*", "ALL", "DENY")]
    authorizer.create_acls(acls)
    principals = [(f"User:u{n}", host) for n in range(40) for host in ("10.0.0.1", "fd00::d77")]
    resources = [("TOPIC", f"t-{n}") for n in range(50)] + [("GROUP", "g")]
    rows = [(p, h, rt, name) for p, h in principals for rt, name in resources]
    expected = {row: operations_to_bitfield(authorizer.authorized_operations(
        RequestContext(KafkaPrincipal.parse(row[0]), row[1]), ResourcePattern(row[2], row[3]))) for row in rows}

    frame = session.createDataFrame(rows, "principal string, host string, resource_type string, resource_name string")
    udf = authorized_operations_udf(session, authorizer)
    answered = {tuple(r[:4]): r[4] for r in frame.withColumn(
        "operations", udf("principal", "host", "resource_type", "resource_name")).collect()}
    assert answered == expected, "the Arrow UDF disagrees with the authorizer"

    compact = CompactGrid.build(grids.compile_acls(authorizer), principals, resources)
    broadcast = compact_frames(session, compact)
    assert broadcast.broadcastable == {"principals", "base", "exceptions"}
    grids.BROADCAST_MEMORY_FRACTION = 0.0  # nothing fits: every class table joined by shuffling
    shuffled = compact_frames(session, compact)
    assert shuffled.broadcastable == frozenset(), shuffled.broadcastable
    codes = {"TOPIC": 2, "GROUP": 3}
    expected_cells = {(p, h, codes[rt], name): bits for (p, h, rt, name), bits in expected.items()}
    readers = {cell for cell, bits in expected_cells.items() if bits & 8}
    for frames, grants_in_plan in ((broadcast, grids.GRANTS_IN_PLAN_BYTES), (shuffled, 0)):
        cells = {tuple(r[:4]): r[4] for r in frames.dense().collect()}
        assert cells == expected_cells, "a dense grid disagrees with the authorizer"
        grids.GRANTS_IN_PLAN_BYTES = grants_in_plan  # granting exceptions inside the plan, then joined
        assert {tuple(r[:4]) for r in frames.allowed("READ").collect()} == readers, "allowed pairs disagree"
    print("OK", len(rows))
''')


def test_the_udf_and_the_grids_run_on_executors_without_kafkasec(standalone):
    url, python, directory, _ = standalone
    script = directory / "driver.py"
    script.write_text(DRIVER)
    finished = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True, timeout=600,
                              env=driver_environment(python), cwd=directory)
    assert finished.returncode == 0 and "OK 4080" in finished.stdout, finished.stderr[-4000:]


GROUPS_DRIVER = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[2])
    import grid_support
    from hypothesis import HealthCheck, given, settings, strategies as st
    from kafkasec.acl import ResourceType
    from spark_udfs.spark import authorized_operations_udf, grid, local_session

    session = local_session(sys.argv[1], "standalone-groups-test")
    principals = session.createDataFrame(grid_support.PRINCIPALS, "principal string, host string")
    resources = session.createDataFrame(grid_support.RESOURCES, "resource_type string, resource_name string")
    checked = []

    @settings(max_examples=4, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(acls=grid_support.acls, membership=grid_support.memberships, allow_everyone=st.booleans())
    def every_cell_is_what_kafkasecurity_authorizes(acls, membership, allow_everyone):
        with grid_support.group_security(acls, membership, allow_everyone) as security:
            want = {(p, h, int(ResourceType.coerce(t)), n): grid_support.authorized_bits(security, p, h, t, n)
                    for p, h in grid_support.PRINCIPALS for t, n in grid_support.RESOURCES}
            dense = {tuple(r)[:4]: r.operations for r in grid(session, security, principals, resources).collect()}
            assert dense == want, "a dense grid disagrees with KafkaSecurity.authorize"
            readers = {tuple(r)[:4] for r in grid(session, security, principals, resources, output="allowed",
                                                  operation="READ").collect()}
            assert readers == {key for key, bits in want.items() if bits & 8}, "allowed pairs disagree"
            udf = authorized_operations_udf(session, security, principals=principals)
            rows = principals.crossJoin(resources)
            answered = {(r.principal, r.host, int(ResourceType.coerce(r.resource_type)), r.resource_name): r.ops
                        for r in rows.select("*", udf("principal", "host", "resource_type", "resource_name").alias("ops")).collect()}
            assert answered == want, "the Arrow UDF disagrees with KafkaSecurity.authorize"
        checked.append(len(want))

    every_cell_is_what_kafkasecurity_authorizes()
    print("OK", len(checked), sum(checked))
''')


def test_grids_with_group_membership_on_executors_without_the_plugin(standalone):
    """The property of test_grid_spark.py on the cluster: random estates with the groupfile
    plugin loaded on the driver (the executors have neither kafkasec nor the plugin nor its
    file): every cell of the dense grid, the allowed pairs and the Arrow UDF equals
    KafkaSecurity.authorize on that cell."""
    url, python, directory, _ = standalone
    script = directory / "groups_driver.py"
    script.write_text(GROUPS_DRIVER)
    finished = subprocess.run([sys.executable, str(script), url, str(Path(__file__).parent)], capture_output=True, text=True,
                              timeout=600, env=driver_environment(python), cwd=directory)
    assert finished.returncode == 0 and "OK 4" in finished.stdout, finished.stderr[-4000:]


def test_kafkasec_grid_on_the_cluster_writes_what_local_mode_writes(standalone, tmp_path):
    url, python, _, _ = standalone
    write_state_and_inputs(tmp_path)
    outputs = {}
    for master in (url, "local[2]"):
        target = tmp_path / ("cluster" if master == url else "local")
        finished = run_grid(tmp_path, python, "--output", str(target), "--format", "csv", "--master", master)
        assert finished.returncode == 0, finished.stderr[-3000:]
        outputs[master] = sorted((target / "grid.csv").read_text().splitlines())
    assert outputs[url] == outputs["local[2]"] and len(outputs[url]) > 3


def write_state_and_inputs(directory: Path) -> None:
    """state.db with two ACLs, p.csv with two principals, r.csv with three resources."""
    from kafkasec import AclBinding, KafkaSecurity

    with KafkaSecurity.from_config({"kafkasec.state.path": str(directory / "state.db")}) as security:
        security.create_acls([AclBinding.of("TOPIC", "orders", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
                              AclBinding.of("TOPIC", "orders-eu", "LITERAL", "User:*", "*", "DESCRIBE", "ALLOW")])
    (directory / "p.csv").write_text("principal,host\nUser:alice,10.0.0.1\nUser:bob,fd00::1\n")
    (directory / "r.csv").write_text("resource_type,resource_name\nTOPIC,orders-eu\nTOPIC,payments\nGROUP,g\n")


def run_grid(directory: Path, python: Path, *options: str) -> subprocess.CompletedProcess:
    """``kafkasec grid`` on the inputs of :func:`write_state_and_inputs`."""
    return subprocess.run(
        [sys.executable, "-m", "kafkasec.cli", "--state", str(directory / "state.db"), "grid", "--principals",
         str(directory / "p.csv"), "--resources", str(directory / "r.csv"), *options],
        capture_output=True, text=True, timeout=600, env=driver_environment(python), cwd=directory,
    )


def test_kafkasec_grid_refuses_an_output_only_the_driver_has(standalone, tmp_path):
    """--output in the worker's private directory (see :func:`standalone`): the executors'
    part files go to their own tmpfs, and the driver's directory of that name gets Parquet's
    _SUCCESS alone, or a CSV of its header alone. The command counts the rows it wrote against
    those the driver finds, says which directory lacks them and why in one line, exit status 1,
    and leaves no half-written grid behind."""
    url, python, _, driver_only = standalone
    if driver_only is None:
        pytest.skip("no private mount namespace on this machine (unshare --mount needs CAP_SYS_ADMIN)")
    write_state_and_inputs(tmp_path)
    for file_format in ("parquet", "csv"):
        target = driver_only / file_format
        finished = run_grid(tmp_path, python, "--output", str(target), "--format", file_format, "--master", url)
        assert finished.returncode == 1, (file_format, finished.stdout, finished.stderr[-3000:])
        assert finished.stderr.splitlines()[-1] == (
            f"kafkasec: error: --output {target}: 6 of 6 rows are not in {target}: the executors wrote them to their "
            "own disks; give a directory that the driver and every executor share (a shared mount such as NFS, or "
            "for Parquet an hdfs:// or s3a:// URI)"), finished.stderr[-3000:]
        assert not target.exists()


LARGE_DRIVER = textwrap.dedent('''
    import sys
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F
    from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
    from kafkasec.acl import AclOperation, operations_to_bitfield
    from spark_udfs import spark as grids
    from spark_udfs.compact import CompactGrid

    PRINCIPALS = int(sys.argv[2])
    session = grids.local_session(sys.argv[1], "standalone-large")
    authorizer = StandardAuthorizer("User:u7")
    authorizer.create_acls(
        [AclBinding.of("TOPIC", f"t-{n % 4}", "LITERAL", f"User:u{n}", "*", "READ", "ALLOW") for n in range(0, PRINCIPALS, 997)]
        + [AclBinding.of("TOPIC", "t-", "PREFIXED", "User:*", "10.0.0.3", "DESCRIBE", "ALLOW"),
           AclBinding.of("TOPIC", "t-2", "LITERAL", "User:u1994", "*", "READ", "DENY")])
    names = [f"User:u{n}" for n in range(PRINCIPALS)]
    hosts = [f"10.0.0.{n % 5}" for n in range(PRINCIPALS)]
    principals = session.createDataFrame(pa.table({"principal": names, "host": hosts}))
    resources = session.createDataFrame([("TOPIC", f"t-{n}") for n in range(4)], "resource_type string, resource_name string")

    frames = grids.grid(session, authorizer, principals, resources, output="compact")
    estimate = PRINCIPALS * grids.BROADCAST_BYTES_PER_ROW
    usable = (512 - 300) * 0.6 * 2**20  # Spark's unified memory of a 512m executor
    assert estimate > usable and estimate > grids.broadcast_budget(session), (estimate, usable)
    assert "principals" not in frames.broadcastable, frames.broadcastable  # the real budget, not forced

    compact = frames.grid
    want = compact.dense()
    values, counts = np.unique(want, return_counts=True)
    counted = frames.dense().groupBy("operations").count()
    got = {r["operations"]: r["count"] for r in counted.collect()}
    assert got == dict(zip(values.tolist(), counts.tolist())), (got, values, counts)
    plan = counted._jdf.queryExecution().executedPlan().toString().splitlines()
    broadcast = [plan[i + 1] for i, line in enumerate(plan[:-1]) if "BroadcastExchange" in line]
    assert broadcast and not any("super#" in scan or "principal#" in scan for scan in broadcast), plan
    read = 1 << AclOperation.READ
    assert frames.allowed("READ").count() == compact.count_allowed(read) == int(((want & read) != 0).sum())
    sample = [f"User:u{n}" for n in (0, 1, 7, 997, 1994, 2991, PRINCIPALS - 1)]
    cells = frames.dense().where(F.col("principal").isin(sample)).collect()
    assert len(cells) == len(sample) * 4
    for cell in cells:
        expected = operations_to_bitfield(authorizer.authorized_operations(
            RequestContext(KafkaPrincipal.parse(cell.principal), cell.host), ResourcePattern("TOPIC", cell.resource_name)))
        assert cell.operations == expected, (cell, expected)
    print("OK", PRINCIPALS * 4)
''')


def test_a_grid_larger_than_an_executor_never_broadcasts_its_principals_on_512m_executors(standalone):
    """1.2 million principals: their class table, broadcast whole at the memory model's 128 bytes
    a row, would exceed the whole unified memory of a 512m executor. The grid's own budget (not
    a forced one) leaves it out of every broadcast, so it streams through the joins; the dense
    grid and its allowed pairs come out right."""
    url, python, directory, _ = standalone
    script = directory / "large_driver.py"
    script.write_text(LARGE_DRIVER)
    principals = 1_200_000
    finished = subprocess.run([sys.executable, str(script), url, str(principals)], capture_output=True, text=True,
                              timeout=900, env=driver_environment(python, "512m"), cwd=directory)
    assert finished.returncode == 0 and f"OK {principals * 4}" in finished.stdout, finished.stderr[-4000:]
