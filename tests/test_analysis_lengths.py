"""The step along sequence length (PerfMamba's question), on the shipped H100 timelines of
the 2-layer Mamba2 step at 512..8192 tokens a sequence and 8192 tokens a step."""

from __future__ import annotations

import json
import lzma

import pytest
from click.testing import CliRunner

from simfront.analysis import lengths as L
from simfront.core.timeline import read_timeline_json
from simfront.core.errors import InputError
from simfront.core.paths import repo_dir
from simfront.core.ncu import read_ncu_csv

TRACES = repo_dir("traces")
SWEEP = [TRACES / f"mamba2_lm-paper-L{n}" for n in (512, 1024, 4096, 8192)] + [
    TRACES / "mamba2_lm-paper"]          # the paper step: 2048 tokens a sequence, batch 4


def test_the_shipped_sweep_reads_as_points_in_length_order():
    points = L.read_points(SWEEP)
    assert [p.seqlen for p in points] == [512, 1024, 2048, 4096, 8192]
    assert {p.tokens for p in points} == {8192}
    assert {(p.workload, p.gpu, p.condition) for p in points} == {("mamba2_lm", "h100", "all")}
    for p in points:
        s = read_timeline_json(p.source)
        tl = read_ncu_csv(p.source.replace(".json", ".csv.xz"))
        assert p.kernel_ms == pytest.approx(s.kernel_ms, rel=1e-3)
        assert p.wall_ms == s.extra["untimed_step_ms"]
        assert p.busy_share == pytest.approx(s.busy_ms / s.extra["untimed_step_ms"])
        ssm = tl.time_us[tl.category == "ssm"].sum() / 1e3
        assert p.ssm_ms == pytest.approx(ssm) and 0 < p.ssm_share_kernel < 0.5
        assert p.ssm_share_step < p.ssm_share_kernel
        assert p.peak_mem_bytes is None and p.d_state == 128
    assert L.notes(points) == ["peak memory not recorded in timelines of format 1"]
    md = L.render_markdown(points)
    assert md.count("| mamba2_lm | H100 |") == 5 and "arXiv:2511.22849" in md


def _format2_fixture(tmp_path, peak=7 << 30, with_config=True, name="tl", source="all",
                     **config):
    """TEST FIXTURE, not a measurement: a shipped L512 timeline (``source``: its condition)
    in a `simfront timeline` output folder as `timeline-all`, given the fields of format 2
    (a made-up peak memory) and the workload config a new record carries (``config``
    overriding fields of the set's)."""
    src = TRACES / "mamba2_lm-paper-L512"
    out = tmp_path / name
    out.mkdir()
    (out / "timeline-all.csv").write_bytes(
        lzma.decompress((src / "whatif" / f"h100-{source}.csv.xz").read_bytes()))
    js = json.loads((src / "whatif" / f"h100-{source}.json").read_text())
    js.update(format=2, peak_mem_bytes=peak, mem_start_bytes=1 << 30, label="all")
    if with_config:
        js["extra"]["config"] = {**json.loads((src / "manifest.json").read_text())[
            "workload"]["config"], **config}
    (out / "timeline-all.json").write_text(json.dumps(js))
    return out


def test_a_new_record_gives_its_own_length_and_memory(tmp_path):
    (p,) = L.read_points([_format2_fixture(tmp_path)])
    assert (p.seqlen, p.batch, p.peak_mem_bytes) == (512, 16, 7 << 30)
    t = L.table([p])
    assert t.peak_mem_gib.iloc[0] == 7.0
    assert L.notes([p]) == []


def test_a_timeline_without_a_config_outside_a_set_is_refused(tmp_path):
    out = _format2_fixture(tmp_path, with_config=False)
    with pytest.raises(InputError, match="extra.config.seqlen"):
        L.read_points([out])
    with pytest.raises(InputError, match="no timeline of condition 'sms64'"):
        L.read_points([out], "sms64")


def test_a_timeline_short_of_launches_is_refused(tmp_path):
    out = _format2_fixture(tmp_path)
    lines = (out / "timeline-all.csv").read_text().splitlines(keepends=True)
    (out / "timeline-all.csv").write_text("".join(lines[:-1]))
    with pytest.raises(InputError, match="launches"):
        L.read_points([out])


def test_tokens_that_differ_are_said(tmp_path):
    a = L.read_points([_format2_fixture(tmp_path)])[0]
    from dataclasses import replace

    b = replace(a, seqlen=1024, batch=16, gpu="h200")
    n = L.notes([a, b])
    assert any("token count is not fixed ([8192, 16384])" in x for x in n)
    assert "points of several GPUs: h100, h200" in n


def test_the_sweep_on_another_condition(tmp_path):
    points = L.read_points(SWEEP[:4], "sms64")
    assert [p.condition for p in points] == ["sms64"] * 4
    full = L.read_points(SWEEP[:4])
    # the same step on 64 of 132 SMs: more kernel time at every length
    assert all(s.kernel_ms > f.kernel_ms for s, f in zip(points, full))


def test_cli_writes_table_plot_and_json(tmp_path):
    from simfront.cli import cli

    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["analyze", "lengths", *map(str, SWEEP), "--out", str(out),
                                   "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output[res.output.index("{"):])
    assert [p["seqlen"] for p in data["points"]] == [512, 1024, 2048, 4096, 8192]
    assert data["perfmamba"]["pruning_speedup"] == 1.14
    assert data["perfmamba"]["pruning_memory_change"] == -0.115
    assert (out / "lengths.png").stat().st_size > 10_000
    assert (out / "lengths.md").read_text().startswith("| workload | GPU | d_state | length |")
    assert data["pruning"] == []
    assert (out / "lengths.csv").read_text().count("\n") == 6


def test_a_smaller_state_is_set_against_the_largest(tmp_path):
    """The pruning what-if's arithmetic on two labelled fixtures: the 64-SM timeline as if
    it were the d_state 128 step (8 GiB) and the whole GPU's as the d_state 64 one (7 GiB)."""
    big = _format2_fixture(tmp_path, peak=8 << 30, name="s128", source="sms64")
    small = _format2_fixture(tmp_path, peak=7 << 30, name="s64", d_state=64)
    points = L.read_points([small, big])
    assert [p.d_state for p in points] == [128, 64]          # largest state first
    (r,) = L.pruning(points).itertuples()
    assert (r.seqlen, r.d_state, r.base_d_state) == (512, 64, 128)
    assert r.kernel_speedup == pytest.approx(points[0].kernel_ms / points[1].kernel_ms)
    assert r.kernel_speedup > 1.3
    assert r.wall_speedup == pytest.approx(points[0].wall_ms / points[1].wall_ms)
    assert r.memory_change == pytest.approx(-0.125)
    md = L.render_markdown(points)
    assert "| mamba2_lm | 512 | 64 | 128 |" in md and "-12.5%" in md and "1.14x" in md
    assert L.to_json(points)["pruning"][0]["memory_change"] == pytest.approx(-0.125)
    fig = L.plot(points)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "mamba2_lm d_state 128 kernel time" in labels
