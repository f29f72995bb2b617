"""Pure-PyTorch re-implementations of the mamba_ssm pieces our workloads use.

``import mamba_ssm`` loads its compiled CUDA extension unconditionally, so nothing of it can
be imported on a machine without that build (CPU CI). These modules have mamba_ssm 2.3.2's
parameter names, shapes, initialisation order and forward math, with its reference
kernels (``selective_scan_ref``, ``ssd_minimal_discrete``) in place of the CUDA/Triton ones.
"""
