"""ACL grids on Spark: the evaluator as an Arrow UDF, and grids of principals x resources.

The compiled ACLs (:class:`~spark_udfs.evaluator.CompiledAcls`) are broadcast once; each Python
worker unpickles them on first use and keeps them while the worker lives (PySpark reuses
workers), so a batch costs only the vectorized evaluation. Arrow batches of 100,000 rows
(``spark.sql.execution.arrow.maxRecordsPerBatch``) keep the per-batch overhead small.
"""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from kafkasec.acl import AclBinding, AclOperation
from kafkasec.authorizer.standard import StandardAuthorizer
from spark_udfs.evaluator import CompiledAcls

ARROW_BATCH_ROWS = 100_000
OUTPUTS = ("dense", "allowed")
_OPERATIONS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL)]


def local_session(master: str = "local[*]", app_name: str = "kafkasec-grid") -> SparkSession:
    """A SparkSession for grids; a clear error when Java is missing (Spark needs Java 17+)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError("Spark needs Java 17 or newer: install a JDK or set JAVA_HOME")
    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def compile_acls(acls) -> CompiledAcls:
    """CompiledAcls from a CompiledAcls, a StandardAuthorizer, a KafkaSecurity or AclBindings."""
    if isinstance(acls, CompiledAcls):
        return acls
    if isinstance(acls, StandardAuthorizer):
        return CompiledAcls.from_authorizer(acls)
    authorizer = getattr(acls, "authorizer", None)
    if isinstance(authorizer, StandardAuthorizer):
        return CompiledAcls.from_authorizer(authorizer)
    bindings = list(acls)
    if not all(isinstance(binding, AclBinding) for binding in bindings):
        raise TypeError("acls must be CompiledAcls, a StandardAuthorizer, a KafkaSecurity or AclBindings")
    authorizer = StandardAuthorizer()
    for result in authorizer.create_acls(bindings):
        if result.error is not None:
            raise ValueError(f"ACL {result.binding} cannot be stored: {result.error}")
    return CompiledAcls.from_authorizer(authorizer)


def authorized_operations_udf(spark: SparkSession, acls):
    """An Arrow UDF ``(principal, host, resource_type, resource_name) -> int`` giving the
    KIP-430 bitfield of each row; ``acls`` as :func:`compile_acls` takes them."""
    broadcast = spark.sparkContext.broadcast(compile_acls(acls))

    @arrow_udf(IntegerType())
    def authorized_operations(principal: pa.Array, host: pa.Array, resource_type: pa.Array, resource_name: pa.Array) -> pa.Array:
        return pa.array(broadcast.value.authorized_operations(principal, host, resource_type, resource_name), pa.int32())

    return authorized_operations


def operation_names(bitfield: Column | str) -> Column:
    """The names of the operations in a bitfield column, as an array (in code order)."""
    column = F.col(bitfield) if isinstance(bitfield, str) else bitfield
    return F.array_compact(F.array(*[
        F.when(column.bitwiseAND(F.lit(1 << op)) != 0, F.lit(op.name)) for op in _OPERATIONS
    ]))


def grid(
    spark: SparkSession,
    acls,
    principals: DataFrame,
    resources: DataFrame,
    *,
    output: str = "dense",
    operation: AclOperation | str | int | None = None,
) -> DataFrame:
    """Every (principal, host) of ``principals`` against every (resource_type, resource_name)
    of ``resources``, with the ``operations`` bitfield.

    ``output="dense"``: every pair; ``output="allowed"``: only the pairs allowed ``operation``.
    ``principals`` needs a ``principal`` column (``Type:name``) and may have ``host`` (default
    ``0.0.0.0``, an address no ACL names unless you do); ``resources`` needs ``resource_type``
    (code or name) and ``resource_name``.
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    if output == "allowed":
        if operation is None:
            raise ValueError('output="allowed" needs the operation to look for')
        operation = AclOperation.coerce(operation)
        if operation not in _OPERATIONS:
            raise ValueError(f"{operation.name} is a filter value, not an operation a pair can be allowed")
    for frame, needed in ((principals, ("principal",)), (resources, ("resource_type", "resource_name"))):
        missing = [name for name in needed if name not in frame.columns]
        if missing:
            raise ValueError(f"missing column(s) {', '.join(missing)}; the frame has {', '.join(frame.columns)}")
    if "host" not in principals.columns:
        principals = principals.withColumn("host", F.lit("0.0.0.0"))
    udf = authorized_operations_udf(spark, acls)
    pairs = principals.select("principal", "host").crossJoin(resources.select("resource_type", "resource_name"))
    evaluated = pairs.withColumn("operations", udf("principal", "host", "resource_type", "resource_name"))
    if output == "allowed":
        evaluated = evaluated.where(F.col("operations").bitwiseAND(F.lit(1 << operation)) != 0)
    return evaluated
