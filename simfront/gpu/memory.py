"""The memory side: L2 cache and DRAM (HBM)."""

from __future__ import annotations

from dataclasses import dataclass

from simfront.gpu.units import Bandwidth, Frequency, Size

# Set-index / partition hashes Accel-Sim knows, by our name -> its letter or number.
L2_SET_HASHES = {"linear": "L", "xor": "X", "ipoly": "P", "fermi": "H"}
PARTITION_INDEXING = {"linear": 0, "xor": 1, "ipoly": 2, "custom": 3}


@dataclass(frozen=True)
class L2:
    """The L2 cache, split over the memory channels.

    size: total L2.
    banks_per_channel: L2 banks in front of each DRAM channel (Accel-Sim: memory
        sub-partitions per channel); banks = channels x banks_per_channel.
    line / sector: line size and sector size (Accel-Sim's sector cache needs line = 4
        sectors).
    assoc: ways per set; sets per bank follow from size, banks, line and assoc.
    set_hash: set-index function: linear | xor | ipoly | fermi.
    port_width: bytes a bank returns per L2 clock.
    hit_latency: load-to-use clocks (core clock) of an L2 hit seen by an SM.
    mshr_entries: misses in flight per bank.
    """

    size: Size
    banks_per_channel: int
    line: Size
    sector: Size
    assoc: int
    set_hash: str
    port_width: Size
    hit_latency: int
    mshr_entries: int

    def banks(self, channels: int) -> int:
        return channels * self.banks_per_channel

    def bank_size(self, channels: int) -> Size:
        return Size(self.size.bytes // self.banks(channels))

    def sets(self, channels: int) -> float:
        """Sets per bank; a whole number when the geometry is consistent."""
        denom = self.banks(channels) * self.line.bytes * self.assoc
        return self.size.bytes / denom if denom else 0.0


@dataclass(frozen=True)
class DRAM:
    """The DRAM (HBM) behind the L2.

    stacks x channels_per_stack independent channels, each channel_width_bits wide,
    clocked at ``clock`` with ``transfers_per_clock`` data transfers per pin per clock
    (2 for HBM's double data rate); peak bandwidth follows.
    partition_indexing: how addresses are spread over channels: linear | xor | ipoly |
        custom (Accel-Sim -gpgpu_memory_partition_indexing).
    latency: DRAM access latency in DRAM clocks added by the controller model.
    banks / bank_groups: per channel.
    timing: DRAM timing parameters in DRAM clocks (Accel-Sim -gpgpu_dram_timing_opt).
    """

    kind: str
    capacity: Size
    stacks: int
    channels_per_stack: int
    channel_width_bits: int
    clock: Frequency
    transfers_per_clock: int
    partition_indexing: str
    latency: int
    banks: int
    bank_groups: int
    timing: "DRAMTiming"

    @property
    def channels(self) -> int:
        return self.stacks * self.channels_per_stack

    @property
    def bus_width_bits(self) -> int:
        return self.channels * self.channel_width_bits

    @property
    def bandwidth(self) -> Bandwidth:
        return Bandwidth(self.bus_width_bits // 8 * self.clock.hz * self.transfers_per_clock)


@dataclass(frozen=True)
class DRAMTiming:
    """JEDEC-style timings in DRAM clocks (names as in GPGPU-Sim's timing string)."""

    CCD: int
    RRD: int
    RCD: int
    RAS: int
    RP: int
    RC: int
    CL: int
    WL: int
    CDLR: int
    WR: int
    CCDL: int
    RTPL: int
