"""Hopper opcodes that Accel-Sim 1.x's Ampere map knows under another name or form: one
instruction in, one instruction out, same registers and addresses. Used by both the
line-by-line rewriting (``isa_compat``) and the block-by-block lowering (``lowering``)."""

from __future__ import annotations

from typing import Callable

#: Register number the tracer writes for RZ (the zero register).
RZ = "R255"


def _lower_viadd(opcode: str, srcs: list[str]) -> tuple[str, list[str]]:
    # VIADD Rd, Ra, (Rb|imm) adds two values; IADD3 Rd, Ra, (Rb|imm), RZ adds three. The
    # immediate stays in the trace's immediate field; the register list gains RZ, which is
    # how the tracer writes Ampere's own `IADD3 Rd, Ra, imm, RZ` (2 sources: Ra, R255).
    mods = opcode[len("VIADD"):]
    return "IADD3" + mods, srcs + [RZ]


def _lower_rename(new: str, old: str) -> Callable[[str, list[str]], tuple[str, list[str]]]:
    def lower(opcode: str, srcs: list[str]) -> tuple[str, list[str]]:
        return new + opcode[len(old):], srcs

    return lower


#: Hopper opcode -> how to write it as an Ampere instruction (same registers and addresses).
#: REDG is sm_90's name for a global reduction, RED on sm_80 (same operands, same
#: ``.E.ADD.F32...`` modifiers; Accel-Sim 1.x executes OP_RED as a global atomic).
#: VIMNMX is the sm_90 integer min/max that replaced IMNMX (same operands).
LOWERINGS: dict[str, Callable[[str, list[str]], tuple[str, list[str]]]] = {
    "VIADD": _lower_viadd,
    "REDG": _lower_rename("RED", "REDG"),
    "VIMNMX": _lower_rename("IMNMX", "VIMNMX"),
}
