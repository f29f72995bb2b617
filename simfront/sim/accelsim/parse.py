"""Parser of GPGPU-Sim / Accel-Sim standard output into per-kernel records.

A run prints, for every kernel that finishes, a statistics block that starts at
``kernel_name = ...`` and ends at ``gpgpu_silicon_slowdown = ...``. Most counters in that block
are *cumulative* over the run (GPGPU-Sim never clears its shader, cache, DRAM, interconnect or
latency statistics between kernels; the cache breakdown tables are cumulative per CUDA stream),
while a few are the kernel's own (``gpu_sim_cycle``, ``gpu_sim_insn``, ``gpu_ipc``,
``gpu_occupancy``, ``partiton_level_parallism*``, ``L2_BW``). :func:`parse_log` returns the
blocks as printed; :func:`kernel_records` differences integer counters between consecutive
blocks (per stream for the stream tables) so each record holds the kernel's own counts.
Ratios, averages and maxima cannot be differenced: they are kept as printed (for the second
and later kernels of a run they describe the run so far) except where a per-kernel figure is
recomputed from differenced counts (hit rates, DRAM utilisation, IPC).

Lines outside the known shapes are counted (:attr:`ParsedLog.unknown`), never dropped
silently. A run that did not end normally (an assertion, a crash, a deadlock, a missing exit
message) is reported in :attr:`ParsedLog.failure` with the simulator's own last lines; blocks
of kernels that finished before it stay valid and are marked complete.
"""

from __future__ import annotations

import lzma
import math
import re
from collections import Counter
from functools import lru_cache
from itertools import islice
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import zstandard

from simfront.core.errors import InputError

# --------------------------------------------------------------------------- known shapes

# Lines outside a statistics block that are progress, configuration echo or per-unit detail.
_OUTSIDE_KNOWN = (
    "GPGPU-Sim uArch: Shader ", "thread block = ", "GPGPU-Sim uArch: cycles simulated",
    "GPGPU-Sim uArch: CTA/core", "GPGPU-Sim: Reconfigure", "GPGPU-Sim uArch: clock ",
    "GPGPU-Sim uArch: performance model", "GPGPU-Sim: Configuration options",
    "GPGPU-Sim uArch: ", "GPGPU-Sim PTX:", "GPGPU-Sim: ", "Destroy streams",
    "Header info loaded", "*** Initializing Memory", "DRAM Timing Options", "addr_dec_mask[",
    "sub_partition_id_mask", "Total number of memory sub partition", "Accel-Sim [build",
    "        *** GPGPU-Sim Simulator", "launching memcpy command", "Processing kernel ",
    "launching kernel name:", "kernel_name = ", "Warning:", "WARNING", "warning:",
    "GPGPU-Sim Power", "Finished kernel", "Kernel ", "kernel ", "Loading kernel",
    "Reading trace", "Trace ", "Parsing", "gpgpu_simulation_time", "gpgpu_simulation_rate",
    "gpgpu_silicon_slowdown", "Memory ", "icnt_", "Ramulator", "GPGPU-Sim Cycle",
    "----", "Bypassing", "Cache ", "Use ",
)

# DRAM timing echo (`nbk   16 # number of banks`): an upper-case word, a value, a comment.
_TIMING_RE = re.compile(r"^[A-Za-z]+\s+\S+\s+#")
_NUM_RE = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)", re.I)
_SHAPE_RE = re.compile(r"\d+")

_FAILURE_MARKERS = (
    ("deadlock detected", "deadlock"), ("DEADLOCK", "deadlock"), ("Assertion", "assertion"),
    ("Segmentation fault", "crash"), ("core dumped", "crash"), ("Aborted", "crash"),
    ("terminate called", "crash"), ("what():", "crash"), ("Killed", "crash"),
    ("unsupported binary version", "error"), ("GPGPU-Sim PTX: ERROR", "error"),
    ("undefined instruction", "error"), ("ERROR", "error"),
)
_KIND_PRIORITY = {"deadlock": 0, "assertion": 1, "crash": 2, "error": 3, "limit": 4,
                  "truncated": 5}

# Counters that are the kernel's own even in a multi-kernel run.
_PER_KERNEL = frozenset({
    "gpu_sim_cycle", "gpu_sim_insn", "gpu_ipc", "gpu_occupancy", "partiton_level_parallism",
    "partiton_level_parallism_util", "L2_BW", "kernel_launch_uid", "kernel_stream_id",
    "dram_busW", "dram_BL",  # configuration echoed in the DRAM blocks
})
# Integer counters that still must not be differenced (maxima, minima, running totals that
# are kept as printed so the run total can be checked).
_NO_DIFF_PARTS = ("max", "min_", "avg", "average", "rate", "util", "ratio", "locality",
                  "parallism", "Parallism", "_per_", "slowdown", "GrpLevelPara", "gpu_tot_",
                  "queue_avg", "Miss_rate", "chip skew", "_eff")


@dataclass
class KernelBlock:
    """One printed statistics block, values as printed (cumulative where GPGPU-Sim is)."""

    uid: int
    name: str
    stream_id: int
    values: dict[str, float] = field(default_factory=dict)
    #: keys whose counters are cumulative per stream (cache breakdown tables)
    stream_keys: set[str] = field(default_factory=set)
    first_line: int = 0
    last_line: int = 0
    #: printed when a -gpgpu_max_* limit stopped the kernel: not a result
    cut_off: bool = False


@dataclass
class LaunchInfo:
    """What the log says about a launch before its statistics (trace header echo)."""

    uid: int | None = None
    name: str = ""
    trace_file: str = ""
    kernel_id: int | None = None
    grid: str = ""
    block: str = ""
    stream_id: int | None = None
    header: dict[str, str] = field(default_factory=dict)


@dataclass
class ParsedLog:
    """A whole simulator stdout, parsed."""

    blocks: list[KernelBlock]
    launches: list[LaunchInfo]
    options: dict[str, str]
    versions: dict[str, str]
    exited: bool
    failure: str | None
    failure_kind: str | None
    unknown: Counter
    n_lines: int
    tail: list[str]

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def n_unknown(self) -> int:
        return sum(self.unknown.values())


# --------------------------------------------------------------------------- reading


def read_text(path: str | Path) -> str:
    """The text of a log, plain, ``.xz`` or ``.zst``."""
    path = Path(path)
    if not path.exists():
        raise InputError("simulator output not found", path)
    if path.suffix == ".xz":
        with lzma.open(path, "rt", errors="replace") as f:
            return f.read()
    if path.suffix in (".zst", ".zstd"):
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as r:
            return r.read().decode(errors="replace")
    return path.read_text(errors="replace")


def parse_file(path: str | Path) -> ParsedLog:
    return parse_log(read_text(path))


# --------------------------------------------------------------------------- parsing


def _num(text: str) -> float:
    """The first number in ``text`` (``-nan`` -> NaN); NaN when there is none."""
    m = _NUM_RE.search(text)
    if m is None:
        return math.nan
    try:
        return float(m.group(0))
    except ValueError:
        return math.nan


def _key(raw: str) -> str:
    """A column-safe key: brackets and spaces to underscores, no doubled underscores."""
    out = raw.strip().replace("][", "_").replace("[", "_").replace("]", "").replace(" ", "_")
    while "__" in out:
        out = out.replace("__", "_")
    return out.strip("_")


_SCALAR = object()
_SKIP = object()

# Lines of a statistics block without "=": per-unit detail, headings and tables.
_BARE_SKIP = (
    "dram[", "bk", "Cache L2_bank", "MSHR contents", "Memory Partition", "dram_util_bins",
    "dram_eff_bins", "----", "========", "L1I_cache:", "L1D_cache:", "L1C_cache:",
    "L1T_cache:", "Total_core_cache_stats:", "Total_core_cache_fail_stats:",
    "L2_total_cache_breakdown:", "L2_total_cache_reservation_fail", "warp_id", "distro:",
    "number of total", "maximum ", "average mf latency", "average row accesses", "BW Util",
    "Commands details", "Dual Bus Interface", "LD_mem_lat_dist", "ST_mem_lat_dist",
    "Warp Occupancy Distribution", "ctas_completed", "total accesses:", "min_bank_accesses",
    "min_chip_accesses",
)


# Stats lines known by how their key starts, and what the parser does with each (first match).
_PREFIX_TAGS = (
    ("gpgpu_silicon_slowdown", "end"), ("n_cmd", "ncmd"), ("n_activity", "nact"),
    ("mrqq:", "mrqq"), ("DRAM[", "dram"), ("traffic_breakdown_", "traffic"),
    ("total dram reads", "reads"), ("total dram writes", "writes"),
    ("gpgpu_simulation_time", "simtime"), ("gpgpu_simulation_rate", "simrate"),
)


def _classify(k: str) -> object:
    """What to do with a stats line whose text before the first '=' is ``k`` (cached)."""
    s = k.strip()
    if s.startswith(("L1D_cache_core[", "L2_cache_bank[", "In Dram Latency Queue",
                     "average row locality", "chip skew", "mrq_lat_table", "dq_lat_table",
                     "mf_lat_table", "icnt2mem_lat_table", "icnt2sh_lat_table",
                     "mf_lat_pw_table")):
        return _SKIP
    for prefix, tag in _PREFIX_TAGS:
        if s.startswith(prefix):
            return tag
    if s == "kernel_launch_uid":
        return "uid"
    if s == "kernel_stream_id":
        return "stream"
    if s == "kernel_name":
        return "kname"
    if "_breakdown[" in s:
        return "stream_table"
    if s.startswith(("Stall:", "single_issue_nums", "dual_issue_nums")) or " " in s:
        return "unknown"
    return _SCALAR


def _classify_bare(s: str) -> object:
    if s.startswith("Stall:"):
        return "stall"
    if s.startswith(("single_issue_nums:", "dual_issue_nums:")):
        return "issue"
    if s.startswith(_BARE_SKIP) or s[0].isdigit() or "_table:" in s:
        return _SKIP
    return "unknown"


_L2_HEADING = "========= L2 cache stats ========="
# Anchored on the newline (a literal) rather than "^": the regex engine then jumps from
# newline to newline instead of trying every position.
_DRAM_INT_RE = re.compile(r"\n([A-Za-z_]\w*) ?= ?(\d+) ?(?=\n)")
_DRAM_CMD_RE = re.compile(r"(\w+)=(\d+)\b(?![.])")
_DRAM_CMD_LINE_RE = re.compile(r"\n(n_cmd=[^\n]*|n_activity=\S+)")


def _sum_dram_region(text: str, values: dict[str, float]) -> None:
    """Sum the integer counters of every channel block over the channels (ratios are not
    summed). A channel prints some counters twice (``total_CMD``) and some both in its
    ``n_cmd=...`` line and as ``n_act = 4``: each is counted once per channel."""
    text = "\n" + text + "\n"
    n_channels = text.count("DRAM[") or 1
    pairs = _DRAM_INT_RE.findall(text)
    acc: dict[str, int] = {}
    per = len(pairs) // n_channels
    keys = [k for k, _ in pairs[:per]]
    if per and len(pairs) == per * n_channels and [k for k, _ in pairs] == keys * n_channels:
        # every channel printed the same counters in the same order: sum column-wise
        sums = np.array([x for _, x in pairs], dtype=np.int64).reshape(n_channels, per).sum(0)
        for k, x in zip(keys, sums.tolist()):
            acc[k] = acc.get(k, 0) + x
        seen = {k: keys.count(k) for k in set(keys)}
        for k, n in seen.items():
            acc[k] //= n
    else:
        seen_n: dict[str, int] = {}
        for k, x in pairs:
            acc[k] = acc.get(k, 0) + int(x)
            seen_n[k] = seen_n.get(k, 0) + 1
        for k in acc:
            acc[k] //= max(1, seen_n[k] // n_channels)
    for line in _DRAM_CMD_LINE_RE.findall(text):
        for k, x in _DRAM_CMD_RE.findall(line):
            kk = "cmd_" + k
            acc[kk] = acc.get(kk, 0) + int(x)
    for k, x in acc.items():
        values["dramch_" + k] = values.get("dramch_" + k, 0.0) + float(x)


class _KeyCache(dict):
    """_key() with memory: the same counter names come back for every channel and kernel."""

    def __call__(self, raw: str) -> str:
        out = self.get(raw)
        if out is None:
            out = self[raw] = _key(raw)
        return out



def parse_log(text: str) -> ParsedLog:
    """Parse a GPGPU-Sim / Accel-Sim stdout (the whole text)."""
    lines = text.split("\n")
    r = _LogReader(lines)
    r.read()
    blocks = r.blocks
    tail = [ln for ln in lines[-60:] if ln.strip()][-12:]
    failure, kind = _failure(lines, r.exited, blocks, r.launches)
    if r.limit_hit and failure is None:
        # -gpgpu_max_cycle/-insn/-cta stopped the run: the last block is a cut-off kernel's.
        failure, kind = f"simulator stopped at its limit: {r.limit_hit}", "limit"
        if blocks:
            blocks[-1].cut_off = True
    return ParsedLog(blocks=blocks, launches=r.launches, options=r.options,
                     versions=r.versions, exited=r.exited, failure=failure, failure_kind=kind,
                     unknown=r.unknown, n_lines=len(lines), tail=tail)


# Launch header lines ("-kernel name = ..."), told apart from "-option value" lines.
_HEADER_PREFIXES = ("-kernel", "-grid", "-block", "-shmem", "-nregs", "-binary",
                    "-cuda stream", "-local mem", "-nvbit", "-accelsim", "-enable lineinfo")


class _LogReader:
    """One pass over a log's lines: statistics blocks, launches, options, versions, and
    the lines of no known shape."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        # an iterator, so that a step can skip lines it has read in bulk
        self.numbered = enumerate(lines)
        self.blocks: list[KernelBlock] = []
        self.launches: list[LaunchInfo] = []
        self.options: dict[str, str] = {}
        self.versions: dict[str, str] = {}
        self.unknown: Counter = Counter()
        self.exited = False
        self.limit_hit: str | None = None
        self.pending = LaunchInfo()
        self.block: KernelBlock | None = None
        self.dram_ch = False  # inside a per-channel DRAM block
        self.in_options = False
        self.kcache: dict[str, object] = {}
        self.keycache = _KeyCache()

    def read(self) -> None:
        # Statistics lines are most of a log: their common case, a scalar counter, is
        # handled here with locals rather than in a method per line.
        kcache, keycache = self.kcache, self.keycache
        for i, line in self.numbered:
            if not line:
                continue
            block = self.block
            if block is None:
                self._outside_line(i, line)
                continue
            s = line.strip()
            if not s:
                continue
            k, sep, val = s.partition("=")
            if sep:
                code = kcache.get(k)
                if code is None:
                    code = kcache[k] = _classify(k)
            else:
                code = _classify_bare(s)
            if code is _SCALAR:
                try:
                    x = float(val)
                except ValueError:
                    x = _num(val)
                if self.dram_ch:
                    kk = "dramch_" + keycache(k)
                    vals = block.values
                    vals[kk] = vals.get(kk, 0.0) + (0.0 if x != x else x)
                else:
                    block.values[keycache(k)] = x
            elif code is not _SKIP:
                self._stats_line(code, i, s, k, val)
        if self.block is not None:
            # A block cut off mid-print: partial output, never a result.
            self.unknown["<statistics block cut off>"] += 1

    # ------------------------------------------------------------------ statistics block
    def _stats_line(self, code: object, i: int, s: str, k: str, val: str) -> None:
        block = self.block
        if code == "end":
            block.values["gpgpu_silicon_slowdown"] = _num(val)
            block.last_line = i + 1
            self.blocks.append(block)
            self.block = None
            self.dram_ch = False
        elif code in ("ncmd", "nact", "dram", "mrqq"):
            self._dram_line(code, i, s)
        elif code == "stall":
            vals = block.values
            for part in s.split():
                pk, _, pv = part.partition(":")
                vals["stall_" + pk.lower()] = float(pv)
        elif code == "issue":
            vals = block.values
            head, _, rest = s.partition(":")
            for part in rest.split():
                pk, _, pv = part.partition(":")
                vals[f"{head}_{pk}"] = float(pv)
        else:
            self._block_field(code, s, k, val)

    def _dram_line(self, code: object, i: int, s: str) -> None:
        vals = self.block.values
        if code == "ncmd":
            for part in s.split():
                pk, _, pv = part.partition("=")
                if pk != "bw_util":
                    kk = "dramch_cmd_" + pk
                    vals[kk] = vals.get(kk, 0.0) + float(pv)
        elif code == "nact":
            vals["dramch_cmd_n_activity"] = vals.get("dramch_cmd_n_activity", 0.0) + float(
                s.split()[0].partition("=")[2])
        elif code == "dram":
            m = re.search(r"busW=(\d+) BL=(\d+)", s)
            if m:
                vals["dram_busW"] = float(m.group(1))
                vals["dram_BL"] = float(m.group(2))
            # The per-channel DRAM blocks are most of a log: sum their integer
            # counters with regular expressions over the whole region at once.
            try:
                j = self.lines.index(_L2_HEADING, i)
            except ValueError:
                self.dram_ch = True  # no L2 section: the slow path, line by line
                return
            _sum_dram_region("\n".join(self.lines[i:j]), vals)
            # Skip what was just summed (the loop resumes at the L2 heading).
            next(islice(self.numbered, j - i - 1, j - i - 1), None)
        else:  # "mrqq"
            self.dram_ch = False

    def _block_field(self, code: object, s: str, k: str, val: str) -> None:
        block = self.block
        if code == "stream_table":
            key = self.keycache(k)
            block.stream_keys.add(key)
            try:
                block.values[key] = float(val)
            except ValueError:
                block.values[key] = _num(val)
        elif code == "traffic":
            block.values[self.keycache(k)] = _num(val)
        elif code == "reads":
            block.values["total_dram_reads"] = _num(val)
        elif code == "writes":
            block.values["total_dram_writes"] = _num(val)
        elif code == "simtime":
            m = re.search(r"\((\d+) sec\)", s)
            block.values["gpgpu_simulation_time_s"] = float(m.group(1)) if m else math.nan
        elif code == "simrate":
            unit = "cycle" if "cycle/sec" in s else "inst"
            block.values[f"gpgpu_simulation_rate_{unit}"] = _num(val)
        elif code == "uid":
            block.uid = int(_num(val))
            block.values["kernel_launch_uid"] = float(block.uid)
        elif code == "stream":
            block.stream_id = int(_num(val))
            block.values["kernel_stream_id"] = float(block.stream_id)
        elif code == "kname":
            block.name += " " + val.strip()
        else:
            self.unknown[_SHAPE_RE.sub("#", s)[:80]] += 1

    # ------------------------------------------------------------------ outside the blocks
    def _outside_line(self, i: int, line: str) -> None:
        if line.isspace():
            return
        c0 = line[0]
        if (c0 == "t" and line.startswith("thread block = ")) or (
                c0 == "G" and line.startswith("GPGPU-Sim uArch: Shader ")):
            return  # CTA placement: most of the lines outside statistics blocks
        if c0 == "-":
            self._dash_line(line)
        elif line.startswith("kernel_name = "):
            self.block = KernelBlock(uid=0, name=line[14:].strip(), stream_id=0,
                                     first_line=i + 1)
            self.in_options = False
        elif line.startswith("GPGPU-Sim: Configuration options"):
            self.in_options = True
        elif line.startswith("Processing kernel "):
            self.in_options = False
            self.pending = LaunchInfo(trace_file=line[18:].strip())
        elif line.startswith("launching kernel name:"):
            self._launch_line(line)
        else:
            self._marker_line(line)

    def _dash_line(self, line: str) -> None:
        """An option ("-option   value # doc") or a launch header line ("-grid dim = ...")."""
        if self.in_options or not line.startswith(_HEADER_PREFIXES):
            body = line[1:].split(" # ", 1)[0]
            name, _, value = body.partition(" ")
            self.options[name] = value.strip()
            return
        pending = self.pending
        k, _, v = line[1:].partition(" = ")
        pending.header[k.strip()] = v.strip()
        if k == "kernel id":
            pending.kernel_id = int(_num(v))
        elif k == "grid dim":
            pending.grid = v.strip().strip("()")
        elif k == "block dim":
            pending.block = v.strip().strip("()")
        elif k == "kernel name":
            pending.name = v.strip()
        elif k == "cuda stream id":
            pending.stream_id = int(_num(v))

    def _launch_line(self, line: str) -> None:
        pending = self.pending
        m = re.match(r"launching kernel name: (\S+) uid: (\d+)(?: cuda_stream_id: (\d+))?",
                     line)
        if m:
            pending.name = m.group(1)
            pending.uid = int(m.group(2))
            if m.group(3) is not None:
                pending.stream_id = int(m.group(3))
        self.launches.append(pending)
        self.pending = LaunchInfo()

    def _marker_line(self, line: str) -> None:
        """Versions, the exit and limit markers; anything else of no known shape is
        counted as unknown."""
        if line.startswith("Accel-Sim [build"):
            self.versions["accelsim_build"] = line[len("Accel-Sim [build"):].strip(" ]")
        elif "GPGPU-Sim Simulator Version" in line:
            m = re.search(r"Version (\S+)\s+\[build (\S+?)\]", line)
            if m:
                self.versions["gpgpusim_version"] = m.group(1)
                self.versions["gpgpusim_build"] = m.group(2)
        elif "exit detected" in line:
            self.exited = True
        elif line.startswith("GPGPU-Sim: ** break due to reaching the maximum"):
            self.limit_hit = line.strip()
        elif line.startswith(_OUTSIDE_KNOWN) or _TIMING_RE.match(line):
            pass
        elif any(m in line for m, _ in _FAILURE_MARKERS):
            pass  # reported as the failure, not as an unknown line
        else:
            self.unknown[_SHAPE_RE.sub("#", line.strip())[:80]] += 1


def failure_reason(stdout_tail: list[str], exited: bool,
                   stderr_tail: list[str] | None = None) -> tuple[str | None, str | None]:
    """Why a run failed, quoting the simulator's own lines, and the kind of failure
    (assertion, deadlock, crash, error, truncated); (None, None) for a normal end.

    ``stderr_tail`` matters when stdout and stderr were kept apart: ``assert()`` writes its
    message to stderr, while GPGPU-Sim's own ERROR and DEADLOCK reports go to stdout."""
    return _failure(list(stdout_tail) + list(stderr_tail or []), exited, [], [])


def _failure(lines: list[str], exited: bool, blocks: list[KernelBlock],
             launches: list[LaunchInfo]) -> tuple[str | None, str | None]:
    """Why the run failed, quoting its last lines; (None, None) for a normal end."""
    last = [ln.rstrip() for ln in lines[-400:] if ln.strip()]
    kind = None
    quoted: list[str] = []
    for ln in last:
        for marker, k in _FAILURE_MARKERS:
            if marker in ln and not ln.startswith(("-", "GPGPU-Sim uArch: Shader")):
                if kind is None or _KIND_PRIORITY[k] < _KIND_PRIORITY[kind]:
                    kind = k
                quoted.append(ln.strip())
                break
    if exited and kind is None:
        return None, None
    if kind is None:
        # No error printed and no exit banner: the output was cut (a killed child, a full
        # disk). Whatever statistics blocks it holds stay valid; the run is not a result.
        kind = "truncated"
        quoted = last[-3:]
    reason_lines = quoted[-4:] if quoted else last[-3:]
    # Keep the simulator's own words; very long lines (kernel names) are shortened.
    text = " | ".join(ln if len(ln) <= 400 else ln[:400] + "..." for ln in reason_lines)
    prefix = {"assertion": "simulator assertion failed",
              "error": "simulator error", "deadlock": "simulator deadlock",
              "crash": "simulator crashed",
              "truncated": "simulator output ended before the run finished"}[kind]
    if kind == "assertion" and any("ERROR" in q for q in quoted):
        prefix = "simulator error (assertion failed)"
    return f"{prefix}: {text}", kind


# --------------------------------------------------------------------------- records


@lru_cache(maxsize=None)
def _differenced(key: str) -> bool:
    if key in _PER_KERNEL:
        return False
    return not any(p in key for p in _NO_DIFF_PARTS)


def kernel_records(parsed: ParsedLog) -> list[dict[str, Any]]:
    """Per-kernel records (columns of ``simfront.stats.schema``) from a parsed log.

    Every finished block gives one record with ``complete=True``. A launch that started but
    has no block (the run failed in it) gives a record with ``complete=False`` and only its
    identity columns, so a failed kernel is visible but never read as a result."""
    records: list[dict[str, Any]] = []
    prev_all: dict[str, float] = {}
    prev_stream: dict[int, dict[str, float]] = {}
    opts = parsed.options
    core_mhz = _core_clock_mhz(opts)
    atom = _dram_atom(opts)
    by_uid = {ln.uid: ln for ln in parsed.launches if ln.uid is not None}

    for b in parsed.blocks:
        if b.cut_off:
            continue  # a cut-off kernel is listed below as launched but incomplete
        cur = b.values
        ps = prev_stream.get(b.stream_id, {})
        per: dict[str, float] = {}
        for k, x in cur.items():
            if _differenced(k) and not math.isnan(x):
                base = (ps if k in b.stream_keys else prev_all).get(k, 0.0)
                per[k] = x - (0.0 if math.isnan(base) else base)
            else:
                per[k] = x
        prev_all = dict(cur)
        prev_stream[b.stream_id] = dict(cur)
        launch = by_uid.get(b.uid)
        rec = _record(b, per, launch, core_mhz, atom)
        records.append(rec)

    done = {b.uid for b in parsed.blocks if not b.cut_off}
    for ln in parsed.launches:
        if ln.uid is not None and ln.uid not in done:
            records.append({"kernel_uid": ln.uid, "kernel_name": ln.name,
                            "kernel_id": ln.kernel_id, "grid": ln.grid, "block": ln.block,
                            "complete": False})
    records.sort(key=lambda r: r["kernel_uid"])
    return records


def _core_clock_mhz(opts: dict[str, str]) -> float:
    dom = opts.get("gpgpu_clock_domains", "")
    try:
        return float(dom.split(":")[0])
    except ValueError:
        return math.nan


def _dram_atom(opts: dict[str, str]) -> float:
    """Bytes one DRAM column command moves (GPGPU-Sim's dram_atom_size = BL*busW*chips)."""
    try:
        return (float(opts["gpgpu_dram_burst_length"].split()[0])
                * float(opts["gpgpu_dram_buswidth"].split()[0])
                * float(opts.get("gpgpu_n_mem_per_ctrlr", "1").split()[0]))
    except (KeyError, ValueError, IndexError):
        return math.nan


def _ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b


def _record(b: KernelBlock, v: dict[str, float], launch: LaunchInfo | None, core_mhz: float,
            atom: float) -> dict[str, Any]:
    g = v.get
    cycles = g("gpu_sim_cycle", math.nan)
    winsn = g("gpgpu_n_tot_w_icount", math.nan)
    rec: dict[str, Any] = {
        "kernel_uid": b.uid,
        "kernel_id": launch.kernel_id if launch else None,
        "kernel_name": b.name,
        "grid": launch.grid if launch else "",
        "block": launch.block if launch else "",
        "complete": True,
        "cycles": cycles,
        "time_us": _ratio(cycles, core_mhz),
        "instructions": winsn,
        "thread_instructions": g("gpu_sim_insn", math.nan),
        "ipc": _ratio(winsn, cycles),
        "occupancy": g("gpu_occupancy", math.nan) / 100.0,
        "l1_accesses": g("L1D_total_cache_accesses", math.nan),
        "l1_hit_rate": 1.0 - _ratio(g("L1D_total_cache_misses"), g("L1D_total_cache_accesses")),
        "l2_accesses": g("L2_total_cache_accesses", math.nan),
        "l2_hit_rate": 1.0 - _ratio(g("L2_total_cache_misses"), g("L2_total_cache_accesses")),
        "sim_wall_s": g("gpgpu_simulation_time_s", math.nan),
    }
    rd = g("dramch_cmd_n_rd", math.nan) + g("dramch_cmd_n_rd_L2_A", 0.0)
    wr = g("dramch_cmd_n_write", math.nan) + g("dramch_cmd_n_wr_bk", 0.0)
    rec["dram_read_bytes"] = rd * atom
    rec["dram_write_bytes"] = wr * atom
    rec["dram_util"] = _ratio(g("dramch_util_bw"), g("dramch_cmd_n_cmd"))
    rec["accelsim_dram_efficiency"] = _ratio(g("dramch_util_bw"), g("dramch_cmd_n_activity"))
    rec["accelsim_stream_id"] = b.stream_id

    for k, x in v.items():
        col = _column_for(k)
        if col is not None and col not in rec:
            rec[col] = x
    return rec


_L1_BY_ACCESS = {"INST_ACC_R": "l1i_", "CONST_ACC_R": "l1c_", "TEXTURE_ACC_R": "l1t_"}


@lru_cache(maxsize=None)
def _column_for(key: str) -> str | None:
    """The record column of a printed counter (see docs/stats.md for the mapping)."""
    if key.startswith("stall_"):
        return key
    if key.startswith("Total_core_cache_stats_breakdown_") or \
            key.startswith("Total_core_cache_fail_stats_breakdown_"):
        fail = "_fail_" in key
        rest = key.split("breakdown_", 1)[1]
        for acc, pre in _L1_BY_ACCESS.items():
            if rest.startswith(acc):
                break
        else:
            pre = "l1d_"
        return pre + ("fail_" if fail else "") + rest.lower()
    if key.startswith(("L2_cache_stats_breakdown_", "L2_cache_stats_fail_breakdown_")):
        fail = "_fail_" in key
        return "l2_" + ("fail_" if fail else "") + key.split("breakdown_", 1)[1].lower()
    for cache in ("L1D", "L1I", "L1C", "L1T", "L2"):
        if key.startswith(cache + "_total_cache_"):
            return cache.lower() + "_total_" + key[len(cache) + 13:].lower()
        if key.startswith(cache + "_cache_"):
            return cache.lower() + "_" + key[len(cache) + 7:].lower()
    if key.startswith(("Req_", "Reply_")) or key.startswith("icnt_"):
        return ("icnt_" + key.lower()).replace("icnt_icnt_", "icnt_")
    if key.startswith("traffic_breakdown_"):
        return "icnt_" + key.lower()
    if key == "L2_BW":
        return "l2_bw_gbps"
    if key == "L2_BW_total":
        return "l2_bw_total_gbps"
    if key.startswith("gpgpu_simulation_rate_"):
        return "sim_rate_" + key.rsplit("_", 1)[1] + "_per_s"
    if key == "gpgpu_silicon_slowdown":
        return "sim_silicon_slowdown"
    if key == "gpu_total_sim_rate":
        return "sim_total_rate_inst_per_s"
    if key == "gpgpu_simulation_time_s":
        return None  # sim_wall_s
    if key.startswith("gpgpu_stall_shd_mem_"):
        return "stall_shd_mem_" + key[20:].lower()
    if key in ("gpu_stall_dramfull", "gpu_stall_icnt2sh"):
        return "stall_" + key[10:]
    if key == "gpgpu_n_stall_shd_mem":
        return "stall_shd_mem_total"
    if key == "gpu_reg_bank_conflict_stalls":
        return "stall_reg_bank_conflict"
    if key.startswith(("single_issue_nums_", "dual_issue_nums_")):
        return "accelsim_" + key.lower()
    if key.startswith("dramch_"):
        return "accelsim_dram_" + key[7:].lower()
    return "accelsim_" + key.lower()


def summarize(parsed: ParsedLog) -> dict[str, Any]:
    """A short account of a parse, for provenance and the CLI."""
    return {"n_lines": parsed.n_lines, "n_kernels": len(parsed.blocks),
            "n_launches": len(parsed.launches), "exited": parsed.exited,
            "failure": parsed.failure, "failure_kind": parsed.failure_kind,
            "n_unknown_lines": parsed.n_unknown,
            "unknown_shapes": dict(parsed.unknown.most_common(20)),
            **parsed.versions}


def records_from_file(path: str | Path) -> tuple[list[dict[str, Any]], ParsedLog]:
    parsed = parse_file(path)
    return kernel_records(parsed), parsed


def iter_unknown(parsed: ParsedLog) -> Iterable[tuple[str, int]]:
    return parsed.unknown.most_common()
