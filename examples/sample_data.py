"""The small log dir that the examples create when you run them without a path.

It looks like the log dir of a stopped Kafka broker. It is written through
``kafkalog.LogManager``, so it has ``meta.properties``, the offset checkpoints and
``.kafka_cleanshutdown``, and it holds two topics:

- ``orders``: 3 partitions with 100, 200 and 300 records (``cleanup.policy=delete``).
- ``customers``: 2 partitions (``cleanup.policy=compact``). Each partition holds 3 rounds of
  updates to 50 keys and then 10 tombstones, each round in its own segment. Then 5 more updates
  go into the active segment, which Kafka's cleaner never compacts.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import kafkalog

ORDERS = {0: 100, 1: 200, 2: 300}  # partition -> records
CUSTOMER_PARTITIONS = 2
CUSTOMER_KEYS = 50


def make_log_dir() -> Path:
    """Writes the sample log dir into a new temporary directory and returns its path. The
    directory is left in place so you can pass it to the other examples."""
    root = Path(tempfile.mkdtemp(prefix="kafkalog-example-")) / "kafka-logs"
    # scheduler=False: no background threads, so the cleaner does not compact `customers` here.
    with kafkalog.LogManager([root], scheduler=False) as manager:
        for partition, count in ORDERS.items():
            log = manager.create_log("orders", partition, {"cleanup.policy": "delete"})
            log.append([(f"order-{i}", json.dumps({"order": i, "qty": i % 7 + 1})) for i in range(count)])
        for partition in range(CUSTOMER_PARTITIONS):
            log = manager.create_log("customers", partition, {"cleanup.policy": "compact"})
            keys = [f"customer-{partition}-{k}" for k in range(CUSTOMER_KEYS)]
            for round_ in range(3):
                log.append([(key, json.dumps({"name": key, "version": round_})) for key in keys])
                log.roll()
            log.append([kafkalog.Record(key.encode(), None) for key in keys[:10]])  # tombstones
            log.roll()
            log.append([(key, json.dumps({"name": key, "version": 3})) for key in keys[10:15]])
    return root
