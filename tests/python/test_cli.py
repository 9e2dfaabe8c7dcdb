"""The ``kafkalog`` command's frame (kafkalog.cli): the installed console script and
``python -m kafkalog`` run as subprocesses, their help, version and exit codes. Each command
has its own test file (test_cli_<command>.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import kafkalog

SCRIPT = Path(sys.executable).with_name("kafkalog")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=os.environ)


def test_the_console_script_is_installed_with_the_package_and_shows_examples() -> None:
    done = run("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kafkalog")
    assert "examples:\n  kafkalog dump --files" in done.stdout


def test_python_dash_m_kafkalog_is_the_same_command() -> None:
    done = subprocess.run([sys.executable, "-m", "kafkalog", "--version"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, f"kafkalog {kafkalog.__version__}\n")


def test_a_usage_error_exits_2_with_argparses_message_and_no_traceback() -> None:
    done = run("no-such-command")
    assert done.returncode == 2
    assert "invalid choice: 'no-such-command'" in done.stderr
    assert "Traceback" not in done.stderr
