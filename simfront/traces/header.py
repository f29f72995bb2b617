"""The kernel header of an Accel-Sim trace file (the ``-key = value`` lines at its top).

The header is kept as written (``raw``) beside the typed fields, so that validation can
report garbage values (the 2024 tracer writes nonsense ``-nregs``) with the line they came
from, and a repaired copy can be written back in the same order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from simfront.core.errors import TraceFormatError

# Header keys as the tracer writes them, mapped to KernelHeader attributes.
_KEYS = {
    "kernel name": "name",
    "kernel id": "kernel_id",
    "grid dim": "grid",
    "block dim": "block",
    "shmem": "shmem",
    "nregs": "nregs",
    "binary version": "binary_version",
    "cuda stream id": "stream_id",
    "shmem base_addr": "shmem_base",
    "local mem base_addr": "local_base",
    "nvbit version": "nvbit_version",
    "accelsim tracer version": "tracer_version",
    "enable lineinfo": "lineinfo",
}
_ATTR_TO_KEY = {v: k for k, v in _KEYS.items()}
_SAMPLED = re.compile(r"traced\s+(\d+)\s+of\s+(\d+)")
_CENSUS = re.compile(r"^(\d+)\s+warp\s+instructions\b")
_DIM = re.compile(r"^\(\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\)$")


@dataclass(frozen=True)
class KernelHeader:
    """Launch parameters of one traced kernel, as its trace file states them."""

    name: str
    kernel_id: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem: int
    nregs: int
    binary_version: int
    stream_id: int = 0
    shmem_base: int = 0
    local_base: int = 0
    nvbit_version: str = ""
    tracer_version: int = 0
    lineinfo: bool = False
    #: header lines this class has no attribute for, kept in order as (key, value)
    extra: tuple[tuple[str, str], ...] = ()
    #: 1-based line number of each field in the file, by attribute name
    field_lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    @property
    def n_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        return (self.threads_per_block + 31) // 32

    @property
    def sampled_blocks(self) -> tuple[int, int] | None:
        """``(traced, total)`` thread blocks when the tracer sampled them (simfront's tracer
        writes ``-tb sampling = ... traced T of N``); None for a trace of every block."""
        for key, value in self.extra:
            if key == "tb sampling":
                m = _SAMPLED.search(value)
                if m and int(m[1]) < int(m[2]):
                    return int(m[1]), int(m[2])
        return None

    @property
    def census_warp_instructions(self) -> int | None:
        """Warp instructions executed by every block of a sampled launch (simfront tracer
        1.1 writes ``-tb census = W warp instructions``): the sampled blocks' work can differ
        from an average block's, so a model scales by this rather than by block count.
        None when the header has no readable census (older traces, unsampled launches)."""
        for key, value in self.extra:
            if key == "tb census":
                m = _CENSUS.match(value)
                return int(m[1]) if m else None
        return None

    def with_fields(self, **changes) -> "KernelHeader":
        return replace(self, **changes)

    def format(self) -> str:
        """The header as trace text, in the tracer's order, ending with a newline."""
        lines = []
        for attr, key in _ATTR_TO_KEY.items():
            value = getattr(self, attr)
            if attr in ("grid", "block"):
                text = f"({value[0]},{value[1]},{value[2]})"
            elif attr in ("shmem_base", "local_base"):
                text = f"0x{value:016x}"
            elif attr == "lineinfo":
                text = "1" if value else "0"
            else:
                text = str(value)
            lines.append(f"-{key} = {text}")
        lines.extend(f"-{k} = {v}" for k, v in self.extra)
        return "\n".join(lines) + "\n"


def _int(text: str) -> int:
    return int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)


def parse_header(lines: list[tuple[int, str]], path: str | Path) -> KernelHeader:
    """Build a header from ``(line_number, text)`` pairs of ``-key = value`` lines."""
    values: dict[str, object] = {}
    field_lines: dict[str, int] = {}
    extra: list[tuple[str, str]] = []
    for lineno, text in lines:
        body = text[1:]
        key, sep, value = body.partition("=")
        if not sep:
            raise TraceFormatError("header line is not '-key = value'", path, lineno)
        key, value = key.strip(), value.strip()
        attr = _KEYS.get(key)
        if attr is None:
            extra.append((key, value))
            continue
        try:
            if attr in ("grid", "block"):
                m = _DIM.match(value)
                if not m:
                    raise ValueError(value)
                parsed: object = (int(m[1]), int(m[2]), int(m[3]))
            elif attr in ("name", "nvbit_version"):
                parsed = value
            elif attr == "lineinfo":
                parsed = bool(int(value))
            else:
                parsed = _int(value)
        except ValueError:
            raise TraceFormatError(f"cannot read value '{value}'", path, lineno, key) from None
        values[attr] = parsed
        field_lines[attr] = lineno
    for required in ("name", "kernel_id", "grid", "block"):
        if required not in values:
            raise TraceFormatError("header lacks this field", path,
                                   lines[-1][0] if lines else 1, _ATTR_TO_KEY[required])
    values.setdefault("shmem", 0)
    values.setdefault("nregs", 0)
    values.setdefault("binary_version", 0)
    return KernelHeader(**values, extra=tuple(extra), field_lines=field_lines)  # type: ignore[arg-type]


def header_key(attr: str) -> str:
    """The header key (as written in the file) of a KernelHeader attribute."""
    return _ATTR_TO_KEY.get(attr, attr)
