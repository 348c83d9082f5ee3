"""``kafkasec grid``: who can do what, over principals x resources, on Spark.

The ACLs come from the state file (``--state``) or from a running cluster (``--bootstrap-server``:
DescribeAcls, so the grid shows what the cluster enforces); principals and resources from CSV
(with a header) or Parquet files, or, from a cluster when not given, the principals its ACLs
name and its topics, groups and cluster resource (Metadata, ListGroups). Principals are
expanded as the security's plugins expand them (group membership), so the grid is the access
users have. The grid goes to Parquet or CSV, with its provenance beside it
(``_provenance.json``). Runs on ``local[*]`` unless ``--master`` names a cluster. docs/grids.md
describes it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import sys
import time
import urllib.parse

import attrs

from kafkasec.acl import CLUSTER_NAME, WILDCARD_PRINCIPAL, ResourceType
from kafkasec.cli.acl_files import file_format, read_acl_file
from kafkasec.cli.config import (
    cluster_security,
    command_properties,
    on_cluster,
    open_cluster,
    open_security,
    state_path,
)
from kafkasec.cli.options import (
    CommandError,
    UsageError,
    global_options,
    operation_argument,
)
from kafkasec.cli.output_paths import check_output_directory, check_output_file

OUTPUT_TYPES = ("dense", "allowed", "compact")
FORMATS = ("parquet", "csv")


def register(commands) -> None:
    """Add ``grid`` to the top-level subparsers."""
    parser = commands.add_parser(
        "grid",
        help="evaluate the ACLs over principals x resources on Spark",
        description="Write who can do what over every principal x resource pair, by the ACLs in the state file.",
        parents=[global_options(argparse.SUPPRESS)],
    )
    parser.add_argument("--principals", metavar="FILE",
                        help="CSV (with a header) or Parquet: a principal column (Type:name), optionally host "
                        "(with --bootstrap-server, default: the principals the cluster's ACLs name)")
    parser.add_argument("--resources", metavar="FILE",
                        help="CSV (with a header) or Parquet: resource_type (name or code) and resource_name "
                        "(with --bootstrap-server, default: the cluster's topics, groups and cluster resource)")
    parser.add_argument("--output", required=True, metavar="DIR", help="where to write the grid (a directory)")
    parser.add_argument("--format", choices=FORMATS, default="parquet", help="the output format (default parquet)")
    parser.add_argument("--output-type", choices=OUTPUT_TYPES, default="dense",
                        help="dense: every pair; allowed: pairs allowed --operation; compact: class tables")
    parser.add_argument("--operation", type=operation_argument, help="with --output-type allowed: the operation")
    parser.add_argument("--master", default="local[*]", help="the Spark master (default local[*])")
    parser.add_argument("--conf", type=spark_conf_argument, action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf (repeatable); it wins over kafkasec's "
                        "defaults and over PYSPARK_SUBMIT_ARGS")
    parser.add_argument("--spark-ui", action="store_true",
                        help="start the Spark UI (off by default; its address is printed; spark.ui.port sets the port)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="name each stage and its time on standard error, with Spark's progress bar "
                        "(default: on when standard error is a terminal)")
    parser.add_argument("--report", metavar="FILE",
                        help="also write the audit report: one HTML page to search, filter and drill into")
    parser.add_argument("--what-if", metavar="ACL_FILE",
                        help="with --report: the ACLs of this file (as acls import reads it) added, shown beside today's")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing --output (never one holding the state file or the inputs) and --report")
    parser.set_defaults(run=run_grid)


def run_grid(args) -> int:
    if args.output_type == "allowed" and args.operation is None:
        raise UsageError("--output-type allowed needs --operation")
    if args.output_type != "allowed" and args.operation is not None:
        raise UsageError('Option "--operation" needs "--output-type allowed"')
    cluster = on_cluster(args)
    for option, path in (("--principals", args.principals), ("--resources", args.resources)):
        if path is None and not cluster:
            raise UsageError(f"{option} is needed (or --bootstrap-server, which reads them from the cluster)")
        if path is not None and not os.path.exists(path):
            raise UsageError(f"no such file: {path}")
    # Checked before Spark starts, and before anything is written: Spark's overwrite deletes.
    keep = [path for path in (args.principals, args.resources) if path is not None]
    if not cluster:
        keep.append(state_path(args, command_properties(args)))
    check_output_directory(args.output, overwrite=args.overwrite, keep=keep)
    if args.report:
        check_output_file(args.report, force=args.overwrite, option="--report")
    if args.what_if is not None and not args.report:
        raise UsageError("--what-if shows a change in the --report: give --report FILE")
    added = read_acl_file(args.what_if, file_format(None, args.what_if)) if args.what_if else None
    check_master(args.master)
    try:
        from pyspark.sql import SparkSession

        from spark_udfs.spark import build_compact, grid, local_session, readable_cells
    except ImportError as error:
        raise UsageError(f"kafkasec grid needs the 'spark' extra (pip install 'kafkasec[spark]'): {error}") from None
    progress = Progress(sys.stderr.isatty() if args.progress is None else args.progress, STAGES)
    already_running = SparkSession.getActiveSession() is not None
    # The ACLs are opened (the state file, or the cluster asked) before Spark starts, which
    # takes half a minute: a wrong --state or --bootstrap-server is reported at once.
    with _grid_security(args) as (security, listed_principals, listed_resources):
        progress.stage("starting Spark")
        spark = _start_spark(lambda: local_session(args.master, "kafkasec-grid", progress=progress.enabled,
                                                   ui=args.spark_ui, conf=dict(args.conf)), args.master)
        if args.spark_ui:
            print(f"the Spark UI is at {spark.sparkContext.uiWebUrl}", file=sys.stderr, flush=True)
        try:
            progress.stage("reading the ACLs, principals and resources")
            principals = _read(spark, args.principals) if args.principals else spark.createDataFrame(
                listed_principals, "principal string")
            resources = _read(spark, args.resources) if args.resources else spark.createDataFrame(
                listed_resources, "resource_type string, resource_name string")
            count = len(security.acls())
            progress.stage(f"evaluating {count} ACL{'' if count == 1 else 's'} over the principals and resources")
            # One compact grid for the command: the grid's frames and the report read the same.
            compact = build_compact(security, principals, resources)
            result = grid(spark, security, principals, resources, output=args.output_type, operation=args.operation,
                          compact=compact)
            provenance = _provenance(args, security, compact)
            if args.report:
                from spark_udfs.report import html_report

                # Today's ACLs and the file's, judged by the report with the security's settings
                # (spark_udfs.rules, which also drops an added ACL that is already there).
                after = None if added is None else [stored.binding for stored in security.authorizer.stored_acls()] + list(added)
                html_report(security, compact.principals, compact.resources, args.report, compact=compact, after=after,
                            provenance=provenance)
                print(f"wrote the audit report to {args.report}")
            if args.output_type == "compact":
                frames = {name: getattr(result, name) for name in ("principals", "resources", "base", "exceptions")}
            else:
                frames = {"grid": readable_cells(result, names_as="text" if args.format == "csv" else "array")}
            if progress.enabled:
                next(iter(frames.values())).limit(1).collect()
                progress.note("the first result is ready")
            progress.stage(f"writing the {args.output_type} grid")
            _write(frames, args.output, args.format)
            _write_provenance(spark, args.output, {
                **attrs.asdict(provenance), "output_type": args.output_type, "format": args.format,
                "operation": None if args.operation is None else args.operation.name})
            progress.note("done")
            print(f"wrote the {args.output_type} grid to {args.output} ({args.format})")
            return 0
        finally:
            if not already_running:
                spark.stop()


def _provenance(args, security, compact):
    """What the grid was made of; from a cluster, the cluster is its source (its ACLs were read
    by DescribeAcls, outside any security log of ours)."""
    from spark_udfs.provenance import Provenance

    provenance = Provenance.of(security, len(compact.principals), len(compact.resources))
    if on_cluster(args):
        return attrs.evolve(provenance, source=f"cluster {args.bootstrap_server}", log_position=None)
    return provenance


PROVENANCE_FILE = "_provenance.json"
"""The grid's provenance in ``--output`` (Spark's readers skip names that start with ``_``)."""


def _write_provenance(spark, output: str, document: dict) -> None:
    """``document`` as JSON in ``output/_provenance.json``: with Python where the driver writes
    the output's directory itself, through Hadoop's file system (as Spark wrote the grid) for
    an ``hdfs://`` or ``s3a://`` URI."""
    text = json.dumps(document, indent=1) + "\n"
    location = urllib.parse.urlparse(output)
    if location.scheme in ("", "file"):
        with open(os.path.join(output if location.scheme == "" else location.path, PROVENANCE_FILE), "w", encoding="utf-8") as file:
            file.write(text)
        return
    path = spark._jvm.org.apache.hadoop.fs.Path(output.rstrip("/") + "/" + PROVENANCE_FILE)
    stream = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


MASTER_CONNECT_TIMEOUT_S = 3.0
"""How long ``--master spark://`` may take to accept a TCP connection before grid gives up."""
_LOCAL_MASTER = re.compile(r"local(?:\[(?:[1-9][0-9]*|\*)(?:\s*,\s*[1-9][0-9]*)?\])?")
_LOCAL_CLUSTER_MASTER = re.compile(r"local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]")
MASTER_FORMS = "local, local[N], local[*], local[N,F], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://HOST:PORT"


def spark_conf_argument(text: str) -> tuple[str, str]:
    """``--conf KEY=VALUE``, split at the first ``=`` as spark-submit does."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (a Spark setting, as spark-submit's --conf)")
    if not key.startswith("spark."):
        # spark-submit ignores such keys with a warning: a misspelt key would be lost unseen.
        raise argparse.ArgumentTypeError(f"{key!r} is not a Spark setting (those start with spark.)")
    return key, value


def check_master(master: str) -> None:
    """Refuse a --master that Spark would refuse, or a standalone master that does not accept a
    connection, in one line and before Spark starts: Spark itself answers a bad form with a JVM
    stack trace, and an unreachable standalone master with three 20 s registration attempts."""
    if _LOCAL_MASTER.fullmatch(master) or _LOCAL_CLUSTER_MASTER.fullmatch(master) or master == "yarn":
        return
    if master.startswith("k8s://") and len(master) > len("k8s://"):
        return  # Kubernetes answers through its own client, with its own timeouts
    if not master.startswith("spark://"):
        raise UsageError(f"--master {master}: not a Spark master URL; expected {MASTER_FORMS}")
    problems = []
    for address in master[len("spark://"):].split(","):
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"--master {master}: {address!r} is not HOST:PORT; expected {MASTER_FORMS}")
        try:
            # Spark's standalone masters listen with HA on several hosts; one that answers is enough.
            with socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_CONNECT_TIMEOUT_S):
                return
        except OSError as error:
            problems.append(f"{address} ({error or type(error).__name__})")
    raise CommandError(
        f"--master {master}: no Spark master accepts a connection within {MASTER_CONNECT_TIMEOUT_S:g} s: {', '.join(problems)}"
    )


def _start_spark(start, master: str):
    """The session ``start()`` makes on ``master``; a failure to start is one line naming the
    master and the cause (Spark's message, without the JVM's stack trace)."""
    try:
        return start()
    except RuntimeError as error:  # no Java: local_session's own message
        raise CommandError(str(error)) from None
    except Exception as error:  # noqa: BLE001  (Py4J's errors carry the JVM's; any is reported)
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        cause = next((line[1:].strip() for line in lines if line.startswith(":")), lines[0] if lines else type(error).__name__)
        raise CommandError(f"Spark did not start on --master {master}: {cause}") from None


STAGES = 4


class Progress:
    """Each stage named on standard error, with the time since the command started."""

    def __init__(self, enabled: bool, stages: int):
        self.enabled = enabled
        self.stages = stages
        self.number = 0
        self.started = time.monotonic()

    def stage(self, text: str) -> None:
        self.number += 1
        self.note(f"[{self.number}/{self.stages}] {text}")

    def note(self, text: str) -> None:
        if self.enabled:
            print(f"kafkasec grid: {text} ({time.monotonic() - self.started:.1f} s)", file=sys.stderr, flush=True)


def _write(frames: dict, output: str, file_format: str) -> None:
    """Parquet as Spark writes it: a directory per frame (the grid's is ``output`` itself). CSV as
    one file per frame with one header, ``output/<name>.csv``, for people and spreadsheets.

    Each write counts the rows its tasks wrote (an Observation, counted as the rows go out), and
    :func:`check_written` then holds them against the part files the driver sees, so that a
    directory only the driver has is an error, not a grid that silently lacks the executors' parts."""
    from pyspark.sql import Observation, functions as F

    def observed(name, frame):
        written = Observation(f"kafkasec grid {name}")
        return frame.observe(written, F.count(F.lit(1)).alias("rows")), written

    try:
        if file_format == "parquet":
            for name, frame in frames.items():
                directory = output if name == "grid" else os.path.join(output, name)
                counted, written = observed(name, frame)
                counted.write.mode("overwrite").parquet(directory)
                location = urllib.parse.urlparse(directory)
                if location.scheme in ("", "file"):  # hdfs://, s3a://...: one store that every machine writes to
                    local = directory if location.scheme == "" else location.path
                    check_written(output, written.get["rows"], sum(_parquet_rows(local)))
            return
        if os.path.isdir(output):
            shutil.rmtree(output)  # check_output_directory allowed it: new, empty or --overwrite
        os.makedirs(output)
        for name, frame in frames.items():
            scratch = os.path.join(output, f".{name}.spark")
            counted, written = observed(name, frame)
            counted.coalesce(1).write.mode("overwrite").option("header", True).csv(scratch)
            parts = [entry for entry in os.listdir(scratch) if entry.startswith("part-") and entry.endswith(".csv")]
            # One task wrote the one part file and committed it whole, by a rename: here, it holds every row.
            check_written(output, written.get["rows"], written.get["rows"] if parts else 0)
            target = os.path.join(output, f"{name}.csv")
            if parts:
                os.replace(os.path.join(scratch, parts[0]), target)
            if not parts or os.path.getsize(target) == 0:  # an empty grid: Spark writes no header
                with open(target, "w", encoding="utf-8") as file:
                    file.write(",".join(frame.columns) + "\n")
            shutil.rmtree(scratch)
    except CommandError:
        # What is there lacks rows (and Parquet's _SUCCESS would say otherwise): nothing half-written stays.
        shutil.rmtree(output, ignore_errors=True)
        raise


def check_written(output: str, rows_written: int, rows_found: int) -> None:
    """Refuse a grid whose rows did not all reach ``output`` as the driver sees it: on a cluster
    whose executors write part files to their own local disks, the driver's directory ends up
    with none of them (Parquet's ``_SUCCESS`` alone, a CSV with only its header)."""
    if rows_found == rows_written:
        return
    raise CommandError(
        f"--output {output}: {rows_written - rows_found:,} of {rows_written:,} rows are not in {output}: the executors "
        "wrote them to their own disks; give a directory that the driver and every executor share "
        "(a shared mount such as NFS, or for Parquet an hdfs:// or s3a:// URI)"
    )


def _parquet_rows(directory: str):
    """The row count of each Parquet part file in ``directory``, from its footer."""
    import pyarrow.parquet as pq

    for entry in sorted(os.listdir(directory)):
        if not entry.startswith(("_", ".")):
            yield pq.ParquetFile(os.path.join(directory, entry)).metadata.num_rows


@contextlib.contextmanager
def _grid_security(args):
    """The security whose ACLs the grid evaluates, and (from a cluster) its principals and resources."""
    if not on_cluster(args):
        with open_security(args) as security:
            yield security, [], []
        return
    with open_cluster(args) as admin:
        security = cluster_security(args, admin)
        resources = [(ResourceType.TOPIC.name, topic) for topic in admin.topics()]
        resources += [(ResourceType.GROUP.name, group) for group in admin.groups()]
        resources.append((ResourceType.CLUSTER.name, CLUSTER_NAME))
    with security:
        principals = sorted({binding.entry.principal for binding in security.acls()} - {WILDCARD_PRINCIPAL})
        yield security, [(principal,) for principal in principals], resources


def _read(spark, path: str):
    if path.endswith(".parquet") or os.path.isdir(path):
        return spark.read.parquet(path)
    return spark.read.option("header", True).csv(path)

