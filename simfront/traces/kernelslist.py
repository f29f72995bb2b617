"""``kernelslist.g``: the launch order of a trace set, with memcpy events between kernels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simfront.core.errors import TraceFormatError


@dataclass(frozen=True)
class KernelRef:
    """A kernel launch: its trace file, relative to the trace directory."""

    file: str
    line: int

    @property
    def stem(self) -> str:
        """``kernel-35636`` for ``kernel-35636.traceg.xz``."""
        return self.file.split(".", 1)[0]


@dataclass(frozen=True)
class MemcpyEvent:
    """A host/device copy that the tracer saw between kernels (``MemcpyHtoD,addr,bytes``)."""

    kind: str
    address: int
    size: int
    line: int


Entry = KernelRef | MemcpyEvent


def parse_kernelslist(path: str | Path) -> list[Entry]:
    """Read a ``kernelslist.g``; errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise TraceFormatError("no kernelslist.g here: not a trace directory", path) from None
    except UnicodeDecodeError:
        raise TraceFormatError("kernelslist.g is not text", path) from None
    entries: list[Entry] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("Memcpy"):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 3:
                raise TraceFormatError("memcpy line is not 'MemcpyXtoY,address,bytes'", path, lineno)
            try:
                entries.append(MemcpyEvent(parts[0], int(parts[1], 0), int(parts[2], 0), lineno))
            except ValueError:
                raise TraceFormatError(f"bad memcpy address or size in '{line}'", path, lineno) from None
        elif " " in line or "/" in line or line.startswith("."):
            raise TraceFormatError(f"'{line}' is neither a kernel trace file nor a memcpy", path, lineno)
        else:
            entries.append(KernelRef(line, lineno))
    return entries


def format_kernelslist(entries: list[Entry]) -> str:
    out = []
    for e in entries:
        if isinstance(e, KernelRef):
            out.append(e.file)
        else:
            out.append(f"{e.kind},0x{e.address:016x},{e.size}")
    return "\n".join(out) + "\n"
