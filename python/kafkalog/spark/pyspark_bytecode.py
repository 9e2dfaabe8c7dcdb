"""Spark's Python workers, started from pyspark's bytecode instead of its zipped sources.

Spark starts every Python process it needs (each task worker's daemon, and a new one for each
step a Python data source plans: look-up, write, commit, schema, partitions) with
``PYTHONPATH`` starting with ``$SPARK_HOME/python/lib/pyspark.zip``, the py4j zip beside it and
Spark's core jar (``PythonUtils.sparkPythonPath``). In a pip-installed pyspark that zip is a
copy of the installed package holding sources only, and Python's zip importer never caches
bytecode: every such process compiles the pyspark modules it imports again, about 0.3 s of CPU
each, and re-reads the zips' and the jar's directories whenever a worker invalidates the import
caches. On the 2-core machine this was about 4 s of the demo's 24.

This module writes a ``.pth`` file (run by ``site`` at every start of the venv's Python) that
takes exactly those entries off ``sys.path`` again, so pyspark and py4j are imported from the
installed packages and their ``__pycache__`` (pip compiles it at install). It only names:

- the ``pyspark.zip`` inside the installed pyspark itself (the same wheel's files);
- the ``py4j-<version>-src.zip`` beside it when the installed py4j has that version;
- Spark's core jar in pyspark's ``jars/`` when it holds no Python module (an unreadable one is kept).

Paths are compared resolved (``os.path.realpath``), so a symbolic link in either spelling does
not matter. Anything else on the path is left alone; with pyspark uninstalled or upgraded, the entries named
no longer appear and the line does nothing. Run ``python -m kafkalog.spark.pyspark_bytecode``
with the Python of the environment Spark's workers use (on a cluster, on every node); the
Makefile does it for the dev venv. It writes into that environment's site-packages, so run it
again after upgrading pyspark (``--remove`` takes the file away). It imports no pyspark.
"""

from __future__ import annotations

import argparse
import os
import re
import sysconfig
import zipfile
from pathlib import Path

__all__ = ["PTH_NAME", "dropped_entries", "pth_line", "write_pth"]

PTH_NAME = "kafkalog-pyspark-bytecode.pth"


def dropped_entries(site_packages: Path) -> list[str]:
    """The ``sys.path`` entries Spark gives its workers that the installed packages in
    ``site_packages`` make redundant (see the module's documentation), sorted."""
    pyspark = site_packages / "pyspark"
    if not (pyspark / "__init__.py").is_file():
        return []
    lib = pyspark / "python" / "lib"
    out = []
    if (lib / "pyspark.zip").is_file():
        out.append(str(lib / "pyspark.zip"))
    installed_py4j = _py4j_version(site_packages)
    for z in sorted(lib.glob("py4j-*-src.zip")):
        match = re.fullmatch(r"py4j-(.+)-src\.zip", z.name)
        if match and match.group(1) == installed_py4j:
            out.append(str(z))
    for jar in sorted((pyspark / "jars").glob("spark-core_*.jar")):
        try:
            with zipfile.ZipFile(jar) as zf:
                python_inside = any(name.endswith((".py", ".pyc")) for name in zf.namelist())
        except (OSError, zipfile.BadZipFile):
            continue  # unreadable: kept on the path, as Spark gives it
        if not python_inside:
            out.append(str(jar))
    return sorted(os.path.realpath(p) for p in out)


def _py4j_version(site_packages: Path) -> str | None:
    version = site_packages / "py4j" / "version.py"
    if not version.is_file():
        return None
    match = re.search(r"""__version__\s*=\s*["']([^"']+)["']""", version.read_text())
    return match.group(1) if match else None


def pth_line(entries: list[str]) -> str:
    """The ``.pth`` line taking ``entries`` (resolved paths) off ``sys.path`` (``site`` runs
    lines that start with ``import``)."""
    return f"import os, sys; sys.path[:] = [p for p in sys.path if os.path.realpath(p) not in {tuple(entries)!r}]\n"


def write_pth(site_packages: Path) -> Path | None:
    """Writes (or removes, when nothing is to be dropped) ``PTH_NAME`` in ``site_packages``;
    returns its path when written."""
    target = site_packages / PTH_NAME
    entries = dropped_entries(site_packages)
    if not entries:
        target.unlink(missing_ok=True)
        return None
    target.write_text(pth_line(entries))
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.spark.pyspark_bytecode", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remove", action="store_true", help=f"remove {PTH_NAME} instead")
    parser.add_argument("--site-packages", type=Path, default=Path(sysconfig.get_paths()["purelib"]),
                        help="where to write it (default: this Python's site-packages)")
    args = parser.parse_args(argv)
    target = args.site_packages / PTH_NAME
    if args.remove:
        target.unlink(missing_ok=True)
        print(f"removed {target}")
        return
    written = write_pth(args.site_packages)
    print(f"{written}: Spark's Python workers started by this Python import the installed pyspark" if written
          else f"no pyspark installed in {args.site_packages}: nothing written")


if __name__ == "__main__":
    main()
