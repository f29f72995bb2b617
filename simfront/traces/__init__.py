"""The trace layer: Accel-Sim-format trace directories, read as streams of numpy columns.

See ``docs/traces.md`` for the format. Main entry points: :class:`TraceSet`,
:class:`KernelTrace`, :class:`KernelHeader`, :class:`InstructionChunk`.
"""

from simfront.traces.header import KernelHeader, parse_header
from simfront.traces.instructions import Instruction, InstructionChunk, parse_line, register_name
from simfront.traces.kernelslist import KernelRef, MemcpyEvent, parse_kernelslist
from simfront.traces.reader import KernelTrace, ThreadBlock, TraceSet, Warp, open_trace_file

__all__ = [
    "Instruction", "InstructionChunk", "KernelHeader", "KernelRef", "KernelTrace",
    "MemcpyEvent", "ThreadBlock", "TraceSet", "Warp", "open_trace_file", "parse_header",
    "parse_kernelslist", "parse_line", "register_name",
]
