"""Two small real kernel traces shipped inside the package (``sample_kernels/``), for
running a tiny input through the compiled code before a job needs it (``simfront.core.jit``).

Each is kept twice: as trace text (``kernel-N.traceg.xz``), for the scanner, and as its
decoded chunks (``kernel-N.chunks``, the ``decoded`` format), so that the timing model can
be compiled without the scanner (the two are compiled side by side by two processes). Their
numbers are never used: only the types they carry through the code matter, so a decoded
copy from an older decoding still serves; one that no longer reads is replaced by a scan of
the text. ``tests/test_core_jit.py`` checks that they are the text's chunks as decoded now
(:func:`rewrite_decoded` makes them again).

Between them they call every compiled function of the trace pass and the issue model:
``kernel-96404`` (``_chunk_scan_bwd_dcb_kernel``: cp.async copies, lines shared between
blocks) and ``kernel-96310`` (an elementwise kernel with strided fills), from
``traces/mamba2_lm-tiny`` (an H100 capture of the Mamba2 LM's tiny training step,
2026-11-22; its manifest.json has the capture's provenance).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from simfront.traces import decoded
from simfront.traces.header import KernelHeader
from simfront.traces.instructions import InstructionChunk

FOLDER = Path(__file__).parent / "sample_kernels"
NAMES = ("kernel-96404", "kernel-96310")


def texts() -> list[Path]:
    """The samples' trace files."""
    return [FOLDER / f"{name}.traceg.xz" for name in NAMES]


@dataclass
class DecodedKernel:
    """A sample as the model reads a ``KernelTrace``: its header and its chunks."""

    path: Path
    header: KernelHeader
    chunks: list[InstructionChunk]

    @property
    def kernel_id(self) -> int:
        return self.header.kernel_id

    def iter_chunks(self, chunk_bytes: int | None = None) -> Iterator[InstructionChunk]:
        return iter(self.chunks)


def decoded_kernels() -> list[DecodedKernel] | None:
    """The samples from their decoded copies; None when one does not read."""
    out = []
    for name in NAMES:
        path = FOLDER / f"{name}.chunks"
        kept = decoded.read(path)
        if kept is None:
            return None
        header, chunks = kept
        try:
            out.append(DecodedKernel(path, header, list(chunks)))
        except ValueError:
            return None
    return out


def rewrite_decoded(scanned: Iterable[tuple[KernelHeader, list[InstructionChunk]]]) -> None:
    """Write the decoded copies from the texts' ``(header, chunks)``, in :data:`NAMES`'s
    order (``tests/test_core_jit.py`` scans them)."""
    for name, (header, chunks) in zip(NAMES, scanned, strict=True):
        w = decoded.Writer(FOLDER / f"{name}.chunks", header)
        for chunk in chunks:
            w.add(chunk)
        w.commit()
