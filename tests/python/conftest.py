"""Shared pytest set-up for the kafkalog Python suites.

Hypothesis runs derandomized (a fixed seed per test) and without an example database, so CI
runs are reproducible and a failure seen once is seen every time.
"""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import HealthCheck, settings

from kit.files import dir_snapshot

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


@pytest.fixture
def snapshot_dir():
    """kit.files.dir_snapshot: what "unchanged" means for a directory."""
    return dir_snapshot
