"""Hardware characterization of a training step from ncu records (the seed study's views).

Input: the per-launch frame of :func:`simfront.core.ncu.read_ncu_csv`. Output: a
:class:`Characterization` of plain DataFrames and numbers that plots and reports render:

- operator breakdown by category (share of step time, launches, DRAM bytes);
- roofline: each kernel's arithmetic intensity (FLOP per DRAM byte) and achieved FLOP/s
  against ceilings *measured from the same records* (:func:`measure_ceilings`);
- pipe classes: tensor-only / vector-only / tensor+vector, from pipe utilizations;
- time-weighted DRAM bandwidth utilization, per step and per category;
- the SSM kernel table;
- the comparison with the seed study's published figures (:data:`PUBLISHED`).

All shares and means over kernels are weighted by kernel time unless named otherwise: a
training step's time is what the architect wants to move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simfront.core.categories import CATEGORIES
from simfront.core.errors import InputError

#: A pipe counts as used by a kernel when it is busy at least this share of active cycles.
#: GEMMs run their ALU pipe 2-4.4% for addressing and epilogues and are tensor-only; the
#: SSD kernels of Mamba2 run tensor and ALU pipes at 10-40% each and are mixed.
PIPE_USE_THRESHOLD = 0.05

#: The vector pipes ncu reports utilization for (simfront pipe names).
VECTOR_PIPES = ("fp32", "int")

PIPE_CLASSES = ("tensor-only", "tensor+vector", "vector-only")

#: The seed study's figures, as stated in issue 6, and how we read each.
PUBLISHED: dict[str, tuple[float, str]] = {
    "mean_dram_util": (0.575, "mean DRAM bandwidth use over the step"),
    "mixed_vector_bound_lo": (0.89, "tensor+vector kernels that are vector-bound (low end)"),
    "mixed_vector_bound_hi": (0.92, "tensor+vector kernels that are vector-bound (high end)"),
    "gemm_share_max": (0.60, "GEMM share of step time (up to)"),
    "ssm_share_max": (0.20, "SSM share of step time (up to)"),
    "intensity_max": (3.5, "arithmetic intensity of the non-GEMM kernels (below, FLOP/byte)"),
}

REQUIRED = ("duration_s", "kernel_name", "category", "dram_util")


@dataclass(frozen=True)
class Ceilings:
    """Roofline ceilings of the measured GPU (base units)."""

    dram_bw: float              # byte/s: the peak ncu's dram__throughput percentages refer to
    dram_bw_achieved: float     # byte/s: the best any kernel reached
    clock_hz: float             # time-weighted median SM clock while the step ran
    sm_count: int
    tensor_flop_per_sm_cycle: float   # measured: FLOP per tensor-pipe-active SM cycle
    fp32_flop_per_sm_cycle: float     # 128 FFMA lanes per SM x 2 (H100 datasheet)
    tensor_flops_peak: float    # FLOP/s at the measured clock
    fp32_flops_peak: float      # FLOP/s at the measured clock
    tensor_flops_achieved: float  # FLOP/s: the best GEMM
    notes: tuple[str, ...] = ()

    @property
    def ridge_tensor(self) -> float:
        return self.tensor_flops_peak / self.dram_bw

    @property
    def ridge_fp32(self) -> float:
        return self.fp32_flops_peak / self.dram_bw


@dataclass
class Characterization:
    workload: str
    step_time_s: float
    launches: int
    dram_util_time_weighted: float
    dram_util_mean_unweighted: float
    categories: pd.DataFrame     # per category: time_s, share, launches, dram_bytes, dram_util_tw
    kernels: pd.DataFrame        # per launch: the columns the views need
    ssm_table: pd.DataFrame      # per SSM kernel name: launches, time, share, pipes, AI, DRAM
    pipe_classes: pd.DataFrame   # per class: launches, time share, pipe utilizations
    ceilings: Ceilings
    comparison: pd.DataFrame     # ours vs published, with the reason they differ
    extra: dict = field(default_factory=dict)
    #: the workload's config (a trace set manifest's ``workload.config``) when known
    workload_config: dict | None = None


def _check(df: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"ncu records lack column(s) {', '.join(missing)}; load them with "
                         f"simfront.core.ncu.read_ncu_csv", df.attrs.get("source"))


def measure_ceilings(df: pd.DataFrame, sm_count: int | None = None) -> Ceilings:
    """Roofline ceilings from the records themselves.

    DRAM: ncu states each kernel's bytes/s as a share of a peak, so peak = bytes/s / share
    (median over kernels that use at least 20% of it). Tensor: FLOP per tensor-active SM
    cycle of the GEMMs (ncu counts tensor FLOPs and tensor-pipe active cycles), times SMs and
    the clock the step actually ran at (ncu ran with --clock-control none). FP32 has no such
    clean counter (the FMA pipe also runs integer multiply-adds), so its per-cycle rate is the
    datasheet's 128 lanes x 2 FLOP, at the measured clock.
    """
    notes = []
    t = df["duration_s"]
    if sm_count is None:
        sm_count = int(df["launch__sm_count"].iloc[0]) if "launch__sm_count" in df else 132
    busy = df[(df.get("dram_util", 0) >= 0.2) & (df.get("dram_bw", 0) > 0)]
    if len(busy):
        dram_bw = float(np.median(busy["dram_bw"] / busy["dram_util"]))
    else:
        dram_bw = 3.35e12
        notes.append("no kernel used >=20% of DRAM bandwidth: H100 SXM datasheet 3.35 TB/s used")
    achieved_bw = float(df["dram_bw"].max()) if "dram_bw" in df else float("nan")
    long = df[t > 10e-6]
    if "clock_hz" in df and len(long):
        order = np.argsort(long["clock_hz"].to_numpy())
        cw = np.cumsum(long["duration_s"].to_numpy()[order])
        clock = float(long["clock_hz"].to_numpy()[order][np.searchsorted(cw, cw[-1] / 2)])
    else:
        clock = 1.755e9
        notes.append("no clock in records: 1.755 GHz assumed")
    per_cycle = 4096.0
    achieved_tensor = float("nan")
    if {"tensor_flops", "pipe_busy_tensor", "sm__cycles_active.avg"} <= set(df.columns):
        g = df[(df["tensor_flops"] > 0) & (df["pipe_busy_tensor"] > 0.5)]
        if len(g):
            rate = g["tensor_flops"] / (g["pipe_busy_tensor"] * g["sm__cycles_active.avg"] * sm_count)
            per_cycle = float(np.median(rate))
            achieved_tensor = float((g["tensor_flops"] / g["duration_s"]).max())
        else:
            notes.append("no tensor-bound kernel: 4096 FLOP/SM/cycle (H100 dense BF16) assumed")
    fp32_per_cycle = 256.0
    return Ceilings(dram_bw=dram_bw, dram_bw_achieved=achieved_bw, clock_hz=clock,
                    sm_count=sm_count, tensor_flop_per_sm_cycle=per_cycle,
                    fp32_flop_per_sm_cycle=fp32_per_cycle,
                    tensor_flops_peak=per_cycle * sm_count * clock,
                    fp32_flops_peak=fp32_per_cycle * sm_count * clock,
                    tensor_flops_achieved=achieved_tensor, notes=tuple(notes))


def pipe_class(df: pd.DataFrame, threshold: float = PIPE_USE_THRESHOLD) -> pd.Series:
    """tensor-only / tensor+vector / vector-only per launch, from pipe utilizations.

    A kernel that uses neither pipe to the threshold (memory- or latency-bound) has no
    tensor work to speak of and counts as vector-only: its instructions all go to vector
    pipes."""
    tensor = df["pipe_busy_tensor"].fillna(0) >= threshold
    vector = vector_util(df) >= threshold
    out = np.where(tensor & vector, "tensor+vector", np.where(tensor, "tensor-only", "vector-only"))
    return pd.Series(out, index=df.index, name="pipe_class")


def vector_util(df: pd.DataFrame) -> pd.Series:
    cols = [f"pipe_busy_{p}" for p in VECTOR_PIPES if f"pipe_busy_{p}" in df]
    return df[cols].max(axis=1).fillna(0) if cols else pd.Series(0.0, index=df.index)


def characterize(df: pd.DataFrame, workload: str | None = None,
                 workload_config: dict | None = None) -> Characterization:
    """All views of one training step's ncu records. ``workload_config`` (a manifest's
    ``workload.config``: n_layer, d_model, vocab_size, seqlen, batch...) lets the comparison
    with the seed study name the model; without it the texts say only what the records show."""
    _check(df)
    if "workload" in df and df["workload"].nunique() > 1:
        raise InputError("records of several workloads: characterize each step on its own "
                         f"({', '.join(sorted(df['workload'].unique()))})")
    workload = workload or (str(df["workload"].iloc[0]) if "workload" in df else
                            str(df.attrs.get("source", "step")))
    t = df["duration_s"].astype(float)
    total = float(t.sum())
    k = pd.DataFrame({
        "launch": df.get("launch", pd.Series(range(len(df)), index=df.index)),
        "kernel_name": df["kernel_name"], "short_name": df.get("short_name", df["kernel_name"]),
        "category": df["category"], "duration_s": t, "share": t / total,
        "dram_util": df["dram_util"], "dram_bytes": df.get("dram_bytes", np.nan),
        "flops": df.get("flops", np.nan), "tensor_flops": df.get("tensor_flops", np.nan),
        "vector_flops": df.get("vector_flops", np.nan),
        "arithmetic_intensity": df.get("arithmetic_intensity", np.nan),
        "pipe_busy_tensor": df.get("pipe_busy_tensor", np.nan),
        "pipe_busy_fp32": df.get("pipe_busy_fp32", np.nan),
        "pipe_busy_int": df.get("pipe_busy_int", np.nan),
    })
    k["achieved_flops"] = k["flops"] / t
    k["vector_util"] = vector_util(df)
    k["pipe_class"] = pipe_class(df)
    k["limiting_pipe"] = np.where(k["pipe_busy_tensor"].fillna(0) >= k["vector_util"], "tensor",
                                  "vector")

    cat = k.groupby("category").agg(time_s=("duration_s", "sum"), launches=("duration_s", "size"),
                                    dram_bytes=("dram_bytes", "sum"))
    cat["share"] = cat["time_s"] / total
    cat["dram_util_tw"] = k.groupby("category").apply(
        lambda g: np.average(g["dram_util"], weights=g["duration_s"]), include_groups=False)
    cat = cat.reindex([c for c in CATEGORIES if c in cat.index])

    ssm = k[k["category"] == "ssm"]
    ssm_table = ssm.groupby("short_name").agg(
        launches=("duration_s", "size"), time_us=("duration_s", lambda s: s.sum() * 1e6),
        share=("share", "sum"), tensor_util=("pipe_busy_tensor", "mean"),
        fp32_util=("pipe_busy_fp32", "mean"), int_util=("pipe_busy_int", "mean"),
        dram_util=("dram_util", "mean"), intensity=("arithmetic_intensity", "mean"),
        pipe_class=("pipe_class", "first")).sort_values("time_us", ascending=False)

    pc = k.groupby("pipe_class").agg(launches=("duration_s", "size"), time_s=("duration_s", "sum"),
                                     tensor_util_max=("pipe_busy_tensor", "max"),
                                     vector_util_max=("vector_util", "max"))
    pc["share"] = pc["time_s"] / total
    for col, src in (("tensor_util_tw", "pipe_busy_tensor"), ("vector_util_tw", "vector_util")):
        pc[col] = k.groupby("pipe_class").apply(
            lambda g, s=src: np.average(g[s].fillna(0), weights=g["duration_s"]), include_groups=False)
    vb = k[k["pipe_class"] == "tensor+vector"]
    pc["vector_bound_share"] = np.nan
    if len(vb):
        pc.loc["tensor+vector", "vector_bound_share"] = float(
            vb.loc[vb["limiting_pipe"] == "vector", "duration_s"].sum() / vb["duration_s"].sum())
    pc = pc.reindex([c for c in PIPE_CLASSES if c in pc.index])

    tw = float(np.average(k["dram_util"], weights=t))
    ceilings = measure_ceilings(df)
    ch = Characterization(workload=workload, step_time_s=total, launches=len(df),
                          dram_util_time_weighted=tw,
                          dram_util_mean_unweighted=float(k["dram_util"].mean()),
                          categories=cat, kernels=k, ssm_table=ssm_table, pipe_classes=pc,
                          ceilings=ceilings, comparison=pd.DataFrame(),
                          workload_config=workload_config)
    ch.comparison = compare_published(ch)
    return ch


def describe_model(config: dict | None) -> str | None:
    """'a 2-layer, d_model-768 Mamba2 model with a 50k vocabulary' from a workload config;
    None when the config does not say."""
    if not config or not all(k in config for k in ("n_layer", "d_model")):
        return None
    layer = f" {config['layer']}" if config.get("layer") else ""
    text = f"a {config['n_layer']}-layer, d_model-{config['d_model']}{layer} model"
    vocab = config.get("vocab_size")
    if vocab:
        text += (f" with a {vocab / 1000:.0f}k vocabulary" if vocab >= 1000 else
                 f" with a vocabulary of {vocab}")
    return text


def _shape(config: dict | None) -> str | None:
    """'sequence 2048, batch 4 (8,192 tokens)' from a workload config, if it says."""
    if not config or not all(k in config for k in ("seqlen", "batch")):
        return None
    return (f"sequence {config['seqlen']}, batch {config['batch']} "
            f"({config['seqlen'] * config['batch']:,} tokens)")


def compare_published(ch: Characterization) -> pd.DataFrame:
    """Our figures beside the seed study's, with why they differ. Each reason is computed from
    this step's own records (and the workload config when given), or worded as a caution
    that holds for any step."""
    k = ch.kernels
    share = ch.categories["share"]
    cat_tw = ch.categories["dram_util_tw"]
    model = describe_model(ch.workload_config)
    shape = _shape(ch.workload_config)
    mixed = k[k["pipe_class"] == "tensor+vector"]
    vb = (float(mixed.loc[mixed["limiting_pipe"] == "vector", "duration_s"].sum()
                / mixed["duration_s"].sum()) if len(mixed) else float("nan"))
    non_gemm = k[(k["category"] != "gemm") & (k["dram_bytes"] > 0)]
    ai_tw = (float(np.average(non_gemm["arithmetic_intensity"].fillna(0),
                              weights=non_gemm["duration_s"])) if len(non_gemm) else float("nan"))
    ai_below = (float(non_gemm.loc[non_gemm["arithmetic_intensity"] < 3.5, "duration_s"].sum()
                      / non_gemm["duration_s"].sum()) if len(non_gemm) else float("nan"))
    high_ai = non_gemm[non_gemm["arithmetic_intensity"] >= 3.5]
    high_names = ", ".join(high_ai.groupby("short_name")["duration_s"].sum()
                           .sort_values(ascending=False).index[:4])
    top = share.sort_values(ascending=False)
    top_txt = ", ".join(f"{c} {v:.0%} (DRAM {cat_tw[c]:.0%})" for c, v in top.iloc[:3].items())
    short = (k["duration_s"] < 10e-6).sum()
    mixed_cats = ", ".join(sorted(mixed["category"].unique())) if len(mixed) else "none"
    ssm_share = float(share.get("ssm", 0.0))
    gemm_share = float(share.get("gemm", 0.0))
    loss_opt = float(share.get("loss", 0.0) + share.get("optimizer", 0.0))
    who = model or "this step"
    lead = top.index[0] if len(top) else "none"
    lead_txt = (f"{who} spends more of it in {lead} than in the SSM mixers ({ssm_share:.0%})"
                if lead != "ssm" else f"the SSM mixers lead in {who}")

    ssm = k[k["category"] == "ssm"]
    if "ssm" in mixed_cats:
        ms = mixed[mixed["category"] == "ssm"]
        ssm_vb = float(ms.loc[ms["limiting_pipe"] == "vector", "duration_s"].sum()
                       / ms["duration_s"].sum())
        mixed_why = (f"the SSM kernels among them are vector-bound for {ssm_vb:.0%} of their "
                     "time (the seed study found its SSD kernels vector-bound)")
    else:
        ssm_pipes = (", ".join(sorted(ssm["pipe_class"].dropna().unique())) if len(ssm)
                     else "")
        mixed_why = ((f"no SSM kernel uses tensor cores in this step (its SSM kernels are "
                      f"{ssm_pipes})" if len(ssm) else "this step has no SSM kernel")
                     + (f"; the mixed launches are {1 - vb:.0%} tensor-bound by time"
                        if len(mixed) else ""))
    gemm_why = (f"the published figure is a maximum ('up to'); here GEMMs take {gemm_share:.0%} "
                f"and the loss and optimizer {loss_opt:.0%} of the step"
                + (f" ({model})" if model else "")
                + ". GEMM work grows with d_model squared, the rest with d_model: shares "
                  "move with the model's size")
    ssm_why = (("within the published range (up to 20%)" if ssm_share <= 0.20 else
                "above the published maximum of 20%")
               + (f"; {shape}" if shape else "")
               + ". The scan's share grows with sequence length and state size and shrinks "
                 "next to a large vocabulary's loss: compare steps of the same shape")
    rows = [
        ("DRAM bandwidth use, time-weighted", ch.dram_util_time_weighted, 0.575,
         f"{(ch.dram_util_time_weighted - 0.575) * 100:+.1f} percentage points. The step's time "
         f"goes to {top_txt}: {lead_txt}"),
        ("DRAM bandwidth use, unweighted mean over launches", ch.dram_util_mean_unweighted, 0.575,
         f"{short} of {len(k)} launches last under 10 us and never reach steady bandwidth; "
         "if the published figure were a plain mean over launches ours would be far below it; "
         "the time-weighted figure is the meaningful one"),
        ("tensor+vector kernels that are vector-bound (time share)", vb, 0.905,
         f"mixed kernels here are {mixed_cats} ({len(mixed)} launches, "
         f"{mixed['duration_s'].sum() / ch.step_time_s:.1%} of the step); " + mixed_why),
        ("GEMM share of step time", gemm_share, 0.60, gemm_why),
        ("SSM share of step time", ssm_share, 0.20, ssm_why),
        ("non-GEMM arithmetic intensity, time-weighted (FLOP/byte)", ai_tw, 3.5,
         "below 3.5: outside the GEMMs the step is memory-bound" if ai_tw < 3.5 else
         f"above 3.5, pulled up by {high_names}"),
        ("non-GEMM time with intensity < 3.5 FLOP/byte", ai_below, 1.0,
         f"the exceptions are {high_names}" if len(high_ai) else "no exception"),
    ]
    return pd.DataFrame(rows, columns=["figure", "ours", "published", "why"])
