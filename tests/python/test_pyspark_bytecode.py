"""The ``.pth`` that has Spark's Python workers import the installed pyspark (with its bytecode)
instead of the sources in ``pyspark.zip`` (kafkalog.spark.pyspark_bytecode): it names only
entries the installed packages make redundant, and takes only those off ``sys.path``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from kafkalog.spark import pyspark_bytecode


def fake_site(root: Path, *, py4j_installed: str | None = "0.10.9.9", jar_has_python: bool = False) -> Path:
    """A site-packages with a pip-installed pyspark's layout: the package, its zips and jars."""
    site = root / "site-packages"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip"):
        with zipfile.ZipFile(lib / name, "w") as zf:
            zf.writestr("module.py", "")
    jars = site / "pyspark" / "jars"
    jars.mkdir()
    for name, member in (("spark-core_2.13-4.3.0.jar", "x.py" if jar_has_python else "org/X.class"),
                         ("spark-sql_2.13-4.3.0.jar", "org/Y.class")):
        with zipfile.ZipFile(jars / name, "w") as zf:
            zf.writestr(member, "")
    if py4j_installed is not None:
        (site / "py4j").mkdir()
        (site / "py4j" / "version.py").write_text(f'__version__ = "{py4j_installed}"\n')
    return site


def test_names_pysparks_own_zip_the_matching_py4j_zip_and_the_core_jar(tmp_path):
    site = fake_site(tmp_path)
    lib, jars = site / "pyspark" / "python" / "lib", site / "pyspark" / "jars"
    assert pyspark_bytecode.dropped_entries(site) == sorted(
        [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"), str(jars / "spark-core_2.13-4.3.0.jar")])


def test_keeps_a_py4j_zip_of_another_version_and_a_jar_holding_python(tmp_path):
    site = fake_site(tmp_path, py4j_installed="0.10.9.7", jar_has_python=True)
    assert pyspark_bytecode.dropped_entries(site) == [str(site / "pyspark" / "python" / "lib" / "pyspark.zip")]
    no_py4j = fake_site(tmp_path / "b", py4j_installed=None)
    assert pyspark_bytecode.dropped_entries(no_py4j) == [
        str(no_py4j / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar"),
        str(no_py4j / "pyspark" / "python" / "lib" / "pyspark.zip")]


def test_without_pyspark_nothing_is_written_and_a_stale_file_goes(tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / pyspark_bytecode.PTH_NAME).write_text("import sys\n")
    assert pyspark_bytecode.write_pth(site) is None
    assert not (site / pyspark_bytecode.PTH_NAME).exists()


def test_the_line_takes_exactly_those_entries_off_the_path(tmp_path):
    site = fake_site(tmp_path)
    pth = pyspark_bytecode.write_pth(site)
    assert pth is not None and pth.read_text().startswith("import os, sys;")
    entries = pyspark_bytecode.dropped_entries(site)
    other = [str(tmp_path / "elsewhere.zip"), "/usr/lib/python3.11", str(site)]
    # A fresh interpreter runs the line as site does (exec of one line), on a path holding both.
    code = (f"import sys; sys.path[:] = {entries + other!r}; exec({pth.read_text()!r}); print(sys.path)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr(other)


def test_the_command_writes_and_removes_the_file(tmp_path, capsys):
    site = fake_site(tmp_path)
    pyspark_bytecode.main(["--site-packages", str(site)])
    pth = site / pyspark_bytecode.PTH_NAME
    assert pth.read_text() == pyspark_bytecode.pth_line(pyspark_bytecode.dropped_entries(site))
    assert str(pth) in capsys.readouterr().out
    pyspark_bytecode.main(["--site-packages", str(site), "--remove"])
    assert not pth.exists() and "removed" in capsys.readouterr().out


def test_a_symlinked_spelling_of_the_zip_is_dropped_too_and_a_broken_jar_kept(tmp_path):
    site = fake_site(tmp_path)
    (site / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar").write_bytes(b"not a zip")
    entries = pyspark_bytecode.dropped_entries(site)
    assert [Path(e).name for e in entries] == ["py4j-0.10.9.9-src.zip", "pyspark.zip"]
    link = tmp_path / "spark-home"
    link.symlink_to(site / "pyspark")
    spelled = str(link / "python" / "lib" / "pyspark.zip")
    code = (f"import sys; sys.path[:] = [{spelled!r}, '/elsewhere']; "
            f"exec({pyspark_bytecode.pth_line(entries)!r}); print(sys.path)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr(["/elsewhere"])
