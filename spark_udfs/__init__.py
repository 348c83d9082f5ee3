"""ACL grids: who can do what across millions of principals and resources (docs/grids.md).

- :mod:`spark_udfs.evaluator`: ``CompiledAcls``, the vectorized evaluator of KIP-430 bitfields;
- :mod:`spark_udfs.compact`: ``CompactGrid``, a grid as class tables plus exceptions;
- :mod:`spark_udfs.spark`: the Arrow UDF, ``grid``, ``who_can``, ``diff`` on Spark;
- :mod:`spark_udfs.report`: the HTML audit report;
- :mod:`spark_udfs.shipping`: what the UDFs import, shipped to a cluster's executors.

Each needs the ``spark`` extra (numpy, pyarrow; pyspark for the Spark module).
"""
