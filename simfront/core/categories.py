"""Kernel-name classifier: which operator of a training step a GPU kernel belongs to.

The categories are the seed study's (GEMM, SSM, normalization, elementwise, loss,
optimizer) plus three that a Mamba training step has and that would otherwise be folded
into the wrong group: ``conv`` (the depthwise causal conv1d of the mixer), ``embedding``
(the token embedding's gather and its sort-and-scatter backward) and ``other``.

Rules are ordered regular expressions searched (case-insensitively) in the whole kernel
name, so they work on demangled names (ncu) and mangled ones (trace headers) alike. The
first rule that matches wins; order matters where names overlap (``multi_tensor_apply``
kernels carry elementwise functors, cuBLAS's split-K reduction is part of a GEMM).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: Categories in display order.
CATEGORIES: tuple[str, ...] = ("gemm", "ssm", "conv", "normalization", "elementwise", "loss",
                               "optimizer", "embedding", "other")

#: What each category holds, for plot legends and docs.
CATEGORY_DOC: dict[str, str] = {
    "gemm": "matrix multiplies on tensor cores (cuBLAS nvjet/sm90 xmma, CUTLASS, split-K reduce)",
    "ssm": "state-space scan kernels: Mamba1 selective_scan_*, Mamba2 SSD Triton kernels "
           "(_chunk_*, _bmm_chunk_*, _state_passing_*)",
    "conv": "the mixer's depthwise causal conv1d (causal_conv1d or nn.Conv1d's depthwise kernels)",
    "normalization": "RMSNorm/LayerNorm kernels (mamba_ssm's Triton _layer_norm_*, PyTorch norms)",
    "elementwise": "PyTorch elementwise, copy/cast, fill, concatenation, reductions and scans",
    "loss": "cross-entropy: log-softmax forward/backward and NLL loss",
    "optimizer": "AdamW's multi-tensor-apply kernels and fused optimizers",
    "embedding": "token embedding gather and its backward (sort, unique, segment sums)",
    "other": "anything no rule names",
}

_RULES: tuple[tuple[str, str], ...] = (
    ("gemm", r"nvjet|gemm|cutlass|xmma|splitkreduce|cublas|wgmma|hgmma|matmul"),
    ("ssm", r"selective_scan|_chunk_(scan|state|cumsum)|_bmm_chunk|_state_passing|ssd_|"
            r"mamba_chunk"),
    ("optimizer", r"multi_tensor_apply|adam|_foreach_|fused_sgd|fused_lamb"),
    ("loss", r"softmax|nll_loss|cross_entropy|crossentropy"),
    ("normalization", r"layer_?norm|rms_?norm|group_?norm|batch_?norm"),
    ("conv", r"conv_depthwise|causal_conv1d|conv1d|conv2d|convolution|implicit_?conv"),
    ("embedding", r"embedding|radixsort|radix_sort|unique_by_key|sum_and_scatter|"
                  r"compute_grad_weight|partial_segment|partials_per_segment|"
                  r"num_of_partial_segments|vectorized_gather|indexselect|index_select|"
                  r"devicescan|devicecompact|scan::"),
    ("elementwise", r"elementwise|reduce_kernel|copy|fill|catarray|cat_array|scan_innermost|"
                    r"scan_outer|arange|index_kernel|flip_kernel|unrolled|vectorized|"
                    r"pointwise|triton_(poi|red|per)_"),
)
_COMPILED = tuple((cat, re.compile(rx, re.IGNORECASE)) for cat, rx in _RULES)


@lru_cache(maxsize=4096)
def kernel_category(name: str) -> str:
    """The category of a kernel, from its (demangled or mangled) name; ``other`` if none."""
    for cat, rx in _COMPILED:
        if rx.search(name):
            return cat
    return "other"


@lru_cache(maxsize=4096)
def short_name(name: str) -> str:
    """A readable kernel name: the function's own name without return type, namespaces,
    template arguments or parameter list (``void native::<unnamed>::cunn_SoftMaxForward<4,
    float>(T4 *, ...)`` -> ``cunn_SoftMaxForward``). Mangled (``_Z...``) and plain names
    (Triton, nvjet) pass through the demangling-free path: a mangled name gives its first
    source name."""
    s = name.strip()
    if s.startswith("_Z"):
        # Itanium mangling: _Z<len><id>... or _ZN<len><id><len><id>...E; the last source
        # name of the nested name is the function's own.
        pos = 3 if s.startswith("_ZN") else 2
        last = None
        while True:
            m = re.match(r"\d+", s[pos:])
            if not m:
                break
            n = int(m.group(0))
            start = pos + m.end()
            last = s[start:start + n]
            pos = start + n
            if not s.startswith("_ZN"):
                break
        return last or s
    # Demanglers disagree on a few spellings: ncu writes ``<unnamed>`` where c++filt (and so
    # kineto's timelines) writes ``(anonymous namespace)``, whose parenthesis would otherwise
    # read as the parameter list. Lambdas (``{lambda()#3}``) nest like template arguments.
    s = s.replace("(anonymous namespace)", "<unnamed>")
    # Walk the top level only: template arguments, parameter lists and brackets nest.
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch in "<([{":
            if ch == "(" and depth == 0:
                break
            depth += 1
            continue
        if ch in ">)]}":
            depth = max(depth - 1, 0)
            continue
        if depth == 0:
            out.append(ch)
    base = "".join(out).strip()
    if base.startswith("void "):
        base = base[5:]
    base = base.split("::")[-1].strip()
    return base or s
