"""Read a topic's partitions with PySpark (a batch read through the ``kafkalog`` data source),
starting each partition at a chosen offset.

    python examples/spark_read.py /var/lib/kafka/data --topic orders \\
        --starting-offsets '{"orders": {"0": 100, "1": -2}}'
    python examples/spark_read.py           # creates a small sample log dir first

``startingOffsets`` takes the values of Spark's Kafka source: ``earliest``, or JSON mapping each
topic's partitions to an offset, where -2 means the partition's earliest offset. A partition left
out of the JSON is not read. The rows have the columns of Spark's Kafka source.

Spark runs kafkalog in its Python workers, so they must use a Python that can import kafkalog.
This script points ``PYSPARK_PYTHON`` at its own interpreter, unless you have set it. On a
cluster, ship the environment with kafkalog installed to the executors.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Set before Spark starts its workers. Without it they may start another Python and fail with
# "ModuleNotFoundError: No module named 'kafkalog'".
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import kafkalog.spark  # noqa: E402

SAMPLE_STARTING_OFFSETS = '{"orders": {"0": 40, "1": -2, "2": 250}}'


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log_dir", nargs="?", type=Path, help="a broker's log dir (default: create a sample one)")
    ap.add_argument("--topic", default="orders", help="the topic to read (default: %(default)s)")
    ap.add_argument("--starting-offsets", help="Spark's startingOffsets (default: earliest; with the sample: "
                    f"{SAMPLE_STARTING_OFFSETS})")  # fmt: skip
    ap.add_argument("--master", default="local[2]", help="Spark master (default: %(default)s)")
    args = ap.parse_args()
    if args.log_dir is None:
        import sample_data  # examples/sample_data.py

        args.log_dir = sample_data.make_log_dir()
        args.starting_offsets = args.starting_offsets or SAMPLE_STARTING_OFFSETS
        print(f"sample log dir: {args.log_dir}")
    starting = args.starting_offsets or "earliest"

    spark = (
        SparkSession.builder.master(args.master)
        .appName("kafkalog-example")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        kafkalog.spark.register(spark)  # adds the "kafkalog" format
        df = (
            spark.read.format("kafkalog")
            .option("path", str(args.log_dir))  # a log dir, one partition dir, or several, comma-separated
            .option("subscribe", args.topic)
            .option("startingOffsets", starting)
            .load()
        )
        print(f"startingOffsets {starting}:")
        per_partition = df.groupBy("partition").agg(
            F.count("*").alias("records"), F.min("offset").alias("first"), F.max("offset").alias("last")
        )
        for row in per_partition.orderBy("partition").collect():
            print(f"{args.topic}-{row.partition}: {row.records} records, offsets {row.first}..{row.last}")
        df.selectExpr("partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").show(
            3, truncate=False
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
