"""ACL grids on Spark: who can do what across millions of principals and resources.

The evaluator and the UDFs arrive with their own issue; the package exists so that the
distribution's layout is fixed from the start.
"""
