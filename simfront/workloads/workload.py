"""A built workload: model, AdamW optimizer, a fixed batch, and ``step()`` — forward,
backward and optimizer step under bf16 autocast — that a user can run, trace or profile."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from simfront.core.errors import ConfigError
from simfront.workloads.impl import resolve_impl
from simfront.workloads.presets import Config, as_dict, with_overrides
from simfront.workloads.registry import get_spec

AMP_DTYPES = ("bf16", "fp16", "none")


@dataclass
class Workload:
    name: str
    preset: str
    config: Config
    impl: str                 # "mamba_ssm" or "reference"
    device: str
    amp: str                  # "bf16", "fp16" or "none"
    model: Any                # torch.nn.Module
    optimizer: Any            # torch.optim.AdamW
    batch: dict[str, Any]     # the fixed batch of make_batch(0)
    family: Any = field(repr=False)
    nvtx: bool = False        # NVTX sub-ranges (forward/backward/optimizer) inside step()

    @property
    def param_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def make_batch(self, index: int = 0) -> dict[str, Any]:
        """Batch number ``index``: the same tensors for the same config seed and index."""
        import torch
        gen = torch.Generator().manual_seed(self.config.seed * 1_000_003 + index)
        return self.family.make_batch(self.config, self.device, gen)

    def autocast(self):
        import torch
        if self.amp == "none":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.amp == "bf16" else torch.float16
        return torch.autocast(device_type=self.device.split(":")[0], dtype=dtype)

    def forward(self, batch: dict[str, Any] | None = None):
        """The model's output for a batch (under autocast), without a backward pass."""
        with self.autocast():
            return self.family.forward(self.model, self.batch if batch is None else batch)

    def step(self, batch: dict[str, Any] | None = None):
        """One training step. Returns the loss as a (device) tensor: reading it would
        synchronise, so callers do that outside any capture window."""
        batch = self.batch if batch is None else batch
        with self._range("simfront.forward"), self.autocast():
            loss = self.family.loss(self.model, batch)
        with self._range("simfront.backward"):
            loss.backward()
        with self._range("simfront.optimizer"):
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def _range(self, name: str):
        if not self.nvtx:
            return contextlib.nullcontext()
        import torch
        return torch.cuda.nvtx.range(name)

    def output_shape(self) -> tuple[int, ...]:
        return self.family.output_shape(self.config)

    def describe(self) -> dict[str, Any]:
        return {"workload": self.name, "preset": self.preset, "impl": self.impl,
                "device": self.device, "amp": self.amp, "params": self.param_count,
                "config": as_dict(self.config)}


def build(name: str, preset: str = "tiny", device: str = "cuda", impl: str = "auto", *,
          overrides: dict[str, Any] | None = None, amp: str = "bf16",
          nvtx: bool | None = None) -> Workload:
    """Build workload ``name`` at ``preset`` on ``device``.

    impl: ``auto`` (mamba_ssm kernels on CUDA when importable, else reference),
    ``mamba_ssm`` or ``reference``. overrides: config fields to change (``{"seqlen": 256}``).
    The model is built after ``torch.manual_seed(config.seed)``, so two builds with the same
    arguments hold identical weights and batches.
    """
    import torch

    spec = get_spec(name)
    if amp not in AMP_DTYPES:
        raise ConfigError(f"unknown amp {amp!r}; valid: {', '.join(AMP_DTYPES)}", field="amp")
    config = with_overrides(spec.config(preset), overrides)
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} asked for, but torch {torch.__version__} sees no "
                          "CUDA device; use device 'cpu' (reference kernels)", field="device")
    concrete = resolve_impl(impl, device)
    family = spec.module()
    torch.manual_seed(config.seed)
    model = family.build_model(config, concrete, device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    wl = Workload(name=name, preset=preset, config=config, impl=concrete, device=device,
                  amp=amp, model=model, optimizer=optimizer, batch={}, family=family,
                  nvtx=str(device).startswith("cuda") if nvtx is None else nvtx)
    wl.batch = wl.make_batch(0)
    return wl
