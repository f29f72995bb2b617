"""The whole GPU: SMs, memory, clocks, interconnect, plus raw simulator options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simfront.gpu.memory import DRAM, L2
from simfront.gpu.serialize import LineLookup, from_plain, to_plain
from simfront.gpu.sm import SM
from simfront.gpu.units import Frequency


@dataclass(frozen=True)
class Clocks:
    """On-chip clock domains. ``core`` is the SM clock the model counts cycles in; the
    interconnect and L2 run in their own domains (the DRAM clock lives in ``DRAM``)."""

    core: Frequency
    interconnect: Frequency
    l2: Frequency


@dataclass(frozen=True)
class TensorClock:
    """The SM clock a kernel with tensor-pipe work runs at, on ``sms`` SMs: a share of
    ``clocks.core``."""

    sms: int
    share: float


@dataclass(frozen=True)
class ClockLimits:
    """How far the SM clock stays below ``clocks.core`` under load (DVFS), by what the
    kernel runs and on how many SMs. Measured on the H100 with ncu in green contexts
    (bench/device/clock_steps.sh; bench/RESULTS.md, *The SM clock in a step*): a kernel with
    no tensor-pipe work runs at the core clock; one with any runs at the ``tensor`` share
    for its SM count (interpolated linearly, held beyond the ends), and lower still where
    the power cap binds: with its tensor pipes busy a share ``u`` of its active cycles on
    ``n`` SMs, at most ``power_share * (n * u / power_sms) ** -power_exponent`` of the core
    clock. Shares, so a ``clock`` variant moves the limits with the clock."""

    tensor: tuple[TensorClock, ...]
    power_share: float
    power_sms: int
    power_exponent: float


@dataclass(frozen=True)
class Interconnect:
    """SM <-> memory-partition network.

    model: 'xbar' (Accel-Sim's built-in local crossbar, -network_mode 2) or 'booksim'
        (-network_mode 1 with the written .icnt file).
    flit_size: bytes per flit; subnets: separate request and reply networks.
    buffer: input and output buffer entries per node.
    """

    model: str
    flit_size: int
    subnets: int
    buffer: int


@dataclass(frozen=True)
class GPU:
    """A complete GPU description. Build one with a preset (``h100()``), ``load_gpu`` or
    ``with_variants``; ``validate`` it before a backend uses it.

    raw: simulator options passed through unchanged (Accel-Sim option name without the
    leading '-', to its value); the escape hatch for what the description cannot say.
    They override what the writer derives and are validated like everything else.

    empty_kernel_ns: what a kernel that does nothing lasts in a stream, as CUPTI times it
        in a step: the front end's fixed cost per kernel (launch and drain), which no other
        field holds. The H200 takes 0.32 us less than the H100 (bench/device/launch_cost.py).
        None: the H100's.
    ncu_fixed_cycles: the clocks ncu's ``gpc__cycles_elapsed.max`` counts beyond the SM's
        ``sm__cycles_active.max`` for a one-block kernel profiled alone (caches flushed,
        launches serialised): a kernel's fixed cost as ncu measures it, which the model
        takes for a kernel it starts with an empty L2 (``cold``, ncu's conditions). The H200:
        2,848 (bench/device/ifetch.sh). None: the model's fitted ``launch.cycles`` (the
        H100's, 3,800) moved by the stream's ``empty_kernel_ns`` difference.
    clock_limits: how the SM clock falls below ``clocks.core`` under load, by kernel and SM
        count (:class:`ClockLimits`). None: every kernel at the core clock.
    """

    name: str
    sm_count: int
    sm: SM
    l2: L2
    dram: DRAM
    clocks: Clocks
    interconnect: Interconnect
    raw: tuple[tuple[str, str], ...] = ()
    empty_kernel_ns: float | None = None
    ncu_fixed_cycles: float | None = None
    clock_limits: ClockLimits | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML/JSON-able); sizes and clocks as strings with units."""
        data = to_plain(self)
        data["raw"] = dict(self.raw)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: Path | None = None,
                  lines: LineLookup | None = None) -> "GPU":
        """Inverse of ``to_dict``; a bad field raises ConfigError naming it (and the file
        and line when ``source``/``lines`` say where the data came from)."""
        return from_plain(cls, data, source=source, lines=lines)

    def replace(self, **changes: Any) -> "GPU":
        return dataclasses.replace(self, **changes)

    @property
    def raw_options(self) -> dict[str, str]:
        return dict(self.raw)

    def units(self, pipe: str) -> int:
        return self.sm.units(pipe)
