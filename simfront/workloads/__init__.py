"""workloads stage: PyTorch training steps of Mamba-family models, to run, trace or profile.

    from simfront.workloads import WORKLOADS, build, run
    wl = build("mamba2_lm", "tiny", device="cuda")     # model, AdamW, fixed batch
    loss = wl.step()                                   # forward, backward, optimizer step
    summary = run("mamba2_lm", "paper", iterations=3, window=2)

``python -m simfront.workloads.run NAME --preset P --iterations N --window K`` does the same
in a process of its own and prints a JSON summary. Importing this package does not import
torch; ``build`` and ``run`` do.
"""

from simfront.workloads.kernels import check_kernels, expected_kernels
from simfront.workloads.presets import GraphConfig, LMConfig, VisionConfig, with_overrides
from simfront.workloads.registry import WORKLOADS, WorkloadSpec, get_spec
from simfront.workloads.runner import run as _run
from simfront.workloads.workload import build as _build


def build(*args, **kwargs):
    return _build(*args, **kwargs)


def run(*args, **kwargs):
    return _run(*args, **kwargs)


build.__doc__ = "See simfront.workloads.workload.build."
run.__doc__ = "See simfront.workloads.runner.run."

__all__ = ["WORKLOADS", "WorkloadSpec", "get_spec", "build", "run", "LMConfig",
           "VisionConfig", "GraphConfig", "with_overrides", "expected_kernels", "check_kernels"]
