"""The workload registry: names, presets and where each model family lives. Importing this
does not import torch."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

from simfront.core.errors import ConfigError
from simfront.workloads import presets as _p
from simfront.workloads.presets import Config


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    summary: str
    family: str                          # module under simfront.workloads.models
    preset_names: tuple[str, ...]
    _factory: Callable[[str], Config]

    def config(self, preset: str) -> Config:
        if preset not in self.preset_names:
            raise ConfigError(f"workload {self.name!r} has no preset {preset!r}; valid: "
                              f"{', '.join(self.preset_names)}", field="preset")
        cfg = self._factory(preset)
        cfg.validate()
        return cfg

    @property
    def presets(self) -> dict[str, Config]:
        return {p: self.config(p) for p in self.preset_names}

    def module(self) -> ModuleType:
        """The family module (imports torch)."""
        return importlib.import_module(f"simfront.workloads.models.{self.family}")


def _spec(name: str, summary: str, family: str, factory) -> WorkloadSpec:
    return WorkloadSpec(name, summary, family, _p.PRESET_NAMES[name], factory)


WORKLOADS: dict[str, WorkloadSpec] = {s.name: s for s in (
    _spec("mamba1_lm", "Mamba1 LM (mamba_ssm MambaLMHeadModel, selective scan)", "lm",
          _p.mamba1_lm),
    _spec("mamba2_lm", "Mamba2 LM (mamba_ssm MambaLMHeadModel, SSD Triton kernels)", "lm",
          _p.mamba2_lm),
    _spec("hybrid_lm", "Mamba2 LM with causal attention blocks (torch SDPA)", "lm",
          _p.hybrid_lm),
    _spec("mambavision", "MambaVision image classifier (MambaVision-T at 224 px)", "vision",
          _p.mambavision),
    _spec("graphmamba", "GraphMamba: GIN message passing + Mamba over degree-ordered nodes",
          "graph", _p.graphmamba),
)}


def get_spec(name: str) -> WorkloadSpec:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ConfigError(f"unknown workload {name!r}; valid: {', '.join(WORKLOADS)}",
                          field="workload") from None
