"""Read a stopped Kafka broker's log dir into one pyarrow Table and print the records per
partition.

    python examples/read_broker_dir.py /var/lib/kafka/data [--topic orders]
    python examples/read_broker_dir.py            # creates a small sample log dir first

Each partition is opened read-only: no lock is taken, nothing is written and no recovery runs,
so the broker's files stay exactly as they were. The table has the columns of Spark's Kafka
source: key, value, topic, partition, offset, timestamp, timestampType and headers. If pandas is
installed, the script also shows the first rows as a pandas DataFrame. pandas is not a
dependency of kafkalog.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow as pa

import kafkalog


def read_log_dir(log_dir: Path, topic: str | None = None) -> pa.Table:
    tables = []
    # Kafka names a partition's directory <topic>-<partition>; kafkalog.log_dir_partitions
    # finds them as the engine does, leaving out directories being deleted
    # (<topic>-<partition>.<id>-delete), moved (...-future) or no longer assigned (...-stray).
    for partition in kafkalog.log_dir_partitions(log_dir):
        if topic is not None and partition.topic != topic:
            continue
        with kafkalog.UnifiedLog.open(partition.path, read_only=True) as log:
            tables.append(log.to_arrow())
    return pa.concat_tables(tables) if tables else kafkalog.KAFKA_SCHEMA.empty_table()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log_dir", nargs="?", type=Path, help="a broker's log dir (default: create a sample one)")
    ap.add_argument("--topic", help="read only this topic")
    args = ap.parse_args()
    if args.log_dir is None:
        import sample_data  # examples/sample_data.py

        args.log_dir = sample_data.make_log_dir()
        print(f"sample log dir: {args.log_dir}")

    table = read_log_dir(args.log_dir, args.topic)
    counts = table.group_by(["topic", "partition"]).aggregate([("offset", "count"), ("offset", "min"), ("offset", "max")])
    for row in counts.sort_by([("topic", "ascending"), ("partition", "ascending")]).to_pylist():
        print(f"{row['topic']}-{row['partition']}: {row['offset_count']} records, "
              f"offsets {row['offset_min']}..{row['offset_max']}")  # fmt: skip
    print(f"total: {table.num_rows} records in {counts.num_rows} partitions")

    try:
        import pandas  # noqa: F401  (only to find out whether it is installed)
    except ImportError:
        print("pandas is not installed: skipping the DataFrame (pip install pandas to see it)")
    else:
        frame = table.select(["topic", "partition", "offset", "key", "value"]).to_pandas()
        print(frame.head())


if __name__ == "__main__":
    main()
