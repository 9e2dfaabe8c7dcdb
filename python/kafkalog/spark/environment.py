"""What kafkalog.spark needs from its environment, checked before anything Spark starts, with
errors that name the fix.

- pyspark, within the supported versions (:data:`PYSPARK_SUPPORTED`): without it the data
  source cannot load; an older Spark lacks the Python Data Source features it uses (streaming
  admission control came with 4.2).
- A Java runtime Spark 4 accepts (17 or newer), found as ``spark-submit`` finds it:
  ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``. pyspark alone only reports that the Java
  gateway exited.

Thread-safety: stateless functions; :func:`require_java` starts one short ``java -version``
process per call.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping

from ..exceptions import SparkUnavailableError

#: The pyspark versions kafkalog.spark supports: [low, high).
PYSPARK_SUPPORTED = ((4, 2), (5, 0))
#: The oldest Java major version Spark 4 runs on.
JAVA_MIN_MAJOR = 17

_INSTALL = "pip install 'kafkalog[spark]' (or pip install 'pyspark>=4.2,<5')"
_JAVA_FIX = (
    "install a JDK or JRE 17 or newer (e.g. apt install openjdk-17-jre-headless) and put its bin directory on "
    "PATH, or set JAVA_HOME to it"
)


def require_pyspark() -> str:
    """Imports pyspark and returns its version; raises SparkUnavailableError naming the fix when
    it is missing or outside :data:`PYSPARK_SUPPORTED`."""
    try:
        pyspark = importlib.import_module("pyspark")
    except ImportError as e:
        raise SparkUnavailableError(f"kafkalog.spark needs pyspark, which cannot be imported ({e}): {_INSTALL}") from e
    version = str(getattr(pyspark, "__version__", "unknown"))
    where = os.path.dirname(getattr(pyspark, "__file__", "") or "?")
    _check_supported("pyspark", version, f"pyspark {version} is installed (at {where}): {_INSTALL}")
    return version


def require_spark_version(version: str) -> None:
    """Checks the version a Spark session runs (``spark.version``: the cluster's Spark, which may
    differ from the pyspark package's) against :data:`PYSPARK_SUPPORTED`; raises
    SparkUnavailableError naming it otherwise."""
    low = PYSPARK_SUPPORTED[0]
    _check_supported(
        "Spark",
        version,
        f"the session runs Spark {version}: run on a Spark {low[0]}.{low[1]}+ cluster (or locally with {_INSTALL})",
    )


def find_java(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The Java runtime Spark would start (``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``)
    and where it was found, without running it; raises SparkUnavailableError naming the fix when
    there is none."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise SparkUnavailableError(f"JAVA_HOME is {home!r}, but {java} is not an executable: {_JAVA_FIX}")
        return java, f"JAVA_HOME ({home})"
    found = shutil.which("java", path=env.get("PATH", ""))
    if found is None:
        raise SparkUnavailableError(
            f"Spark needs Java {JAVA_MIN_MAJOR} or newer, but JAVA_HOME is not set and no java is on PATH: {_JAVA_FIX}"
        )
    return found, "PATH"


def require_java(env: Mapping[str, str] | None = None) -> tuple[str, int]:
    """Finds the Java runtime Spark would start (:func:`find_java`) and returns its path and
    major version; raises SparkUnavailableError naming what was found and the fix when there is
    none or it is older than :data:`JAVA_MIN_MAJOR`."""
    java, where = find_java(env)
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SparkUnavailableError(f"{java} (from {where}) could not run `java -version` ({e}): {_JAVA_FIX}") from e
    major = java_major_version(out.stderr + out.stdout)
    if major is None:
        raise SparkUnavailableError(
            f"{java} (from {where}) printed no version Spark can use ({(out.stderr or out.stdout).strip()[:200]!r}): "
            f"{_JAVA_FIX}"
        )
    if major < JAVA_MIN_MAJOR:
        raise SparkUnavailableError(
            f"Spark needs Java {JAVA_MIN_MAJOR} or newer, but {java} (from {where}) is Java {major}: {_JAVA_FIX}"
        )
    return java, major


def java_major_version(version_output: str) -> int | None:
    """The major version in ``java -version``'s output (``version "17.0.15"`` -> 17; the old
    ``"1.8.0_392"`` form -> 8), or None if there is none."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def _check_supported(what: str, version: str, found_and_fix: str) -> None:
    """SparkUnavailableError unless ``version`` lies within :data:`PYSPARK_SUPPORTED`."""
    found = _major_minor(version)
    low, high = PYSPARK_SUPPORTED
    if found is None or not low <= found < high:
        raise SparkUnavailableError(f"kafkalog.spark needs {what} >= {low[0]}.{low[1]} and < {high[0]}, but {found_and_fix}")


def _major_minor(version: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None
