"""Which kernels a workload runs on: mamba_ssm's CUDA/Triton ones or our reference ones.

``auto`` picks ``mamba_ssm`` on a CUDA device when the package imports, else ``reference``.
mamba_ssm is only ever imported from here and from the model builders, after this check,
because importing any part of it loads its compiled CUDA extension.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Callable

from simfront.core.errors import BackendError, ConfigError

IMPLS = ("auto", "mamba_ssm", "reference")


@functools.cache
def mamba_ssm_import_error() -> str | None:
    """None when ``mamba_ssm`` imports here, else why not (one line)."""
    if importlib.util.find_spec("mamba_ssm") is None:
        return "mamba_ssm is not installed"
    try:
        import mamba_ssm  # noqa: F401
    except Exception as exc:  # its CUDA extension fails in many ways (no GPU, ABI, ...)
        return f"import mamba_ssm failed: {type(exc).__name__}: {exc}"
    return None


def resolve_impl(impl: str, device: str) -> str:
    """The concrete implementation (``mamba_ssm`` or ``reference``) for a request."""
    if impl not in IMPLS:
        raise ConfigError(f"unknown impl {impl!r}; valid: {', '.join(IMPLS)}", field="impl")
    is_cuda = str(device).startswith("cuda")
    if impl == "auto":
        return "mamba_ssm" if is_cuda and mamba_ssm_import_error() is None else "reference"
    if impl == "mamba_ssm":
        if not is_cuda:
            raise ConfigError("impl 'mamba_ssm' needs a CUDA device; use impl 'reference' on "
                              f"{device!r}", field="device")
        err = mamba_ssm_import_error()
        if err is not None:
            raise BackendError(f"impl 'mamba_ssm' unavailable: {err}. Install the sm_90 wheel "
                               "from shared/wheels (pip install --no-deps --target DIR) and put "
                               "DIR on PYTHONPATH, or use impl 'reference'")
    return impl


def selective_scan(impl: str) -> Callable:
    """The selective-scan function with mamba_ssm's ``selective_scan_fn`` signature."""
    if impl == "mamba_ssm":
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
        return selective_scan_fn
    from simfront.workloads.reference.ops import selective_scan_ref
    return selective_scan_ref


def mamba1_class(impl: str) -> type:
    if impl == "mamba_ssm":
        from mamba_ssm.modules.mamba_simple import Mamba
        return Mamba
    from simfront.workloads.reference.mamba1 import Mamba
    return Mamba


def lm_head_model_class(impl: str) -> Callable:
    """A callable (mamba_config_kwargs, device) -> MambaLMHeadModel."""
    if impl == "mamba_ssm":
        from mamba_ssm.models.config_mamba import MambaConfig
        from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel

        def make(kwargs, device):
            return MambaLMHeadModel(MambaConfig(**kwargs), device=device)
        return make
    from simfront.workloads.reference.lm import MambaLMHeadModel as RefLM

    def make_ref(kwargs, device):
        return RefLM(kwargs, device=device)
    return make_ref
