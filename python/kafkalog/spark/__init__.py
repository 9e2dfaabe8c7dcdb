"""kafkalog on Spark.

PLACEHOLDER written on branch ``maint`` (issue 6, part B): the lead engineer replaces this file
when merging part A (the ``kafkalog`` data source and ``register(spark)``). Only the
maintenance jobs are exported here.
"""

from __future__ import annotations

from .maintenance import COMPACT_SCHEMA, RETENTION_SCHEMA, compact, run_retention

__all__ = ["compact", "run_retention", "COMPACT_SCHEMA", "RETENTION_SCHEMA"]
