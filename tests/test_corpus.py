"""traces/corpus.yaml keeps fit sets and held-out sets apart: every shipped step set is in
exactly one group, and each named set is shipped."""

from __future__ import annotations

import yaml

from simfront.core.paths import REPO_ROOT

TRACES = REPO_ROOT / "traces"
#: trace folders that are not training steps (a tracer smoke test, kernel samples)
NOT_STEPS = {"smoke_app-launch_apis", "mamba1_selective_scan", "mamba1_torch_elementwise"}


def _corpus() -> dict:
    return yaml.safe_load((TRACES / "corpus.yaml").read_text())


def test_every_shipped_step_is_fit_or_held_out_and_never_both():
    doc = _corpus()
    fit, held, seen = set(doc["fit"]), set(doc["held_out"]), set(doc.get("seen") or {})
    assert not fit & held, f"both fit and held out: {sorted(fit & held)}"
    assert not seen & held, f"seen and held out: {sorted(seen & held)}"
    shipped = {p.parent.name for p in TRACES.glob("*/manifest.json")} - NOT_STEPS
    unlisted = shipped - fit - held - seen
    assert not unlisted, f"step sets in traces/ that corpus.yaml does not place: {unlisted}"


def test_fit_and_held_out_sets_are_shipped_with_their_hardware_truth():
    doc = _corpus()
    for name in [*doc["fit"], *doc["held_out"]]:
        d = TRACES / name
        if name in NOT_STEPS:
            continue
        assert (d / "manifest.json").is_file(), f"{name}: listed in corpus.yaml, not shipped"
    # a held-out set is judged against the GPU it ran on: ncu and the green-context timelines
    for name in doc["held_out"]:
        d = TRACES / name
        assert sorted(d.glob("ncu.csv*")), f"{name}: no ncu profile"
        labels = {p.stem for p in (d / "whatif").glob("*.json")}
        gpu = next(iter(labels)).split("-")[0]
        assert {f"{gpu}-all", f"{gpu}-sms64"} <= labels, f"{name}: timelines {labels}"
