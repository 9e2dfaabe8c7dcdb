"""Shared pytest set-up for the kafkalog Python suites.

Hypothesis runs derandomized (a fixed seed per test) and without an example database, so CI
runs are reproducible and a failure seen once is seen every time.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# kafka-python (the test oracle) loads its protocol schemas with a deprecated importlib API at
# import time; import it once here, quietly, so the noise does not bury real warnings.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka  # noqa: F401

settings.register_profile(
    "kafkalog-ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kafkalog-ci"))


def dir_snapshot(path: Path) -> dict[str, tuple[int, int, str]]:
    """Name -> (size, mtime_ns, sha256) of every file under ``path``: what "unchanged" means."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(path))] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture
def snapshot_dir():
    return dir_snapshot
