"""``kafkalog stats --plot FILE.png``: each partition as a horizontal bar of its segments, so a
person sees the state at a glance.

A segment's width is its share of the partition's bytes (at least a few pixels, so small
segments stay visible); its colour is its section: clean (below the cleaner-offset-checkpoint),
dirty (cleanable now), uncleanable (the active segment, or held back by the last stable offset
or ``min.compaction.lag.ms``), or, for a topic the cleaner does not compact, its own colour. A
dark band at the bottom of a segment is its tombstone density (tombstones over records: a full
band is all tombstones); segments retention would delete now are hatched red and the retention
cut is a red line with its offset; a yellow tick marks segments with future timestamps. Each bar
is labelled with the partition, its bytes, records, dirty ratio and eligibility.

Drawn with Pillow (small, no GUI toolkit): an optional dependency, ``pip install
'kafkalog[cli]'``; :func:`require_pillow` says so when it is missing.

Thread-safety: plain functions; each call draws its own image.
"""

from __future__ import annotations

from typing import Any

from . import UsageError
from .stats_collect import Doc

__all__ = ["draw", "require_pillow", "WIDTH", "COLOURS"]

WIDTH = 1200
_MARGIN = 20
_HEADER = 44
_ROW = 64
_BAR = 26
_LEGEND = 56
_MIN_SEGMENT_PX = 3

COLOURS: dict[str, tuple[int, int, int]] = {
    "background": (255, 255, 255),
    "text": (33, 33, 33),
    "clean": (67, 160, 71),
    "dirty": (251, 140, 0),
    "uncleanable": (158, 158, 158),
    "delete policy": (30, 136, 229),
    "tombstones": (74, 20, 140),
    "retention": (229, 57, 53),
    "future": (253, 216, 53),
    "empty": (238, 238, 238),
}


def require_pillow() -> None:
    """Raises :class:`UsageError` saying how to install Pillow when it is missing."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        raise UsageError(
            "--plot needs Pillow, which is not installed: pip install 'kafkalog[cli]' (or pip install Pillow)"
        ) from None


def draw(doc: Doc, path: str) -> tuple[int, int]:
    """Draws ``doc`` (:func:`kafkalog.cli.stats_collect.collect`) into the PNG ``path``;
    returns its (width, height)."""
    from PIL import Image, ImageDraw

    partitions = [p for d in doc["log_dirs"] for p in d["partitions"]]
    height = _HEADER + _ROW * max(len(partitions), 1) + _LEGEND
    image = Image.new("RGB", (WIDTH, height), COLOURS["background"])
    pen = ImageDraw.Draw(image)
    pen.text((_MARGIN, 12), f"kafkalog stats at {doc['time']}: {len(partitions)} partitions", fill=COLOURS["text"])
    if not partitions:
        pen.text((_MARGIN, _HEADER + 8), "no partition directories found", fill=COLOURS["text"])
    for i, p in enumerate(partitions):
        _row(pen, p, _HEADER + i * _ROW)
    _legend(pen, height - _LEGEND + 10)
    image.save(path, format="PNG")
    return image.size


def _section(p: Doc, base: int) -> str:
    k = p["compaction"]
    if k is None:
        return "delete policy"
    if base < k["first_dirty_offset"]:
        return "clean"
    if base < k["first_uncleanable_offset"]:
        return "dirty"
    return "uncleanable"


def _widths(sizes: list[int], span: int) -> list[int]:
    """Pixel widths proportional to ``sizes`` summing to ``span``, each at least a few pixels."""
    n = len(sizes)
    if n == 0:
        return []
    floor = min(_MIN_SEGMENT_PX, span // n)
    free = span - floor * n
    total = sum(sizes)
    widths = [floor + (free * s // total if total else free // n) for s in sizes]
    widths[-1] += span - sum(widths)
    return widths


def _label(p: Doc) -> str:
    head = f"{p['topic']}-{p['partition']}"
    if p["error"]:
        return f"{head}: {p['error']}"
    text = f"{head}  {p['bytes']:,} bytes  {p['records']:,} records  {p['segment_count']} segments"
    k = p["compaction"]
    if k is not None:
        state = "eligible now" if k["eligible"] else f"not eligible: {k['not_eligible_reason']}"
        text += f"  dirty ratio {k['dirty_ratio']:.3f} ({state})"
    else:
        text += f"  cleanup.policy={p['config']['cleanup.policy']}"
    deleted = len(p["retention"]["would_delete"])
    if deleted:
        text += f"  retention would delete {deleted}"
    return text


def _row(pen: Any, p: Doc, top: int) -> None:
    pen.text((_MARGIN, top + 4), _label(p), fill=COLOURS["text"])
    y0, y1 = top + 22, top + 22 + _BAR
    span = WIDTH - 2 * _MARGIN
    segments = [] if p["error"] else p["segments"]
    if not segments:
        pen.rectangle([_MARGIN, y0, _MARGIN + span - 1, y1], outline=COLOURS["uncleanable"], fill=COLOURS["empty"])
        return
    doomed = {d["base_offset"] for d in p["retention"]["would_delete"]}
    x = _MARGIN
    cut = None
    for s, width in zip(segments, _widths([s["size"] for s in segments], span)):
        x1 = x + width - 1
        colour = COLOURS[_section(p, s["base_offset"])] if s["size"] else COLOURS["empty"]
        pen.rectangle([x, y0, x1, y1], fill=colour)
        if s["records"] and s["tombstones"]:
            band = max(2, round(_BAR * s["tombstones"] / s["records"]))
            pen.rectangle([x, y1 - band, x1, y1], fill=COLOURS["tombstones"])
        if s["base_offset"] in doomed:
            for hx in range(x, x1, 6):  # 45-degree hatching, cut at the segment's right edge
                end = min(hx + _BAR, x1)
                pen.line([(hx, y1), (end, y1 - (end - hx))], fill=COLOURS["retention"], width=2)
            cut = x1 + 1
        if s["future_timestamps"]:
            pen.rectangle([x, y0 - 5, x1, y0 - 1], fill=COLOURS["future"])
        pen.line([(x1, y0), (x1, y1)], fill=COLOURS["background"])
        x += width
    if cut is not None:
        pen.line([(cut, y0 - 6), (cut, y1 + 6)], fill=COLOURS["retention"], width=3)
        pen.text((cut + 4, y1 + 2), f"retention cut: log start -> {p['retention']['log_start_offset_after']}",
                 fill=COLOURS["retention"])


def _legend(pen: Any, top: int) -> None:
    x = _MARGIN
    for name in ("clean", "dirty", "uncleanable", "delete policy", "tombstones", "retention", "future"):
        label = {
            "dirty": "dirty (cleanable)",
            "delete policy": "not compacted (delete policy)",
            "tombstones": "tombstone density",
            "retention": "retention would delete / cut",
            "future": "future timestamps",
        }.get(name, name)
        pen.rectangle([x, top, x + 14, top + 14], fill=COLOURS[name])
        pen.text((x + 20, top + 1), label, fill=COLOURS["text"])
        x += 28 + int(pen.textlength(label))
