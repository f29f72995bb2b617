"""bench/RESULTS.md is shared by every benchmark: each owns one ``## `` section, replaced in
place on each run (appended the first time), written atomically so a crash loses nothing."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def update_section(heading: str, body: str, path: Path = RESULTS) -> None:
    """Replace the section that starts with ``heading`` (a ``## `` line) by ``body``, which
    starts with that heading itself."""
    old = path.read_text() if path.is_file() else "# Benchmark results\n"
    body = body.rstrip("\n") + "\n"
    start = old.find(heading)
    if start >= 0:
        nxt = old.find("\n## ", start + len(heading))
        new = old[:start] + body + (old[nxt:] if nxt >= 0 else "")
    else:
        new = old.rstrip("\n") + "\n\n" + body
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(new)
    tmp.replace(path)
