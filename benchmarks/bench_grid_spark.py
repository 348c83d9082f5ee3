"""Grids on local Spark, side by side in one run: the Arrow UDF against a row-at-a-time Python
UDF that calls StandardAuthorizer.authorized_operations per pair, and the factorized allowed
grid materialized (written to a noop sink) against the same grid by the Arrow UDF.

    python benchmarks/bench_grid_spark.py [--quick | --smoke] [--master local[2]]

The workload is bench_grid.py's (10,000 ACLs) plus one User:* READ ALLOW on the prefix "app",
so that most cells of the grid are allowed pairs. The UDF is timed after a warm-up batch (Python
workers started, broadcast ACLs loaded), as a long job sees it. Prints a Markdown table and the machine.

``--quick``: 400,000 pairs and a 1,000 x 2,000 grid. ``--smoke``: a few thousand of each and one
Arrow batch size, to check that the script works (its numbers mean little).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import operations_to_bitfield
from spark_udfs import spark as grids

sys.path.insert(0, os.path.dirname(__file__))
from bench_grid import workload  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Sizes:
    pairs: int
    """Pairs the Arrow UDF evaluates (the row-at-a-time UDF: ``baseline_pairs``)."""
    baseline_pairs: int
    grid: tuple[int, int]
    """Principals x resources of the allowed grid."""
    acls: int
    rss_acls: int
    """ACLs of the index broadcast for the workers' peak RSS."""
    batch_rows: tuple[int, ...]
    """The Arrow batch sizes tried."""


FULL = Sizes(2_000_000, 100_000, (4_000, 5_000), 10_000, 100_000, (10_000, 100_000, 1_000_000))
QUICK = dataclasses.replace(FULL, pairs=400_000, baseline_pairs=20_000, grid=(1_000, 2_000))
SMOKE = Sizes(5_000, 1_000, (100, 200), 1_000, 10_000, (10_000,))


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="400,000 pairs, a 1,000 x 2,000 grid")
    size.add_argument("--smoke", action="store_true", help="a few thousand pairs and cells: does the script work?")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    rows, baseline_rows = sizes.pairs, sizes.baseline_pairs
    principals_n, resources_n = sizes.grid
    acl_count = sizes.acls
    authorizer = workload(acl_count)
    # Everyone may read the app topics: the allowed grid below is then most of the cells, to
    # measure how fast allowed pairs are materialized.
    authorizer.create_acls([AclBinding.of("TOPIC", "app", "PREFIXED", "User:*", "*", "READ", "ALLOW")])
    spark = grids.local_session(args.master, "kafkasec-bench")
    named = acl_count // 10
    pairs = spark.range(rows).select(
        F.concat(F.lit("User:u"), (F.col("id") % named).cast("string")).alias("principal"),
        F.concat(F.lit("10.0.0."), (F.col("id") % 250).cast("string")).alias("host"),
        F.when(F.col("id") % 5 == 0, F.lit(3)).otherwise(F.lit(2)).alias("resource_type"),
        F.concat(F.lit("app"), (F.col("id") % (acl_count // 3 + 1)).cast("string"), F.lit("-topic"),
                 ((F.col("id") * 7919) % acl_count).cast("string")).alias("resource_name"),
    ).cache()
    pairs.count()
    udf = grids.authorized_operations_udf(spark, authorizer)

    bindings = authorizer.acls()  # picklable; each worker builds its own authorizer once

    def row_at_a_time(principal, host, resource_type, resource_name):
        # Kept on an imported module, so it lives as long as the Python worker (a closure's
        # own state would be unpickled afresh for every task).
        import kafkasec.authorizer as worker_module

        local = getattr(worker_module, "_bench_row_at_a_time", None)
        if local is None:
            local = worker_module._bench_row_at_a_time = StandardAuthorizer("User:admin")
            local.create_acls(bindings)
        context = RequestContext(KafkaPrincipal.parse(principal), host)
        return operations_to_bitfield(local.authorized_operations(context, ResourcePattern(resource_type, resource_name)))

    slow = F.udf(row_at_a_time, IntegerType())
    columns = ("principal", "host", "resource_type", "resource_name")
    # Warm up: start the Python workers and load the broadcast ACLs, which a long job pays once.
    pairs.limit(10_000).select(udf(*columns).alias("ops")).write.format("noop").mode("overwrite").save()
    arrow_s = timed(lambda: pairs.select(udf(*columns).alias("ops")).write.format("noop").mode("overwrite").save())
    small = pairs.limit(baseline_rows).cache()
    small.count()
    small.limit(1_000).select(slow(*columns).alias("ops")).write.format("noop").mode("overwrite").save()  # warm up
    python_s = timed(lambda: small.select(slow(*columns).alias("ops")).write.format("noop").mode("overwrite").save())
    arrow_rate, python_rate = rows / arrow_s, baseline_rows / python_s
    by_batch = {}
    for batch in sizes.batch_rows:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch))
        by_batch[batch] = rows / timed(
            lambda: pairs.select(udf(*columns).alias("ops")).write.format("noop").mode("overwrite").save()
        )
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(grids.ARROW_BATCH_ROWS))

    principals = spark.range(principals_n).select(
        F.concat(F.lit("User:u"), (F.col("id") % named).cast("string")).alias("principal"),
        F.concat(F.lit("10.0.0."), (F.col("id") % 250).cast("string")).alias("host"),
    )
    resources = spark.range(resources_n).select(
        F.lit(2).alias("resource_type"),
        F.concat(F.lit("app"), (F.col("id") % (acl_count // 3 + 1)).cast("string"), F.lit("-topic"), F.col("id").cast("string")).alias("resource_name"),
    )
    allowed = grids.grid(spark, authorizer, principals, resources, output="allowed", operation="READ")
    count = allowed.count()
    factorized_s = timed(lambda: allowed.write.format("noop").mode("overwrite").save())
    original = grids.MAX_CLASS_VALUES
    grids.MAX_CLASS_VALUES = -1  # the same grid pair by pair with the Arrow UDF
    by_udf = grids.grid(spark, authorizer, principals, resources, output="allowed", operation="READ")
    grids.MAX_CLASS_VALUES = original
    udf_grid_s = timed(lambda: by_udf.write.format("noop").mode("overwrite").save())
    cells = principals_n * resources_n

    print(f"machine: {platform.platform()}, cpus {os.cpu_count()}, python {sys.version.split()[0]}, "
          f"master {args.master}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| case | kafkasec | baseline | ratio |")
    print("|---|---|---|---|")
    print(f"| Arrow UDF, {rows:,} pairs (vs a row-at-a-time Python UDF, {baseline_rows:,} pairs) "
          f"| {arrow_rate / 1e6:.2f} M pairs/s | {python_rate / 1e6:.3f} M pairs/s | {arrow_rate / python_rate:.1f}x |")
    print(f"| allowed READ pairs of a {principals_n:,} x {resources_n:,} grid ({count:,} pairs), factorized "
          f"(vs the same grid by the Arrow UDF) | {count / factorized_s / 1e6:.2f} M pairs/s ({factorized_s:.1f} s) "
          f"| {count / udf_grid_s / 1e6:.2f} M pairs/s ({udf_grid_s:.1f} s, {cells:,} cells evaluated) "
          f"| {udf_grid_s / factorized_s:.1f}x |")
    worker_rss = worker_peak_rss(spark, pairs, sizes.rss_acls)
    print(f"\nPython worker peak RSS with the {sizes.rss_acls:,}-ACL index broadcast, after evaluating {rows:,} pairs: "
          f"{worker_rss:.0f} MiB (target: no Python worker above 2 GB)")
    print("\nArrow batch size (spark.sql.execution.arrow.maxRecordsPerBatch), same UDF and pairs: " + ", ".join(
        f"{batch:,} rows: {rate / 1e6:.2f} M pairs/s" for batch, rate in by_batch.items()))
    spark.stop()
    return 0


def worker_peak_rss(spark, pairs, acl_count: int) -> float:
    """The largest peak RSS (MiB) of the Python workers that evaluated ``pairs`` against an
    index of ``acl_count`` ACLs, each worker reporting its own getrusage."""
    broadcast = spark.sparkContext.broadcast(grids.compile_acls(workload(acl_count)))

    @arrow_udf(IntegerType())
    def peak_rss(principal: pa.Array, host: pa.Array, resource_type: pa.Array, resource_name: pa.Array) -> pa.Array:
        import resource

        broadcast.value.authorized_operations(principal, host, resource_type, resource_name)
        return pa.array([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024] * len(principal), pa.int32())

    columns = ("principal", "host", "resource_type", "resource_name")
    return pairs.select(peak_rss(*columns).alias("rss")).agg(F.max("rss")).first()[0]


if __name__ == "__main__":
    sys.exit(main())
