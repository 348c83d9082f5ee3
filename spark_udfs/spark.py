"""ACL grids on Spark: the evaluator as an Arrow UDF, and grids of principals x resources.

The compiled ACLs (:class:`~spark_udfs.evaluator.CompiledAcls`) are broadcast once; each Python
worker unpickles them on first use and keeps them while the worker lives (PySpark reuses
workers), so a batch costs only the vectorized evaluation. Arrow batches of 100,000 rows
(``spark.sql.execution.arrow.maxRecordsPerBatch``) keep the per-batch overhead small.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping

import attrs
import numpy as np
import pyarrow as pa
from pyspark import SparkConf, SparkContext
from pyspark.sql import Column, DataFrame, SparkSession, functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from kafkasec.acl import BITFIELD_OPERATIONS, AclOperation, ResourceType
from spark_udfs import shipping
from spark_udfs.compact import AllowedBlocks, CompactGrid
from spark_udfs.rules import compile_acls

ARROW_BATCH_ROWS = 100_000
OUTPUTS = ("dense", "allowed", "compact")


def local_session(
    master: str = "local[*]",
    app_name: str = "kafkasec-grid",
    *,
    progress: bool = False,
    ui: bool = False,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for grids (or the one already running, as it is, with only ``conf``
    applied); a clear error when Java is missing (Spark needs Java 17+).

    What the user configured stays: Spark settings from ``PYSPARK_SUBMIT_ARGS``'s ``--conf``
    and ``spark-defaults.conf`` are read first, and the defaults below apply only where they
    say nothing: Arrow batches of ARROW_BATCH_ROWS, no Spark UI, and on local masters
    ``spark.sql.shuffle.partitions`` of four per core. ``progress`` shows Spark's console
    progress bar (else it is off, whatever a shell's settings say), ``ui`` starts the Spark UI
    (its address in ``sparkContext.uiWebUrl``), and ``conf`` (Spark settings, as
    spark-submit's ``--conf``) wins over all of these.

    The executors' Python: ``spark.pyspark.python`` when set, else ``PYSPARK_PYTHON``, as Spark
    orders them; with neither, this Python (``sys.executable``) on every master, not the first
    ``python3`` on a PATH, which need not have pyarrow or be this version (the shipped modules
    need both). A cluster whose workers keep Python at another path says where with
    ``spark.pyspark.python`` (``kafkasec grid --conf``)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError("Spark needs Java 17 or newer: install a JDK or set JAVA_HOME")
    builder = SparkSession.builder.master(master).appName(app_name)
    running = SparkSession.getActiveSession() is not None
    settings = {} if running else _session_defaults(master, progress=progress, ui=ui)
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if running:
        return session
    context = session.sparkContext
    python = context.getConf().get("spark.pyspark.python")
    if python is None and "PYSPARK_PYTHON" not in os.environ:
        python = sys.executable
    if python is not None:
        # PySpark reads only PYSPARK_PYTHON when it starts in a Python process; the UDFs made
        # from now on carry this to the executors.
        context.pythonExec = python
    context.setLogLevel("ERROR")
    return session


def _session_defaults(master: str, *, progress: bool, ui: bool) -> dict[str, str]:
    """local_session's settings: its defaults where the user's configuration says nothing, and
    what ``progress`` and ``ui`` ask for."""
    # The JVM holds what the user configured (spark-submit's --conf, spark-defaults.conf) as
    # system properties, which SparkConf reads once the JVM runs.
    SparkContext._ensure_initialized()
    configured = SparkConf()
    defaults = {
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.ui.enabled": "false",
    }
    if shipping.is_local(master):
        # Spark's 200 shuffle partitions are for clusters: on a few local cores the class
        # tables' joins spend more on scheduling 200 tasks than on the rows (1.8 s against
        # 1.4 s for an allowed grid of 233,389 pairs, bench_grid_cluster.py's estate).
        defaults["spark.sql.shuffle.partitions"] = str(4 * (os.cpu_count() or 1))
    settings = {key: value for key, value in defaults.items() if not configured.contains(key)}
    if ui:
        settings["spark.ui.enabled"] = "true"
    # Whatever a shell's configuration says: PYSPARK_SUBMIT_ARGS' pyspark-shell turns the bar on.
    settings["spark.ui.showConsoleProgress"] = str(progress).lower()
    return settings


def authorized_operations_udf(spark: SparkSession, acls, principals: DataFrame | Iterable[str] | None = None):
    """An Arrow UDF ``(principal, host, resource_type, resource_name) -> int`` giving the
    KIP-430 bitfield of each row; ``acls`` as :func:`compile_acls` takes them. On a cluster,
    what the UDF imports is shipped to the executors first (:mod:`spark_udfs.shipping`).

    When ``acls`` expand principals (plugins such as ``kafkasec_groupfile``), the expansion is
    applied on the driver: ``principals`` (a frame with a ``principal`` column, or the
    principals' ``Type:name``) names every principal the rows may hold, and a row of another
    principal fails its task with a ValueError that names it."""
    shipping.ship_to_executors(spark)
    compiled = compile_acls(acls, principals=() if principals is None else _principal_names(principals))
    if compiled.expansion is not None and principals is None:
        raise ValueError("these ACLs apply to principals through plugins that expand them (on the driver): "
                         "pass principals=, the frame or names of the principals the rows hold")
    broadcast = spark.sparkContext.broadcast(compiled)

    # pyspark's stubs type only the functionType= form, which warns; the type hints say SCALAR.
    @arrow_udf(IntegerType())  # type: ignore[call-overload]
    def authorized_operations(principal: pa.Array, host: pa.Array, resource_type: pa.Array, resource_name: pa.Array) -> pa.Array:
        return pa.array(broadcast.value.authorized_operations(principal, host, resource_type, resource_name), pa.int32())

    return authorized_operations


def _principal_names(principals: DataFrame | Iterable[str]) -> list[str]:
    """The distinct principals of a frame's ``principal`` column (collected as Arrow), or the names given."""
    if isinstance(principals, DataFrame):
        _check_columns(principals, None)
        return principals.select("principal").distinct().toArrow().column("principal").to_pylist()
    return list(principals)


def operation_names(bitfield: Column | str) -> Column:
    """The names of the operations in a bitfield column, as an array (in code order)."""
    column = F.col(bitfield) if isinstance(bitfield, str) else bitfield
    return F.array_compact(F.array(*[
        F.when(column.bitwiseAND(F.lit(1 << op)) != 0, F.lit(op.name)) for op in BITFIELD_OPERATIONS
    ]))


def readable_cells(cells: DataFrame, *, names_as: str = "array") -> DataFrame:
    """Grid cells for people: the resource type by name, ``operations`` as the operations'
    names (an array, or with ``names_as="text"`` one space-separated string, for CSV) and the
    KIP-430 ``bitfield`` beside them."""
    type_names = F.create_map(*[item for rt in ResourceType for item in (F.lit(int(rt)), F.lit(rt.name))])
    names = operation_names("operations")
    if names_as == "text":
        names = F.array_join(names, " ")
    elif names_as != "array":
        raise ValueError(f"names_as is 'array' or 'text', not {names_as!r}")
    return cells.select(
        "principal", "host", type_names[F.col("resource_type")].alias("resource_type"), "resource_name",
        names.alias("operations"), F.col("operations").alias("bitfield"),
    )


MAX_CLASS_VALUES = 50_000_000
"""Above this many base values plus exceptions, grid() evaluates pairs with the Arrow UDF
instead of shipping class tables (the tables would no longer be small)."""


BROADCAST_BYTES_PER_ROW = 128
"""What one row of a class table costs an executor once broadcast as a hashed relation (an
UnsafeRow key and value of a few ints, the map's pointer and slack): the memory model of
docs/grids.md. Deliberately high: an estimate too low is an executor out of memory."""
BROADCAST_MEMORY_FRACTION = 0.1
"""The share of an executor's memory (``spark.executor.memory``, in local mode the driver's) a
grid's broadcasts may take together; larger tables are joined by shuffling, which spills."""


def broadcast_budget(spark: SparkSession) -> int:
    """Bytes the broadcasts of one grid may take on each executor (see BROADCAST_MEMORY_FRACTION)."""
    conf = spark.sparkContext.getConf()
    key = "spark.driver.memory" if shipping.is_local(spark.sparkContext.master or "local") else "spark.executor.memory"
    return int(_bytes(conf.get(key, "1g")) * BROADCAST_MEMORY_FRACTION)


def _bytes(size: str) -> int:
    """A JVM memory size (``512m``, ``1g``, ``1024k``, bytes) in bytes."""
    text = size.strip().lower().rstrip("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


@attrs.frozen
class CompactFrames:
    """A compact grid as four DataFrames that the JVM joins on integer class ids.

    ``principals`` (principal, host, pc, hc, super), ``resources`` (resource_type as its code,
    resource_name, rc, supported), ``base`` (rc, hc, operations) and ``exceptions`` (pc, rc,
    operations): a cell is its exception if there is one, else its base block; a super user's
    cells are ``supported``.

    ``broadcastable`` names the tables small enough to broadcast within the executors' budget
    (:func:`broadcast_budget`); the others are joined by shuffling, so that memory is bounded by
    the executors, not by the grid.
    """

    principals: DataFrame
    resources: DataFrame
    base: DataFrame
    exceptions: DataFrame
    broadcastable: frozenset[str] = frozenset({"principals", "base", "exceptions"})
    grid: CompactGrid = attrs.field(kw_only=True, repr=False)
    """The driver-side grid the frames were made of (its class tables answer allowed())."""

    def _small(self, name: str, frame: DataFrame) -> DataFrame:
        return F.broadcast(frame) if name in self.broadcastable else frame

    def dense(self) -> DataFrame:
        """Every cell: (principal, host, resource_type, resource_name, operations)."""
        pairs = self.resources.crossJoin(self._small("principals", self.principals))
        pairs = pairs.join(self._small("base", self.base), ["rc", "hc"]).withColumnRenamed("operations", "base_operations")
        pairs = pairs.join(self._small("exceptions", self.exceptions), ["pc", "rc"], "left")
        operations = F.when(F.col("super"), F.col("supported")).otherwise(
            F.coalesce(F.col("operations"), F.col("base_operations"))
        )
        return pairs.select(*_CELL_COLUMNS[:4], operations.alias("operations"))

    def allowed(self, operation: AclOperation | str | int) -> DataFrame:
        """The cells that allow ``operation``: the class blocks that allow it are found on the
        driver (:meth:`CompactGrid.allowed_blocks`, no cell), and Spark expands only those:
        base blocks minus revoking exceptions, granting exceptions, super users; a part with
        nothing to expand costs no Spark job."""
        bit = 1 << _operation(operation)
        blocks = self.grid.allowed_blocks(bit)
        spark = self.principals.sparkSession
        parts = []
        if len(blocks.base_rc):
            base = _int_frame(spark, rc=blocks.base_rc, hc=blocks.base_hc, operations=blocks.base_bits)
            from_base = self.resources.join(self._small("base", base), "rc").join(self._ordinary(), "hc")
            if len(blocks.revoked_pc):
                revoked = _int_frame(spark, pc=blocks.revoked_pc, rc=blocks.revoked_rc)
                from_base = from_base.join(self._small("exceptions", revoked), ["pc", "rc"], "left_anti")
            parts.append(from_base.select(*_CELL_COLUMNS))
        if len(blocks.granted_pc):
            parts.append(self._granted_cells(blocks))
        if self.grid.class_is_super.any() and blocks.super_allowed.any():
            parts.append(self.principals.where(F.col("super")).crossJoin(
                self.resources.where(F.col("supported").bitwiseAND(F.lit(bit)) != 0)
            ).select(*_CELL_COLUMNS[:4], F.col("supported").alias("operations")))
        if not parts:
            return spark.createDataFrame([], _CELL_SCHEMA)
        cells = parts[0]
        for part in parts[1:]:
            cells = cells.unionByName(part)
        return cells

    def _granted_cells(self, blocks: AllowedBlocks) -> DataFrame:
        """The cells of the granting exceptions. When few enough (GRANTS_IN_PLAN_BYTES), they
        travel inside the query plan as one constant, an array that lists for each resource
        class the principals it grants, which each resource indexes by its class and explodes:
        one stage, no exchange, no join, so a grid's few hundred thousand allowed pairs cost
        Spark one query, not three. Else principals, exceptions and resources are joined, each
        table within the frames' broadcast budget."""
        grants = self._grants_by_class(blocks)
        if grants is not None:
            # from_json of a literal is folded to a constant when the query is optimized;
            # FAILFAST: a pair the parser dropped would be a grant silently missing. An array,
            # not a map: Spark looks a key up in a map by walking its keys.
            by_rc = F.from_json(F.lit(grants), _GRANTS_BY_CLASS, {"mode": "FAILFAST"})
            cells = self.resources.select("*", F.inline(F.get(by_rc, F.col("rc"))))
            # "& supported" changes no bit (a cell only holds operations its type supports), but
            # it keeps every column of the resource table in use: else Spark, optimizing each
            # query, evaluates a pruning projection over the whole local relation (30 ms a query
            # at 50,000 resources, measured).
            return cells.selectExpr("p AS principal", "h AS host", "resource_type", "resource_name", "o & supported AS operations")
        granted = _int_frame(self.principals.sparkSession, pc=blocks.granted_pc, rc=blocks.granted_rc,
                             operations=blocks.granted_bits)
        cells = self._ordinary().join(self._small("exceptions", granted), "pc").join(self.resources, "rc")
        return cells.select(*_CELL_COLUMNS)

    def _grants_by_class(self, blocks: AllowedBlocks) -> str | None:
        """The granting exceptions expanded to their principals, as the JSON of
        ``_GRANTS_BY_CLASS``; None past GRANTS_IN_PLAN_BYTES (checked on the number of pairs
        and classes before any is listed, so that a class of a million principals is not
        expanded here)."""
        grid = self.grid
        pairs = int(grid.principals_per_class()[blocks.granted_pc].sum())
        if pairs * _SMALLEST_GRANT_JSON + len(grid.base) * len("[],") > GRANTS_IN_PLAN_BYTES:
            return None
        which, principal = grid.principals_of(blocks.granted_pc)
        by_class: list[list[dict]] = [[] for _ in range(len(grid.base))]
        for rc, index, bits in zip(blocks.granted_rc[which].tolist(), principal.tolist(), blocks.granted_bits[which].tolist()):
            name, host = grid.principals[index]
            by_class[rc].append({"p": name, "h": host, "o": bits})
        text = json.dumps(by_class, separators=(",", ":"))
        return text if len(text) <= GRANTS_IN_PLAN_BYTES else None

    def _ordinary(self) -> DataFrame:
        """The principals that are not super users."""
        return self.principals.where(~F.col("super"))


GRANTS_IN_PLAN_BYTES = 1 << 20
"""The largest constant (its JSON text) in which allowed() carries granting exceptions inside
the query plan (see CompactFrames._granted_cells). Every task holds a parsed copy, measured at
4.5 times the text (about 230 bytes a pair): at most 4.7 MB a task."""

_GRANTS_BY_CLASS = "array<array<struct<p: string, h: string, o: int>>>"  # per resource class: principal, host, operations
_SMALLEST_GRANT_JSON = len(json.dumps({"p": "", "h": "", "o": 0}, separators=(",", ":")))


def _int_frame(spark: SparkSession, **columns: np.ndarray) -> DataFrame:
    """A DataFrame of int columns from numpy arrays, as one Arrow table (:func:`_arrow_frame`)."""
    return _arrow_frame(spark, _int_table(**columns))


def _int_table(**columns: np.ndarray) -> pa.Table:
    return pa.table({name: pa.array(values, pa.int32()) for name, values in columns.items()})


_LOCAL_RELATION_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"


def _arrow_frame(spark: SparkSession, table: pa.Table) -> DataFrame:
    """A DataFrame of an Arrow table that stays Arrow batches in an RDD, decoded by the tasks.
    Below Spark's localRelationThreshold it would be a local relation instead: rows the driver
    converts one by one, which every query's plan then carries and the optimizer walks (the hard
    estate of bench_grid_cluster.py: its class frames 0.8 s -> 0.2 s to make, its 1,044,450
    allowed READ pairs 2.4 s -> 0.7 s). Each batch is a partition: at least one per core, so
    that a table streamed through a query (the resources of a dense grid) keeps every core busy."""
    cores = spark.sparkContext.defaultParallelism
    table = pa.Table.from_batches(table.to_batches(max_chunksize=max(1, -(-len(table) // cores))), table.schema)
    previous = spark.conf.get(_LOCAL_RELATION_THRESHOLD)
    spark.conf.set(_LOCAL_RELATION_THRESHOLD, "0")
    try:
        return spark.createDataFrame(table)
    finally:
        if previous is None:
            spark.conf.unset(_LOCAL_RELATION_THRESHOLD)
        else:
            spark.conf.set(_LOCAL_RELATION_THRESHOLD, previous)


_CELL_COLUMNS = ("principal", "host", "resource_type", "resource_name", "operations")
_CELL_SCHEMA = "principal string, host string, resource_type int, resource_name string, operations int"


def compact_frames(spark: SparkSession, compact: CompactGrid) -> CompactFrames:
    """A driver-side CompactGrid as DataFrames, each handed to Spark as one Arrow table: the
    JVM reads the columns, with no Python row per principal and no Python worker (the
    benchmarks' estate of 20,000 principals and 50,000 resources: 0.1 s, against 0.3 s as rows)."""
    int32 = pa.int32()
    pc = compact.principal_class
    # The principals and the base, broadcast into every dense grid, stay local relations: Spark
    # builds their broadcasts on the driver, with no job (dense cells 4.9-5.4 -> 5.5-7.8 M/s on
    # the hard estate's part, side by side); the resources, streamed, and the exceptions, large,
    # are Arrow batches (:func:`_arrow_frame`).
    principals = spark.createDataFrame(pa.table({
        **_principal_columns(compact),
        "pc": pa.array(pc, int32),
        "hc": pa.array(compact.class_host[pc], int32),
        "super": pa.array(compact.class_is_super[pc], pa.bool_()),
    }))
    rc = compact.resource_class
    resources = _arrow_frame(spark, pa.table({
        **_resource_columns(compact),
        "rc": pa.array(rc, int32),
        "supported": pa.array(compact.supported[rc], int32),
    }))
    n_rc, n_hc = compact.base.shape
    base = spark.createDataFrame(_int_table(rc=np.repeat(np.arange(n_rc), n_hc), hc=np.tile(np.arange(n_hc), n_rc),
                                            operations=compact.base.ravel()))
    exceptions = _int_frame(spark, pc=compact.exception_pc, rc=compact.exception_rc, operations=compact.exception_bits)
    # Broadcast the smallest tables first while the budget lasts.
    budget = broadcast_budget(spark)
    broadcastable = set()
    for name, rows in sorted({"principals": len(compact.principals), "base": n_rc * n_hc,
                              "exceptions": len(compact.exception_bits)}.items(), key=lambda item: item[1]):
        if rows * BROADCAST_BYTES_PER_ROW <= budget:
            broadcastable.add(name)
            budget -= rows * BROADCAST_BYTES_PER_ROW
    return CompactFrames(principals, resources, base, exceptions, frozenset(broadcastable), grid=compact)


def _principal_columns(compact: CompactGrid) -> dict[str, pa.Array]:
    """The grid's principals as the Arrow columns ``principal`` and ``host``."""
    return {"principal": pa.array([name for name, _host in compact.principals], pa.string()),
            "host": pa.array([host for _name, host in compact.principals], pa.string())}


def _resource_columns(compact: CompactGrid) -> dict[str, pa.Array]:
    """The grid's resources as the Arrow columns ``resource_type`` (its code) and ``resource_name``."""
    return {"resource_type": pa.array(compact.resource_types, pa.int32()),
            "resource_name": pa.array([name for _type, name in compact.resources], pa.string())}


def grid(
    spark: SparkSession,
    acls,
    principals: DataFrame,
    resources: DataFrame,
    *,
    output: str = "dense",
    operation: AclOperation | str | int | None = None,
    compact: CompactGrid | None = None,
):
    """Every (principal, host) of ``principals`` against every (resource_type, resource_name)
    of ``resources``, by factorization: the distinct principals and resources are classified on
    the driver, each class block is evaluated once (:class:`CompactGrid`), and the JVM expands
    the classes with integer joins.

    ``output="dense"``: every pair with its ``operations`` bitfield; ``"allowed"``: only the
    pairs allowed ``operation``; ``"compact"``: the class tables as :class:`CompactFrames`, for
    grids too large to materialize. ``principals`` needs ``principal`` (``Type:name``) and may
    have ``host`` (default ``0.0.0.0``, an address no ACL names unless you do); ``resources``
    needs ``resource_type`` (code or name) and ``resource_name``. Output rows carry the resource
    type as its code. When the class tables would hold more than :data:`MAX_CLASS_VALUES`
    values, dense and allowed grids are evaluated pair by pair with the Arrow UDF instead.

    ``compact``: the CompactGrid of these ACLs, principals and resources when the caller has
    built it already (:func:`build_compact`), so that a command that also writes the report
    collects the distinct principals and resources and classifies them once.
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    allowed_operation: AclOperation | None = None  # set exactly when output is "allowed"
    if output == "allowed":
        if operation is None:
            raise ValueError('output="allowed" needs the operation to look for')
        allowed_operation = _operation(operation)
    _check_columns(principals, resources)
    principals = with_host(principals)
    if compact is None:
        compact = build_compact(acls, principals, resources)
    if output == "compact":
        return compact_frames(spark, compact)
    if compact.base.size + len(compact.exception_bits) > MAX_CLASS_VALUES:
        # The grid's own compiled ACLs: they hold the expansion of exactly these principals.
        return _grid_by_udf(spark, compact.compiled, principals, resources, allowed_operation)
    frames = compact_frames(spark, compact)
    return frames.dense() if allowed_operation is None else frames.allowed(allowed_operation)


def build_compact(acls, principals: DataFrame, resources: DataFrame) -> CompactGrid:
    """The CompactGrid of ``acls`` (as :func:`compile_acls` takes them) over the distinct rows of
    ``principals`` and ``resources`` (the frames :func:`grid` takes), collected to the driver
    once: what :func:`grid` (``compact=``) and the audit report both read. Principals are
    expanded there, once each, when the ACLs' plugins expand them."""
    _check_columns(principals, resources)
    principal_rows, resource_rows = distinct_pairs(principals, resources)
    return CompactGrid.build(compile_acls(acls, principals=[p for p, _ in principal_rows]), principal_rows, resource_rows)


def _check_columns(principals: DataFrame, resources: DataFrame | None) -> None:
    for frame, needed in ((principals, ("principal",)), (resources, ("resource_type", "resource_name"))):
        if frame is None:
            continue
        missing = [name for name in needed if name not in frame.columns]
        if missing:
            raise ValueError(f"missing column(s) {', '.join(missing)}; the frame has {', '.join(frame.columns)}")


DEFAULT_HOST = "0.0.0.0"
"""The host of principals given without one: an address no ACL names unless you do."""


def with_host(principals: DataFrame) -> DataFrame:
    """``principals`` with a ``host`` column (DEFAULT_HOST where it had none)."""
    return principals if "host" in principals.columns else principals.withColumn("host", F.lit(DEFAULT_HOST))


def distinct_pairs(principals: DataFrame, resources: DataFrame) -> tuple[list, list]:
    """The distinct (principal, host) and (resource_type, resource_name) rows, on the driver.
    They come as Arrow batches (``toArrow``), not rows: a million principals collected as Row
    objects outgrew a 1 GB driver JVM."""
    return (_distinct_rows(with_host(principals), "principal", "host"),
            _distinct_rows(resources, "resource_type", "resource_name"))


def _distinct_rows(frame: DataFrame, *columns: str) -> list[tuple]:
    table = frame.select(*columns).distinct().toArrow()
    return list(zip(*(table.column(name).to_pylist() for name in columns)))


def _grid_by_udf(spark, acls, principals, resources, operation):
    udf = authorized_operations_udf(spark, acls)
    # Resource types as codes, as the factorized path gives them.
    codes = F.create_map(*[item for rt in ResourceType for item in (F.lit(rt.name), F.lit(int(rt)))])
    resources = resources.withColumn(
        "resource_type",
        F.coalesce(F.col("resource_type").try_cast("int"), codes[F.upper(F.col("resource_type").cast("string"))]),
    )
    pairs = principals.select("principal", "host").crossJoin(resources.select("resource_type", "resource_name"))
    evaluated = pairs.withColumn("operations", udf("principal", "host", "resource_type", "resource_name"))
    if operation is not None:
        evaluated = evaluated.where(F.col("operations").bitwiseAND(F.lit(1 << operation)) != 0)
    return evaluated


def _operation(operation) -> AclOperation:
    operation = AclOperation.coerce(operation)
    if operation not in BITFIELD_OPERATIONS:
        raise ValueError(f"{operation.name} is a filter value, not an operation a pair can be allowed")
    return operation


def who_can(
    spark: SparkSession,
    acls,
    operation: AclOperation | str | int,
    resource_type: ResourceType | str | int,
    resource_name: str,
    principals: DataFrame,
) -> DataFrame:
    """The (principal, host) rows of ``principals`` allowed ``operation`` on one resource."""
    resources = spark.createDataFrame([(int(ResourceType.coerce(resource_type)), resource_name)],
                                      "resource_type int, resource_name string")
    return grid(spark, acls, principals, resources, output="allowed", operation=operation).select("principal", "host")


def diff(spark: SparkSession, before_acls, after_acls, principals: DataFrame, resources: DataFrame) -> DataFrame:
    """What-if: the pairs whose operations change from ``before_acls`` to ``after_acls``, with
    ``before`` and ``after`` bitfields and the ``gained`` and ``lost`` operation names.

    Both sides are judged by one configuration: a side given as AclBindings takes the super
    users, the ``allow.everyone.if.no.acl.found`` and the principal expansion (group
    membership) of the other side (a KafkaSecurity or StandardAuthorizer;
    :func:`spark_udfs.rules.standard_authorizer`), so ``diff(spark, security, today + [grant],
    ...)`` is exactly what ``grant`` changes, not a super user, a group's member or a resource
    without ACLs losing everything to Kafka's empty defaults.

    Both grids are factorized on the driver and compared by joint class
    (:meth:`CompactGrid.changed_blocks`); Spark expands only the blocks that change, so the cost
    follows the changed cells, not the grid. Class tables too large to compare on the driver
    (past :data:`MAX_CLASS_VALUES`) fall back to joining the two dense grids."""
    keys = ["principal", "host", "resource_type", "resource_name"]
    # Each side is read twice (as itself, and for the other side's settings): an iterator would be spent.
    before_acls, after_acls = (list(acls) if isinstance(acls, Iterator) else acls for acls in (before_acls, after_acls))
    principals = with_host(principals)
    _check_columns(principals, resources)
    principal_rows, resource_rows = distinct_pairs(principals, resources)
    names = [p for p, _ in principal_rows]
    before_compiled = compile_acls(before_acls, like=after_acls, principals=names)
    after_compiled = compile_acls(after_acls, like=before_acls, principals=names)
    before_grid, after_grid = (CompactGrid.build(compiled, principal_rows, resource_rows)
                               for compiled in (before_compiled, after_compiled))
    if max(g.base.size + len(g.exception_bits) for g in (before_grid, after_grid)) > MAX_CLASS_VALUES:
        before = grid(spark, before_compiled, principals, resources, compact=before_grid).withColumnRenamed("operations", "before")
        after = grid(spark, after_compiled, principals, resources, compact=after_grid).withColumnRenamed("operations", "after")
        changed = before.join(after, keys).where(F.col("before") != F.col("after"))
    else:
        changes = before_grid.changed_blocks(after_grid)
        joint_principals = spark.createDataFrame(pa.table({
            **_principal_columns(before_grid), "jp": pa.array(changes.joint_pc, pa.int32()),
        }))
        joint_resources = spark.createDataFrame(pa.table({
            **_resource_columns(before_grid), "jr": pa.array(changes.joint_rc, pa.int32()),
        }))
        blocks = _int_frame(spark, jp=changes.jp, jr=changes.jr, before=changes.before, after=changes.after)
        if len(changes.jp) * BROADCAST_BYTES_PER_ROW <= broadcast_budget(spark):
            blocks = F.broadcast(blocks)
        changed = joint_principals.join(blocks, "jp").join(joint_resources, "jr")
    gained = F.col("after").bitwiseAND(F.bitwise_not(F.col("before")))
    lost = F.col("before").bitwiseAND(F.bitwise_not(F.col("after")))
    return changed.select(*keys, "before", "after", operation_names(gained).alias("gained"),
                          operation_names(lost).alias("lost"))
