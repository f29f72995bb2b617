"""bench/RESULTS.md is shared by every benchmark: each owns one ``## `` section, replaced in
place on each run, written atomically so a crash loses nothing.

The file is grouped by topic under ``# `` headings, each with a table of the sections under
it and the command that writes each. A section ends where the next ``## `` or ``# `` heading
starts, so rewriting the last section of a topic keeps the next topic's heading. A section
the file does not hold yet goes at the end of the topic named by ``topic`` (the end of the
file without one); add it to that topic's table by hand."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _line_start(text: str, line: str, start: int = 0) -> int:
    """Where ``line`` stands as a whole line of ``text`` (from ``start``), or -1: a heading
    quoted inside another section, or a ``###`` heading that ends in the same words, is not
    the section."""
    m = re.compile("^" + re.escape(line) + "[ \t]*$", re.M).search(text, start)
    return m.start() if m else -1


def _next_heading(text: str, start: int) -> int:
    """The offset of the newline before the next ``## `` or ``# `` heading after ``start``,
    or -1."""
    m = re.compile(r"\n(?=##? )").search(text, start)
    return m.start() if m else -1


def update_section(heading: str, body: str, path: Path = RESULTS,
                   topic: str | None = None) -> None:
    """Replace the section that starts with ``heading`` (a ``## `` line) by ``body``, which
    starts with that heading itself. A new section goes at the end of ``topic`` (a ``# ``
    heading's text, without the ``# ``), else at the end of the file."""
    old = path.read_text() if path.is_file() else "# Benchmark results\n"
    body = body.rstrip("\n") + "\n"
    start = _line_start(old, heading)
    if start >= 0:
        nxt = _next_heading(old, start + len(heading))
        new = old[:start] + body + (old[nxt:] if nxt >= 0 else "")
    else:
        at = _line_start(old, "# " + topic) if topic else -1
        if at >= 0:
            nxt = re.compile(r"\n(?=# )").search(old, at + 2)
            end = nxt.start() if nxt else len(old)
            new = old[:end].rstrip("\n") + "\n\n" + body + old[end:]
        else:
            new = old.rstrip("\n") + "\n\n" + body
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(new)
    tmp.replace(path)


def publish(heading: str, body: str, write: bool = True, topic: str | None = None) -> None:
    """Print a benchmark's section and, unless ``write`` is false (a script's
    ``--no-write``), put it in bench/RESULTS.md (:func:`update_section`)."""
    print(body)
    if write:
        update_section(heading, body, topic=topic)
