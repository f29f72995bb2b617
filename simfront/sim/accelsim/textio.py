"""Trace text in and out, plain or compressed, streamed (a kernel trace is hundreds of MB
of text uncompressed)."""

from __future__ import annotations

import io
import lzma
from pathlib import Path

import zstandard


def open_text_in(path: Path) -> io.TextIOBase:
    name = path.name
    if name.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", errors="replace")
    if name.endswith(".zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    return open(path, "rt", encoding="utf-8", errors="replace")


def open_text_out(path: Path, xz: bool) -> io.TextIOBase:
    if xz:
        # preset 1: the copy is scratch for one simulation; speed matters more than size
        return lzma.open(path, "wt", encoding="utf-8", preset=1)
    return open(path, "wt", encoding="utf-8")
