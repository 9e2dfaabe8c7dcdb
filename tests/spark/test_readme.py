"""The README's Spark snippet runs as written, in a fresh Python with the venv not activated
(no PYSPARK_PYTHON, the venv's bin not on the PATH), as a new user would run it; and
``kafkalog.spark.register`` says how to fix workers that cannot import kafkalog.

Each test starts its own Spark (a second SparkContext cannot start in the test process), in a
subprocess: about 20 s each on an idle two-core machine, up to a minute when it is busy.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
#: A bound against a hang, not a timing assumption.
TIMEOUT_S = 600


def spark_snippet() -> str:
    """The first Python code block of the README's "## Spark" section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Spark\n") :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert blocks, "the README's Spark section has no python block"
    return blocks[0]


def fresh_env() -> dict[str, str]:
    """This environment as a user's shell without the venv activated: no PYSPARK_* or
    VIRTUAL_ENV, and no directory of the venv on the PATH (so python3 there lacks kafkalog)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_") and k != "VIRTUAL_ENV"}
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.abspath(p) != venv_bin)
    return env


def run_script(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = cwd / "script.py"
    path.write_text(script, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(path)], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_readme_spark_snippet_runs_as_written(tmp_path: Path) -> None:
    done = run_script(spark_snippet(), tmp_path, fresh_env())
    assert done.returncode == 0, done.stderr[-5000:]
    assert done.stdout.split() == ["900"], done.stdout
    assert sorted(p.name for p in (tmp_path / "data" / "logs").iterdir()) == [f"orders-{p}" for p in range(2)] + [
        f"orders-copy-{p}" for p in range(6)
    ]


CHECK = """
import sys
from pyspark.sql import SparkSession
import kafkalog.spark
from kafkalog.exceptions import WorkerImportError

spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
try:
    kafkalog.spark.register(spark)
except WorkerImportError as e:
    assert isinstance(e, ImportError)
    print("REFUSED", e)
else:
    print("REGISTERED")
kafkalog.spark.register(spark, check=False)  # the opt-out runs no job
print("UNCHECKED_OK")
"""


def test_register_says_how_to_fix_workers_that_cannot_import_kafkalog(tmp_path: Path) -> None:
    """PYSPARK_PYTHON is a Python without kafkalog (this interpreter with -S: no site-packages,
    so neither the venv's kafkalog nor pyarrow; pyspark comes with the worker's PYTHONPATH)."""
    python = tmp_path / "python-without-kafkalog"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    assert subprocess.run([str(python), "-c", "import kafkalog"], capture_output=True).returncode != 0
    env = {**fresh_env(), "PYSPARK_PYTHON": str(python)}
    done = run_script(CHECK, tmp_path, env)
    assert done.returncode == 0, done.stderr[-5000:]
    out = done.stdout
    assert "REFUSED Spark's Python workers cannot run kafkalog (ModuleNotFoundError: No module named 'kafkalog')" in out, out
    for fix in (
        "PYSPARK_PYTHON",
        f"export PYSPARK_PYTHON={sys.executable}",
        "spark.archives / --archives",
        "https://spark.apache.org/docs/latest/api/python/user_guide/python_packaging.html",
        "register(spark, check=False)",
    ):
        assert fix in out, (fix, out)
    assert "UNCHECKED_OK" in out
