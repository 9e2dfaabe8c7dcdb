"""The commands' progress bar: one step per partition (and, within a clean, the phase and its
share of the bytes, from the engine's ``on_progress`` reports), on stderr, only when stderr is a
terminal (never in a pipe, a log file or a test's captured output) and not turned off with
``--no-progress``. Drawn by tqdm (one small package with no dependencies of its own; ``pip
install 'kafkalog[cli]'``); without tqdm, a terminal gets a plain ``[i/n] partition`` line per
partition instead. The library never draws progress: only these commands do.

Lines the command prints while a bar is drawn go through :meth:`Progress.write`, which keeps
them from tearing the bar.

Thread-safety: one command's; not shared between threads.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from .. import Progress as EngineProgress

__all__ = ["Progress"]


class Progress:
    """A bar over ``total`` partitions, labelled ``what``."""

    def __init__(self, total: int, what: str, *, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self._bar: Any = None
        self._plain = False
        self._name = ""
        if not (enabled and sys.stderr.isatty()):
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self._plain = True
            return
        self._bar = tqdm(total=total, desc=what, unit="partition", file=sys.stderr, leave=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.close()

    def describe(self, name: str) -> None:
        """The partition being worked on."""
        self._name = name
        if self._bar is not None:
            self._bar.set_postfix_str(name, refresh=True)
        elif self._plain:
            print(f"[{self.done + 1}/{self.total}] {name}", file=sys.stderr, flush=True)

    def report(self, report: EngineProgress) -> None:
        """An engine progress report of the partition being worked on (an ``on_progress``
        callback): its phase and share shown beside the partition's name on the bar."""
        if self._bar is not None:
            share = f"{100 * report.done // report.total}%" if report.total else "-"
            self._bar.set_postfix_str(f"{self._name} {report.phase} {share}", refresh=True)

    def step(self) -> None:
        """One partition done."""
        self.done += 1
        if self._bar is not None:
            self._bar.update(1)

    def write(self, line: str) -> None:
        """Prints ``line`` on stdout without tearing the bar."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stdout)
        else:
            print(line, flush=False)
