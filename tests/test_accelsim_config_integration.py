"""Every preset through a real Accel-Sim 1.x on the sample selective_scan_fwd trace.

Needs ACCELSIM_ROOT (an Accel-Sim install built by hand outside the repo); without it the
test skips and says so. It asserts nothing about cycles: the point is that no preset makes
the simulator reject its configuration or assert. Uses the Accel-Sim backend
(simfront.sim.accelsim), which rewrites the Hopper trace for the Ampere opcode map; the
sample trace's header already carries the repaired register count (traces/.../repairs.json).
"""

import os

import pytest

from simfront.gpu import load_gpu, preset_names

SAMPLE = "mamba1_selective_scan"
KERNEL = "kernel-35636.traceg.xz"   # selective_scan_fwd_kernel


@pytest.mark.accelsim
@pytest.mark.parametrize("name", preset_names())
def test_preset_runs_in_accelsim(name, repo_root, tmp_path):
    root = os.environ.get("ACCELSIM_ROOT")
    if not root:
        pytest.skip("ACCELSIM_ROOT is not set: no Accel-Sim install to run the presets on "
                    "(build Accel-Sim 1.x outside the repo and point ACCELSIM_ROOT at it)")
    from simfront.sim.accelsim import AccelSimBackend
    from simfront.sim.backend import SimJob

    job = SimJob(job_id=f"gpu-preset-{name}", trace_dir=repo_root / "traces" / SAMPLE,
                 gpu=load_gpu(name), out_dir=tmp_path / name, kernels=(KERNEL,),
                 options={"accelsim_root": root, "isa_compat": "ampere"},
                 timeout_s=float(os.environ.get("SIMFRONT_ACCELSIM_TIMEOUT", 1800)))
    result = AccelSimBackend().run(job)
    assert result.ok, f"{name}: {result.reason}"
