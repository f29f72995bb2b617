"""Model what-ifs held against hardware what-ifs (issue 12), on any GPU as the base.

A trace set may carry, in its ``whatif/`` folder, kernel timelines of the same step timed
under changed hardware (``simfront timeline``; see docs/capture.md). A timeline's name is
the condition: the GPU it ran on (the file-name prefix of the GPU's name, ``h100``, ``h200``)
and the change, ``<gpu>-all`` (the whole GPU), ``<gpu>-smsN`` (a green context of N SMs),
``<gpu>-l2setN`` (N MiB of L2 set aside for persisting accesses). The base is the whole GPU
the step was captured on (:func:`base_label`: the one ``<gpu>-all`` timeline there, or,
where there are several, the one of the GPU the trace set's manifest names); every other
``<gpu>-all`` is a cross-GPU condition (``h200-all`` of the H100 sets: the H200, H100
silicon with 4.8 TB/s HBM3e and a 60 MiB L2). For each condition this module asks the model
the same question: the trace set on the base GPU's description and on the condition's
(:func:`condition`), and compares the *ratios* (condition over base), launch by launch and
for the step.

Launches are paired as in :mod:`simfront.stats.matching` (name, grid and block, in order).
A timeline comes from another process than the trace, so Triton may have autotuned another
launch shape and cuBLAS may have picked another GEMM kernel: such launches are paired by
name (or, failing that, by category) and position between exactly paired neighbours, and
reported apart as library choices, never mixed into the model's per-launch error.

The L2 (``l2``): the timelines time a real, unprofiled step, where a kernel finds in the L2
what earlier kernels left. The model answers either with every kernel starting from an
empty L2 (``cold``, as ncu measures a kernel) or with the step's kernels run in launch
order and the L2 carried from one to the next (``warm``; docs/model.md, *Inter-kernel L2*).
:data:`DEFAULT_L2` says which the comparison uses unless told.

Model runs are the expensive part (a paper-size set is about a CPU minute per GPU): each is a
job of a sweep job store (:func:`model_job`: one per trace set content, GPU config hash,
model source hash and options, the L2 mode among them), in :func:`default_cache_dir`, run
once and read back from its ``result.json`` (docs/sweeps.md, *The what-if job store*).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simfront.analysis.report import Section
from simfront.core.categories import kernel_category, short_name
from simfront.core.errors import InputError
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import cache_root
from simfront.core.provenance import sha256_code
from simfront.gpu import GPU, config_hash, load_gpu, with_variants
from simfront.stats.matching import align, launch_key
from simfront.sweep.local import LocalExecutor
from simfront.sweep.plan import JobSpec, job_id_for
from simfront.sweep.spec import ExecutorSettings, Resources
from simfront.sweep.store import JobStore, Outcome
from simfront.sweep.worker import job_dir, read_result, run_job
from simfront.core.errors import ConfigError
from simfront.gpu import load_gpu
from simfront.core.timeline import gpu_prefix

#: The baseline of the shipped H100 sets (each set's own is :func:`base_label`'s).
BASE = "h100-all"
#: How the model's L2 starts for the what-ifs unless told: ``cold`` or ``warm``. Warm, because
#: the timelines time an unprofiled step whose L2 carries from kernel to kernel: on the six
#: paper-size sets (four of them held out) it brings the 64-SM step errors from +6.5..+8.8%
#: to -1.9..+0.7% and the H200's from +3..+4% to -1.4..-2.6%, at the cost of the 96-SM error
#: (-0.3 -> -3.1%); the L2 set-aside does not move either way (bench/RESULTS.md).
DEFAULT_L2 = "warm"
WHATIF_DIR = "whatif"

#: match kinds of a trace launch against a timeline
EXACT, SHAPE, KERNEL = "exact", "shape", "kernel"


@dataclass(frozen=True)
class Condition:
    """A hardware what-if and the GPU description the model answers it with."""

    label: str                                   # file stem under whatif/
    title: str
    gpu: str = "h100"                            # preset the variants apply to
    variants: tuple[tuple[str, Any], ...] = ()

    def model_gpu(self):
        g = load_gpu(self.gpu)
        return with_variants(g, **dict(self.variants)) if self.variants else g


_LABEL = re.compile(r"([a-z]+\d+)-(all|sms(\d+)|l2set(\d+)|shmem(\d+)k)")

#: The description of a GPU seen from another's base where it is not the GPU's own preset:
#: the H100 sets' H200 is ``h100-as-h200``, the H100 with the H200's DRAM bandwidth, L2 and
#: front end. It differs from the ``h200`` preset only in the DRAM's capacity and kind, which
#: the model does not read; it is kept so that those sets' cached model runs and published
#: figures stay as they are.
CROSS_GPU = {("h100", "h200"): "h100-as-h200"}


def label_gpu(label: str) -> str:
    """``h200-sms64`` -> ``h200``: the GPU a timeline's file stem says it ran on."""
    m = _LABEL.fullmatch(label)
    if not m:
        raise InputError(f"unknown what-if condition '{label}' (known: <gpu>-all, "
                         "<gpu>-smsN, <gpu>-l2setN, e.g. h100-all, h200-sms64)")
    return m.group(1)


def _gpu_title(gpu) -> str:
    return (f"{gpu.name.upper()} ({gpu.dram.bandwidth.bytes_per_s / 1e12:.3g} TB/s, "
            f"{gpu.l2.size.bytes >> 20} MiB L2)")


def condition(label: str, base: str = "h100") -> Condition:
    """The condition a timeline's file stem names, seen from a step captured on ``base``
    (a GPU preset name, the prefix of the base's ``<gpu>-all``). The model's GPU is the
    preset of the label's GPU (:data:`CROSS_GPU` where it is another's variant) with the
    label's change; unknown names, and GPUs without a preset, are an error."""

    gpu = label_gpu(label)
    m = _LABEL.fullmatch(label)
    preset = gpu if gpu == base else CROSS_GPU.get((base, gpu), gpu)
    try:
        desc = load_gpu(preset)
    except ConfigError as exc:
        raise InputError(f"what-if condition '{label}': no GPU description for '{gpu}' "
                         f"({exc.reason})") from None
    own = gpu == base
    prefix = "" if own else _gpu_title(desc.replace(name=gpu)) + ", "
    if m.group(3):
        n = int(m.group(3))
        return Condition(label, f"{prefix}{n} SMs", preset, (("sm_count", n),))
    if m.group(4):
        # The GPU's L2 less N MiB held by persisting lines of a pinned buffer
        # (`simfront timeline --l2-setaside N`): the rest is what normal accesses can use.
        # The persisting mode also slowed write-heavy streaming kernels 13-29% on the H100
        # at a 25 MiB set-aside, and with the limit set alone
        # (bench/device/l2_setaside_stream.py): no l2_size variant can show that.
        n = int(m.group(4))
        left = (desc.l2.size.bytes >> 20) - n
        if left <= 0:
            raise InputError(f"what-if condition '{label}': {n} MiB set aside leaves no "
                             f"L2 of {preset}'s {desc.l2.size}")
        return Condition(label, f"{prefix}L2 less {n} MiB set aside", preset,
                         (("l2_size", f"{left} MiB"),))
    if m.group(5):
        # A block on every SM keeps N KiB of shared memory around each launch of the held
        # kernels (`simfront timeline --hold-shared N`): fewer of their blocks fit an SM.
        n = int(m.group(5))
        return Condition(label, f"{prefix}{n} KiB of shared memory held", preset,
                         (("shared_held", f"{n} KiB"),))
    return Condition(label, gpu.upper() if own else _gpu_title(desc.replace(name=gpu)),
                     preset)


def _manifest_gpu(trace_dir: Path) -> str | None:

    man = trace_dir / "manifest.json"
    if not man.is_file():
        return None
    try:
        gpu = json.loads(man.read_text()).get("gpu")
    except json.JSONDecodeError as exc:
        raise InputError(f"unreadable manifest: {exc}", man) from None
    return gpu_prefix(gpu) if isinstance(gpu, str) and gpu else None


def base_label(trace_dir: str | Path, base: str | None = None) -> str:
    """The label of a trace set's base timeline: ``<gpu>-all`` of the GPU the step was
    captured on. ``base`` (a GPU, ``h200``) names it; else the one whole-GPU timeline in
    ``whatif/``, or, where there are several (the H100 sets time the H200 too), the one of
    the GPU the set's manifest says it was captured on."""
    trace_dir = Path(trace_dir)
    alls = sorted({lb[:-4] for lb in _labels(trace_dir) if lb.endswith("-all")})
    if base is not None:
        if base not in alls:
            raise InputError(f"no timeline '{base}-all' to be the base (whole-GPU timelines "
                             f"there: {', '.join(a + '-all' for a in alls) or 'none'})",
                             trace_dir / WHATIF_DIR)
        return f"{base}-all"
    if not alls:
        raise InputError("no whole-GPU timeline (<gpu>-all.csv[.xz]) to be the base",
                         trace_dir / WHATIF_DIR)
    if len(alls) == 1:
        return f"{alls[0]}-all"
    captured = _manifest_gpu(trace_dir)
    if captured in alls:
        return f"{captured}-all"
    raise InputError(f"whole-GPU timelines of {', '.join(alls)} and the trace set's manifest "
                     "names none of them as the GPU it was captured on: name the base "
                     "(--base GPU)", trace_dir / WHATIF_DIR)


# ---------------------------------------------------------------------------------------------
# Reading


def _timeline_path(trace_dir: Path, label: str) -> Path:
    for suffix in (".csv.xz", ".csv"):
        p = trace_dir / WHATIF_DIR / f"{label}{suffix}"
        if p.is_file():
            return p
    raise InputError(f"no timeline '{label}' (expected {label}.csv[.xz])", trace_dir / WHATIF_DIR)


def has_base(trace_dir: str | Path) -> bool:
    """Whether the set has a base timeline with its summary (the step's wall time)."""
    try:
        lb = base_label(trace_dir)
    except InputError:
        return False
    return (Path(trace_dir) / WHATIF_DIR / f"{lb}.json").is_file()


def _labels(trace_dir: Path) -> set[str]:
    d = Path(trace_dir) / WHATIF_DIR
    return {p.name.split(".")[0] for p in d.glob("*.csv*")} if d.is_dir() else set()


def available_conditions(trace_dir: str | Path, base: str | None = None) -> list[str]:
    """Condition labels with a timeline in ``trace_dir/whatif``, the base excluded
    (:func:`base_label`; ``base`` names its GPU), in a stable order (the base GPU's SM
    counts descending, then the rest by name)."""
    labels = _labels(Path(trace_dir))
    if not labels:
        return []
    base_lb = base_label(trace_dir, base)
    gpu = base_lb[:-4]

    def key(s: str):
        m = re.fullmatch(rf"{re.escape(gpu)}-sms(\d+)", s)
        return (0, -int(m.group(1)), s) if m else (1, 0, s)

    return sorted(labels - {base_lb}, key=key)


def read_timeline(trace_dir: str | Path, label: str) -> tuple[pd.DataFrame, dict]:
    """A condition's timeline (ncu layout, see simfront.core.timeline) and its summary."""
    trace_dir = Path(trace_dir)
    df = read_ncu_csv(_timeline_path(trace_dir, label))
    if "time_us" not in df.columns:
        raise InputError("timeline has no gpu__time_duration.sum column",
                         _timeline_path(trace_dir, label))
    js = trace_dir / WHATIF_DIR / f"{label}.json"
    summary = json.loads(js.read_text()) if js.is_file() else {}
    device = summary.get("device_name")
    if device and _LABEL.fullmatch(label):

        if gpu_prefix(device) != label_gpu(label):
            raise InputError(f"the timeline ran on {device} ({gpu_prefix(device)}), but its "
                             f"name says {label_gpu(label)}", js, field="device_name")
    return df.reset_index(drop=True), summary


def trace_launches(trace_dir: str | Path) -> pd.DataFrame:
    """The trace set's launches in order: file, kernel name, short name, category, grid,
    block (from the kernel headers)."""
    from simfront.traces.reader import TraceSet

    rows = []
    for k in TraceSet(trace_dir).kernels():
        h = k.header
        rows.append({"file": k.path.name, "kernel_name": h.name, "short_name": short_name(h.name),
                     "category": kernel_category(h.name), "grid": tuple(h.grid),
                     "block": tuple(h.block)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Pairing


def pair_timeline(trace: pd.DataFrame, timeline: pd.DataFrame) -> pd.DataFrame:
    """Each trace launch's timeline row (``tl``, -1 if none) and how it paired (``match``):
    ``exact`` (name, grid, block), ``shape`` (same kernel, another launch shape: autotuning)
    or ``kernel`` (another kernel of the same category at that place: a library's choice).
    Non-exact pairs are only made between two exactly paired neighbours, in order."""
    ka = [launch_key(n, g, b) for n, g, b in zip(trace.kernel_name, trace.grid, trace.block)]
    kb = [launch_key(n, g, b) for n, g, b in
          zip(timeline.kernel_name, timeline.grid, timeline.block)]
    tl = np.full(len(trace), -1)
    match = np.array([None] * len(trace), dtype=object)
    exact = align(ka, kb)
    for i, j in exact:
        tl[i], match[i] = j, EXACT
    tb_short = [short_name(str(n)) for n in timeline.kernel_name]
    tb_cat = [kernel_category(str(n)) for n in timeline.kernel_name]
    bounds = [(-1, -1)] + exact + [(len(trace), len(timeline))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        ia, jb = list(range(i0 + 1, i1)), list(range(j0 + 1, j1))
        if not ia or not jb:
            continue
        for kind, a_keys, b_keys in (
                (SHAPE, [trace.short_name.iat[i] for i in ia], [tb_short[j] for j in jb]),
                (KERNEL, [trace.category.iat[i] for i in ia], [tb_cat[j] for j in jb])):
            got = align(a_keys, b_keys)
            for x, y in got:
                tl[ia[x]], match[ia[x]] = jb[y], kind
            used_a, used_b = {x for x, _ in got}, {y for _, y in got}
            ia = [i for x, i in enumerate(ia) if x not in used_a]
            jb = [j for y, j in enumerate(jb) if y not in used_b]
            if not ia or not jb:
                break
    return pd.DataFrame({"tl": tl, "match": match}, index=trace.index)


# ---------------------------------------------------------------------------------------------
# The model, cached


def default_cache_dir() -> Path:
    """The what-if job store's directory: ``$SIMFRONT_CACHE/whatif``, else
    ``~/.cache/simfront/whatif``."""
    return cache_root() / "whatif"


def model_source_hash() -> str:
    """Hash of the model's code and calibrated constants: a change invalidates the cache."""
    from simfront.sim.model import backend
    from simfront.sim.model.params import DEFAULT_PARAMS

    h = sha256_code(sorted(Path(backend.__file__).parent.glob("*.py")))
    h.update(repr(sorted(DEFAULT_PARAMS.__dict__.items())).encode())
    return h.hexdigest()


def trace_set_hash(trace_dir: Path) -> str:
    """The set's content hash: the manifest's ``set_sha256`` where there is one."""
    man = trace_dir / "manifest.json"
    if man.is_file():
        try:
            sha = json.loads(man.read_text()).get("set_sha256")
        except json.JSONDecodeError as exc:
            raise InputError(f"unreadable manifest: {exc}", man) from None
        if sha:
            return str(sha)
    h = hashlib.sha256((trace_dir / "kernelslist.g").read_bytes())
    for p in sorted(trace_dir.glob("kernel-*")):
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


#: Attempts per what-if model job: a model run that fails fails the same way again, and the
#: comparison reads its partial records (each launch's ``complete`` says which hold).
MAX_ATTEMPTS = 1
#: The executor name the store records for jobs run in this process.
IN_PROCESS = "whatif"


def launch_facts(trace_dir: str | Path) -> dict[str, dict]:
    """Registers and shared memory per trace file from the set's ``ncu.csv`` where it has
    one (as in bench_model); none without."""
    trace_dir = Path(trace_dir).resolve()
    ncu = sorted(trace_dir.glob("ncu.csv*")) or sorted(trace_dir.glob("*.ncu.csv*"))
    if not ncu:
        return {}
    # every job planned on a set asks (a what-if panel: one per condition, twice): paired
    # once per process while the set's list and its ncu file stay as they are
    stamps = tuple((st.st_size, st.st_mtime_ns) for st in
                   (p.stat() for p in (ncu[0], trace_dir / "kernelslist.g") if p.exists()))
    return copy.deepcopy(_launch_facts(trace_dir, ncu[0], stamps))


@functools.lru_cache(maxsize=64)
def _launch_facts(trace_dir: Path, ncu: Path, stamps: tuple) -> dict[str, dict]:
    from simfront.sim.model.validation import pair_launches, read_ncu

    pairs, _ = pair_launches(trace_dir, read_ncu(ncu))
    return {p.kernel.path.name: p.launch for p in pairs}


def model_job(trace_dir: str | Path, gpu: GPU, l2: str = "cold",
              kernels: tuple[str, ...] | None = None) -> JobSpec:
    """The job store's job for the model's run of a trace set (its launches of ``kernels``,
    names or patterns; None: all) on ``gpu`` with the L2 mode ``l2``. Its id is the sweep's
    (:func:`simfront.sweep.plan.job_id_for`) over the set's content hash, the GPU's config hash, the model's source hash (as the backend version)
    and the options (the L2 mode and the launches' registers and shared memory)."""
    from simfront.sim.model.backend import MODEL_VERSION

    trace_dir = Path(trace_dir).resolve()
    chash = config_hash(gpu)
    version = f"{MODEL_VERSION}+{model_source_hash()[:12]}"
    options = {"l2": l2, "launches": launch_facts(trace_dir)}
    tset = trace_set_hash(trace_dir)
    return JobSpec(
        job_id=job_id_for(tset, kernels, chash, "model", version, options),
        workload=trace_dir.name, trace_dir=str(trace_dir), trace_hash=tset,
        trace_bytes=sum(f.stat().st_size for f in trace_dir.glob("kernel-*.traceg*")),
        kernels=kernels, base_gpu=gpu.name, params={}, config=gpu.name, config_hash=chash,
        gpu=gpu, backend="model", backend_version=version, options=options)


def _requeue_stale(store: JobStore, ids: set[str]) -> None:
    """Jobs of ``ids`` that a stopped process left running go back to the queue (the
    worker's lock and result file make running one twice harmless), and failed ones are
    queued again: what failed them (a trace being written, a killed worker) may be gone."""
    stale = [(r["job_id"], r["attempts"]) for r in store.running() if r["job_id"] in ids]
    if stale:
        store.release(stale, "what-if: left running by a stopped process")
    t = store.table()
    failed = t.job_id[(t.state == "failed") & t.job_id.isin(ids)].tolist()
    if failed:
        store.retry(failed)


def _run_here(store: JobStore, directory: Path, ids: set[str],
              progress: Callable[[str], None] | None) -> None:
    """Run the queued jobs of ``ids`` one by one in this process, as an executor would."""
    while True:
        claims = store.claim(1, IN_PROCESS, only=ids)
        if not claims:
            return
        c = claims[0]
        l2 = c.spec.options.get("l2")
        if progress:
            progress(f"model: {c.spec.workload} on {c.spec.config}, {l2} L2 ...")
        t0 = time.monotonic()
        out = run_job(directory, c.job_id, c.attempt, c.spec)
        store.finish([Outcome(c.job_id, c.attempt, ok=bool(out.get("ok")),
                              exit_code=out.get("exit_code"), reason=out.get("reason"),
                              host=out.get("host"), started_at=out.get("started_at"),
                              finished_at=out.get("finished_at"), wall_s=out.get("wall_s"))])
        if progress:
            progress(f"model: {c.spec.workload} on {c.spec.config}: {out.get('n_records')} "
                     f"launches in {time.monotonic() - t0:.0f} s"
                     + ("" if out.get("ok") else f" ({out.get('reason')})"))


def run_model_jobs(jobs: Sequence[JobSpec], cache_dir: Path | None = None,
                   workers: int = 1, progress: Callable[[str], None] | None = None) -> Path:
    """Add the jobs to the what-if job store (``cache_dir``, default
    :func:`default_cache_dir`) and run those not done: here, one by one, or in ``workers``
    processes of the sweep's local executor (which also runs what-if jobs that an
    interrupted run left queued). Returns the store's directory."""
    from simfront.sim.model import api

    directory = default_cache_dir() if cache_dir is None else Path(cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    store = JobStore(directory)
    jobs = list({j.job_id: j for j in jobs}.values())
    store.sync_plan(jobs, MAX_ATTEMPTS, set_aside_others=False)
    _requeue_stale(store, {j.job_id for j in jobs})
    # The model keeps recent trace passes in memory for sweeps over parameters that leave
    # them alone; every condition here changes them (SM count, L2), and 64 of a paper set's
    # passes at 32 SMs filled 11 GB, so keep none (the local executor's workers are forks
    # of this process and keep none either).
    keep, api.PREPARED_CACHE_SIZE = api.PREPARED_CACHE_SIZE, 0
    try:
        if workers > 1 and len(jobs) > 1:
            from simfront.sweep.runner import drive  # loads numba

            ex = LocalExecutor(directory, store, ExecutorSettings(
                workers=min(workers, len(jobs)), max_attempts=MAX_ATTEMPTS), Resources(),
                "whatif")
            drive(store, ex, progress=progress is not None, label="what-ifs")
        else:
            _run_here(store, directory, {j.job_id for j in jobs}, progress)
    finally:
        api.PREPARED_CACHE_SIZE = keep
    return directory


def job_records(directory: Path, job: JobSpec) -> pd.DataFrame:
    """A finished what-if job's records from its ``result.json`` in the store, indexed by
    trace file name, complete launches only."""
    path = job_dir(directory, job.job_id) / "result.json"
    result, why = read_result(path)
    if result is None:
        raise InputError(f"no model result for {job.workload} on {job.config} ({why})", path)
    if not result.get("ok") and not result.get("records"):
        raise InputError(f"the model failed on {job.workload} on {job.config}: "
                         f"{result.get('reason')}", path)
    recs = pd.DataFrame(result.get("records") or [])
    trace_dir = Path(job.trace_dir)
    trace_files = {int(k.split("-")[1].split(".")[0]): k for k in
                   (p.name for p in trace_dir.glob("kernel-*.traceg*"))}
    recs["file"] = recs["kernel_id"].map(trace_files)
    if "complete" in recs:
        recs = recs[recs["complete"].fillna(False).astype(bool)]
    return recs.set_index("file")


def model_records(trace_dir: str | Path, gpu: GPU, cache_dir: Path | None = None,
                  progress: Callable[[str], None] | None = None,
                  l2: str = "cold", kernels: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The model's records for every launch of ``trace_dir`` (of ``kernels``: names or
    patterns) on ``gpu``, indexed by trace file name: the what-if job store's job
    (:func:`model_job`), run unless done.
    Registers and shared memory come from the set's ``ncu.csv`` where it has one (as in
    bench_model). ``l2``: ``cold`` (the model's own default, what comparisons with ncu
    need) or ``warm`` (the model backend's ``l2`` option); the what-if comparison passes
    :data:`DEFAULT_L2`."""
    job = model_job(trace_dir, gpu, l2, kernels)
    directory = run_model_jobs([job], cache_dir, progress=progress)
    return job_records(directory, job)


# ---------------------------------------------------------------------------------------------
# The comparison


@dataclass
class WhatIf:
    """One trace set under one condition: hardware against model."""

    workload: str
    condition: str
    title: str
    launches: pd.DataFrame                # one row per trace launch (see compare())
    hw_ratio: float                       # step, summed over exactly paired launches
    model_ratio: float
    hw_ratio_step: float                  # the whole step's kernel time (timelines)
    model_ratio_step: float               # all modelled trace launches
    per_kernel_mape: float                # per exactly paired launch, of the ratios
    weighted_error: float                 # the same, weighted by baseline kernel time
    n_trace: int
    n_exact: int
    n_library: int
    extra: dict[str, Any] = field(default_factory=dict)
    l2: str = DEFAULT_L2                  # how the model's L2 started: cold or warm
    base: str = BASE                      # the base timeline's label: <gpu>-all

    @property
    def step_error(self) -> float:
        return self.model_ratio / self.hw_ratio - 1

    @property
    def exact(self) -> pd.DataFrame:
        return self.launches[self.launches.match == EXACT]

    @property
    def library(self) -> pd.DataFrame:
        """Launches whose shape or kernel differs between the trace and a timeline."""
        return self.launches[self.launches.match.isin([SHAPE, KERNEL])]

    def kernels(self) -> pd.DataFrame:
        """Exactly paired launches summed per kernel (short name), worst ratio error first."""
        g = self.exact.groupby("short_name").agg(
            launches=("file", "size"), hw_base_us=("hw_base_us", "sum"),
            hw_cond_us=("hw_cond_us", "sum"), model_base_us=("model_base_us", "sum"),
            model_cond_us=("model_cond_us", "sum"))
        g["hw_ratio"] = g.hw_cond_us / g.hw_base_us
        g["model_ratio"] = g.model_cond_us / g.model_base_us
        g["error"] = g.model_ratio / g.hw_ratio - 1
        g["share"] = g.hw_base_us / g.hw_base_us.sum()
        return g.sort_values("error", key=lambda s: -s.abs())

    def worst(self, n: int = 3, min_share: float = 0.01) -> pd.DataFrame:
        """The kernels that miss most among those holding at least ``min_share`` of the
        paired baseline time (tiny kernels' timings are jitter)."""
        k = self.kernels()
        return k[k.share >= min_share].head(n)


def warm_cache(trace_sets: Sequence[str | Path], cache_dir: Path | None = None,
               workers: int | None = None, conditions: Sequence[str] | None = None,
               l2: str = DEFAULT_L2, base: str | None = None,
               progress: Callable[[str], None] | None = None) -> int:
    """Run the model runs that :func:`compare` will need (each set's base and every
    condition with a timeline) as jobs of the what-if job store, side by side in
    ``workers`` processes (default: the cores), so that the comparisons then find them
    done. Returns how many jobs there were. ``progress``: shown as they run (a progress
    bar, or the callable's lines where they run in this process)."""
    jobs = []
    for d in trace_sets:
        base_lb = base_label(d, base)
        labels = dict.fromkeys([base_lb, *(c for c in available_conditions(d, base)
                                           if conditions is None or c in conditions)])
        jobs += [model_job(d, condition(lb, base_lb[:-4]).model_gpu(), l2) for lb in labels]
    run_model_jobs(jobs, cache_dir, workers=workers or os.cpu_count() or 1, progress=progress)
    return len(jobs)


def compare(trace_dir: str | Path, conditions: Sequence[str] | None = None,
            cache_dir: Path | None = None,
            progress: Callable[[str], None] | None = None,
            l2: str = DEFAULT_L2, base: str | None = None) -> list[WhatIf]:
    """Every condition (default: all with a timeline) of a trace set, model against
    hardware, over the set's base (:func:`base_label`; ``base`` names its GPU); the
    model's L2 ``cold`` or ``warm`` (see the module docstring)."""
    trace_dir = Path(trace_dir)
    base_lb = base_label(trace_dir, base) if _labels(trace_dir) else BASE
    base_gpu = base_lb[:-4]
    labels = list(conditions) if conditions else available_conditions(trace_dir, base)
    if not labels:
        raise InputError("no what-if timelines (whatif/*.csv[.xz]) beside the trace set",
                         trace_dir)
    conds = [condition(lb, base_gpu) for lb in labels]
    trace = trace_launches(trace_dir)
    base_tl, base_sum = read_timeline(trace_dir, base_lb)
    base_pair = pair_timeline(trace, base_tl)
    base_model = model_records(trace_dir, condition(base_lb, base_gpu).model_gpu(), cache_dir,
                               progress, l2)
    out = []
    for c in conds:
        tl, summ = read_timeline(trace_dir, c.label)
        pair = pair_timeline(trace, tl)
        model = model_records(trace_dir, c.model_gpu(), cache_dir, progress, l2)
        df = trace[["file", "short_name", "category", "grid", "block"]].copy()
        df["match_base"], df["match_cond"] = base_pair.match, pair.match
        m = np.where((base_pair.match == EXACT) & (pair.match == EXACT), EXACT, None)
        lib = base_pair.match.isin([SHAPE, KERNEL]) | pair.match.isin([SHAPE, KERNEL])
        both = (base_pair.tl >= 0) & (pair.tl >= 0)
        m = np.where(lib & both, np.where(pair.match == KERNEL, KERNEL, SHAPE), m)
        df["match"] = m
        df["hw_base_us"] = _take(base_tl.time_us, base_pair.tl)
        df["hw_cond_us"] = _take(tl.time_us, pair.tl)
        df["tl_shape"] = _take(pd.Series([f"{g}/{b}" for g, b in zip(tl.grid, tl.block)]),
                               pair.tl)
        df["tl_kernel"] = _take(tl.short_name, pair.tl)
        df["model_base_us"] = df.file.map(base_model.time_us)
        df["model_cond_us"] = df.file.map(model.time_us)
        df["hw_ratio"] = df.hw_cond_us / df.hw_base_us
        df["model_ratio"] = df.model_cond_us / df.model_base_us
        df["error"] = df.model_ratio / df.hw_ratio - 1
        ex = df[(df.match == EXACT) & df.model_ratio.notna()]
        modelled = df.model_base_us.notna() & df.model_cond_us.notna()
        w = ex.hw_base_us / ex.hw_base_us.sum()
        out.append(WhatIf(
            workload=trace_dir.name, condition=c.label, title=c.title, launches=df,
            hw_ratio=float(ex.hw_cond_us.sum() / ex.hw_base_us.sum()),
            model_ratio=float(ex.model_cond_us.sum() / ex.model_base_us.sum()),
            hw_ratio_step=float(tl.time_us.sum() / base_tl.time_us.sum()),
            model_ratio_step=float(df.model_cond_us[modelled].sum()
                                   / df.model_base_us[modelled].sum()),
            per_kernel_mape=float(np.mean(np.abs(ex.error))),
            weighted_error=float(np.sum(w * np.abs(ex.error))),
            n_trace=len(df), n_exact=len(ex), n_library=int(df.match.isin([SHAPE, KERNEL]).sum()),
            extra={"device": summ.get("device_name"), "hw_timeline_launches": len(tl),
                   "base_timeline_launches": len(base_tl),
                   "hw_step_ms": summ.get("step_ms"), "base_step_ms": base_sum.get("step_ms")},
            l2=l2, base=base_lb))
    return out


def _take(values: pd.Series, idx: pd.Series) -> np.ndarray:
    v = np.asarray(values, dtype=object)
    i = np.asarray(idx)
    res = np.array([v[j] if j >= 0 else None for j in i], dtype=object)
    try:
        return res.astype(float)
    except (TypeError, ValueError):
        return res


# ---------------------------------------------------------------------------------------------
# Panel and rendering


def summary(results: Sequence[WhatIf], worst: int = 3) -> list[dict[str, Any]]:
    """One small record per trace set and condition, for reports and the bench."""
    out = []
    for r in results:
        w = r.worst(worst)
        out.append({"workload": r.workload, "base": r.base, "condition": r.condition,
                    "title": r.title, "l2": r.l2,
                    "hw_ratio": r.hw_ratio, "model_ratio": r.model_ratio,
                    "step_error": r.step_error, "hw_ratio_step": r.hw_ratio_step,
                    "model_ratio_step": r.model_ratio_step,
                    "per_kernel_mape": r.per_kernel_mape, "weighted_error": r.weighted_error,
                    "paired": r.n_exact, "library": r.n_library, "launches": r.n_trace,
                    "worst": [{"kernel": k, "hw_ratio": float(x.hw_ratio),
                               "model_ratio": float(x.model_ratio), "share": float(x.share)}
                              for k, x in w.iterrows()]})
    return out


def worst_text(s: dict[str, Any]) -> str:
    return "; ".join(f"{w['kernel'][:28]} {w['hw_ratio']:.2f}->{w['model_ratio']:.2f}"
                     for w in s["worst"])


def library_notes(results: Sequence[WhatIf]) -> list[str]:
    """One line per condition with launches that ran another shape or kernel than the
    trace: autotuning or a library's choice, reported apart from hardware effects."""
    lines = []
    for r in results:
        if r.n_library:
            lib = r.library
            names = {SHAPE: sorted(set(lib.short_name[lib.match == SHAPE])),
                     KERNEL: sorted({f"{a} -> {b}" for a, b in zip(
                         lib.short_name[lib.match == KERNEL], lib.tl_kernel[lib.match == KERNEL])})}
            lines.append(f"- {r.workload}, {r.title}: {r.n_library} launches ran another "
                         "launch shape or kernel than the trace (autotuning or a library's "
                         "choice, not a hardware effect; left out of the errors): " + "; ".join(
                             f"{'other launch shape' if k == SHAPE else 'other kernel'}: "
                             f"{', '.join(v[:4])}{', ...' if len(v) > 4 else ''}"
                             for k, v in names.items() if v) + ".")
    return lines


def render_markdown(results: Sequence[WhatIf], worst: int = 3) -> str:
    """A table of the step ratios and per-launch errors with the worst kernels, then the
    library choices of each condition."""
    lines = ["| trace set | base | condition | hw step ratio | model | error | hw whole step | "
             "model whole step | per-launch ratio MAPE | time-weighted | paired / library / "
             "launches | worst kernels (hw -> model) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary(results, worst):
        base = s["base"][:-4].upper()
        lines.append(f"| {s['workload']} | {base} | {s['title']} | {s['hw_ratio']:.3f} | "
                     f"{s['model_ratio']:.3f} | {s['step_error']:+.1%} | "
                     f"{s['hw_ratio_step']:.3f} | {s['model_ratio_step']:.3f} | "
                     f"{s['per_kernel_mape']:.1%} | {s['weighted_error']:.1%} | "
                     f"{s['paired']} / {s['library']} / {s['launches']} | {worst_text(s)} |")
    lib = library_notes(results)
    return "\n".join(lines + ([""] + lib if lib else []))


def panel_frame(results: Sequence[WhatIf], worst: int = 3) -> pd.DataFrame:
    """The panel as a table: one row per trace set and condition."""
    rows = []
    for s in summary(results, worst):
        rows.append({"workload": s["workload"], "condition": s["title"],
                     "hw_ratio": s["hw_ratio"], "model_ratio": s["model_ratio"],
                     "step_error": s["step_error"], "per_kernel_mape": s["per_kernel_mape"],
                     "paired": s["paired"], "library": s["library"],
                     "worst kernels (hw -> model)": worst_text(s)})
    return pd.DataFrame(rows)


def panel_section(trace_sets: Sequence[str | Path], cache_dir: Path | None = None,
                  progress: Callable[[str], None] | None = None,
                  conditions: Sequence[str] | None = None,
                  results: Sequence[WhatIf] | None = None):
    """The report panel: how well the model's what-ifs held on hardware, for those of the
    given trace sets that carry what-if timelines (or for ``results`` already computed);
    ``None`` if there are none."""
    results = list(results or [])
    for d in trace_sets:
        if available_conditions(d) and has_base(d):
            results += compare(d, conditions, cache_dir=cache_dir, progress=progress)
    if not results:
        return None
    sec = Section("What-ifs on hardware").text(
        "How far the model's what-ifs held on hardware for these steps: the step timed under "
        "changed hardware (a green context's SMs, the H200's memory) over the H100, against "
        "the model's ratio for the same trace on the matching GPU variant. Ratios are summed "
        "over the launches paired exactly; the MAPE is of the per-launch ratios. The model "
        f"runs each step with a {results[0].l2} L2 (`simfront analyze whatif --l2`).")
    sec.table(panel_frame(results), "model what-if ratio against hardware", "{:.3f}")
    notes = library_notes(results)
    if notes:
        sec.text("\n".join(notes))
    return sec
