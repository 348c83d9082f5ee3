"""Every script under benchmarks/ runs at its smallest size and prints its table.

The benchmarks are run by hand, seldom; a change that breaks one (an import renamed, an API
changed) would otherwise be found on the day someone measures. Each run here is a subprocess
with a timeout, as a person would start it, asserting its exit status and its Markdown table; the
numbers are not looked at (the sizes are too small to mean anything). A new script must be added
to SMOKE_RUNS: the first test fails until it is.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from attrs import frozen

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

TIMEOUT_S = 300
"""Per run; the slowest here (Spark's) take 20-40 s on a busy 2-core machine."""

TABLE_RULE = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$", re.MULTILINE)
"""The rule under a Markdown table's header row, e.g. ``|---|---:|``."""


@frozen
class SmokeRun:
    script: str
    arguments: tuple[str, ...]
    modules: tuple[str, ...] = ()
    """Python modules the script imports beyond kafkasec's own dependencies."""
    variant: str = ""
    """Names the run in the test id, where a script runs more than once."""
    postgres: bool = False
    """Given ``--url`` of the tests' PostgreSQL."""

    @property
    def id(self) -> str:
        return self.script.removesuffix(".py") + (f"-{self.variant}" if self.variant else "")


GATEWAY_SMALL = ("--records", "1000", "--partitions", "1", "--latency-rate", "200", "--latency-seconds", "0.5")
"""bench_gateway.py's throughput and latency runs at their smallest."""

SMOKE_RUNS = [
    SmokeRun("bench_authorizer.py", ("--quick", "--sizes", "1000", "--acl-counts", "10", "--deny", "0",
                                     "--build-resources", "1000", "--build-repeats", "1", "--random-trials", "5")),
    SmokeRun("bench_decision_path.py", ("--sizes", "100", "--rounds", "1")),
    SmokeRun("compare_revisions.py", ("--rev", "HEAD", "--resources", "1000", "--rounds", "1")),
    SmokeRun("bench_forwarding.py", ("--quick",), ("kio",)),
    SmokeRun("bench_scram.py", ("--quick",), ("scramp",)),
    SmokeRun("bench_sasl.py", ("--seconds", "0.2", "--rounds", "1")),
    SmokeRun("bench_index_apply.py", ("--acls", "1000", "--changes", "10")),
    SmokeRun("bench_propagation.py", ("--rates", "20", "--seconds", "0.5", "--followers", "1"), variant="sqlite"),
    SmokeRun("bench_propagation.py", ("--rates", "20", "--seconds", "0.5", "--followers", "1"), ("psycopg",),
             variant="postgresql", postgres=True),
    SmokeRun("bench_propagation.py", ("--apply", "--acls", "1000", "--changes", "20"), variant="apply"),
    SmokeRun("bench_request_rules.py", ("--topics", "2", "--partitions-per-topic", "2", "--repeats", "1", "--sample-ms", "1"),
             ("kio",)),
    SmokeRun("bench_embedded_broker.py", ("--requests", "20", "--warmup", "5", "--rounds", "1", "--acls", "10"), ("kio",)),
    SmokeRun("bench_endpoint.py", ("--quick", "--seconds", "0.2"), ("kio",)),
    SmokeRun("bench_hostile.py", ("--quick", "--handshakes", "20", "--seconds", "0.3"), ("kio",)),
    SmokeRun("bench_grid.py", ("--quick", "--acls", "1000"), ("numpy",)),
    SmokeRun("bench_grid_spark.py", ("--smoke",), ("pyspark", "pyarrow", "numpy")),
    SmokeRun("bench_grid_cluster.py", ("--smoke", "--acls", "300"), ("pyspark", "pyarrow", "numpy")),
    SmokeRun("bench_report.py", ("--smoke", "--rev", "HEAD", "--searches", "2"), ("playwright", "numpy")),
    SmokeRun("bench_gateway.py", ("--tansu", *GATEWAY_SMALL), ("confluent_kafka", "psutil", "kio"), variant="direct"),
    # One Tansu and one gateway for the three comparisons; --quiet -1: no waiting for a quiet machine.
    SmokeRun("bench_gateway.py", ("--tansu", "--compare-gateway", "--omb", "--scale-out", "--rounds", "1", "--quiet", "-1",
                                  *GATEWAY_SMALL, "--scale-records", "1000", "--omb-rate", "50", "--omb-seconds", "1",
                                  "--omb-warmup-seconds", "0.5"),
             ("confluent_kafka", "psutil", "kio"), variant="gateway"),
    SmokeRun("bench_gateway_request.py", ("--requests", "300", "--warmup", "20", "--connections", "2", "--in-flight", "2",
                                          "--rounds", "1", "--event-loop", "asyncio", "--byte-pipe", "--compare-gc-freeze",
                                          "--compare-malloc", "--acls", "50", "--batch-records", "4", "--fetch-bytes", "65536"),
             ("kio",)),
]


def runnable_scripts() -> set[str]:
    """The scripts of benchmarks/ that run as a program (authorizer_workload.py is a module)."""
    return {path.name for path in BENCHMARKS.glob("*.py") if re.search(r"^if __name__ == .__main__.:", path.read_text(), re.M)}


def test_every_benchmark_script_has_a_smoke_run():
    assert {run.script for run in SMOKE_RUNS} == runnable_scripts()


@pytest.mark.slow
@pytest.mark.parametrize("run", SMOKE_RUNS, ids=lambda run: run.id)
def test_the_benchmark_runs_and_prints_its_table(run, request):
    for module in run.modules:
        pytest.importorskip(module)
    arguments = [*run.arguments, *(("--url", request.getfixturevalue("postgres_url")) if run.postgres else ())]
    # A session of its own: on a timeout, the script's children (Tansu, gateways, Spark's JVM) are stopped with it.
    process = subprocess.Popen([sys.executable, str(BENCHMARKS / run.script), *arguments], cwd=ROOT, text=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)  # bench_gateway.py stops its broker and gateways on SIGTERM
        try:
            stdout, stderr = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        pytest.fail(f"{run.script} {' '.join(arguments)} ran past {TIMEOUT_S} s:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    assert process.returncode == 0, f"{run.script} {' '.join(arguments)} exited {process.returncode}:\n{stderr[-4000:]}"
    assert TABLE_RULE.search(stdout), f"{run.script} printed no Markdown table:\n{stdout[-3000:]}"
