"""Compact a copy of a topic's partitions with Kafka's log cleaner and print the cleaner's
stats. The original partition directories are only read, never changed.

    python examples/compact_topic.py /var/lib/kafka/data users [--out DIR] [--roll]
    python examples/compact_topic.py            # creates a small sample log dir first

The copy is compacted as Kafka's cleaner would do it, in as many passes as the offset map
needs. The latest record of every key stays, and tombstones stay until a later clean after
``delete.retention.ms``. Kafka never cleans the active (last) segment. ``--roll`` starts a new
segment in the copy first, so the whole copy is cleaned.

kafkalog does not store topic configs (Kafka keeps them in the cluster metadata), so give the
topic's with ``--config KEY=VALUE`` if they differ from Kafka's defaults, for example
``--config min.compaction.lag.ms=0``. ``cleanup.policy=compact`` is always set.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import kafkalog


def copy_topic(log_dir: Path, topic: str, out: Path) -> list[Path]:
    """Copies every ``<topic>-<partition>`` directory of ``log_dir`` into ``out``."""
    copies = []
    for path in sorted(log_dir.glob(f"{topic}-*")):
        if path.is_dir() and path.name[len(topic) + 1 :].isdigit():
            copies.append(Path(shutil.copytree(path, out / path.name)))
    if not copies:
        raise SystemExit(f"no partition of {topic!r} in {log_dir}")
    return copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log_dir", nargs="?", type=Path, help="a broker's log dir (default: create a sample one)")
    ap.add_argument("topic", nargs="?", help="the topic to compact (default with the sample: customers)")
    ap.add_argument("--out", type=Path, help="where to put the copy (default: a new temporary directory)")
    ap.add_argument("--roll", action="store_true", help="clean the active segment too (Kafka never does)")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config")
    args = ap.parse_args()
    if args.log_dir is None:
        import sample_data  # examples/sample_data.py

        args.log_dir, args.topic = sample_data.make_log_dir(), "customers"
        print(f"sample log dir: {args.log_dir}")
    elif args.topic is None:
        ap.error("give the topic to compact after the log dir")
    out = args.out or Path(tempfile.mkdtemp(prefix=f"kafkalog-compact-{args.topic}-"))
    if out.resolve().is_relative_to(args.log_dir.resolve()):
        ap.error(f"--out {out} is inside the log dir: the copy must not go into the broker's dir")
    config = dict(kv.split("=", 1) for kv in args.config)
    config["cleanup.policy"] = "compact"

    for path in copy_topic(args.log_dir, args.topic, out):
        with kafkalog.UnifiedLog.open(path, config) as log:
            if args.roll:
                log.roll()
            size_before = log.size_in_bytes
            result = log.compact_now()
            stats = result.stats
            print(f"{path.name}: {len(result.passes)} pass(es) over offsets "
                  f"{result.first_dirty_offset}..{result.first_uncleanable_offset}; "
                  f"records {stats.messages_read} -> {stats.messages_written}, "
                  f"tombstones kept {stats.tombstones_retained}; "
                  f"log {size_before} -> {log.size_in_bytes} bytes")  # fmt: skip
            for clean_pass in result.passes:
                print(clean_pass.summary)  # Kafka's INFO block for the pass, as a broker logs it
    print(f"compacted copy: {out}")


if __name__ == "__main__":
    main()
