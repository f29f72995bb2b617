"""Figures of the studies (matplotlib, Agg backend: no display needed). Each function takes
a result object and returns a Figure; :func:`save` writes it as PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from simfront.analysis.design import AXES, along_axis  # noqa: E402
from simfront.core.categories import CATEGORIES  # noqa: E402

CAT_COLORS = dict(zip(CATEGORIES, plt.get_cmap("tab10").colors))
LIMIT_COLORS = {"tensor": "#d62728", "vector": "#1f77b4", "other": "#7f7f7f"}


def save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- characterization


def category_breakdown(chars: list) -> plt.Figure:
    """Share of step time by operator category, one bar per workload."""
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.8 * len(chars)))
    for i, ch in enumerate(chars):
        left = 0.0
        for cat, row in ch.categories.iterrows():
            ax.barh(i, row["share"], left=left, color=CAT_COLORS.get(cat, "k"),
                    label=cat if i == 0 else None, edgecolor="white")
            if row["share"] > 0.04:
                ax.text(left + row["share"] / 2, i, f"{row['share']:.0%}", ha="center",
                        va="center", fontsize=8, color="white")
            left += row["share"]
    ax.set_yticks(range(len(chars)), [c.workload for c in chars])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of training-step time")
    ax.set_title("Operator breakdown (H100, ncu)")
    handles, labels = ax.get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ch in chars[1:]:
        for cat in ch.categories.index:
            if cat not in seen:
                seen[cat] = plt.Rectangle((0, 0), 1, 1, color=CAT_COLORS.get(cat, "k"))
    ax.legend(seen.values(), seen.keys(), ncol=5, fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.35 if len(chars) < 3 else -0.2))
    return fig


def roofline(ch) -> plt.Figure:
    """Achieved FLOP/s against arithmetic intensity, per launch, under measured ceilings."""
    c = ch.ceilings
    k = ch.kernels[(ch.kernels["flops"] > 0) & (ch.kernels["dram_bytes"] > 0)]
    fig, ax = plt.subplots(figsize=(7, 5))
    ai = np.logspace(-2, 4, 200)
    ax.plot(ai, np.minimum(ai * c.dram_bw, c.tensor_flops_peak), "k-", lw=1.2,
            label=f"tensor {c.tensor_flops_peak / 1e12:.0f} TFLOP/s, DRAM {c.dram_bw / 1e12:.2f} TB/s")
    ax.plot(ai, np.minimum(ai * c.dram_bw, c.fp32_flops_peak), "k--", lw=1.0,
            label=f"FP32 {c.fp32_flops_peak / 1e12:.0f} TFLOP/s")
    sizes = 10 + 400 * k["share"] / max(k["share"].max(), 1e-12)
    for cat, g in k.groupby("category"):
        ax.scatter(g["arithmetic_intensity"], g["achieved_flops"], s=sizes[g.index],
                   color=CAT_COLORS.get(cat, "k"), alpha=0.7, label=cat, edgecolor="k", lw=0.3)
    ax.axvline(3.5, color="grey", lw=0.8, ls=":")
    ax.text(3.5, 2e8, " 3.5 FLOP/B (seed study)", fontsize=7,
            color="grey", rotation=90, va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e8, c.tensor_flops_peak * 2)
    ax.set_xlim(1e-2, 1e4)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(f"Roofline, {ch.workload} (marker area = share of step time)")
    leg = ax.legend(fontsize=7, loc="lower right", markerscale=1.0)
    for h in leg.legend_handles:
        if hasattr(h, "set_sizes"):
            h.set_sizes([30])
    return fig


def pipe_classes(ch) -> plt.Figure:
    """Tensor-pipe against vector-pipe utilization per launch, by class."""
    k = ch.kernels
    fig, ax = plt.subplots(figsize=(6, 5))
    colors = {"tensor-only": "#d62728", "tensor+vector": "#9467bd", "vector-only": "#1f77b4"}
    sizes = 10 + 300 * k["share"] / max(k["share"].max(), 1e-12)
    for cls, g in k.groupby("pipe_class"):
        ax.scatter(g["vector_util"], g["pipe_busy_tensor"], s=sizes[g.index],
                   color=colors.get(cls, "k"), alpha=0.6, edgecolor="k", lw=0.3,
                   label=f"{cls} ({g['share'].sum():.1%} of time)")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("vector pipe busy (max of FMA, ALU), share of active cycles")
    ax.set_ylabel("tensor pipe busy, share of active cycles")
    ax.set_title(f"Pipe classes, {ch.workload}")
    leg = ax.legend(fontsize=8, loc="upper right")
    for h in leg.legend_handles:
        if hasattr(h, "set_sizes"):
            h.set_sizes([30])
    return fig


def dram_util(chars: list) -> plt.Figure:
    """Time-weighted DRAM bandwidth use by category, per workload, with the step's mean."""
    fig, ax = plt.subplots(figsize=(8, 4))
    cats = [c for c in CATEGORIES if any(c in ch.categories.index for ch in chars)]
    w = 0.8 / max(len(chars), 1)
    for i, ch in enumerate(chars):
        vals = [ch.categories["dram_util_tw"].get(c, np.nan) for c in cats]
        ax.bar(np.arange(len(cats)) + i * w, vals, width=w, label=ch.workload)
        ax.axhline(ch.dram_util_time_weighted, color=f"C{i}", ls="--", lw=1,
                   label=f"{ch.workload} step: {ch.dram_util_time_weighted:.1%}")
    ax.axhline(0.575, color="k", ls=":", lw=1, label="seed study mean: 57.5%")
    ax.set_xticks(np.arange(len(cats)) + w * (len(chars) - 1) / 2, cats, rotation=30, fontsize=8)
    ax.set_ylim(0, 1.3)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("DRAM bandwidth used (time-weighted)")
    ax.set_title("DRAM bandwidth utilization by category")
    ax.legend(fontsize=7, ncol=2)
    return fig


# --------------------------------------------------------------------------- balance


def step_speedup(res, bound=None) -> plt.Figure:
    """Step speedup against the tensor:vector ratio, with bootstrap band, knee and crossing."""
    s = res.step
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(s["ratio"], s["speedup"], "o-", color="k", label="step (simulated)")
    band = [res.intervals.get(f"speedup@{r:g}") for r in s["ratio"]]
    if all(b is not None for b in band) and band:
        ax.fill_between(s["ratio"], [b[0] for b in band], [b[1] for b in band], color="grey",
                        alpha=0.25, label="5-95% bootstrap over kernels")
    for cat, row in res.category_speedup.iterrows():
        ax.plot(row.index, row.values, "-", lw=1, alpha=0.8, color=CAT_COLORS.get(cat, None),
                label=cat)
    if bound is not None:
        ax.plot(bound.step["ratio"], bound.step["speedup"], "--", color="purple",
                label="analytic bound (instruction mix)")
    if res.knee is not None:
        ax.axvline(res.knee, color="green", ls="--", lw=1, label=f"knee: ratio {res.knee:.3g}")
    if res.stop_paying is not None:
        ax.axvline(res.stop_paying, color="orange", ls=":", lw=1.2,
                   label=f"<{res.min_gain:.0%}/doubling from ratio {res.stop_paying:.3g}")
    ax.axvline(res.baseline_ratio, color="grey", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.invert_xaxis()
    ax.set_xticks(s["ratio"], [f"{r:g}" for r in s["ratio"]])
    ax.set_xlabel("tensor:vector throughput ratio (right = more vector units)")
    ax.set_ylabel(f"speedup over ratio {res.baseline_ratio:g}")
    ax.set_title("Training-step speedup against the tensor:vector ratio")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def limited_time(res) -> plt.Figure:
    """Left: step time split by what limits each kernel, against the ratio, the crossing
    marked. Right: busy-pipe time (time x busy fraction, summed) of the tensor pipe and
    the busiest vector pipe: how far each side is from limiting."""
    s = res.step
    has_busy = "tensor_busy" in s
    fig, axes = plt.subplots(1, 2 if has_busy else 1, figsize=(11 if has_busy else 7, 4.5))
    ax = axes[0] if has_busy else axes
    x = np.arange(len(s))
    bottom = np.zeros(len(s))
    for col, cls in (("tensor_limited", "tensor"), ("vector_limited", "vector"),
                     ("other_limited", "other")):
        ax.bar(x, s[col], bottom=bottom, color=LIMIT_COLORS[cls],
               label=f"{cls}-limited" + (" (memory, latency, launch...)" if cls == "other" else ""))
        bottom += s[col].to_numpy()
    if res.crossing is not None:
        pos = np.interp(np.log(res.crossing), np.log(s["ratio"].to_numpy()[::-1]), x[::-1])
        ax.axvline(pos, color="k", ls="--", lw=1,
                   label=f"tensor-limited = vector-limited at ratio {res.crossing:.3g}")
    ax.set_xticks(x, [f"{r:g}" for r in s["ratio"]])
    ax.set_xlabel("tensor:vector ratio (right = more vector units)")
    ax.set_ylabel(f"step time by limiter ({res.unit})")
    ax.set_title("What limits the step's kernels at each ratio")
    ax.set_ylim(0, float(bottom.max()) * 1.3)
    ax.legend(fontsize=7, loc="upper right")
    if has_busy:
        ax2 = axes[1]
        for col, cls, mk, lab in (("tensor_busy", "tensor", "s-", "tensor pipe busy time"),
                                  ("vector_busy", "vector", "o-", "busiest vector pipe busy time")):
            if (s[col] > 0).any():
                ax2.plot(s["ratio"], s[col].where(s[col] > 0), mk, color=LIMIT_COLORS[cls],
                         label=lab)
            else:
                ax2.plot([], [], mk, color=LIMIT_COLORS[cls], label=f"{lab}: zero (no {cls} work)")
        ax2.plot(s["ratio"], s["time"], "-", color="k", lw=1, label="step time")
        if res.crossing_busy is not None:
            ax2.axvline(res.crossing_busy, color="k", ls="--", lw=1,
                        label=f"equal at ratio {res.crossing_busy:.3g}")
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log")
        ax2.invert_xaxis()
        ax2.set_xticks(s["ratio"], [f"{r:g}" for r in s["ratio"]])
        ax2.set_xlabel("tensor:vector ratio (right = more vector units)")
        ax2.set_ylabel(f"{res.unit}")
        ax2.set_title("Busy-pipe time of the step")
        ax2.legend(fontsize=7)
    fig.tight_layout()
    return fig


def kernel_heatmap(res, top: int = 25) -> plt.Figure:
    """Per-kernel speedup (rows: the kernels with the most step time) against the ratio,
    each cell labelled with its limiting pipe."""
    k = res.kernels.sort_values("share", ascending=False).head(top)
    t = res.kernel_time.loc[k.index]
    sp = t.rdiv(t[res.baseline_ratio], axis=0)
    lim = res.kernel_limiter.loc[k.index]
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.32 * len(k)))
    im = ax.imshow(sp.to_numpy(), aspect="auto", cmap="viridis",
                   vmin=min(1.0, float(sp.min().min())), vmax=max(1.0, float(sp.max().max())))
    for i in range(sp.shape[0]):
        for j in range(sp.shape[1]):
            ax.text(j, i, f"{sp.iat[i, j]:.2f}\n{lim.iat[i, j]}", ha="center", va="center",
                    fontsize=5.5, color="white" if sp.iat[i, j] < sp.to_numpy().mean() else "k")
    names = [f"{(str(n)[:38])} ({s:.0%})" for n, s in
             zip(k.get("short_name", k.get("kernel_name", pd.Series(k.index, index=k.index))),
                 k["share"])]
    ax.set_yticks(range(len(k)), names, fontsize=6)
    ax.set_xticks(range(len(sp.columns)), [f"{r:g}" for r in sp.columns])
    ax.set_xlabel("tensor:vector ratio")
    ax.set_title("Per-kernel speedup and limiting pipe (share = of base step time)")
    fig.colorbar(im, ax=ax, label="speedup")
    return fig


def bound_curves(bounds: dict, envelopes: dict | None = None) -> plt.Figure:
    """Analytic-bound step speedup against the ratio, one line per workload; the pipe-time
    envelopes dashed where given."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, (name, b) in enumerate(bounds.items()):
        st = b.step
        ax.plot(st["ratio"], st["speedup"], "o-", color=f"C{i}",
                label=f"{name}: FLOP bound (balance ratio {b.balance_ratio:.3g})"
                if b.balance_ratio else f"{name}: FLOP bound")
        if envelopes and name in envelopes:
            e = envelopes[name]
            ax.plot(e["ratio"], e["speedup"], "s--", color=f"C{i}", alpha=0.8,
                    label=f"{name}: pipe-time envelope")
    ax.axvline(16, color="grey", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.invert_xaxis()
    ratios = sorted({float(r) for b in bounds.values() for r in b.step["ratio"]}, reverse=True)
    ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
    ax.set_xlabel("tensor:vector throughput ratio (right = more vector units)")
    ax.set_ylabel("speedup over ratio 16")
    ax.set_title("Bounds from the measured steps")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


# --------------------------------------------------------------------------- correlation


def correlation(corr) -> plt.Figure:
    """Simulated against measured cycles, per kernel, log-log, with y = x."""
    m = corr.matched
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for cat, g in m.groupby("category"):
        ax.scatter(g["hw_cycles"], g["sim_cycles"], color=CAT_COLORS.get(cat, "k"), s=18,
                   alpha=0.8, label=cat, edgecolor="k", lw=0.3)
    lo = float(min(m["hw_cycles"].min(), m["sim_cycles"].min())) * 0.7
    hi = float(max(m["hw_cycles"].max(), m["sim_cycles"].max())) * 1.4
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("hardware cycles (ncu)")
    ax.set_ylabel(f"simulated cycles ({corr.backend})")
    ax.set_title(f"{len(m)} kernels: MAPE {corr.mape:.1%}, Pearson {corr.pearson:.3f}")
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------- design space


def design_axes(res) -> plt.Figure:
    """A design study (``simfront.analysis.design.DesignResult``): the step's speedup over
    the base along each axis, more of the resource to the right; the line through the base
    point bold, the same axis at every other combination of the other axes faint."""
    fig, axs = plt.subplots(1, len(res.axes), figsize=(4.2 * len(res.axes), 3.4),
                            squeeze=False)
    for ax, a in zip(axs[0], res.axes):
        others = [o for o in res.axes if o != a]
        combos = res.points[others].drop_duplicates().to_dict("records") if others else [{}]
        for combo in combos:
            line = along_axis(res.points, a, combo)
            at_base = all(combo[k] == res.base[k] for k in others)
            ax.plot(_positions(line["value"]), line["speedup"], marker="o" if at_base else None,
                    color="#d62728" if at_base else "#7f7f7f", lw=2 if at_base else 0.7,
                    alpha=1 if at_base else 0.5, zorder=3 if at_base else 1)
        ticks = along_axis(res.points, a, res.base)["value"]
        ax.set_xticks(_positions(ticks), [f"{v:g}" if not isinstance(v, str) else v
                                          for v in ticks])
        axis = AXES.get(a)
        if axis is not None and axis.less_is_more:
            ax.set_xscale("log", base=2)
            ax.set_xticks(_positions(ticks), [f"{v:g}" for v in ticks])
            ax.minorticks_off()
            ax.invert_xaxis()
        ax.set_xlabel((axis.label if axis else a) + (" (more vector to the right)"
                                                      if axis and axis.less_is_more else ""))
        ax.axhline(1.0, color="k", lw=0.5)
        ax.grid(alpha=0.3)
    axs[0][0].set_ylabel("step speedup over the base")
    fig.suptitle(f"{res.workload}: what each axis buys (bold: the others at the base)")
    fig.tight_layout()
    return fig


def design_grid(res, x: str, y: str) -> plt.Figure:
    """A design study's step speedup over the base on two axes (each cell one
    configuration, every other axis at the base), more of each resource right and up."""
    sel = res.points
    for k in res.axes:
        if k not in (x, y):
            sel = sel[sel[k] == res.base[k]]
    grid = sel.pivot_table(index=y, columns=x, values="speedup")
    # more of each resource right and up (a lower ratio is more vector units)
    more_last = {a: sorted(v, reverse=bool(AXES.get(a) and AXES[a].less_is_more))
                 for a, v in ((x, grid.columns), (y, grid.index))}
    grid = grid.reindex(index=more_last[y][::-1], columns=more_last[x])
    fig, ax = plt.subplots(figsize=(1.2 + 1.0 * grid.shape[1], 1.0 + 0.6 * grid.shape[0]))
    im = ax.imshow(grid.to_numpy(float), cmap="RdYlGn", vmin=min(grid.min().min(), 0.99),
                   vmax=max(grid.max().max(), 1.01), aspect="auto")
    for (i, j), v in np.ndenumerate(grid.to_numpy(float)):
        ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(grid.shape[1]), [f"{v:g}" for v in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [f"{v:g}" for v in grid.index])
    ax.set_xlabel(AXES[x].label if x in AXES else x)
    ax.set_ylabel(AXES[y].label if y in AXES else y)
    fig.colorbar(im, ax=ax, label="step speedup over the base")
    ax.set_title(f"{res.workload}: {x} x {y}, the others at the base", fontsize=9)
    return fig


def _positions(values: pd.Series) -> list:
    """Where an axis's values sit: the values themselves, or their order where not numbers."""
    vals = list(values)
    return list(range(len(vals))) if any(isinstance(v, str) for v in vals) else vals

