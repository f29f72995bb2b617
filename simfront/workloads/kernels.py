"""The kernels a complete capture of one training step must hold, per workload and config.

Counts are per step with impl ``mamba_ssm`` and were checked against the shared H100 ncu
profiles of the paper-size LM steps (tests/test_workloads_kernels.py). A capture that misses
one of these (the 2024 Accel-Sim tracer misses every ``cuLaunchKernelEx`` launch) is
incomplete. GEMMs are a family: cuBLAS picks kernels by shape, so only their presence is
required.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from simfront.core.categories import short_name
from simfront.workloads.presets import Config, GraphConfig, LMConfig, VisionConfig

TRITON = "cuLaunchKernelEx"      # Triton kernels (and cuBLAS sm90 nvjet GEMMs)
CUDA = "cuLaunchKernel"          # mamba_ssm's CUDA selective scan, PyTorch's own kernels

SSD_FWD = ("_chunk_cumsum_fwd_kernel", "_chunk_state_fwd_kernel", "_state_passing_fwd_kernel",
           "_bmm_chunk_fwd_kernel", "_chunk_scan_fwd_kernel")
SSD_BWD = ("_chunk_cumsum_bwd_kernel", "_chunk_state_bwd_db_kernel",
           "_state_passing_bwd_kernel", "_bmm_chunk_bwd_kernel",
           "_chunk_scan_bwd_dstates_kernel", "_chunk_scan_bwd_dc_kernel",
           "_chunk_scan_bwd_dcb_kernel", "_chunk_scan_bwd_ddAcs_stable_kernel",
           "_chunk_scan_chunk_state_bwd_dx_kernel")
GEMM_PATTERN = r"nvjet_|gemm|xmma|cutlass"


@dataclass(frozen=True)
class KernelExpectation:
    name: str               # kernel name as ncu prints it, before template arguments
    count: int | None       # launches per training step; None: at least one
    api: str                # the driver call that launches it on the H100
    pattern: str | None = None   # a regular expression instead of an exact name

    def matches(self, kernel_name: str) -> bool:
        if self.pattern is not None:
            return re.search(self.pattern, kernel_name) is not None
        return base_name(kernel_name) == self.name


def base_name(kernel_name: str) -> str:
    """``void selective_scan_fwd_kernel<...>(SSMParamsBase)`` -> ``selective_scan_fwd_kernel``;
    a mangled name, as trace headers carry it (``_Z25selective_scan_fwd_kernelI...``), gives
    the same."""
    name = kernel_name.strip()
    if name.startswith("_Z"):
        return short_name(name)
    if name.startswith("void "):
        name = name[5:]
    return re.split(r"[<(]", name, maxsplit=1)[0].strip()


def expected_kernels(config: Config) -> list[KernelExpectation]:
    """What one training step of ``config`` launches, for the kernels that identify it."""
    out: list[KernelExpectation] = []
    gemm = KernelExpectation("GEMM (cuBLAS)", None, TRITON, GEMM_PATTERN)
    if isinstance(config, LMConfig):
        n_attn = len(config.attn_layer_idx)
        n_ssm = config.n_layer - n_attn
        if config.layer == "Mamba2":
            # The backward recomputes cumsum, chunk state, state passing and the C·B
            # products, so those forward kernels run twice per layer.
            for k in SSD_FWD:
                out.append(KernelExpectation(k, n_ssm * (1 if k == "_chunk_scan_fwd_kernel"
                                                         else 2), TRITON))
            # _bmm_chunk_bwd runs twice per layer: C·B's gradient into dB and into dC.
            out += [KernelExpectation(k, n_ssm * (2 if k == "_bmm_chunk_bwd_kernel" else 1),
                                      TRITON) for k in SSD_BWD]
            gated = n_ssm                          # Mamba2's gated RMSNorm, same kernels
        else:
            out += [KernelExpectation("selective_scan_fwd_kernel", n_ssm, CUDA),
                    KernelExpectation("selective_scan_bwd_kernel", n_ssm, CUDA)]
            gated = 0
        if config.fused_add_norm:
            norms = config.n_layer + 1 + gated     # add+norm per block, final norm
            out += [KernelExpectation("_layer_norm_fwd_1pass_kernel", norms, TRITON),
                    KernelExpectation("_layer_norm_bwd_kernel", norms, TRITON)]
        out.append(gemm)
    elif isinstance(config, VisionConfig):
        mixers = sum(depth - len(config.transformer_blocks(depth))
                     for depth in config.depths[2:])
        out += [KernelExpectation("selective_scan_fwd_kernel", mixers, CUDA),
                KernelExpectation("selective_scan_bwd_kernel", mixers, CUDA), gemm]
    elif isinstance(config, GraphConfig):
        out += [KernelExpectation("selective_scan_fwd_kernel", config.n_layer, CUDA),
                KernelExpectation("selective_scan_bwd_kernel", config.n_layer, CUDA), gemm]
    return out


def check_kernels(kernel_names: Iterable[str], config: Config) -> list[str]:
    """Problems (empty when none) of a step's launch list against ``expected_kernels``:
    a kernel missing, or launched a different number of times."""
    names = list(kernel_names)
    counts = Counter(base_name(n) for n in names)
    problems = []
    for exp in expected_kernels(config):
        seen = (sum(1 for n in names if exp.matches(n)) if exp.pattern is not None
                else counts.get(exp.name, 0))
        if seen == 0:
            problems.append(f"{exp.name}: missing (launched with {exp.api})")
        elif exp.count is not None and seen != exp.count:
            problems.append(f"{exp.name}: {seen} launches, expected {exp.count}")
    return problems
