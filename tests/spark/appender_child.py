"""Child process of test_spark_concurrent: appends to one partition until killed. Record i has
offset i, key b"k<i>" and a value of str(i) padded to 1000 bytes, so a reader can check what it
got is exactly a prefix. Segments of 1 MiB roll every thousand records or so.

Once the log holds at least ``argv[2]`` records the child prints ``ready <log end offset>`` on
stdout (the test blocks reading that line instead of polling the directory), then goes on
appending, at full speed, up to twenty times that many records (so the log stays a few tens of
MB whatever the machine's speed), and then waits on its stdin until the test kills it. Reads
may overlap the appends or follow them; the test holds for any interleaving."""

from __future__ import annotations

import sys

from kafkalog import UnifiedLog

path, ready_at = sys.argv[1], int(sys.argv[2])
with UnifiedLog.open(path, {"segment.bytes": 1 << 20}) as log:
    i = log.log_end_offset
    announced = False
    while i < 20 * ready_at:
        records = [(f"k{n}".encode(), str(n).encode().ljust(1000, b".")) for n in range(i, i + 50)]
        log.append(records, compression="lz4" if i % 100 else "none")
        i += 50
        if not announced and i >= ready_at:
            print(f"ready {i}", flush=True)
            announced = True
    sys.stdin.read()  # the log stays open (and locked) until the test kills this process
