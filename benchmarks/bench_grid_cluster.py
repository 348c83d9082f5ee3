"""Grids of a team-shaped estate on Spark: the compact grid end to end, dense cells and allowed
pairs materialized, with the class tables broadcast (within the executors' budget) and shuffled,
and the peak JVM heap of each.

    python benchmarks/bench_grid_cluster.py                       # local[2], 10k and 100k ACLs
    python benchmarks/bench_grid_cluster.py --master spark://127.0.0.1:7077 --acls 10000

The estate: 300 teams; each ACL names one of the team's service principals (about 33 per team
at 10k ACLs) on the team's topic prefix, a literal topic or the team's group, 5 % of them DENY,
1 % for User:*; 20,000 principals (the named ones, the rest unnamed) x 50,000 resources (166
topics and groups per team). Dense cells are timed on a 2,000 x 5,000 part of the grid (10^7
cells; best and median of three), written to Spark's noop sink so that the rate is Spark's, not a disk's. Prints Markdown
tables and the machine.

``--estate hard`` (issue 31): every team has 48 named apps, each with ACLs on the team's topic
prefix (one in eight from its own host only, one in twenty DENY), on three of 36 literal topics
and on one of the team's groups, and ``User:*`` may describe two literal topics per team, from
one of 8 hosts for two teams in three; principals on those 8 hosts. About 14,400 principal
classes, 15,500 resource classes and 516,000 exceptions.

    python benchmarks/bench_grid_cluster.py --estate hard

``--smoke``: the same measurements on a small estate of the same shape (6 teams, 500 principals x
1,000 resources; a 200 x 500 part for the dense cells; each timing once), to check that the
script works: its numbers mean little.

    python benchmarks/bench_grid_cluster.py --smoke --acls 1000
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import random
import sys
import time
from functools import partial

from kafkasec import AclBinding, StandardAuthorizer
from kafkasec.acl import AclOperation
from spark_udfs import spark as grids
from spark_udfs.compact import CompactGrid


@dataclasses.dataclass(frozen=True)
class EstateSize:
    """How large an estate is: its teams, the grid's principals and resources (166 resources per
    team: 150 topics and 16 groups), and the part of the grid whose dense cells are timed."""

    teams: int = 300
    principals: int = 20_000
    resources: int = 50_000
    dense_part: tuple[int, int] = (2_000, 5_000)
    repeats: int = 5
    """Runs of the allowed pairs' timing (the dense cells': 3); 1 times each once."""


FULL = EstateSize()
SMOKE = EstateSize(teams=6, principals=500, resources=1_000, dense_part=(200, 500), repeats=1)


def estate(acl_count: int, seed: int = 19, size: EstateSize = FULL):
    """The team estate: ``acl_count`` ACLs spread over the teams' service principals."""
    rng = random.Random(seed)
    bindings = []
    for i in range(acl_count):
        team = i % size.teams
        principal = "User:*" if i % 100 == 0 else f"User:t{team}-svc{i // size.teams}"
        kind = i % 3
        if kind == 0:
            resource = ("TOPIC", f"t{team}-", "PREFIXED")
        elif kind == 1:
            resource = ("TOPIC", f"t{team}-topic{rng.randrange(150)}", "LITERAL")
        else:
            resource = ("GROUP", f"t{team}-group{rng.randrange(16)}", "LITERAL")
        operation = rng.choice(["READ", "WRITE", "DESCRIBE", "ALL"] if resource[0] == "TOPIC" else ["READ", "DESCRIBE"])
        bindings.append(AclBinding.of(*resource, principal, "*", operation, "DENY" if i % 20 == 0 else "ALLOW"))
    named = sorted({binding.entry.principal for binding in bindings} - {"User:*"})
    principals = [(name, f"10.0.{n % 250}.1") for n, name in enumerate(named[:size.principals])]
    principals += [(f"User:guest{n}", "10.9.0.1") for n in range(size.principals - len(principals))]
    return _authorizer(bindings), principals, _resources(size)


HARD_APPS = 48  # named principals per team
HARD_LITERALS = 36  # literal topics per team that ACLs name: each its own resource class
HARD_HOSTS = 8


def hard_estate(seed: int = 19, size: EstateSize = FULL):
    """The hard estate (issue 31's auditor's shape): many principal classes, each with many exceptions."""
    rng = random.Random(seed)
    bindings, principals = [], []
    for team in range(size.teams):
        literal_topics = rng.sample(range(150), HARD_LITERALS)
        for app in range(HARD_APPS):
            principal, host = f"User:t{team}-app{app}", f"10.0.{(team + app) % HARD_HOSTS}.1"
            principals.append((principal, host))
            bindings.append(AclBinding.of("TOPIC", f"t{team}-", "PREFIXED", principal, host if app % 8 == 0 else "*",
                                          rng.choice(["READ", "WRITE", "DESCRIBE", "ALL"]), "DENY" if app % 20 == 19 else "ALLOW"))
            bindings += [AclBinding.of("TOPIC", f"t{team}-topic{topic}", "LITERAL", principal, "*",
                                       rng.choice(["WRITE", "ALTER", "DESCRIBE_CONFIGS", "DELETE"]), "ALLOW")
                         for topic in rng.sample(literal_topics, 3)]
            bindings.append(AclBinding.of("GROUP", f"t{team}-group{rng.randrange(16)}", "LITERAL", principal, "*", "READ", "ALLOW"))
        bindings += [AclBinding.of("TOPIC", f"t{team}-topic{topic}", "LITERAL", "User:*",
                                   f"10.0.{rng.randrange(HARD_HOSTS)}.1" if team % 3 else "*", "DESCRIBE", "ALLOW")
                     for topic in rng.sample(literal_topics, 2)]
    principals = principals[:size.principals]
    principals += [(f"User:guest{n}", f"10.0.{n % HARD_HOSTS}.1") for n in range(size.principals - len(principals))]
    return _authorizer(bindings), principals, _resources(size)


def _authorizer(bindings) -> StandardAuthorizer:
    authorizer = StandardAuthorizer("User:admin")
    authorizer.create_acls(list(dict.fromkeys(bindings)))
    return authorizer


def _resources(size: EstateSize) -> list[tuple[str, str]]:
    """Each team's 150 topics and 16 groups."""
    per_team, teams = size.resources // size.teams, size.teams
    return [("TOPIC" if n % per_team < 150 else "GROUP",
             f"t{n // per_team % teams}-topic{n % per_team}" if n % per_team < 150 else f"t{n // per_team % teams}-group{n % per_team - 150}")
            for n in range(size.resources)]


def peak_heap_mib(spark) -> float:
    """The largest peak JVM heap of an executor (from the metrics they send with their
    heartbeats), or in local mode the driver's JVM (which is the executor) since the last reset."""
    if not spark.sparkContext.master.startswith("local"):
        executors = spark.sparkContext._jsc.sc().statusStore().executorList(True)
        peaks = [0.0]
        for index in range(executors.size()):
            executor = executors.apply(index)
            metrics = executor.peakMemoryMetrics()
            if executor.id() != "driver" and metrics.isDefined():
                peaks.append(metrics.get().getMetricValue("JVMHeapMemory") / 2**20)
        return max(peaks)
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    peak = 0
    for pool in management.getMemoryPoolMXBeans():
        if str(pool.getType()) == "Heap memory":
            peak += pool.getPeakUsage().getUsed()
            pool.resetPeakUsage()
    return peak / 2**20


def noop(frame) -> None:
    frame.write.format("noop").mode("overwrite").save()


def timed(action):
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def measure(spark, authorizer, principals, resources, size: EstateSize = FULL) -> str:
    """One row of the table: every measurement of an estate."""
    acl_count = len(authorizer.index)
    compiled = grids.compile_acls(authorizer)
    build_s = min(timed(lambda: CompactGrid.build(compiled, principals, resources))[0] for _ in range(3))
    principal_frame = spark.createDataFrame(principals, "principal string, host string")
    resource_frame = spark.createDataFrame(resources, "resource_type string, resource_name string")
    principal_frame.cache().count()
    resource_frame.cache().count()
    peak_heap_mib(spark)

    def compact_end_to_end():
        frames = grids.grid(spark, authorizer, principal_frame, resource_frame, output="compact")
        for frame in (frames.principals, frames.resources, frames.base, frames.exceptions):
            noop(frame)
        return frames

    def allowed_pairs() -> str:
        """READ pairs from the compact frames (the issue's measure: one run to warm up, then the
        best and the median of five), then end to end."""
        frames = grids.grid(spark, authorizer, principal_frame, resource_frame, output="compact")
        pairs = frames.grid.count_allowed(1 << AclOperation.READ)
        noop(frames.allowed("READ"))
        spark.sparkContext._jvm.System.gc()  # the garbage of the measurements before, not this one's
        runs = sorted(timed(lambda: noop(frames.allowed("READ")))[0] for _ in range(size.repeats))
        best, median = runs[0], runs[len(runs) // 2]
        end_to_end, _ = timed(lambda: noop(grids.grid(spark, authorizer, principal_frame, resource_frame,
                                                      output="allowed", operation="READ")))
        return (f"{pairs / best / 1e6:.2f} M pairs/s, median {pairs / median / 1e6:.2f} ({pairs:,} in {best:.2f} s); "
                f"end to end {pairs / end_to_end / 1e6:.2f} M/s ({end_to_end:.1f} s)")

    compact_s, frames = timed(compact_end_to_end)
    compact = frames.grid
    read = allowed_pairs()
    # The same with everyone allowed to read one team's topics: 3 million more pairs.
    authorizer.create_acls([AclBinding.of("TOPIC", "t1-", "PREFIXED", "User:*", "*", "READ", "ALLOW")])
    broad = allowed_pairs()
    part_principals, part_resources = size.dense_part
    dense_repeats = min(size.repeats, 3)
    part = grids.compact_frames(spark, CompactGrid.build(grids.compile_acls(authorizer), principals[:part_principals],
                                                         resources[:part_resources]))
    dense_runs = sorted(timed(lambda: noop(part.dense()))[0] for _ in range(dense_repeats))
    budget = grids.BROADCAST_MEMORY_FRACTION
    grids.BROADCAST_MEMORY_FRACTION = 0.0
    try:
        shuffled = grids.compact_frames(spark, CompactGrid.build(grids.compile_acls(authorizer), principals[:part_principals],
                                                                 resources[:part_resources]))
    finally:
        grids.BROADCAST_MEMORY_FRACTION = budget
    shuffled_runs = sorted(timed(lambda: noop(shuffled.dense()))[0] for _ in range(dense_repeats))
    cells = part_principals * part_resources
    row = (f"| {acl_count:,} | {len(compact.class_is_super):,} | {len(compact.base):,} | {len(compact.exception_bits):,} "
           f"| {compact_s:.2f} s | {build_s:.2f} s | {read} | {broad} "
           f"| {cells / dense_runs[0] / 1e6:.2f} M cells/s, median {cells / dense_runs[len(dense_runs) // 2] / 1e6:.2f} "
           f"| {cells / shuffled_runs[0] / 1e6:.2f} M cells/s, median {cells / shuffled_runs[len(shuffled_runs) // 2] / 1e6:.2f} "
           f"| {peak_heap_mib(spark):,.0f} MiB |")
    principal_frame.unpersist()
    resource_frame.unpersist()
    del frames
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--acls", default="10000,100000", help="the team estate's ACL counts")
    parser.add_argument("--estate", choices=("team", "hard"), default="team")
    parser.add_argument("--smoke", action="store_true",
                        help="a small estate of the same shape (500 principals x 1,000 resources), each timing once")
    args = parser.parse_args(argv)
    size = SMOKE if args.smoke else FULL
    spark = grids.local_session(args.master, "kafkasec-bench-cluster")
    print(f"machine: {platform.platform()}, cpus {os.cpu_count()}, python {sys.version.split()[0]}, "
          f"master {args.master}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| ACLs | principal classes | resource classes | exceptions | "
          f"compact grid end to end ({size.principals * size.resources:,} cells) "
          "| driver CompactGrid.build (best of 3) "
          "| allowed READ pairs (from the compact frames, best and median of 5; end to end) | the same, User:* may read t1- "
          "| dense cells, broadcast (best and median of 3) | dense cells, shuffled (the same) "
          "| peak JVM heap |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    estates = ([partial(hard_estate, size=size)] if args.estate == "hard"
               else [partial(estate, int(n), size=size) for n in args.acls.split(",")])
    for make in estates:
        print(measure(spark, *make(), size=size), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
