"""Child of test_clean_close_crash.py: reopens a standalone log again and again (append, a roll
every other round, close) until the crash seam (``kafkalog.testing.crash_after``) kills it
just before a chosen file operation.

Usage: clean_close_child.py PARTITION_DIR SKIP
"""

from __future__ import annotations

import sys

from kafkalog import Record, UnifiedLog
from kafkalog.testing import crash_after


def main(path: str, skip: int) -> None:
    crash_after(path, skip)
    round_ = 0
    while True:  # until the seam kills the process
        log = UnifiedLog.open(path)
        start = log.log_end_offset
        log.append([Record(f"k{start + i}".encode(), f"v{start + i}".encode()) for i in range(3)])
        if round_ % 2:
            log.roll()
            log.append([Record(b"after-roll", f"v{start + 3}".encode())])
        log.close()
        round_ += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
