"""Whether Spark's Python workers can import kafkalog (:func:`check_workers`, run by
:func:`kafkalog.spark.register`).

The ``kafkalog`` data source runs in Spark's Python workers, not in the driver's process: Spark
plans it in a worker on the driver's machine and reads and writes in workers on the executors.
Each worker is a fresh Python (``PYSPARK_PYTHON``, else ``python3`` from the ``PATH``), which
must import kafkalog. Without that every read or write fails deep in a task with
``ModuleNotFoundError: No module named 'kafkalog'``; the check fails at once instead, saying
how to fix it.

The check is one task of one row running :func:`_worker_info` as a Python UDF. The function is
pickled by reference (its module, this one), so the worker must import kafkalog (and with it
pyarrow) before it can run it: what the real source needs. It also works on Spark Connect. A
UDF's task runs in the Python workers that later jobs reuse; a check through a Python data
source of its own, as this once was, also made Spark start the processes that plan a data
source, about 3.5 s more on a 2-core machine. It runs once per session (about 2 s while Spark
starts its first worker; a few hundred milliseconds once one runs); ``register(spark,
check=False)`` skips it.
"""

from __future__ import annotations

import re
import sys
import weakref
from typing import Any

from ..exceptions import WorkerImportError

__all__ = ["check_workers", "PACKAGING_DOCS"]

#: Spark's page on shipping Python packages to a cluster (``spark.archives``, ``--archives``).
PACKAGING_DOCS = "https://spark.apache.org/docs/latest/api/python/user_guide/python_packaging.html"

_checked: weakref.WeakSet[Any] = weakref.WeakSet()


def _worker_info(_: int) -> str:
    """Runs in a Spark Python worker: which kafkalog it imported, and which Python ran it."""
    import kafkalog

    return f"{kafkalog.__version__} {sys.executable}"


def check_workers(spark: Any) -> None:
    """Runs one task that imports kafkalog in a Spark Python worker; raises WorkerImportError
    saying how to fix it when the workers cannot. Once per session."""
    if spark in _checked:
        return
    from pyspark.sql import functions as F

    try:
        spark.range(1, numPartitions=1).select(F.udf(_worker_info, "string", useArrow=False)("id")).collect()
    except Exception as e:  # noqa: BLE001 - whatever the workers failed with, said below
        raise WorkerImportError(_message(str(e))) from e
    _checked.add(spark)


def _message(failure: str) -> str:
    errors = re.findall(r"^\s*(?:\w+\.)*(\w*Error: .+)$", failure, re.MULTILINE)
    cause = errors[-1].strip() if errors else failure.strip().splitlines()[0] if failure.strip() else "unknown error"
    return (
        f"Spark's Python workers cannot run kafkalog ({cause}). The kafkalog data source runs in "
        "Spark's Python workers, which start PYSPARK_PYTHON (else python3 from the PATH) and must "
        "import kafkalog and pyarrow. Locally, set PYSPARK_PYTHON to a Python that has kafkalog "
        f"installed before the session starts (this driver runs {sys.executable}: "
        f"os.environ['PYSPARK_PYTHON'] = sys.executable, or export PYSPARK_PYTHON={sys.executable}), "
        "or run with the virtualenv activated. On a cluster, install kafkalog on every node, or "
        "ship a packed virtualenv with spark.archives / --archives and point PYSPARK_PYTHON into "
        f"it ({PACKAGING_DOCS}). kafkalog.spark.register(spark, check=False) skips this check."
    )
