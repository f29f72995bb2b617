"""Instruction lines of Accel-Sim's trace format, parsed into columns.

A kernel body is a sequence of thread blocks, each a sequence of warps, each a run of
instruction lines::

    #BEGIN_TB
    thread block = 0,0,0
    warp = 0
    insts = 3080
    01a0 ffffffff 1 R2 LDG.E 1 R4 4 1 0x7fc7fbe00000 16 0
    ...
    #END_TB

An instruction line is ``[line] PC mask ndst dst.. opcode nsrc src.. width [mode addrs..] [imm]``:
PC and mask in hex; registers as ``R12`` (also ``UR``, ``P``, ``UP``); for a memory
instruction (width > 0) an address mode, 0 listing one hex address per active lane, 1 giving
a base and a stride (active lanes contiguous), 2 giving a base and one delta per further
active lane. Tracer version 5 ends every line with the instruction's immediate.

The hot path is :func:`scan_body`, compiled with numba: it turns a buffer of complete lines
into numpy columns without creating a Python object per line. When it meets something it
cannot read it stops and reports the line; :func:`parse_line`, a plain-Python parser of one
line, then produces the message that names the field.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from simfront.core.errors import TraceFormatError

MAX_DST = 4
MAX_SRC = 8
WARP_SIZE = 32

# Register codes in the columns: R0..R255 as themselves, then the other register files.
REG_BASE = {"R": 0, "UR": 256, "P": 320, "UP": 328}
REG_LIMIT = {"R": 256, "UR": 64, "P": 8, "UP": 8}
NO_REG = -1

# Error codes of scan_body (the field that could not be read).
_FIELDS = {
    1: "PC", 2: "active mask", 3: "destination count", 4: "destination register",
    5: "opcode", 6: "source count", 7: "source register", 8: "memory width",
    9: "address mode", 10: "address", 11: "immediate", 12: "end of line",
    13: "structure line", 14: "register count", 15: "opcode table", 16: "warp",
    17: "insts", 18: "block dim",
}

# Slots of the warp-count state that scan_body carries between buffers (an int64 array).
W_EXPECTED, W_COUNT, W_DECL_LINE, W_TB_WARPS, W_BLOCK_WARPS, W_TB_LINE = range(6)


def new_warp_state(warps_per_block: int) -> np.ndarray:
    state = np.zeros(6, np.int64)
    state[W_EXPECTED] = -1
    state[W_BLOCK_WARPS] = warps_per_block
    return state


def register_name(code: int) -> str:
    """``R12`` for 12, ``UR3`` for 259: the inverse of the register codes in the columns."""
    for prefix in ("UP", "P", "UR", "R"):
        base = REG_BASE[prefix]
        if base <= code < base + REG_LIMIT[prefix]:
            return f"{prefix}{code - base}"
    raise ValueError(f"not a register code: {code}")


# ---------------------------------------------------------------------------------------
# The plain-Python parser: one line in, one Instruction out. Used for error messages and
# for the readable record API; the numba scanner below must agree with it.

@dataclass(frozen=True)
class Instruction:
    pc: int
    mask: int
    dst: tuple[str, ...]
    opcode: str
    src: tuple[str, ...]
    mem_width: int
    addr_mode: int
    addresses: tuple[int, ...]
    immediate: int | None
    line: int

    @property
    def active_lanes(self) -> int:
        return bin(self.mask).count("1")


def _register(token: str, what: str, path, line) -> str:
    for prefix in ("UP", "UR", "P", "R"):
        if token.startswith(prefix) and token[len(prefix):].isdigit():
            if int(token[len(prefix):]) >= REG_LIMIT[prefix]:
                break
            return token
    raise TraceFormatError(f"'{token}' is not a register", path, line, what)


def _is_opcode(token: str) -> bool:
    if not token or not ("A" <= token[0] <= "Z"):
        return False
    if not all(c.isalnum() or c in "._" for c in token):
        return False
    for prefix in ("UP", "UR", "P", "R"):  # a register is never an opcode
        if token.startswith(prefix) and token[len(prefix):].isdigit():
            return False
    return True


def parse_line(text: str, line: int = 0, path=None, tracer_version: int = 5,
               lineinfo: bool = False) -> Instruction:
    """Parse one instruction line; raise TraceFormatError naming the field that is wrong."""
    tokens = text.split()
    pos = 0

    def take(what: str) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise TraceFormatError("line ends early (truncated?)", path, line, what)
        pos += 1
        return tokens[pos - 1]

    def number(what: str, base: int = 10) -> int:
        tok = take(what)
        try:
            return int(tok, 16 if base == 16 else 0) if base == 16 else int(tok, 10)
        except ValueError:
            raise TraceFormatError(f"'{tok}' is not a number", path, line, what) from None

    if lineinfo:
        number("source line")
    pc = number("PC", 16)
    mask = number("active mask", 16)
    if not 0 <= mask < 1 << 32:
        raise TraceFormatError(f"mask {mask:x} wider than a warp", path, line, "active mask")
    ndst = number("destination count")
    if not 0 <= ndst <= MAX_DST:
        raise TraceFormatError(f"{ndst} destinations (at most {MAX_DST})", path, line, "destination count")
    dst = tuple(_register(take("destination register"), "destination register", path, line)
                for _ in range(ndst))
    opcode = take("opcode")
    if not _is_opcode(opcode):
        raise TraceFormatError(f"'{opcode}' is not an opcode", path, line, "opcode")
    nsrc = number("source count")
    if not 0 <= nsrc <= MAX_SRC:
        raise TraceFormatError(f"{nsrc} sources (at most {MAX_SRC})", path, line, "source count")
    src = tuple(_register(take("source register"), "source register", path, line)
                for _ in range(nsrc))
    width = number("memory width")
    mode = 0
    addresses: list[int] = []
    if width > 0:
        mode = number("address mode")
        lanes = [i for i in range(WARP_SIZE) if mask >> i & 1]
        if mode == 0:
            addresses = [number("address", 16) for _ in lanes]
        elif mode == 1:
            base = number("address", 16)
            stride = number("address")
            addresses = [base + i * stride for i in range(len(lanes))]
        elif mode == 2:
            base = number("address", 16)
            addresses = [base] if lanes else []
            for _ in lanes[1:]:
                addresses.append(addresses[-1] + number("address"))
        else:
            raise TraceFormatError(f"unknown address mode {mode}", path, line, "address mode")
        addresses = [a & 0xFFFFFFFFFFFFFFFF for a in addresses]
    immediate = None
    if tracer_version >= 5:
        immediate = number("immediate", 0)
    if pos != len(tokens):
        raise TraceFormatError(f"unexpected '{tokens[pos]}' after the instruction", path, line,
                               "end of line")
    return Instruction(pc, mask, dst, opcode, src, width, mode, tuple(addresses), immediate, line)


# ---------------------------------------------------------------------------------------
# The numba scanner.

OPTABLE_SIZE = 4096  # distinct opcode strings per kernel (a power of two)

# scan_body's steps are small functions compiled into its loop (inline="always"). The loop's
# speed is the reader's: a split was kept only where it scanned ho-hybrid's largest kernels
# as fast as the single loop did (a split that passed every column between functions per
# line ran 1.5x slower).


@dataclass
class ScanState:
    """What scan_body carries from one buffer of a kernel to the next."""

    tb: int = -1
    warp: int = -1
    line: int = 1
    op_keys: np.ndarray = None  # type: ignore[assignment]
    op_vals: np.ndarray = None  # type: ignore[assignment]
    op_count: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.op_keys is None:
            self.op_keys = np.zeros(OPTABLE_SIZE, dtype=np.uint64)
            self.op_vals = np.full(OPTABLE_SIZE, -1, dtype=np.int32)
            self.op_count = np.zeros(1, dtype=np.int64)


@numba.njit(cache=True, inline="always")
def _skip_spaces(buf, i, end):
    while i < end and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
        i += 1
    return i


@numba.njit(cache=True, inline="always")
def _token_end(buf, i, end):
    while i < end and buf[i] != 32 and buf[i] != 9 and buf[i] != 13 and buf[i] != 10:
        i += 1
    return i


@numba.njit(cache=True, inline="always")
def _next(buf, i, eol):
    """The span (start, end) of the token after position ``i`` on the line."""
    p = _skip_spaces(buf, i, eol)
    return p, _token_end(buf, p, eol)


@numba.njit(cache=True, inline="always")
def _hex(buf, i, j):
    """Parse buf[i:j] as hex (optional 0x); return (value, ok)."""
    if j - i >= 2 and buf[i] == 48 and (buf[i + 1] == 120 or buf[i + 1] == 88):
        i += 2
    if i >= j or j - i > 16:
        return np.uint64(0), False
    v = np.uint64(0)
    for k in range(i, j):
        c = buf[k]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return np.uint64(0), False
        v = (v << np.uint64(4)) | np.uint64(d)
    return v, True


@numba.njit(cache=True, inline="always")
def _dec(buf, i, j):
    """Parse buf[i:j] as a signed decimal, or hex with 0x; return (value, ok)."""
    neg = False
    if i < j and buf[i] == 45:
        neg = True
        i += 1
    if i >= j:
        return np.int64(0), False
    if j - i >= 2 and buf[i] == 48 and (buf[i + 1] == 120 or buf[i + 1] == 88):
        h, ok = _hex(buf, i, j)
        v = np.int64(h)
        return (-v if neg else v), ok
    v = np.int64(0)
    for k in range(i, j):
        c = buf[k]
        if c < 48 or c > 57:
            return np.int64(0), False
        v = v * 10 + (c - 48)
    return (-v if neg else v), True


@numba.njit(cache=True, inline="always")
def _reg(buf, i, j):
    """A register token's code, or -1."""
    base = -1
    limit = 0
    k = i
    if j - i >= 3 and buf[i] == 85 and buf[i + 1] == 82:  # UR
        base, limit, k = 256, 64, i + 2
    elif j - i >= 3 and buf[i] == 85 and buf[i + 1] == 80:  # UP
        base, limit, k = 328, 8, i + 2
    elif j - i >= 2 and buf[i] == 82:  # R
        base, limit, k = 0, 256, i + 1
    elif j - i >= 2 and buf[i] == 80:  # P
        base, limit, k = 320, 8, i + 1
    if base < 0:
        return -1
    n = 0
    for m in range(k, j):
        c = buf[m]
        if c < 48 or c > 57:
            return -1
        n = n * 10 + (c - 48)
        if n >= limit:
            return -1
    return base + n


@numba.njit(cache=True, inline="always")
def _read_regs(buf, e, eol, count, out):
    """Read ``count`` register tokens after position ``e`` into ``out``; (end, ok)."""
    for r in range(count):
        p, e = _next(buf, e, eol)
        code = _reg(buf, p, e) if e > p else -1
        if code < 0:
            return e, False
        out[r] = code
    return e, True


@numba.njit(cache=True, inline="always")
def _is_opcode_token(buf, i, j):
    c = buf[i]
    if c < 65 or c > 90:
        return False
    for k in range(i, j):
        c = buf[k]
        if not ((48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 46 or c == 95):
            return False
    return _reg(buf, i, j) < 0


@numba.njit(cache=True, inline="always")
def _starts(buf, i, end, pattern):
    if end - i < len(pattern):
        return False
    for k in range(len(pattern)):
        if buf[i + k] != pattern[k]:
            return False
    return True


@numba.njit(cache=True)
def _grow_u64(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(cache=True)
def _count_lines(buf, start, end):
    n = 1
    for k in range(start, end):
        if buf[k] == 10:
            n += 1
    return n


#: the spellings the scanner checks a line's start against (module constants: numba
#: freezes them, so the scan allocates nothing per line)
_END_TB = np.array([35, 69, 78, 68, 95, 84, 66], np.uint8)  # "#END_TB"
_THREAD_B = np.array([116, 104, 114, 101, 97, 100, 32, 98], np.uint8)  # "thread b"


# The line kinds met once a block or warp (below) and the address lists (_addresses) are
# compiled apart, not inlined into _scan_lines: inlined (numba inlines at its own IR level)
# they doubled the scanner's compile time in a fresh checkout and scanned no faster
# (bench/bench_refactor.py compile).
@numba.njit(cache=True)
def _thread_block_line(buf, j, eol, lineno, cur_tb, wst, tb_xyz, ntb):
    """``thread block = x,y,z``: its coordinates into ``tb_xyz[ntb]``, after checking that
    the previous block was complete. Returns (error code, its line); (0, 0) when fine."""
    k = j
    while k < eol and buf[k] != 61:
        k += 1
    k += 1
    ok = True
    for d in range(3):
        k = _skip_spaces(buf, k, eol)
        s = k
        while k < eol and buf[k] != 44 and buf[k] != 32 and buf[k] != 13:
            k += 1
        v, good = _dec(buf, s, k)
        ok = ok and good
        tb_xyz[ntb, d] = v  # kept only if the line passes (ntb counts it)
        if k < eol and buf[k] == 44:
            k += 1
    if not ok or not _starts(buf, j, eol, _THREAD_B):
        return 13, lineno
    if wst[0] >= 0 and wst[1] != wst[0]:
        return 17, wst[2]
    if cur_tb >= 0 and wst[3] != wst[4]:
        return 18, wst[5]
    wst[0] = -1
    wst[3] = 0
    wst[5] = lineno
    return 0, 0


@numba.njit(cache=True)
def _warp_or_insts_line(buf, j, eol, lineno, cur_tb, cur_warp, wst):
    """``warp = N`` or ``insts = N``. Returns (error code, its line, the current warp)."""
    k = j
    while k < eol and buf[k] != 61:
        k += 1
    s = _skip_spaces(buf, k + 1, eol)
    e = _token_end(buf, s, eol)
    v, ok = _dec(buf, s, e)
    if k >= eol or not ok or _skip_spaces(buf, e, eol) != eol:
        return 13, lineno, cur_warp
    if buf[j] == 119:
        return 0, 0, v
    if cur_warp < 0 or cur_tb < 0:
        return 16, lineno, cur_warp
    if wst[0] >= 0 and wst[1] != wst[0]:
        return 17, wst[2], cur_warp
    wst[0] = v
    wst[1] = 0
    wst[2] = lineno
    wst[3] += 1
    return 0, 0, cur_warp


@numba.njit(cache=True)
def _structure_line(buf, j, eol, lineno, cur_tb, cur_warp, wst, tb_xyz, ntb):
    """A line that is not an instruction (``#END_TB`` and comments, ``thread block =``,
    ``warp =``, ``insts =``). Returns (error code, its line, thread block, warp, thread
    blocks met)."""
    if buf[j] == 35:  # '#': #BEGIN_TB, #END_TB, comments
        if _starts(buf, j, eol, _END_TB):
            cur_warp = -1
        return 0, 0, cur_tb, cur_warp, ntb
    if buf[j] == 116:  # 'thread block = x,y,z'
        err, err_line = _thread_block_line(buf, j, eol, lineno, cur_tb, wst, tb_xyz, ntb)
        if err:
            return err, err_line, cur_tb, cur_warp, ntb
        return 0, 0, cur_tb + 1, -1, ntb + 1
    err, err_line, cur_warp = _warp_or_insts_line(buf, j, eol, lineno, cur_tb, cur_warp, wst)
    return err, err_line, cur_tb, cur_warp, ntb


@numba.njit(cache=True, inline="always")
def _counted_registers(buf, e, eol, limit, out):
    """A register count (at most ``limit``) and that many registers into ``out``.
    Returns (count, end, what failed: 0 nothing, 1 the count, 2 a register)."""
    p, e = _next(buf, e, eol)
    count, ok = _dec(buf, p, e)
    if not ok or count < 0 or count > limit:
        return count, e, 1
    e, ok = _read_regs(buf, e, eol, count, out)
    return count, e, 0 if ok else 2


@numba.njit(cache=True, inline="always")
def _popcount(m):
    lanes = 0
    while m:
        lanes += 1
        m &= m - np.uint32(1)
    return lanes


@numba.njit(cache=True, inline="always")
def _pc_token(buf, j, eol, lineinfo):
    """The span of an instruction line's PC, after the source line number where the
    trace has line info."""
    if lineinfo:
        return _next(buf, _token_end(buf, j, eol), eol)
    return j, _token_end(buf, j, eol)


@numba.njit(cache=True, inline="always")
def _immediate_and_end(buf, e, eol, tracer_version):
    """The immediate that tracer version 5 ends a line with (0 before it), then nothing
    but spaces. Returns (immediate, error code: 0, 11 the immediate, 12 the end)."""
    iv = np.int64(0)
    if tracer_version >= 5:
        p, e = _next(buf, e, eol)
        iv, ok = _dec(buf, p, e)
        if not ok:
            return iv, 11
    if _skip_spaces(buf, e, eol) != eol:
        return iv, 12
    return iv, 0


@numba.njit(cache=True, inline="always")
def _opcode_id(buf, p, e, op_keys, op_vals, op_count, op_first):
    """The kernel-local id of the opcode spelled buf[p:e], or -1 when the table is full.
    FNV-1a of the text into an open-addressing table; a new opcode's first spelling goes to
    ``op_first`` for the caller to decode once."""
    table_mask = np.int64(op_keys.shape[0] - 1)
    h = np.uint64(14695981039346656037)
    for k in range(p, e):
        h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
    if h == np.uint64(0):
        h = np.uint64(1)
    slot = np.int64(h & np.uint64(table_mask))
    while True:
        if op_keys[slot] == h:
            return op_vals[slot]
        if op_keys[slot] == np.uint64(0):
            if op_count[0] >= table_mask:
                return -1
            new = op_count[0]
            op_keys[slot] = h
            op_vals[slot] = new
            op_first[new, 0] = p
            op_first[new, 1] = e - p
            op_first[new, 2] = 1  # new in this buffer
            op_count[0] += 1
            return new
        slot = (slot + np.int64(1)) & table_mask


@numba.njit(cache=True)
def _addresses(buf, e, eol, lanes, out):
    """A memory instruction's address mode and its ``lanes`` addresses into ``out``.
    Returns (mode, position after them, error code: 0, 9 the mode, 10 an address)."""
    p, e = _next(buf, e, eol)
    md, ok = _dec(buf, p, e)
    if not ok or md < 0 or md > 2:
        return md, e, 9
    e, ok = _lane_addresses(buf, e, eol, md, lanes, out)
    return md, e, 0 if ok else 10


@numba.njit(cache=True)
def _lane_addresses(buf, e, eol, md, lanes, out):
    """The ``lanes`` addresses of a memory instruction in address mode ``md`` (0: one per
    lane; 1: base and stride; 2: base and one delta per further lane) into ``out``.
    Returns (position after them, ok)."""
    if md == 0:
        for r in range(lanes):
            p, e = _next(buf, e, eol)
            a, ok = _hex(buf, p, e)
            if not ok:
                return e, False
            out[r] = a
        return e, True
    p, e = _next(buf, e, eol)
    base, ok = _hex(buf, p, e)
    if not ok:
        return e, False
    if md == 1:
        p, e = _next(buf, e, eol)
        stride, ok = _dec(buf, p, e)
        if not ok:
            return e, False
        for r in range(lanes):
            out[r] = base + np.uint64(r * stride)
        return e, True
    cur = base
    if lanes > 0:
        out[0] = base
    for r in range(1, lanes):
        p, e = _next(buf, e, eol)
        dlt, ok = _dec(buf, p, e)
        if not ok:
            return e, False
        cur = cur + np.uint64(dlt)
        out[r] = cur
    return e, True


@numba.njit(cache=True)
def _new_columns(n_lines):
    """Empty columns for up to ``n_lines`` instructions (see scan_body's return)."""
    return (np.empty(n_lines, np.int32), np.empty(n_lines, np.int32),
            np.empty(n_lines, np.uint64), np.empty(n_lines, np.uint32),
            np.empty(n_lines, np.int32), np.empty(n_lines, np.int8),
            np.full((n_lines, 4), -1, np.int16), np.empty(n_lines, np.int8),
            np.full((n_lines, 8), -1, np.int16), np.empty(n_lines, np.int32),
            np.empty(n_lines, np.int8), np.empty(n_lines + 1, np.int64),
            np.zeros(n_lines, np.int64), np.empty(n_lines, np.int64),
            np.empty(max(1024, n_lines * 4), np.uint64), np.empty((n_lines, 3), np.int32))


@numba.njit(cache=True)
def scan_body(buf, start, end, line0, tb0, warp0, tracer_version, lineinfo,
              op_keys, op_vals, op_count, op_first, wst):
    """Scan complete lines of a kernel body in ``buf[start:end]``.

    Returns the instruction columns, the coordinates of the thread blocks met, the
    state to carry on (tb, warp, next line), and an error (code, line; 0 when none).
    ``op_first`` receives, for each new opcode, the buffer offset and length of its first
    spelling (so the caller can decode it once). ``wst`` (see :func:`new_warp_state`) checks
    as it goes that each warp has as many lines as its ``insts =`` says and each thread block
    as many warps as the block size implies; :func:`finish_warp_state` checks the last ones.
    """
    (tb, warp, pc, mask, op, ndst, dst, nsrc, src, width, mode, addr_off, imm, line, addrs,
     tb_xyz) = _new_columns(_count_lines(buf, start, end))
    addr_off[0] = 0
    # n, na, ntb, err, err_line, cur_tb, cur_warp, lineno, i, addresses needed
    at = np.array([0, 0, 0, 0, 0, tb0, warp0, line0, start, 0], np.int64)
    while True:
        _scan_lines(buf, end, tracer_version, lineinfo, op_keys, op_vals, op_count,
                    op_first, wst, tb, warp, pc, mask, op, ndst, dst, nsrc, src, width, mode,
                    addr_off, imm, line, addrs, tb_xyz, at)
        if at[9] == 0:
            break
        addrs = _grow_u64(addrs, at[9])
        at[9] = 0
    n, na, ntb = at[0], at[1], at[2]
    return (n, tb[:n], warp[:n], pc[:n], mask[:n], op[:n], ndst[:n], dst[:n], nsrc[:n],
            src[:n], width[:n], mode[:n], addr_off[: n + 1], addrs[:na], imm[:n], line[:n],
            tb_xyz[:ntb], at[5], at[6], at[7], at[3], at[4])


@numba.njit(cache=True, _nrt=False)
def _scan_lines(buf, end, tracer_version, lineinfo, op_keys, op_vals, op_count, op_first,
                wst, tb, warp, pc, mask, op, ndst, dst, nsrc, src, width, mode, addr_off, imm,
                line, addrs, tb_xyz, at):
    """scan_body's loop over lines, from and into ``at`` (its layout there). It stops at
    the end, at an error, or at a line whose addresses ``addrs`` has no room for
    (``at[9]``: the room needed; the line is scanned again once there is). Compiled without
    numba's reference counts: they cost half the scan's time, and nothing here allocates."""
    n, na, ntb, err, err_line = at[0], at[1], at[2], at[3], at[4]
    cur_tb, cur_warp, lineno, i = at[5], at[6], at[7], at[8]

    while i < end:
        eol = i
        while eol < end and buf[eol] != 10:
            eol += 1
        j = _skip_spaces(buf, i, eol)
        if j == eol:
            pass  # blank line
        elif buf[j] == 35 or buf[j] == 116 or buf[j] == 119 or buf[j] == 105:
            err, err_line, cur_tb, cur_warp, ntb = _structure_line(
                buf, j, eol, lineno, cur_tb, cur_warp, wst, tb_xyz, ntb)
            if err:
                break
        else:
            # an instruction line
            if cur_warp < 0 or cur_tb < 0 or wst[0] < 0:
                err, err_line = 16, lineno
                break
            p, e = _pc_token(buf, j, eol, lineinfo)
            v, ok = _hex(buf, p, e)
            if not ok:
                err, err_line = 1, lineno
                break
            pc[n] = v
            p, e = _next(buf, e, eol)
            mv, ok = _hex(buf, p, e)
            if not ok or mv > np.uint64(0xFFFFFFFF):
                err, err_line = 2, lineno
                break
            mask[n] = np.uint32(mv)
            ndst[n], e, bad = _counted_registers(buf, e, eol, MAX_DST, dst[n])
            if bad:
                err, err_line = 2 + bad, lineno  # 3: the count, 4: a register
                break
            p, e = _next(buf, e, eol)
            if e == p or not _is_opcode_token(buf, p, e):
                err, err_line = 5, lineno
                break
            code = _opcode_id(buf, p, e, op_keys, op_vals, op_count, op_first)
            if code < 0:
                err, err_line = 15, lineno
                break
            op[n] = code
            nsrc[n], e, bad = _counted_registers(buf, e, eol, MAX_SRC, src[n])
            if bad:
                err, err_line = 5 + bad, lineno  # 6: the count, 7: a register
                break
            p, e = _next(buf, e, eol)
            w, ok = _dec(buf, p, e)
            if not ok or w < 0:
                err, err_line = 8, lineno
                break
            width[n] = w
            mode[n] = 0
            if w > 0:
                lanes = _popcount(mask[n])
                if na + lanes > addrs.shape[0]:
                    at[9] = na + lanes
                    break  # this line again, with room
                mode[n], e, err = _addresses(buf, e, eol, lanes, addrs[na:])
                if err:
                    err_line = lineno
                    break
                na += lanes
            addr_off[n + 1] = na
            imm[n], err = _immediate_and_end(buf, e, eol, tracer_version)
            if err:
                err_line = lineno
                break
            wst[1] += 1
            tb[n] = cur_tb
            warp[n] = cur_warp
            line[n] = lineno
            n += 1
        lineno += 1
        i = eol + 1

    at[0], at[1], at[2], at[3], at[4] = n, na, ntb, err, err_line
    at[5], at[6], at[7], at[8] = cur_tb, cur_warp, lineno, i


def finish_warp_state(wst: np.ndarray, tb: int) -> tuple[int, int]:
    """The checks of the last warp and block at the end of a file: (error code, line) or (0, 0)."""
    if wst[W_EXPECTED] >= 0 and wst[W_COUNT] != wst[W_EXPECTED]:
        return 17, int(wst[W_DECL_LINE])
    if tb >= 0 and wst[W_TB_WARPS] != wst[W_BLOCK_WARPS]:
        return 18, int(wst[W_TB_LINE])
    return 0, 0


def error_field(code: int) -> str:
    return _FIELDS.get(code, "line")


@dataclass
class InstructionChunk:
    """Instructions of a kernel in columns, in file order. Row ``i`` belongs to thread block
    ``tb[i]`` (0-based, in file order; coordinates in ``tb_coords``) and warp ``warp[i]``;
    ``opcodes[op[i]]`` is its opcode; its lane addresses are ``addrs[addr_off[i]:addr_off[i+1]]``
    (one per active lane, in lane order; none for non-memory instructions).
    Register columns hold codes (see :func:`register_name`), -1 past ``ndst``/``nsrc``."""

    tb: np.ndarray
    warp: np.ndarray
    pc: np.ndarray
    mask: np.ndarray
    op: np.ndarray
    ndst: np.ndarray
    dst: np.ndarray
    nsrc: np.ndarray
    src: np.ndarray
    mem_width: np.ndarray
    addr_mode: np.ndarray
    addr_off: np.ndarray
    addrs: np.ndarray
    imm: np.ndarray
    line: np.ndarray
    opcodes: list[str]
    #: thread blocks that start in this chunk: index -> (x, y, z)
    tb_coords: dict[int, tuple[int, int, int]]

    def __len__(self) -> int:
        return int(self.pc.shape[0])

    @property
    def active_lanes(self) -> np.ndarray:
        """Active lanes per instruction (popcount of the mask)."""
        m = self.mask.astype(np.uint32)
        return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).astype(np.int32)

    def instruction(self, i: int) -> Instruction:
        """Row ``i`` as a readable record."""
        a0, a1 = int(self.addr_off[i]), int(self.addr_off[i + 1])
        return Instruction(
            pc=int(self.pc[i]), mask=int(self.mask[i]),
            dst=tuple(register_name(int(r)) for r in self.dst[i, : self.ndst[i]]),
            opcode=self.opcodes[int(self.op[i])],
            src=tuple(register_name(int(r)) for r in self.src[i, : self.nsrc[i]]),
            mem_width=int(self.mem_width[i]), addr_mode=int(self.addr_mode[i]),
            addresses=tuple(int(a) for a in self.addrs[a0:a1]),
            immediate=int(self.imm[i]), line=int(self.line[i]))
