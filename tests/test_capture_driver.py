"""The capture driver on CPU: runs under fake tracers (scripts standing in for a traced
step) that crash, hang, write nothing, write an empty window or write a good trace; only the
good one may be registered. Also windows/sampling parsing and the Accel-Sim defect checks on
the shared H100 traces."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from simfront.capture.driver import CaptureError, Step, trace
from simfront.capture.tracers import Sampling, Tracer, Window
from simfront.capture.validate import validate_trace_set
from simfront.core.errors import ConfigError, InputError
from simfront.core.launches import read_sidecar, window_launches
from simfront.traces.store import TraceStore

# A kernel as simfront's tracer writes it: header, then blocks of warps.
KERNEL = """-kernel name = _Z4axpyfPKfPfi
-kernel id = {kid}
-grid dim = (2,1,1)
-block dim = (32,1,1)
-shmem = 0
-nregs = {nregs}
-binary version = 90
-cuda stream id = 0
-shmem base_addr = 0x00007f0000000000
-local mem base_addr = 0x00007f1000000000
-nvbit version = 1.7.7.1
-accelsim tracer version = 5
-enable lineinfo = 0
-simfront tracer = simfront-tracer 1.0
-launch api = cuLaunchKernel
-cuda graph = 0
-tb sampling = stride 1 max 0 traced 2 of 2

#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate

"""
BLOCK = """
#BEGIN_TB

thread block = {x},0,0

warp = 0
insts = 3
0000 ffffffff 1 R1 LDC 0 0 0
0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x7f0000001000 4 0
0020 ffffffff 0 EXIT 0 0 0

#END_TB
"""


def fake_tracer_script(tmp_path: Path, body: str) -> Path:
    """A 'step' that does what a tracer would do to SIMFRONT_TRACE_DIR (or fails to)."""
    p = tmp_path / "fake_step.py"
    p.write_text("import json, os, sys, lzma, time, signal\n"
                 "d = os.environ.get('SIMFRONT_TRACE_DIR')\n" + textwrap.dedent(body))
    return p


def good_body(nregs: int = 12, side_regs: int = 12) -> str:
    kernel = (KERNEL.format(kid=7, nregs=nregs) + BLOCK.format(x=0) + BLOCK.format(x=1))
    side = {"kernel_id": 7, "name": "_Z4axpyfPKfPfi", "grid": [2, 1, 1], "block": [32, 1, 1],
            "regs": side_regs, "shmem": 0, "shmem_static": 0, "shmem_dynamic": 0,
            "binary_version": 90, "stream": 0, "api": "cuLaunchKernel", "graph": False,
            "traced": True, "window_open": True, "file": "kernel-7.traceg.xz"}
    before = dict(side, kernel_id=6, traced=False, window_open=False, file=None)
    return f"""
        with lzma.open(os.path.join(d, 'kernel-7.traceg.xz'), 'wt') as f:
            f.write({kernel!r})
        open(os.path.join(d, 'kernelslist.g'), 'w').write('kernel-7.traceg.xz\\n')
        with open(os.path.join(d, 'launches.jsonl'), 'w') as f:
            f.write(json.dumps({before!r}) + '\\n' + json.dumps({side!r}) + '\\n')
        """


@pytest.fixture
def fake_tracer(tmp_path) -> Tracer:
    # LD_PRELOAD of a file that is no shared object: the loader warns and goes on, so the
    # script under test plays the tracer's part.
    so = tmp_path / "fake_tracer.so"
    so.write_text("not an ELF file\n")
    return Tracer("simfront", so)


def run_fake(tmp_path, fake_tracer, body, **kw):
    script = fake_tracer_script(tmp_path, body)
    return trace(Step(str(script)), tmp_path / "cap", fake_tracer, timeout=kw.pop("timeout", 60),
                 store=tmp_path / "store", **kw)


def test_tracer_that_crashes_registers_nothing(tmp_path, fake_tracer):
    with pytest.raises(CaptureError, match="signal 11"):
        run_fake(tmp_path, fake_tracer, "os.kill(os.getpid(), signal.SIGSEGV)\n")
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())


def test_tracer_that_writes_nothing(tmp_path, fake_tracer):
    with pytest.raises(CaptureError, match="no launch records"):
        run_fake(tmp_path, fake_tracer, "print('step ran')\n")
    assert not (tmp_path / "store").exists()


def test_tracer_that_exits_nonzero_shows_its_log(tmp_path, fake_tracer):
    with pytest.raises(CaptureError, match="(?s)status 3.*cannot write"):
        run_fake(tmp_path, fake_tracer,
                 "sys.stderr.write('[simfront-tracer] cannot write into /x\\n'); sys.exit(3)\n")


def test_tracer_that_hangs_is_killed(tmp_path, fake_tracer):
    with pytest.raises(CaptureError, match="timed out"):
        run_fake(tmp_path, fake_tracer, "time.sleep(60)\n", timeout=2)


def test_empty_window_registers_nothing(tmp_path, fake_tracer):
    body = """
        open(os.path.join(d, 'kernelslist.g'), 'w').close()
        open(os.path.join(d, 'launches.jsonl'), 'w').write(json.dumps({'kernel_id': 1,
            'name': '_Z1kv', 'grid': [1,1,1], 'block': [32,1,1], 'traced': False}) + '\\n')
        """
    with pytest.raises(CaptureError, match="no kernel"):
        run_fake(tmp_path, fake_tracer, body)
    assert not (tmp_path / "store").exists()


def test_good_trace_is_validated_and_registered(tmp_path, fake_tracer):
    res = run_fake(tmp_path, fake_tracer, good_body())
    assert res.report.ok and not res.report.defects
    assert res.stats["kernels"] == 1 and res.stats["launches_window"] == 1
    assert res.stats["launches_total"] == 2
    stored = TraceStore(tmp_path / "store").get("fake_step")
    manifest = stored.manifest
    assert manifest["capture_window"] == "iteration"
    assert manifest["validation"]["ok"] is True
    assert "tracer" in manifest["tools"]
    k = stored.kernels[0]
    assert k["nregs"] == 12 and len(k["sha256"]) == 64
    assert (Path(res.registered) / "launches.jsonl").exists()


def test_header_that_disagrees_with_launch_record_is_a_defect(tmp_path, fake_tracer):
    res = run_fake(tmp_path, fake_tracer, good_body(nregs=12, side_regs=40))
    assert "nregs" in res.report.untrusted_fields
    stored = TraceStore(tmp_path / "store").get("fake_step")
    assert "nregs" in stored.manifest["validation"]["untrusted_fields"]


def test_missing_kernel_file_is_an_error(tmp_path, fake_tracer):
    body = good_body() + "        os.remove(os.path.join(d, 'kernel-7.traceg.xz'))\n"
    with pytest.raises(CaptureError):
        run_fake(tmp_path, fake_tracer, body)
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())


def test_output_folder_must_be_new(tmp_path, fake_tracer):
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "x").write_text("keep me")
    with pytest.raises(InputError, match="not empty"):
        run_fake(tmp_path, fake_tracer, good_body())
    assert (tmp_path / "cap" / "x").read_text() == "keep me"


@pytest.mark.parametrize("text,kind,arg", [("iteration", "iteration", ""),
                                           ("nvtx:simfront.step", "nvtx", "simfront.step"),
                                           ("kernel:_chunk|_bmm", "kernel", "_chunk|_bmm")])
def test_window_parse(text, kind, arg):
    w = Window.parse(text)
    assert (w.kind, w.arg) == (kind, arg) and str(w) == text


@pytest.mark.parametrize("text", ["epoch", "nvtx:", "kernel:(", "kernel"])
def test_window_parse_rejects(text):
    with pytest.raises(InputError):
        Window.parse(text)


def test_sampling_parse_and_env(tmp_path):
    s = Sampling.parse("every:4,first:16")
    assert (s.stride, s.max_ctas) == (4, 16) and str(s) == "every:4,first:16"
    env = Tracer("simfront", tmp_path / "t.so").env(tmp_path, Window.parse("kernel:_chunk"), s)
    assert env["SIMFRONT_SAMPLE_STRIDE"] == "4" and env["SIMFRONT_SAMPLE_MAX_CTAS"] == "16"
    assert env["SIMFRONT_WINDOW"] == "profiler" and env["SIMFRONT_KERNEL_REGEX"] == "_chunk"
    for bad in ("every:0", "first:x", "some:3"):
        with pytest.raises(InputError):
            Sampling.parse(bad)


def test_accelsim_tracer_refuses_what_it_cannot_do(tmp_path):
    acc = Tracer("accelsim", tmp_path / "tracer_tool.so")
    assert acc.env(tmp_path, Window.parse("iteration"), Sampling())["ACTIVE_FROM_START"] == "0"
    with pytest.raises(InputError, match="nvtx"):
        acc.env(tmp_path, Window.parse("nvtx:x"), Sampling())
    with pytest.raises(InputError, match="sample"):
        acc.env(tmp_path, Window.parse("iteration"), Sampling(2, 0))


def test_accelsim_traces_defects_detected(scan_step):
    """The shared traces come from Accel-Sim's tracer: every garbage header is reported."""
    rep = validate_trace_set(scan_step, tracer="accelsim")
    assert rep.ok  # usable instruction lines ...
    assert set(rep.untrusted_fields) == {"nregs", "shmem", "binary version"}  # ... bad headers
    bad_bv = [f for f in rep.defects if f.field == "binary version"]
    assert len(bad_bv) == rep.n_kernels == 47


def test_step_command_for_workload_and_script():
    s = Step("mamba2_lm", "tiny", iterations=2, window_iteration=1, overrides=("seqlen=64",))
    cmd = s.command(Path("/tmp/s.json"))
    assert cmd[:3] == [sys.executable, "-m", "simfront.workloads.run"]
    assert ["--window", "1"] == cmd[cmd.index("--window"):cmd.index("--window") + 2]
    assert "seqlen=64" in cmd and s.label == "mamba2_lm-tiny"
    cmd = Step("x/step.py", script_args=("a",)).command()
    assert cmd[1].endswith("/x/step.py") and Path(cmd[1]).is_absolute() and cmd[2:] == ["a"]
    # the window on a green context's SMs: passed on to the workload, refused for a script
    cmd = Step("mamba2_lm", "paper", 2, 1, sms=64).command()
    assert cmd[cmd.index("--sms"):cmd.index("--sms") + 2] == ["--sms", "64"]
    assert "--sms" not in s.command()
    with pytest.raises(ConfigError, match="registered workloads"):
        Step("x/step.py", sms=64).command()


def test_the_clock_metric_set_adds_what_a_clock_needs_to_the_time_set():
    from simfront.capture.metrics import CLOCK, TIME, metric_list

    assert metric_list("clock")[:len(TIME)] == TIME
    assert "gpc__cycles_elapsed.avg.per_second" in CLOCK
    assert any(m.startswith("sm__pipe_tensor_cycles_active") for m in CLOCK)


def test_read_sidecar_window(tmp_path):
    p = tmp_path / "launches.jsonl"
    recs = [{"kernel_id": i, "name": f"_Z1k{i}v", "grid": [1, 1, 1], "block": [32, 1, 1],
             "traced": i in (2, 3), "window_open": i in (2, 3)} for i in range(5)]
    recs.insert(2, {"captured": True, "name": "_Z1gv", "api": "cuLaunchKernel"})
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    all_ = read_sidecar(p)
    assert len(all_) == 5
    w = window_launches(all_)
    assert [x.kernel_id for x in w] == [2, 3] and [x.order for x in w] == [0, 1]
    p.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1"):
        read_sidecar(p)


def test_accelsim_trace_against_ncu_finds_the_missing_ex_launches(scan_step, repo_root,
                                                                  tmp_path):
    """The shared Accel-Sim trace of step.py against ncu's 66 launches of the same step
    (bench/data/h100_ncu): the 19 Triton launches (cuLaunchKernelEx) are reported missing."""
    import lzma

    from simfront.core.launches import ncu_launches
    from simfront.core.ncu import read_ncu_csv

    src = repo_root / "bench/data/h100_ncu/mamba1_scan_step.ncu.csv.xz"
    if not src.exists():
        pytest.skip(f"{src} not found")
    csv = tmp_path / "step.ncu.csv"
    csv.write_bytes(lzma.open(src).read())
    ref = ncu_launches(read_ncu_csv(csv))
    rep = validate_trace_set(scan_step, "accelsim", reference=ref)
    assert rep.match["n_trace"] == 47 and rep.match["n_reference"] == 66
    missing = rep.match["missing_from_trace"]
    assert len(missing) == 19 and all(name.startswith("_") for name in missing)
    assert {"_chunk_scan_fwd_kernel", "_chunk_state_fwd_kernel"} <= set(missing)
    assert "kernels" in rep.untrusted_fields


def test_cli_reports_a_crashing_tracer(tmp_path, fake_tracer, capsys):
    from simfront.cli import main

    script = fake_tracer_script(tmp_path, "os.kill(os.getpid(), signal.SIGSEGV)\n")
    with pytest.raises(SystemExit) as exc:
        main(["trace", str(script), "--tracer", str(fake_tracer.path), "--out",
              str(tmp_path / "cap"), "--store", str(tmp_path / "store")])
    assert exc.value.code == 2
    assert "signal 11" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def dedup_body() -> str:
    """Launch 7 traced, launches 8 and 9 its repeats (as tracer 1.2 writes them), a launch
    outside the window counted, the tracer's own multiplicity file left out (the driver
    writes it from the records)."""
    body = good_body()
    extra = [{"kernel_id": 8, "same_as": 7, "params_hash": "00ff"},
             {"kernel_id": 9, "same_as": 7, "params_hash": "00ff"},
             {"outside_window": True, "name": "_Z4axpyfPKfPfi", "count": 41}]
    return body + "".join(f"""
        with open(os.path.join(d, 'launches.jsonl'), 'a') as f:
            f.write(json.dumps({x!r}) + '\\n')
        """ for x in extra)


def test_deduplicated_capture_counts_repeats_and_stores_them(tmp_path, fake_tracer):
    res = run_fake(tmp_path, fake_tracer, dedup_body(), dedup=True)
    assert res.report.ok, res.report.findings
    assert res.stats["launches_window"] == 3 and res.stats["launches_traced"] == 1
    assert res.stats["repeats"] == 2
    stored = TraceStore(tmp_path / "store").get("fake_step")
    assert stored.manifest["format_version"] == 2
    assert stored.manifest["launches"] == 3 and stored.kernels[0]["count"] == 3
    from simfront.traces.reader import TraceSet
    assert TraceSet(res.registered).launches == 3
    side = (Path(res.registered) / "launches.jsonl").read_text()
    assert side.count('"same_as"') == 2 and "outside_window" not in side


def test_dedup_env_only_for_simfronts_tracer(tmp_path, fake_tracer):
    from simfront.capture.tracers import Sampling, Window
    from simfront.core.errors import InputError
    env = fake_tracer.env(tmp_path, Window("iteration"), Sampling(), dedup=True)
    assert env["SIMFRONT_DEDUP"] == "1"
    with pytest.raises(InputError, match="deduplicate"):
        Tracer("accelsim", tmp_path / "tracer_tool.so").env(tmp_path, Window("iteration"),
                                                             Sampling(), dedup=True)
