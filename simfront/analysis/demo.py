"""``make demo``: shipped sample traces -> a tensor:vector sweep on the built-in timing model
-> the balance report. Needs no GPU and no simulator; every stage is the real one
(the sweep stage's runner and local executor, the ``model`` backend, the HDF5 results
file, the balance study and the report writer)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from simfront.analysis.bound import analytic_bound, mix_from_traces
from simfront.analysis.correlate import base_config_records, correlate
from simfront.analysis.report import Report
from simfront.analysis.wallclock import step_share
from simfront.analysis.whatif import (available_conditions, compare, has_base, panel_section,
                                      summary as whatif_summary, warm_cache)
from simfront.core.errors import BackendError, InputError
from simfront.core.ncu import read_ncu_csv
from simfront.core.paths import repo_dir
from simfront.gpu import derived, load_gpu
from simfront.sim.backend import get_backend
from simfront.sweep.inputs import import_plugins
from simfront.workloads.registry import WORKLOADS

DEFAULT_RATIOS = (32.0, 16.0, 8.0, 4.0, 2.0)


def _say(msg: str) -> None:
    print(f"[demo] {msg}", file=sys.stderr, flush=True)


def _is_trace_set(p: Path) -> bool:
    return (p / "kernelslist.g").exists() or (p / "kernelslist.g.xz").exists()


def _workload(p: Path) -> dict:
    """The workload a set's manifest names (``name``, ``preset``, ...); empty where none."""
    try:
        workload = json.loads((p / "manifest.json").read_text()).get("workload") or {}
    except (OSError, ValueError):
        return {}
    return workload if isinstance(workload, dict) else {}


def _workload_name(p: Path) -> str | None:
    return _workload(p).get("name")


def _whole_step(p: Path) -> bool:
    """A capture of a whole training step of a registered workload at its `tiny` preset (not
    a slice of one, not a test program): what a balance study is about, at a size the demo
    simulates in a minute (``--tiny``; the default is the paper-size captures)."""
    workload = _workload(p)
    return workload.get("name") in WORKLOADS and workload.get("preset", "tiny") == "tiny"


#: The workloads of `simfront demo --tiny`: the language-model steps the balance question is
#: about (Mamba2 first in the report), at their `tiny` preset. MambaVision and GraphMamba
#: (960 launches between them) would triple its time on two cores; `simfront demo --traces
#: traces` includes them.
DEMO_WORKLOADS = ("mamba2_lm", "mamba1_lm", "hybrid_lm")
#: The demo's steps (`make demo`): the paper-size steps of the question (2 layers, d_model
#: 768, 4 x 2048 tokens), as the tracer's box sample captured them; the design-space study's
#: steps.
PAPER_SETS = ("mamba2_lm-paper-box", "mamba1_lm-paper-box")
#: The hardware what-ifs the demo checks the model against (of those shipped beside a set):
#: half the SMs and the H200's memory. `simfront analyze whatif SET` runs them all.
DEMO_WHATIF = ("h100-sms64", "h200-all")


def sample_trace_sets(root: Path | None = None, tiny: bool = False) -> list[Path]:
    """The trace set ``root``, or the sets under it (their whole-step captures at the `tiny`
    preset where there are any); by default the shipped paper-size steps
    (:data:`PAPER_SETS`); ``tiny``: the `tiny` whole-step captures of the language-model
    workloads shipped in the repository's ``traces/`` (every set there when none is one)."""
    if root is None and not tiny:
        sets = [repo_dir("traces") / name for name in PAPER_SETS]
        missing = [p for p in sets if not _is_trace_set(p)]
        if missing:
            raise InputError("the paper-size sample traces are not shipped here", missing[0])
        return sets
    if root is None:
        sets = sample_trace_sets(repo_dir("traces"))
        lm = [p for p in sets if _workload_name(p) in DEMO_WORKLOADS]
        return lm or sets
    root = Path(root)
    if _is_trace_set(root):
        return [root]
    sets = sorted(p for p in root.iterdir() if p.is_dir() and _is_trace_set(p)) \
        if root.is_dir() else []
    if not sets:
        raise InputError("no sample trace set (a folder with kernelslist.g) found", root)
    return [p for p in sets if _whole_step(p)] or sets


def write_sweep_file(path: Path, trace_sets: list[Path], ratios, backend: str = "model",
                     workers: int | None = None, imports: tuple[str, ...] = ()) -> Path:
    """A sweep file over tensor:vector ratios, in the sweep stage's format."""
    doc = {
        "name": "demo_balance",
        "description": "tensor:vector balance of the shipped sample traces on the built-in model",
        "dir": "sweep",
        "workloads": [{"name": p.name, "traces": str(p.resolve())} for p in trace_sets],
        "gpu": {"base": "h100", "set": {"ratio_mode": "scale_vector"},
                "axes": {"tensor_vector_ratio": [float(r) if r != int(r) else int(r)
                                                 for r in ratios]}},
        "backends": [backend],
        "resources": {"cpus": 1, "mem": "2G", "time": "10m"},
        "executor": {"kind": "local", "max_attempts": 1,
                     **({"workers": workers} if workers else {}),
                     **({"imports": [str(i) for i in imports]} if imports else {})},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_demo(out: Path, traces: Path | None = None, ratios=DEFAULT_RATIOS,
             backend: str = "model", imports: tuple[str, ...] = (),
             whatif: list[dict] | None = None, tiny: bool = False) -> tuple[Path, Path]:
    """Run the demo into ``out``; return the report's HTML and Markdown paths. ``tiny``:
    on the shipped tiny steps instead of the paper-size ones. ``backend``
    and ``imports`` (modules or .py files that register a backend) exist for tests and for
    trying the pipeline with another backend. ``whatif``: rows of how far the model's
    what-ifs held on hardware (:data:`simfront.analysis.studies.WHATIF_KEYS`), shown in the
    summary when given."""
    from simfront.analysis.studies import (add_balance, add_balance_summary,
                                           balance_per_workload, load_sweep_records)

    t0 = time.time()
    out = Path(out)
    sets = sample_trace_sets(traces, tiny=tiny)
    _say(f"1/4 traces: {', '.join(p.name for p in sets)}")
    if imports:
        import_plugins(tuple(str(i) for i in imports))
    try:
        get_backend(backend).check_available()
    except BackendError as exc:
        raise BackendError(f"the demo needs the built-in '{backend}' backend: {exc}") from None
    sweep_file = write_sweep_file(out / "sweep.yaml", sets, ratios, backend, imports=imports)
    _say(f"2/4 sweep: {len(sets)} trace set(s) x {len(ratios)} tensor:vector ratios "
         f"({', '.join(f'{r:g}' for r in ratios)}) on backend '{backend}' -> {sweep_file}")
    from simfront.sweep.runner import Sweep
    sweep = Sweep.open(sweep_file)
    summary = sweep.run(progress=True)
    results = getattr(summary, "results", None) or sweep.results_path
    counts = getattr(summary, "counts", {})
    _say(f"   jobs: {counts}; results {results} ({time.time() - t0:.1f} s so far)")

    _say("3/4 balance study")
    rec = load_sweep_records(results)
    studies = balance_per_workload(rec, n_boot=300)  # each captured step on its own
    bounds = _bounds(sets, studies)

    _say("4/4 report")
    rep = Report("simfront demo: tensor:vector balance of the sample traces", out,
                 provenance={"sweep_file": str(sweep_file), "results": str(results),
                             "traces": [str(p) for p in sets], "backend": backend,
                             "ratios": list(ratios)})
    hw = _whatif_results(sets)
    if whatif is None and hw:
        whatif = whatif_summary(hw)
    shares = {k: v for k, v in ((p.name, step_share(p)) for p in sets) if v is not None}
    add_balance_summary(rep, studies, whatif, shares)  # the answer first
    intro = rep.section("What this is")
    intro.text(f"The trace sets {', '.join(p.name for p in sets)} simulated by "
               f"the built-in timing model on H100 variants whose tensor:vector ratio "
               f"(dense bf16 tensor FMA : FP32 FMA per SM per clock; the H100 is 16) is "
               f"{', '.join(f'{r:g}' for r in ratios)}, reached by scaling the vector pipes. "
               + _what_the_sets_are(sets))
    add_balance(rep, studies, bounds, summary=False)
    _add_hardware_correlation(rep, rec, sets)
    _add_whatif(rep, hw)
    html_path, md_path = rep.write()
    _say(f"done in {time.time() - t0:.1f} s: {html_path}")
    return html_path, md_path


def _shape(workload: dict) -> str:
    """A step's size as its manifest's workload config gives it."""
    c = workload.get("config") or {}
    if not all(k in c for k in ("n_layer", "d_model", "batch", "seqlen")):
        return "size not recorded"
    return f"{c['n_layer']} layers, d_model {c['d_model']}, {c['batch']} x {c['seqlen']} tokens"


def _what_the_sets_are(sets: list[Path]) -> str:
    """The report's words on what the sets are, by the presets their manifests name."""
    work = {p.name: _workload(p) for p in sets}
    presets = {w.get("preset") for w in work.values()}
    if presets == {"tiny"}:
        return ("Each is one whole training step (forward, backward, AdamW) captured on an "
                "H100 by simfront's tracer at the workload's `tiny` preset (traces/, "
                "manifest.json): sizes this small leave most kernels bound by launch and "
                "latency, so read the curves as the method at work; `simfront demo` "
                "runs the paper-size steps.")
    if presets == {"paper"}:
        shapes = "; ".join(f"{name}: {_shape(w)}" for name, w in work.items())
        return ("Each is one whole training step (forward, backward, AdamW) captured on an "
                f"H100 by simfront's tracer at the workload's `paper` preset ({shapes}; "
                "manifest.json): the sizes the question is asked at.")
    return ("The sets' presets, as their manifests name them: "
            + ", ".join(f"{name} {w.get('preset') or 'none'}" for name, w in work.items())
            + ".")


def _add_hardware_correlation(rep, rec, sets: list[Path]) -> None:
    """Modelled H100 cycles against the H100's own, for sets captured with their ncu
    profile beside them (``ncu.csv``, as `simfront profile` stores it)."""
    from simfront.analysis.studies import add_correlation

    base = base_config_records(rec)
    for p in sets:
        ncu = next(iter(sorted(p.glob("*ncu.csv*"))), None)
        if ncu is None or "workload" not in base or p.name not in set(base["workload"]):
            continue
        corr = correlate(base, read_ncu_csv(ncu), workload=p.name)
        corr.notes.append(f"The model at the H100 config against {p.name}/{ncu.name}, the "
                          "H100's ncu profile of the same step (elapsed cycles).")
        add_correlation(rep, corr, label=p.name)


def _whatif_results(sets: list[Path]) -> list:
    """The model's what-ifs against hardware, for the sets that ship timelines of the same
    step under changed hardware (``whatif/``; simfront.analysis.whatif)."""

    sets = [d for d in sets if set(DEMO_WHATIF) & set(available_conditions(d))
            and has_base(d)]
    if sets:
        _say(f"   what-ifs: the model on {', '.join(DEMO_WHATIF)} and their base for "
             f"{', '.join(d.name for d in sets)} (kept in the what-if store)")
        warm_cache(sets, conditions=DEMO_WHATIF, progress=_say)
    out = []
    for d in sets:
        out += compare(d, [c for c in DEMO_WHATIF if c in available_conditions(d)],
                       progress=_say)
    return out


def _add_whatif(rep, results: list) -> None:
    """The what-if panel in full (the summary holds its step ratios)."""
    sec = panel_section([], results=results) if results else None
    if sec is not None:
        rep.sections.append(sec)


def _bounds(sets: list[Path], studies: dict, base_gpu: str = "h100") -> dict:
    """Analytic bounds from the traces' instruction mixes at the base GPU's peak rates,
    where the trace stage offers the mixes; the report works without."""
    d = derived(load_gpu(base_gpu))
    tensor_rate = d.tensor_tflops["bf16"] * 1e12
    dram_bw = float(d.dram_bandwidth.bytes_per_s)
    mixes = []
    for p in sets:
        try:
            mixes.append(mix_from_traces(p))
        except InputError as exc:
            _say(f"   no analytic bound for {p.name}: {exc}")
            return {}
    mix = pd.concat(mixes, ignore_index=True)
    return {name: analytic_bound(mix, res.ratios, tensor_flops_per_s=tensor_rate,
                                 dram_bw=dram_bw, baseline_ratio=res.baseline_ratio,
                                 source="instruction mix of the sample traces")
            for name, res in studies.items()}
