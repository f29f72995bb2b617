"""Device-side capture experiment: traces and ncu profiles of the workload steps through
simfront's capture driver, with timings, sizes and launch-by-launch matches, written to
$OUT/results.jsonl (one JSON object per job) for bench/RESULTS.md.

    python3 bench/device/capture_suite.py JOB [JOB ...]   (jobs below; --budget SECONDS)

Runs on the H100 machine from the repository root with .carry/ holding the built tracer.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simfront.capture.driver import Step, match_profile, profile, trace  # noqa: E402
from simfront.capture.tracers import Sampling, Tracer, Window  # noqa: E402

OUT = Path(os.environ.get("OUT") or Path(tempfile.gettempdir()) / "out")
WORK = Path(os.environ.get("SUITE_WORK") or Path(tempfile.gettempdir()) / "suite")
TRACER = Tracer("simfront", ROOT / ".carry/bin/simfront_tracer.so")
ACCELSIM = Tracer("accelsim", ROOT / ".carry/accelsim/tracer_tool.so")
T0 = time.time()


def emit(rec: dict) -> None:
    rec["t_suite_s"] = round(time.time() - T0, 1)
    with open(OUT / "results.jsonl", "a") as f:
        f.write(json.dumps(rec, default=str) + "\n")
    print("RESULT", json.dumps(rec, default=str)[:1500], flush=True)


def job_trace(label: str, step: Step, window="iteration", sample="none", baseline=True,
              tracer=TRACER, timeout=230, ref=None, dedup=False) -> None:
    if ref is None and os.environ.get("REF_NCU_DIR"):
        cand = Path(os.environ["REF_NCU_DIR"]) / f"{label}.ncu.csv"
        ref = cand if cand.exists() else None
    out = WORK / f"trace_{label}"
    try:
        res = trace(step, out, tracer, Window.parse(window), Sampling.parse(sample),
                    timeout=timeout, baseline=baseline, reference_ncu=ref, dedup=dedup)
        rec = {"job": "trace", "label": label, **res.stats, "match": res.match,
               "ok": res.report.ok if res.report else None,
               "defects": [str(f) for f in (res.report.defects if res.report else [])][:12],
               "untrusted": res.report.untrusted_fields if res.report else None,
               "findings": [str(f) for f in (res.report.findings if res.report else [])][:12]}
    except Exception as exc:  # noqa: BLE001 - a failed job is a result too
        rec = {"job": "trace", "label": label, "error": f"{type(exc).__name__}: {exc}"[:3000]}
        cap = out / "capture.json"
        if cap.exists():
            rec["capture"] = json.loads(cap.read_text()).get("stats")
    emit(rec)


def job_profile(label: str, step: Step, trace_label: str | None = None, metrics="full",
                timeout=300, extra_args: tuple[str, ...] = (), per_config: bool = False) -> None:
    out = WORK / f"ncu_{label}"
    tdir = WORK / f"trace_{trace_label}" / "trace" if trace_label else None
    if tdir is not None and not (tdir / "launches.jsonl").exists():
        tdir = None
    prev = Path(os.environ.get("REUSE_NCU", "/nonexistent")) / f"ncu_{label}" / "ncu.csv"
    if prev.exists() and tdir is not None:
        # the same step's profile from an earlier call on this (still warm) machine
        out.mkdir(parents=True, exist_ok=True)
        import shutil
        shutil.copy2(prev, out / "ncu.csv")
        m = match_profile(out / "ncu.csv", tdir, out / "ncu_matched.csv")
        emit({"job": "profile", "label": label, "reused": str(prev), "match": m})
        return
    try:
        res = profile(step, out, metrics=metrics, timeout=timeout, trace_dir=tdir,
                      extra_args=extra_args, per_config=per_config)
        emit({"job": "profile", "label": label, **res.stats, "match": res.match,
              "ncu_args": list(extra_args),
              "summary": (res.run.summary or {}).get("step_ms")})
    except Exception as exc:  # noqa: BLE001
        if metrics == "full":
            emit({"job": "profile", "label": label, "error": f"{exc}"[:1500],
                  "retry": "core metrics"})
            import shutil

            shutil.rmtree(out, ignore_errors=True)
            return job_profile(label, step, trace_label, "core", timeout)
        emit({"job": "profile", "label": label, "error": f"{type(exc).__name__}: {exc}"[:3000]})


def job_run(label: str, step: Step, timeout=240) -> None:
    """The step untraced and unprofiled: does it run on the GPU, and how long is a step."""
    from simfront.capture.driver import STEP_ENV, run_logged

    out = WORK / f"run_{label}"
    out.mkdir(parents=True, exist_ok=True)
    rec = run_logged(step.command(out / "summary.json"), dict(STEP_ENV), out / "run.log",
                     timeout)
    summ = {}
    if (out / "summary.json").exists():
        summ = json.loads((out / "summary.json").read_text())
    emit({"job": "run", "label": label, "rc": rec.returncode, "wall_s": round(rec.wall_s, 1),
          "step_ms": summ.get("step_ms"), "losses": summ.get("losses"),
          "params": summ.get("params"), "impl": summ.get("impl"),
          "device_name": summ.get("device_name"),
          "log_tail": "" if rec.returncode == 0 else Path(rec.log).read_text()[-1500:]})


def job_timeline(label: str, step: Step, sms: str = "all", timeout=200) -> None:
    """CUPTI kernel timeline of the untraced step: wall time and the GPU's busy share."""
    from simfront.capture.driver import STEP_ENV, run_logged

    out = WORK / f"timeline_{label}"
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "simfront.workloads.run", step.workload, "--preset",
           step.preset, "--iterations", str(step.iterations), "--timeline", str(out),
           "--sms", sms]
    for o in step.overrides:
        cmd += ["--set", o]
    rec = run_logged(cmd, dict(STEP_ENV), out / "run.log", timeout)
    summ = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("timeline-*.json"))}
    emit({"job": "timeline", "label": label, "rc": rec.returncode, "wall_s": round(rec.wall_s, 1),
          "timelines": summ,
          "log_tail": "" if rec.returncode == 0 else Path(rec.log).read_text()[-1500:]})


# ncu's cost per profiled launch with the core metrics (the 2-layer step: 133 s for 232
# launches with ~30 metrics, about 30 s of it start-up), and the start-up itself.
NCU_S_PER_LAUNCH = 0.45
NCU_STARTUP_S = 60.0


def scale_step(wl: str, preset: str, overrides: tuple[str, ...] = ()) -> Step:
    return Step(wl, preset, iterations=2, window_iteration=1, overrides=overrides)


def job_scale(label: str, step: Step, budget_s: float, ncu_max: int = 400) -> None:
    """A model-size step: deduplicated CTA-capped trace, its timeline, then ncu over as many
    launches of the window as the time left allows (``--launch-count``; NCU_SKIP moves the
    range on)."""
    t0 = time.time()
    job_trace(label, step, sample="first:8", baseline=False, timeout=min(360, budget_s),
              dedup=True)
    job_timeline(label, step, timeout=max(60, min(200, budget_s - (time.time() - t0))))
    left = budget_s - (time.time() - t0)
    count = int(min(ncu_max, (left - NCU_STARTUP_S) / NCU_S_PER_LAUNCH))
    if count < 20:
        emit({"job": "profile", "label": label, "skipped": f"{left:.0f} s left"})
        return
    skip = int(os.environ.get("NCU_SKIP", "0"))
    job_profile(label, step, label, "core", timeout=max(60, left - 10),
                extra_args=("--launch-skip", str(skip), "--launch-count", str(count)))


def job_sweep_point(label: str, step: Step, budget_s: float) -> None:
    t0 = time.time()
    job_timeline(label, step, timeout=min(200, budget_s))
    job_trace(label, step, sample="first:8", baseline=False,
              timeout=max(60, min(360, budget_s - (time.time() - t0))), dedup=True)


def lm(name: str, **kw) -> Step:
    return Step(name, "tiny", iterations=kw.pop("iterations", 2), window_iteration=1, **kw)


JOBS = {
    # Mamba2 / Mamba1 LM tiny: full trace + ncu of the same iteration, matched
    "m2": lambda: (job_trace("mamba2_tiny", lm("mamba2_lm")),
                   job_profile("mamba2_tiny", lm("mamba2_lm"), "mamba2_tiny", "core")),
    "m1": lambda: (job_trace("mamba1_tiny", lm("mamba1_lm")),
                   job_profile("mamba1_tiny", lm("mamba1_lm"), "mamba1_tiny", "core")),
    "hy": lambda: (job_trace("hybrid_tiny", lm("hybrid_lm")),
                   job_profile("hybrid_tiny", lm("hybrid_lm"), "hybrid_tiny")),
    "mv": lambda: (job_trace("mambavision_tiny", lm("mambavision")),
                   job_profile("mambavision_tiny", lm("mambavision"), "mambavision_tiny")),
    "gm": lambda: (job_trace("graphmamba_tiny", lm("graphmamba")),
                   job_profile("graphmamba_tiny", lm("graphmamba"), "graphmamba_tiny")),
    # trace only (the ncu profiles of these steps came from an earlier call), CTA-capped
    "m2s": lambda: job_trace("mamba2_tiny", lm("mamba2_lm"), sample="first:32", timeout=200),
    "m1s": lambda: job_trace("mamba1_tiny", lm("mamba1_lm"), sample="first:32", timeout=150),
    # NVTX and kernel-regex windows, CTA sampling, list-only
    "m2win": lambda: (job_trace("mamba2_nvtx", lm("mamba2_lm"), window="nvtx:simfront.step",
                                baseline=False),
                      job_trace("mamba2_ssd_regex", lm("mamba2_lm"),
                                window="kernel:_chunk|_bmm|_state_passing", baseline=False),
                      job_trace("mamba2_sampled", lm("mamba2_lm"), sample="every:2,first:4",
                                baseline=False)),
    # Accel-Sim's tracer on the same step: defects detected against ncu
    "m2acc": lambda: job_trace("mamba2_accelsim", lm("mamba2_lm"), tracer=ACCELSIM,
                               baseline=False,
                               ref=WORK / "ncu_mamba2_tiny" / "ncu.csv"),
    # torch CUDA graph replay (cuBLAS GEMM + elementwise as graph kernel nodes)
    "gr": lambda: (job_trace("graph_step", Step(str(ROOT / "bench/device/graph_step.py")),
                             baseline=True, timeout=120),
                   job_profile("graph_step", Step(str(ROOT / "bench/device/graph_step.py")),
                               "graph_step")),
    # paper-size steps: profile only (tracing them whole is what sampling is for)
    "m1p": lambda: job_profile("mamba1_paper", Step("mamba1_lm", "paper", 2, 1), "mamba1_paper",
                               "core"),
    "hyprof": lambda: job_profile("hybrid_tiny", lm("hybrid_lm"), "hybrid_tiny"),
    # paper presets, untraced: each runs on the H100, step time
    "runp": lambda: [job_run(f"{w}_paper", Step(w, "paper", 4, 3), timeout=200)
                     for w in ("mambavision", "graphmamba", "hybrid_lm", "mamba1_lm",
                               "mamba2_lm")],
    # Mamba2 paper step traced with a CTA cap: the trace the paper-size balance study needs
    "m2ps": lambda: job_trace("mamba2_paper", Step("mamba2_lm", "paper", 2, 1),
                              sample="first:8", timeout=360),
    "m1ps": lambda: job_trace("mamba1_paper", Step("mamba1_lm", "paper", 2, 1),
                              sample="first:8", timeout=300),
    "hyp": lambda: job_profile("hybrid_paper", Step("hybrid_lm", "paper", 2, 1), None, "core"),
    "gmp": lambda: job_profile("graphmamba_paper", Step("graphmamba", "paper", 2, 1), None,
                               "core"),
    "m2p": lambda: job_profile("mamba2_paper", Step("mamba2_lm", "paper", 2, 1), "mamba2_paper",
                                "core"),
    "mvp": lambda: job_profile("mambavision_paper", Step("mambavision", "paper", 2, 1), None,
                               "core"),
}


def budget_left() -> float:
    return float(os.environ.get("SUITE_BUDGET", "520")) - (time.time() - T0)


def sweep_jobs() -> dict:
    """seqlen points of the 130M Mamba2 sweep: "L512" .. "L16384" (batch from the preset's
    token count), "B1".."B16" and "C64".."C256"."""
    from simfront.workloads.presets import SWEEP_130M

    jobs = {}
    for axis, tag in (("seqlen", "L"), ("batch", "B"), ("chunk", "C")):
        for pt in SWEEP_130M[axis]:
            v = pt[{"seqlen": "seqlen", "batch": "batch", "chunk": "chunk_size"}[axis]]
            ov = tuple(f"{k}={x}" for k, x in pt.items())
            lab = f"mamba2_130m_{tag}{v}"
            jobs[f"{tag}{v}"] = (lambda lab=lab, ov=ov: job_sweep_point(
                lab, scale_step("mamba2_lm", "130m", ov), budget_left()))
    return jobs


JOBS.update({
    # 130M steps (24 layers, 4 x 2048): dedup trace + timeline + ncu in the time given
    "m2_130m": lambda: job_scale("mamba2_130m", scale_step("mamba2_lm", "130m"),
                                 min(330, budget_left())),
    "m1_130m": lambda: job_scale("mamba1_130m", scale_step("mamba1_lm", "130m"),
                                 budget_left()),
    "m2_370m": lambda: job_scale("mamba2_370m", scale_step("mamba2_lm", "370m"),
                                 budget_left()),
})
JOBS.update(sweep_jobs())


def paper_point(wl: str, overrides: tuple[str, ...] = ()) -> Step:
    return Step(wl, "paper", 2, 1, overrides=overrides)


JOBS.update({
    # the shipped paper steps recaptured with dedup: the exactness check of issue 15
    "m2pd": lambda: job_trace("mamba2_paper_dedup", paper_point("mamba2_lm"), sample="first:8",
                              baseline=False, timeout=min(300, budget_left()), dedup=True),
    "m1pd": lambda: job_trace("mamba1_paper_dedup", paper_point("mamba1_lm"), sample="first:8",
                              baseline=False, timeout=min(300, budget_left()), dedup=True),
    # the paper steps traced with box sampling (tracer 1.3): two of every grid dimension
    # beyond x, so the model sees what the heads of a Triton SSD kernel share
    "m2pb": lambda: job_trace("mamba2_paper_box", paper_point("mamba2_lm"), sample="box:8",
                              baseline=False, timeout=min(330, budget_left())),
    "m1pb": lambda: job_trace("mamba1_paper_box", paper_point("mamba1_lm"), sample="box:8",
                              baseline=False, timeout=min(300, budget_left())),
    # the 130M Mamba2 step with box sampling and dedup: its timeline first, which also fills
    # Triton's compile and autotune caches, so the traced run spends its time tracing
    "m2_130m_box": lambda: (
        job_timeline("mamba2_130m_box", scale_step("mamba2_lm", "130m"), "all",
                     min(150, budget_left())),
        job_trace("mamba2_130m_box", scale_step("mamba2_lm", "130m"), sample="box:8",
                  baseline=False, timeout=max(60, budget_left() - 20), dedup=True)),
    # 130M Mamba2 timelines at the long lengths (8192 tokens a step; 16384 at batch 1)
    "tL8192": lambda: job_timeline("mamba2_130m_L8192", scale_step(
        "mamba2_lm", "130m", ("seqlen=8192", "batch=1")), "all,64", min(120, budget_left())),
    "tL16384": lambda: job_timeline("mamba2_130m_L16384", scale_step(
        "mamba2_lm", "130m", ("seqlen=16384", "batch=1")), "all,64", min(120, budget_left())),
})
for _L, _B in ((512, 16), (1024, 8), (4096, 2), (8192, 1)):
    # 2-layer steps along the sequence-length axis (the per-layer kernels of the 130M step
    # at that length; the balance answer per length)
    JOBS[f"p2L{_L}"] = (lambda L=_L, B=_B: job_trace(
        f"mamba2_paper_L{L}", paper_point("mamba2_lm", (f"seqlen={L}", f"batch={B}")),
        sample="first:8", baseline=False, timeout=min(240, budget_left()), dedup=True)
        if budget_left() > 90 else emit({"job": "trace", "label": f"mamba2_paper_L{L}",
                                         "skipped": f"{budget_left():.0f} s left"}))


# ncu on one launch of each launch configuration (function, grid, block, shared memory) of
# the window: a model-size step repeats the same few hundred configurations across its
# layers, and ncu's per-launch cost (~0.45 s with the core metrics) over all 2068 launches
# of the 130M step did not fit a device call. Each record then stands for every launch of
# its configuration (simfront.analysis.ncu_configs pairs them back to the trace).

def job_profile_per_config(label: str, step: Step, trace_label: str | None = None) -> None:
    left = budget_left()
    if left < 90:
        emit({"job": "profile", "label": label, "skipped": f"{left:.0f} s left"})
        return
    job_profile(f"{label}_pc", step, trace_label, "core", timeout=min(300, left - 15),
                per_config=True)


JOBS.update({
    "pc_m2_130m": lambda: job_profile_per_config("mamba2_130m", scale_step("mamba2_lm", "130m")),
    "pc_m1_130m": lambda: job_profile_per_config("mamba1_130m", scale_step("mamba1_lm", "130m")),
    "pc_m2_370m": lambda: job_profile_per_config("mamba2_370m", scale_step("mamba2_lm", "370m")),
})
for _L, _B in ((512, 16), (1024, 8), (4096, 2), (8192, 1)):
    JOBS[f"pc_L{_L}"] = (lambda L=_L, B=_B: job_profile_per_config(
        f"mamba2_paper_L{L}", paper_point("mamba2_lm", (f"seqlen={L}", f"batch={B}")),
        f"mamba2_paper_L{L}"))

for _L, _B in ((512, 16), (1024, 8), (2048, 4), (4096, 2), (8192, 1)):
    # the 2-layer steps' wall time and GPU-busy share, whole H100 and 64 SMs
    JOBS[f"t2L{_L}"] = (lambda L=_L, B=_B: job_timeline(
        f"mamba2_paper_L{L}", paper_point("mamba2_lm", (f"seqlen={L}", f"batch={B}")),
        "all,64", min(120, budget_left())))


def pack(max_files: int = 5, max_bytes: int = 15 << 20) -> None:
    """$OUT may bring back 8 files of 16 MiB: everything small goes into meta.tar; trace
    kernels into up to ``max_files - 1`` tars, largest files dropped (and listed) if over."""
    import tarfile

    files = sorted(p for p in WORK.rglob("*") if p.is_file() and not p.name.endswith(".part"))
    kernels = [p for p in files if p.name.startswith("kernel-")]
    meta = [p for p in files if p not in set(kernels)]
    with tarfile.open(OUT / "meta.tar.gz", "w:gz") as t:
        for p in meta:
            t.add(p, arcname=str(p.relative_to(WORK)))
    kernels.sort(key=lambda p: p.stat().st_size)
    parts, cur, size, dropped = [], [], 0, []
    for p in kernels:
        n = p.stat().st_size
        if size + n > max_bytes:
            if cur:
                parts.append(cur)
            cur, size = [], 0
            if len(parts) >= max_files - 1 or n > max_bytes:
                dropped.append(str(p.relative_to(WORK)))
                continue
        cur.append(p)
        size += n
    if cur and len(parts) < max_files - 1:
        parts.append(cur)
    elif cur:
        dropped += [str(p.relative_to(WORK)) for p in cur]
    for i, part in enumerate(parts):
        with tarfile.open(OUT / f"kernels{i}.tar", "w") as t:
            for p in part:
                t.add(p, arcname=str(p.relative_to(WORK)))
    (OUT / "dropped.txt").write_text("\n".join(dropped) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("jobs", nargs="+")
    ap.add_argument("--budget", type=float, default=540, help="stop starting jobs after this")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("SUITE_BUDGET", str(args.budget))
    if args.jobs == ["pack"]:
        return pack()
    WORK.mkdir(parents=True, exist_ok=True)
    for j in args.jobs:
        if time.time() - T0 > args.budget:
            emit({"job": j, "skipped": "suite budget spent"})
            continue
        print(f"=== job {j} at {time.time() - T0:.0f} s", flush=True)
        try:
            JOBS[j]()
        except Exception:  # noqa: BLE001
            emit({"job": j, "error": traceback.format_exc()[-2000:]})
    pack()


if __name__ == "__main__":
    main()
