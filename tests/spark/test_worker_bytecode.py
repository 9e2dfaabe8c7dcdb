"""Spark's Python workers in the dev venv import the installed pyspark, with its bytecode, not
the source-only pyspark.zip Spark puts first on their PYTHONPATH: the venv's
kafkalog-pyspark-bytecode.pth, which the Makefile writes (kafkalog.spark.pyspark_bytecode)."""

from __future__ import annotations

import pyspark
import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark


def test_spark_workers_import_the_installed_pyspark_not_its_zip(spark) -> None:
    def worker_pyspark(_: int) -> str:  # nested: pickled by value, so the worker needs no test module
        import sys

        import pyspark

        return f"{pyspark.__file__}\n" + "\n".join(sys.path)

    row = spark.range(1, numPartitions=1).select(F.udf(worker_pyspark, "string", useArrow=False)("id")).first()
    assert row is not None
    where, *path = row[0].split("\n")
    assert where == pyspark.__file__ and ".zip" not in where
    assert [p for p in path if p.endswith("pyspark.zip") or "/py4j-" in p] == []
