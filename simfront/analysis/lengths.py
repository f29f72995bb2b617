"""A step along sequence length at a fixed token count: PerfMamba's question on our
timelines.

PerfMamba (:data:`PERFMAMBA`) profiled Mamba-1 and Mamba-2 from 64 to 16384 tokens a
sequence and found the SSM component a large share of the block's runtime; it pruned
low-activity SSM states for a 1.14x speedup and 11.50% less memory. Here each point is one
timeline of a workload's training step (``simfront timeline``, docs/capture.md) at one
sequence length with ``batch x seqlen`` held fixed: its summed kernel time, the wall step
(the untimed iteration where it was measured), the GPU-busy share of the wall step, the SSM
kernels' share (:mod:`simfront.core.categories`, category ``ssm``) of the kernel time
and of the wall step, and the peak GPU memory of the timed iteration (timelines of format 2;
older ones have none).

A point's sequence length and batch come from the workload config the timeline records
(``extra.config``), else from the manifest of the trace set it sits in
(``SET/whatif/<gpu>-<condition>.json``), else it is an error naming the file.

PerfMamba's pruning removes SSM states; the what-if on our side is the same step at a
smaller ``d_state`` (``--set d_state=N``): where points of one workload and length differ in
``d_state``, :func:`pruning` sets each against the largest, in kernel time, wall step and
peak memory, beside PerfMamba's 1.14x and -11.50%. A smaller state is not the same
model as a pruned one (PerfMamba keeps the active states of a trained model and adds a
bridging layer); the comparison is of the cost, not of the accuracy.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from simfront.core.errors import InputError
from simfront.core.timeline import gpu_prefix, read_timeline_json
from simfront.core.ncu import read_ncu_csv
from simfront.analysis.whatif import base_label


@dataclass(frozen=True)
class Published:
    """Figures a paper states, with where it states them."""

    citation: str
    url: str
    lengths: tuple[int, int]            # the sequence lengths it profiled, first and last
    pruning_speedup: float              # its state pruning's throughput gain
    pruning_memory_change: float        # and memory change (negative: less)
    findings: tuple[str, ...]


#: From the paper's abstract (arXiv:2511.22849v1). It gives the SSM component's share of
#: runtime per length in its figures, not as numbers in its text; none are copied here.
PERFMAMBA = Published(
    citation="A. A. Asif, M. Kashaniyan, S. Yu, J. P. Muñoz, A. Jannesari, \"PerfMamba: "
             "Performance Analysis and Pruning of Selective State Space Models\", "
             "arXiv:2511.22849, 2025",
    url="https://arxiv.org/abs/2511.22849",
    lengths=(64, 16384),
    pruning_speedup=1.14,
    pruning_memory_change=-0.1150,
    findings=(
        "Mamba-1 and Mamba-2 profiled at sequence lengths from 64 to 16384 tokens",
        "the SSM component demands a significant portion of computational resources "
        "compared to other components in the Mamba block",
        "pruning low-activity SSM states: performance improvements across varying "
        "sequence lengths, a 1.14x speedup and 11.50% less memory",
        "(as issue 29 cites it; not in the abstract) the SSM component's share of runtime "
        "grows with sequence length",
    ))


@dataclass(frozen=True)
class LengthPoint:
    """One timeline of a step at one sequence length."""

    source: str
    workload: str
    gpu: str
    condition: str
    seqlen: int
    batch: int | None
    launches: int
    kernel_ms: float
    busy_ms: float
    wall_ms: float | None             # the untimed iteration's where measured
    ssm_ms: float
    peak_mem_bytes: int | None
    d_state: int | None = None

    @property
    def tokens(self) -> int | None:
        return None if self.batch is None else self.batch * self.seqlen

    @property
    def busy_share(self) -> float | None:
        return min(1.0, self.busy_ms / self.wall_ms) if self.wall_ms else None

    @property
    def ssm_share_kernel(self) -> float:
        return self.ssm_ms / self.kernel_ms if self.kernel_ms else float("nan")

    @property
    def ssm_share_step(self) -> float | None:
        return self.ssm_ms / self.wall_ms if self.wall_ms else None


def _timeline_files(path: Path, condition: str) -> list[Path]:
    """The timeline summaries (JSON) a command-line input names: a JSON file, an output
    folder of ``simfront timeline`` (``timeline-<condition>.json``) or a trace set (its
    base GPU's ``whatif/<gpu>-<condition>.json``)."""
    if path.is_file():
        return [path]
    direct = path / f"timeline-{condition}.json"
    if direct.is_file():
        return [direct]
    if (path / "whatif").is_dir():

        gpu = base_label(path)[:-4]
        js = path / "whatif" / f"{gpu}-{condition}.json"
        if js.is_file():
            return [js]
        raise InputError(f"no timeline {gpu}-{condition}.json", path / "whatif")
    raise InputError(f"no timeline of condition '{condition}' (timeline-{condition}.json, "
                     "or a trace set's whatif/)", path)


def _csv_beside(js: Path) -> Path:
    stem = js.name[:-len(".json")]
    for name in (f"{stem}.csv.xz", f"{stem}.csv"):
        if (js.parent / name).is_file():
            return js.parent / name
    raise InputError(f"no kernel timeline {stem}.csv[.xz] beside the summary", js)


def _config(js: Path, summary) -> dict[str, Any]:
    cfg = summary.extra.get("config")
    if isinstance(cfg, dict):
        return cfg
    man = js.parent.parent / "manifest.json"
    if js.parent.name == "whatif" and man.is_file():
        try:
            cfg = json.loads(man.read_text()).get("workload", {}).get("config")
        except json.JSONDecodeError as exc:
            raise InputError(f"unreadable manifest: {exc}", man) from None
        if isinstance(cfg, dict):
            return cfg
    return {}


def read_point(js: str | Path) -> LengthPoint:
    """The length point of one timeline summary and the kernel timeline beside it."""

    js = Path(js)
    s = read_timeline_json(js)
    cfg = _config(js, s)
    if "seqlen" not in cfg:
        raise InputError("no sequence length: the timeline records no workload config "
                         "(extra.config) and sits in no trace set whose manifest has one",
                         js, field="extra.config.seqlen")
    df = read_ncu_csv(_csv_beside(js))
    if len(df) != s.launches:
        raise InputError(f"the summary counts {s.launches} launches, its timeline "
                         f"{len(df)}", js, field="launches")
    return LengthPoint(
        source=str(js), workload=str(s.extra.get("workload") or js.parent.parent.name),
        gpu=gpu_prefix(s.device_name), condition=s.label, seqlen=int(cfg["seqlen"]),
        batch=int(cfg["batch"]) if "batch" in cfg else None, launches=s.launches,
        kernel_ms=float(df.time_us.sum() / 1e3), busy_ms=s.busy_ms,
        wall_ms=s.wall_step_ms, ssm_ms=float(df.time_us[df.category == "ssm"].sum() / 1e3),
        peak_mem_bytes=s.peak_mem_bytes,
        d_state=int(cfg["d_state"]) if "d_state" in cfg else None)


def read_points(inputs: Sequence[str | Path], condition: str = "all") -> list[LengthPoint]:
    """Every input's point, by workload, state size (largest first), sequence length."""
    points = [read_point(js) for p in inputs for js in _timeline_files(Path(p), condition)]
    return sorted(points, key=lambda p: (p.workload, -(p.d_state or 0), p.seqlen))


def table(points: Sequence[LengthPoint]) -> pd.DataFrame:
    """One row per point: the columns of the length study."""
    rows = []
    for p in points:
        rows.append({
            "workload": p.workload, "gpu": p.gpu, "d_state": p.d_state, "seqlen": p.seqlen,
            "batch": p.batch,
            "tokens": p.tokens, "launches": p.launches, "kernel_ms": p.kernel_ms,
            "wall_ms": p.wall_ms, "busy_share": p.busy_share, "ssm_ms": p.ssm_ms,
            "ssm_share_kernel": p.ssm_share_kernel, "ssm_share_step": p.ssm_share_step,
            "peak_mem_gib": None if p.peak_mem_bytes is None else p.peak_mem_bytes / 2**30})
    return pd.DataFrame(rows)


def notes(points: Sequence[LengthPoint]) -> list[str]:
    """What the reader must know of the points: token counts that differ within a workload,
    more than one GPU, memory not recorded."""
    out = []
    by: dict[str, set] = {}
    for p in points:
        by.setdefault(p.workload, set()).add(p.tokens)
    for wl, toks in by.items():
        if len(toks) > 1:
            out.append(f"{wl}: the token count is not fixed ({sorted(t or 0 for t in toks)}): "
                       "the points differ in work as well as in length")
    gpus = sorted({p.gpu for p in points})
    if len(gpus) > 1:
        out.append(f"points of several GPUs: {', '.join(gpus)}")
    if any(p.peak_mem_bytes is None for p in points):
        out.append("peak memory not recorded in timelines of format 1")
    return out


def pruning(points: Sequence[LengthPoint]) -> pd.DataFrame:
    """Each point whose workload and length have a point of a larger ``d_state``, against
    the largest: kernel and wall speedups (base over point) and the peak memory's change."""
    rows = []
    groups: dict[tuple[str, str, int], list[LengthPoint]] = {}
    for p in points:
        if p.d_state is not None:
            groups.setdefault((p.workload, p.gpu, p.seqlen), []).append(p)
    for (wl, gpu, seqlen), ps in groups.items():
        base = max(ps, key=lambda p: p.d_state)
        for p in sorted(ps, key=lambda p: -p.d_state):
            if p.d_state == base.d_state:
                continue
            mem = (p.peak_mem_bytes / base.peak_mem_bytes - 1
                   if p.peak_mem_bytes and base.peak_mem_bytes else None)
            rows.append({"workload": wl, "gpu": gpu, "seqlen": seqlen, "d_state": p.d_state,
                         "base_d_state": base.d_state,
                         "kernel_speedup": base.kernel_ms / p.kernel_ms,
                         "wall_speedup": (base.wall_ms / p.wall_ms
                                          if base.wall_ms and p.wall_ms else None),
                         "memory_change": mem})
    return pd.DataFrame(rows, columns=["workload", "gpu", "seqlen", "d_state", "base_d_state",
                                       "kernel_speedup", "wall_speedup", "memory_change"])


def render_markdown(points: Sequence[LengthPoint]) -> str:
    t = table(points)
    lines = ["| workload | GPU | d_state | length | batch | kernel ms | wall step ms | "
             "GPU-busy share | SSM share of kernel time | SSM share of wall step | "
             "peak memory GiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def f(v, fmt):
        return "n/a" if v is None or v != v else format(v, fmt)

    for r in t.itertuples():
        lines.append(f"| {r.workload} | {r.gpu.upper()} | {f(r.d_state, '.0f')} | "
                     f"{r.seqlen} | {f(r.batch, '.0f')} | "
                     f"{r.kernel_ms:.3f} | {f(r.wall_ms, '.3f')} | {f(r.busy_share, '.1%')} | "
                     f"{r.ssm_share_kernel:.1%} | {f(r.ssm_share_step, '.1%')} | "
                     f"{f(r.peak_mem_gib, '.2f')} |")
    pr = pruning(points)
    if len(pr):
        lines += ["", "Smaller states (the pruning what-if), each against the largest "
                  f"d_state of its workload and length; PerfMamba's pruning: "
                  f"{PERFMAMBA.pruning_speedup:.2f}x, {PERFMAMBA.pruning_memory_change:+.2%} "
                  "memory.", "",
                  "| workload | length | d_state | against | kernel speedup | wall speedup | "
                  "memory change |", "|---|---|---|---|---|---|---|"]
        for r in pr.itertuples():
            lines.append(f"| {r.workload} | {r.seqlen} | {r.d_state} | {r.base_d_state} | "
                         f"{r.kernel_speedup:.3f}x | {f(r.wall_speedup, '.3f')}x | "
                         f"{f(r.memory_change, '+.1%')} |")
    lines += ["", f"Beside it, PerfMamba ({PERFMAMBA.citation}; {PERFMAMBA.url}):"]
    lines += [f"- {x}" for x in PERFMAMBA.findings]
    lines += [f"- {x}" for x in notes(points)]
    return "\n".join(lines)


def plot(points: Sequence[LengthPoint]):
    """Four panels against sequence length (log 2): kernel time and wall step, the SSM
    share, the GPU-busy share, peak memory; PerfMamba's figures in a note."""
    from simfront.analysis.plots import plt

    t = table(points)
    several = t.groupby("workload").d_state.nunique(dropna=False).max() > 1
    t["series"] = [f"{w} d_state {d:.0f}" if several and d == d else w
                   for w, d in zip(t.workload, t.d_state)]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    (a_time, a_ssm), (a_busy, a_mem) = axes
    for wl, g in t.groupby("series", sort=False):
        line = a_time.plot(g.seqlen, g.kernel_ms, "o-", label=f"{wl} kernel time")[0]
        if g.wall_ms.notna().any():
            a_time.plot(g.seqlen, g.wall_ms, "s--", color=line.get_color(),
                        label=f"{wl} wall step")
        a_ssm.plot(g.seqlen, g.ssm_share_kernel, "o-", color=line.get_color(),
                   label=f"{wl} of kernel time")
        if g.ssm_share_step.notna().any():
            a_ssm.plot(g.seqlen, g.ssm_share_step, "s--", color=line.get_color(),
                       label=f"{wl} of wall step")
        if g.busy_share.notna().any():
            a_busy.plot(g.seqlen, g.busy_share, "o-", color=line.get_color(), label=wl)
        mem = g.peak_mem_gib.astype(float)
        if mem.notna().any():
            a_mem.plot(g.seqlen, mem, "o-", color=line.get_color(), label=wl)
    if t.peak_mem_gib.isna().all():
        a_mem.text(0.5, 0.5, "peak memory not recorded\n(timelines of format 1)",
                   ha="center", va="center", transform=a_mem.transAxes, color="0.4")
    a_time.set_ylabel("ms per step")
    a_time.set_ylim(bottom=0)
    a_mem.set_ylim(bottom=0)
    a_ssm.set_ylabel("SSM kernels' share")
    a_busy.set_ylabel("GPU-busy share of wall step")
    a_mem.set_ylabel("peak GPU memory, GiB")
    for ax in (a_ssm, a_busy):
        ax.set_ylim(0, 1)
    for ax in axes.flat:
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("sequence length (tokens a sequence, tokens a step fixed)")
    lo, hi = PERFMAMBA.lengths
    a_ssm.axvspan(lo, hi, color="0.9", zorder=0)
    fig.suptitle("The step along sequence length")
    fig.text(0.01, -0.02, f"Shaded: PerfMamba's lengths, {lo}-{hi}. PerfMamba: the SSM "
             f"component a significant portion of the Mamba block; state pruning "
             f"{PERFMAMBA.pruning_speedup:.2f}x speedup, {PERFMAMBA.pruning_memory_change:+.1%}"
             f" memory (arXiv:2511.22849).", fontsize=7)
    fig.tight_layout()
    return fig


def to_json(points: Sequence[LengthPoint]) -> dict[str, Any]:
    pr = pruning(points).astype(object)
    return {"points": [{**asdict(p), "tokens": p.tokens, "busy_share": p.busy_share,
                        "ssm_share_kernel": p.ssm_share_kernel,
                        "ssm_share_step": p.ssm_share_step} for p in points],
            "pruning": pr.where(pr.notna(), None).to_dict("records"),
            "perfmamba": asdict(PERFMAMBA), "notes": notes(points)}
