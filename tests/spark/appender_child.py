"""Child process of test_spark_concurrent: appends to one partition until killed. Record i has
offset i, key b"k<i>" and a value of str(i) padded to 1000 bytes, so a reader can check what it
got is exactly a prefix. Segments of 1 MiB roll every thousand records or so.

Once the log holds at least ``argv[2]`` records the child prints ``ready <log end offset>`` on
stdout (the test blocks reading that line instead of polling the directory), then goes on
appending."""

from __future__ import annotations

import sys
import time

from kafkalog import UnifiedLog

path, ready_at = sys.argv[1], int(sys.argv[2])
with UnifiedLog.open(path, {"segment.bytes": 1 << 20}) as log:
    i = log.log_end_offset
    announced = False
    while True:
        records = [(f"k{n}".encode(), str(n).encode().ljust(1000, b".")) for n in range(i, i + 50)]
        log.append(records, compression="lz4" if i % 100 else "none")
        i += 50
        if not announced and i >= ready_at:
            print(f"ready {i}", flush=True)
            announced = True
        # Pacing only (about 5,000 records, 5 MB, a second), not synchronisation: reads overlap
        # appends and the log stays small; the test holds for any interleaving.
        time.sleep(0.01)
