"""The Accel-Sim backend: one job = one ``accel-sim.out`` run in its own working directory.

Job directory (``SimJob.out_dir``)::

    gpgpusim.config, trace.config, *.icnt   the configs (written by config.py, or copied)
    traces/                                 kernelslist.g + the kernels sent (links, or the
                                            --isa-compat rewritten copy)
    accelsim.stdout.xz, accelsim.stderr.xz  the simulator's output, compressed as it streams
    result.json                             the SimResult (records, reason, provenance)

The child runs ``accel-sim.out -trace traces/kernelslist.g -config gpgpusim.config -config
trace.config`` with the install's library path, an address-space limit (``memory_limit_gb``)
and a wall-time limit (``SimJob.timeout_s``: SIGTERM to its process group, SIGKILL 10 s later).

Job options (``SimJob.options``):

- ``accelsim_root``: the install (default ``$ACCELSIM_ROOT``)
- ``isa_compat``: ``"ampere"`` to replay Hopper traces on Accel-Sim 1.x (see isa_compat.py
  and lowering.py; kernels it refuses get a record saying why, the others run)

A sampled launch (``-tb sampling = ... traced T of N``) is always sent as a grid of its T
traced blocks and its record scaled to the whole grid (sampling.py); the record says so.
- ``binary_version``: 80 (default) or 86, with ``isa_compat``
- ``header_overrides``: ``{kernel file or "*": {"nregs": 32, "shmem": 4192}}`` for header
  fields the tracer wrote wrong (the 2024 tracer's ``-nregs``)
- ``config_dir``: a folder with ready ``gpgpusim.config``/``trace.config`` (instead of
  writing them from ``SimJob.gpu``, which is then ``None``)
- ``memory_limit_gb`` (default 32), ``extra_args`` (list of simulator arguments),
  ``compress_traces`` (write the rewritten copy as .xz; default plain ``.traceg``)
"""

from __future__ import annotations

import fnmatch
import json
import lzma
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from simfront.core.errors import BackendError, SimfrontError
from simfront.core.provenance import sha256_file, sha256_json, tool_versions
from simfront.gpu import GPU, config_hash
from simfront.sim.accelsim import parse as parser
from simfront.sim.accelsim.config import validate_for_accelsim, write_accelsim_config
from simfront.sim.accelsim.install import AccelSimInstall, find_install, tracez_to_traceg
from simfront.sim.accelsim.isa_compat import (IsaCompatError, _out_name, copy_traceset,
                                              rewrite_kernel, rewrite_traceset)
from simfront.sim.accelsim.sampling import blocks_per_sm, sample_scale, scale_record, sm_limits
from simfront.sim.accelsim.textio import open_text_in as _open_text_in
from simfront.sim.backend import Backend, SimJob, SimResult
from simfront.traces.header import parse_header
from simfront.traces.kernelslist import KernelRef, format_kernelslist, parse_kernelslist
from simfront.traces.validate import header_problems as stage_problems

_SAMPLED_RE = re.compile(r"traced (\d+) of (\d+)")
_CENSUS_RE = re.compile(r"^\s*(\d+) warp instructions")

STDOUT_NAME = "accelsim.stdout.xz"
STDERR_NAME = "accelsim.stderr.xz"
RESULT_NAME = "result.json"
CONFIG_FILES = ("gpgpusim.config", "trace.config")
TAIL_LINES = 40

#: Header sanity limits: beyond these the value is the 2024 tracer's garbage.
MAX_NREGS = 255
MAX_SHMEM = 256 * 1024


class AccelSimBackend(Backend):
    name = "accelsim"

    def __init__(self, root: str | Path | None = None):
        self._root = root
        self._install: AccelSimInstall | None = None

    # ------------------------------------------------------------------ interface
    def install(self, root: str | Path | None = None) -> AccelSimInstall:
        if root is not None and root != self._root:
            return find_install(root)
        if self._install is None:
            self._install = find_install(self._root)
        return self._install

    def version(self) -> str:
        try:
            return self.install().version
        except BackendError:
            return "accelsim-not-installed"

    def check_available(self) -> None:
        self.install()

    def check_gpu(self, gpu: GPU, pipes_used: "set[str] | None" = None) -> None:
        validate_for_accelsim(gpu, pipes_used)

    def run(self, job: SimJob) -> SimResult:
        t0 = time.monotonic()
        out = Path(job.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        try:
            return self._run(job, out, t0)
        except (OSError, SimfrontError, ValueError, EOFError, lzma.LZMAError) as exc:
            # The contract: a failed job is a result, not an exception for the caller.
            return self._finish(job, out, t0, ok=False,
                                reason=f"accelsim backend error: {type(exc).__name__}: {exc}")

    def _run(self, job: SimJob, out: Path, t0: float) -> SimResult:
        try:
            install = self.install(job.options.get("accelsim_root"))
        except BackendError as exc:
            return self._finish(job, out, t0, ok=False, reason=str(exc))
        prov: dict[str, Any] = {"install": install.describe(), "tools": tool_versions(),
                                "options": {k: v for k, v in job.options.items()}}
        try:
            gpu_name, config_hash = self._write_config(job, out)
            sent, compat = self._prepare_traces(job, out / "traces", install)
        except IsaCompatError as exc:
            return self._finish(job, out, t0, ok=False, reason=str(exc), provenance=prov)
        except SimfrontError as exc:
            return self._finish(job, out, t0, ok=False,
                                reason=f"not sent to the simulator: {exc}", provenance=prov)
        prov.update({"config": gpu_name, "config_hash": config_hash,
                     "kernels": [s["file"] for s in sent],
                     "trace_hashes": {s["file"]: s["trace_hash"] for s in sent}})
        if compat is not None:
            prov["isa_compat"] = compat

        argv = [str(install.binary), "-trace", str(Path("traces") / "kernelslist.g"),
                "-config", "gpgpusim.config", "-config", "trace.config",
                *[str(a) for a in job.options.get("extra_args", [])]]
        prov["argv"] = argv
        mem_gb = float(job.options.get("memory_limit_gb", 32))
        rc, timed_out, err_tail = run_child(argv, out, install.env(), job.timeout_s, mem_gb)
        prov["returncode"] = rc

        parsed = parser.parse_file(out / STDOUT_NAME)
        prov["parse"] = parser.summarize(parsed)
        prov["versions"] = parsed.versions
        records = parser.kernel_records(parsed)
        self._fill_identity(records, job, sent, gpu_name, config_hash, install)
        records = scale_sampled_records(records, sent, out / "gpgpusim.config", prov)
        records += refused_records(compat, job, sent, gpu_name, config_hash, install,
                                   self.name)

        reason = None
        # assert() writes to stderr, GPGPU-Sim's own reports to stdout: judge both together
        failure, kind = parsed.failure, parsed.failure_kind
        if err_tail and kind in (None, "truncated"):
            f2, k2 = parser.failure_reason(parsed.tail[-6:], parsed.exited, err_tail)
            if k2 not in (None, "truncated"):
                failure = f2
        if timed_out:
            reason = (f"timed out after {job.timeout_s:g} s (killed); simulator's last lines: "
                      + " | ".join(parsed.tail[-3:]))
        elif failure is not None:
            reason = failure
            if rc not in (0, None):
                reason += f" (exit status {_status(rc)})"
        elif rc != 0:
            reason = f"simulator exited with status {_status(rc)}: " + " | ".join(
                (err_tail or parsed.tail)[-3:])
        else:
            done = {r["kernel_uid"] for r in records if r.get("complete")}
            if len(done) < len(sent):
                reason = (f"simulator finished but printed statistics for {len(done)} of "
                          f"{len(sent)} kernels; last lines: " + " | ".join(parsed.tail[-3:]))
        return self._finish(job, out, t0, ok=reason is None, reason=reason, records=records,
                            provenance=prov)

    # ------------------------------------------------------------------ steps
    def _write_config(self, job: SimJob, out: Path) -> tuple[str, str]:
        src = job.options.get("config_dir")
        if src is not None:
            src = Path(src)
            for name in CONFIG_FILES:
                if not (src / name).exists():
                    raise BackendError(f"config folder {src} has no {name}")
            hashes = {}
            for p in sorted(src.iterdir()):
                if p.is_file() and (p.name in CONFIG_FILES or p.suffix in (".icnt", ".xml")):
                    shutil.copyfile(p, out / p.name)
                    hashes[p.name] = sha256_file(p)
            return src.name, sha256_json(hashes)

        if job.gpu is None:
            raise BackendError("the job names no GPU description and no config_dir option")
        write_accelsim_config(job.gpu, out)
        for name in CONFIG_FILES:
            if not (out / name).exists():
                raise BackendError(f"write_accelsim_config wrote no {name} in {out}")
        # the same hash as the model backend and the sweep's job ids use
        chash = config_hash(job.gpu)
        return job.gpu.name, chash

    def _prepare_traces(self, job: SimJob, tdir: Path,
                        install: AccelSimInstall) -> tuple[list[dict], dict | None]:
        """Lay out in ``tdir`` the kernels the job sends, as this install reads them: text
        for 1.x, headers overridden, ISA rewritten where asked. Returns what was sent (one
        record per kernel) and the ISA rewrite's report (None without one)."""
        src_dir = Path(job.trace_dir)
        entries = parse_kernelslist(src_dir / "kernelslist.g")
        kernels = [e for e in entries if isinstance(e, KernelRef)]
        headers = {k.file: read_header(src_dir / k.file) for k in kernels}
        chosen = select_kernels(kernels, headers, job.kernels)
        if not chosen:
            raise BackendError(f"no kernel of {src_dir} matches {list(job.kernels or [])}")
        opts = job.options
        compat_target = opts.get("isa_compat")
        overrides = opts.get("header_overrides") or {}
        bv = int(opts.get("binary_version", 80))
        if tdir.exists():
            shutil.rmtree(tdir)
        tdir.mkdir(parents=True)
        work_dir, chosen = _tracez_as_text(install, src_dir, tdir.parent / "traces-text",
                                           entries, headers, chosen)
        _check_headers(chosen, headers, overrides, bv if compat_target else None, work_dir,
                       install)
        files = [k.file for k in chosen]
        sampled = {k.file for k in chosen if _sampled(headers[k.file])}
        compat = None
        traced: dict[str, int] = {}  # original warp instructions of each sampled kernel
        if compat_target:
            chosen, compat, traced = _rewrite_isa(work_dir, tdir, compat_target, bv, files,
                                                  overrides, chosen, opts)
        elif overrides or sampled:
            traced = _rewrite_headers(work_dir, tdir, files, overrides)
        else:
            _link_kernels(work_dir, tdir, files)
        return _sent_records(chosen, headers, work_dir, sampled, traced, overrides), compat

    def _fill_identity(self, records: list[dict], job: SimJob, sent: list[dict], gpu_name: str,
                       config_hash: str, install: AccelSimInstall) -> None:
        by_uid = {s["uid"]: s for s in sent}
        for r in records:
            s = by_uid.get(r.get("kernel_uid"))
            r["job_id"] = job.job_id
            r["backend"] = self.name
            r["backend_version"] = install.version
            r["config"] = gpu_name
            r["config_hash"] = config_hash
            r["workload"] = Path(job.trace_dir).name
            if s is not None:
                r["trace_hash"] = s["trace_hash"]
                r.setdefault("kernel_id", s["kernel_id"])
                if r.get("kernel_id") is None:
                    r["kernel_id"] = s["kernel_id"]
                r["accelsim_trace_file"] = s["file"]

    def _finish(self, job: SimJob, out: Path, t0: float, ok: bool, reason: str | None,
                records: list[dict] | None = None,
                provenance: dict | None = None) -> SimResult:
        res = SimResult(job_id=job.job_id, backend=self.name, ok=ok, records=records or [],
                        reason=reason, provenance=provenance or {},
                        wall_s=time.monotonic() - t0)
        save_result(res, out / RESULT_NAME)
        return res



# --------------------------------------------------------------------------- trace steps


def _tracez_as_text(install: AccelSimInstall, src_dir: Path, text_dir: Path,
                    entries: list, headers: dict[str, dict[str, str]],
                    chosen: list[KernelRef]) -> tuple[Path, list[KernelRef]]:
    """The folder the kernels are read from and the chosen kernels as named there: the
    set itself, or for an install that cannot read ``.tracez`` (Accel-Sim 2.x's format;
    1.x reads text) a copy in ``text_dir`` with those kernels converted to ``.traceg``
    (``headers`` gains their headers)."""
    tracez = [k.file for k in chosen if k.file.endswith(".tracez")]
    if not tracez or install.reads_tracez:
        return src_dir, chosen
    text_dir.mkdir(exist_ok=True)
    ren = []
    for e in entries:
        if isinstance(e, KernelRef) and e.file.endswith(".tracez"):
            new = e.file[: -len(".tracez")] + ".traceg"
            tracez_to_traceg(install, src_dir / e.file, text_dir / new)
            headers[new] = read_header(text_dir / new)
            ren.append(KernelRef(new, e.line))
        elif isinstance(e, KernelRef):
            os.symlink((src_dir / e.file).resolve(), text_dir / e.file)
            ren.append(e)
        else:
            ren.append(e)
    (text_dir / "kernelslist.g").write_text(format_kernelslist(ren))
    renames = {k.file: k.file[: -len(".tracez")] + ".traceg" for k in chosen}
    return text_dir, [KernelRef(renames.get(k.file, k.file), k.line) for k in chosen]


def _overridden(h: dict[str, str], overrides: dict, file: str) -> dict[str, str]:
    """A kernel's header with the job's header overrides (``*`` first, then the file's)."""
    h = dict(h)
    for scope in ("*", file):
        h.update({f.replace("_", " "): str(v) for f, v in overrides.get(scope, {}).items()})
    return h


def _check_headers(chosen: list[KernelRef], headers: dict[str, dict[str, str]],
                   overrides: dict, binary_version: "int | None", work_dir: Path,
                   install: AccelSimInstall) -> None:
    """Validate the headers as they would be sent, after overrides and the ISA rewrite
    (which sets ``binary_version``); the simulator fails late and obscurely on bad ones."""
    problems = []
    for k in chosen:
        h = _overridden(headers[k.file], overrides, k.file)
        if binary_version is not None:
            h["binary version"] = str(binary_version)
        mine = header_problems(h, install)
        theirs = [p for p in _stage_validation(h, work_dir / k.file)
                  if not any(p.split(":")[0].split()[0] in m for m in mine)]
        problems += [f"{k.file}: {p}" for p in mine + theirs]
    if problems:
        raise BackendError("trace headers fail validation:\n  " + "\n  ".join(problems)
                           + "\n(set options['header_overrides'], e.g. {'*': {'nregs': 32}},"
                           " with values from the launch record or ncu)")


def _rewrite_isa(work_dir: Path, tdir: Path, target: str, binary_version: int,
                 files: list[str], overrides: dict, chosen: list[KernelRef],
                 opts: dict) -> tuple[list[KernelRef], dict, dict[str, int]]:
    """The kernels rewritten for another ISA: those still sent (refused ones dropped), the
    rewrite's report and each kernel's traced instruction count."""
    # Plain text by default: rewriting is I/O bound and xz costs more than it saves
    # for a scratch copy; .xz when asked (Accel-Sim 1.x reads it through `xz -dc`).
    compress = bool(opts.get("compress_traces", False)) and shutil.which("xz") is not None
    report = rewrite_traceset(work_dir, tdir, target=target, binary_version=binary_version,
                              files=files, header_overrides=overrides, compress=compress)
    compat = report.as_dict()
    compat["summary"] = report.summary()
    refused = {r.file for r in report.refused}
    chosen = [k for k in chosen if k.file not in refused]
    return chosen, compat, {k.file: k.instructions_in for k in report.kernels}


def _rewrite_headers(work_dir: Path, tdir: Path, files: list[str],
                     overrides: dict) -> dict[str, int]:
    """Header fixes without ISA changes: a rewritten copy, opcodes untouched. Returns each
    kernel's traced instruction count."""
    traced: dict[str, int] = {}
    kept = []
    for e in parse_kernelslist(work_dir / "kernelslist.g"):
        if isinstance(e, KernelRef):
            if e.file in files:
                ov = {**overrides.get("*", {}), **overrides.get(e.file, {})}
                name = _out_name(e.file, False)
                kr = rewrite_kernel(work_dir / e.file, tdir / name, None, ov)
                traced[e.file] = kr.instructions
                kept.append(KernelRef(name, e.line))
        else:
            kept.append(e)
    (tdir / "kernelslist.g").write_text(format_kernelslist(kept))
    return traced


def _link_kernels(work_dir: Path, tdir: Path, files: list[str]) -> None:
    """The kernels as they are: linked, or decompressed where 1.x cannot read them."""
    kept = []
    for e in parse_kernelslist(work_dir / "kernelslist.g"):
        if isinstance(e, KernelRef):
            if e.file in files:
                name = e.file
                if name.endswith(".zst"):  # 1.x reads plain and .xz only
                    copy_traceset(work_dir, tdir, [name])
                    name = name[:-4]
                else:
                    os.symlink((work_dir / name).resolve(), tdir / name)
                kept.append(KernelRef(name, e.line))
        else:
            kept.append(e)
    (tdir / "kernelslist.g").write_text(format_kernelslist(kept))


def _sent_records(chosen: list[KernelRef], headers: dict[str, dict[str, str]],
                  work_dir: Path, sampled: set[str], traced: dict[str, int],
                  overrides: dict) -> list[dict]:
    """One record per kernel sent, numbered as the simulator numbers launches; a sampled
    kernel's says what its records are scaled by (scale_sampled_records)."""
    sent = []
    for uid, k in enumerate(chosen, 1):
        h = headers[k.file]
        sent.append({"uid": uid, "file": k.file, "name": h.get("kernel name", ""),
                     "kernel_id": _int(h.get("kernel id")),
                     "grid": h.get("grid dim", "").strip("()"),
                     "block": h.get("block dim", "").strip("()"),
                     "trace_hash": sha256_file(work_dir / k.file)})
        if k.file in sampled and k.file in traced:
            hh = _overridden(h, overrides, k.file)
            sent[-1]["sampled"] = {
                "traced": _sampled(h)[0], "total": _sampled(h)[1],
                "traced_instructions": traced[k.file], "census": _census(h),
                "nregs": _int(hh.get("nregs")) or 0, "shmem": _int(hh.get("shmem")) or 0}
    return sent


# --------------------------------------------------------------------------- helpers


def read_header(path: Path) -> dict[str, str]:
    """The ``-key = value`` header of a trace file (first lines only; streaming)."""
    out: dict[str, str] = {}
    if path.name.endswith(".tracez"):
        return out  # binary; its header is read after conversion
    with _open_text_in(path) as f:
        for i, line in enumerate(f):
            if line.startswith("-"):
                k, sep, v = line[1:].partition("=")
                if sep:
                    out[k.strip()] = v.strip()
            elif line.strip() and not line.startswith("#"):
                break
            if i > 64:
                break
    return out


def _sampled(h: dict[str, str]) -> tuple[int, int] | None:
    """(traced, total) blocks of a sampled launch's header, else None."""
    m = _SAMPLED_RE.search(h.get("tb sampling", ""))
    return (int(m[1]), int(m[2])) if m and int(m[1]) < int(m[2]) else None


def _census(h: dict[str, str]) -> int | None:
    m = _CENSUS_RE.match(h.get("tb census", ""))
    return int(m[1]) if m else None


def scale_sampled_records(records: list[dict], sent: list[dict], config: Path,
                          prov: dict) -> list[dict]:
    """Records of sampled launches scaled from the traced blocks to the whole grid
    (:mod:`simfront.sim.accelsim.sampling`); the scales go into the provenance too."""
    by_uid = {s["uid"]: s for s in sent if "sampled" in s}
    if not by_uid:
        return records
    lim = sm_limits(config)
    out = []
    for r in records:
        s = by_uid.get(r.get("kernel_uid"))
        if s is None or not r.get("complete"):
            out.append(r)
            continue
        sm = s["sampled"]
        threads = 1
        for x in s["block"].split(","):
            threads *= int(x) if x.strip().isdigit() else 1
        per_sm = blocks_per_sm(lim, threads, sm["nregs"], sm["shmem"])
        sc = sample_scale(sm["traced"], sm["total"], sm["traced_instructions"], sm["census"],
                          lim, per_sm)
        prov.setdefault("sampling", {})[s["file"]] = sc.as_dict()
        out.append(scale_record(r, sc))
    return out


def refused_records(compat: dict | None, job: SimJob, sent: list[dict], gpu_name: str,
                    config_hash: str, install: AccelSimInstall, backend: str) -> list[dict]:
    """One incomplete record per kernel the lowering refused, saying why (not simulated)."""
    if not compat or not compat.get("refused"):
        return []
    out = []
    for f, r in compat["refused"].items():
        ops = ", ".join(f"{op} x{v['count']} (first at line {v['first_line']})"
                        for op, v in r["opcodes"].items())
        out.append({"kernel_uid": None, "complete": False, "accelsim_trace_file": f,
                    "reason": f"refused by --isa-compat: {r['why']}: {ops}",
                    "job_id": job.job_id, "backend": backend,
                    "backend_version": install.version, "config": gpu_name,
                    "config_hash": config_hash, "workload": Path(job.trace_dir).name})
    return out


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def header_problems(h: dict[str, str], install: AccelSimInstall) -> list[str]:
    """What in a kernel header would make this install fail or mis-simulate."""
    probs = []
    bv = _int(h.get("binary version"))
    if bv is None or bv not in install.binary_versions:
        hint = (" (Hopper: use --isa-compat ampere or an Accel-Sim 2.x install)"
                if install.major < 2 else "")
        probs.append(f"binary version {h.get('binary version')!r} is not one this Accel-Sim "
                     f"{install.major}.x accepts {sorted(install.binary_versions)}{hint}")
    nregs = _int(h.get("nregs"))
    if nregs is None or not 1 <= nregs <= MAX_NREGS:
        probs.append(f"nregs {h.get('nregs')!r} is not a register count (1..{MAX_NREGS})")
    shmem = _int(h.get("shmem"))
    if shmem is None or not 0 <= shmem <= MAX_SHMEM:
        probs.append(f"shmem {h.get('shmem')!r} is not a shared-memory size (0..{MAX_SHMEM})")
    for dim in ("grid dim", "block dim"):
        txt = h.get(dim, "").strip("() ")
        try:
            vals = [int(x) for x in txt.split(",")]
            if len(vals) != 3 or min(vals) < 1:
                raise ValueError
        except ValueError:
            probs.append(f"{dim} {h.get(dim)!r} is not three positive integers")
    return probs


def _stage_validation(h: dict[str, str], path: Path) -> list[str]:
    """The trace stage's header checks (simfront.traces.validate), on the header as it
    would be sent (overrides applied); errors only, warnings are the stage's business."""
    lines = [(i, f"-{k} = {v}") for i, (k, v) in enumerate(h.items(), 1)]
    try:
        header = parse_header(lines, path)
    except SimfrontError as exc:
        return [str(exc)]
    return [f"{p.field}: {p.message}" if p.field else p.message
            for p in stage_problems(header, path) if p.severity == "error"]


def select_kernels(kernels: list[KernelRef], headers: dict[str, dict[str, str]],
                   wanted: tuple[str, ...] | None) -> list[KernelRef]:
    """Kernels by trace file name or fnmatch pattern on file or kernel name, in launch order."""
    if not wanted:
        return list(kernels)
    out = []
    for k in kernels:
        name = headers[k.file].get("kernel name", "")
        if any(k.file == w or k.stem == w or fnmatch.fnmatchcase(k.file, w)
               or fnmatch.fnmatchcase(name, w) for w in wanted):
            out.append(k)
    return out


def _status(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return str(rc)


def _pump(stream, path: Path, tail: deque | None) -> None:
    # xz preset 1: fast enough to keep up with the simulator, ~10x smaller than the text
    with lzma.open(path, "wb", preset=1) as f:
        for line in iter(stream.readline, b""):
            f.write(line)
            if tail is not None:
                tail.append(line.decode(errors="replace").rstrip())
    stream.close()


def run_child(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float | None,
              memory_limit_gb: float | None) -> tuple[int, bool, list[str]]:
    """Run the simulator: compressed stdout/stderr, memory limit, wall-time limit.

    Returns (returncode, timed_out, last stderr lines)."""
    limit = int(memory_limit_gb * (1 << 30)) if memory_limit_gb else None

    def preexec() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no multi-GB core files

    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            preexec_fn=preexec, start_new_session=True)
    err_tail: deque = deque(maxlen=TAIL_LINES)
    threads = [threading.Thread(target=_pump, args=(proc.stdout, cwd / STDOUT_NAME, None)),
               threading.Thread(target=_pump, args=(proc.stderr, cwd / STDERR_NAME, err_tail))]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:
        _kill_group(proc)
        raise
    for t in threads:
        t.join()
    return proc.returncode, timed_out, list(err_tail)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    except ProcessLookupError:
        pass


def save_result(res: SimResult, path: Path) -> None:
    data = {"job_id": res.job_id, "backend": res.backend, "ok": res.ok, "reason": res.reason,
            "wall_s": res.wall_s, "records": res.records, "provenance": res.provenance}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_json_default, allow_nan=True))
    os.replace(tmp, path)


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    if isinstance(o, np.generic):
        return o.item()
    return str(o)


def load_result(path: str | Path) -> SimResult:
    """A SimResult saved in a job directory (``result.json``)."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULT_NAME
    data = json.loads(p.read_text())
    return SimResult(job_id=data["job_id"], backend=data["backend"], ok=data["ok"],
                     records=data["records"], reason=data["reason"],
                     provenance=data["provenance"], wall_s=data["wall_s"])
