"""Quantities with units: sizes, frequencies and bandwidths.

Every size, clock and bandwidth in a GPU description is one of these types, never a bare
string. They hold exact integers in base units (bytes, hertz, bytes per second) so that
describe -> write -> parse back compares equal. ``parse`` accepts the spellings people
write in YAML ("50 MiB", "1.98 GHz", "3.35 TB/s") and plain numbers in base units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

_NUM = r"([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)"

_SIZE_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
    # Decimal prefixes, spelled as NVIDIA's data sheets spell them ("50 MB" L2 is 50 MiB
    # there); we accept them as SI to stay unambiguous: write KiB/MiB for binary sizes.
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}
_FREQ_UNITS = {"hz": 1, "khz": 10**3, "mhz": 10**6, "ghz": 10**9}
_BW_UNITS = {"b/s": 1, "kb/s": 10**3, "mb/s": 10**6, "gb/s": 10**9, "tb/s": 10**12,
             "kib/s": 1 << 10, "mib/s": 1 << 20, "gib/s": 1 << 30, "tib/s": 1 << 40}


def _split(text: str, units: dict[str, int], kind: str) -> int:
    m = re.fullmatch(rf"\s*{_NUM}\s*([A-Za-z/]*)\s*", text)
    if not m:
        raise ValueError(f"cannot read {text!r} as a {kind} (e.g. {_EXAMPLE[kind]})")
    number, unit = m.group(1), m.group(2).lower()
    if unit == "":
        unit = next(iter(units))
    if unit not in units:
        raise ValueError(f"unknown {kind} unit {m.group(2)!r} in {text!r}; "
                         f"use one of {', '.join(sorted(set(units)))}")
    value = Fraction(number) * units[unit]
    if value.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number of base units")
    return int(value)


_EXAMPLE = {"size": "'50 MiB'", "frequency": "'1980 MHz'", "bandwidth": "'3.35 TB/s'"}


def _fmt(value: int, units: list[tuple[str, int]]) -> str:
    """Largest unit that states ``value`` exactly with at most 3 decimals."""
    for name, scale in units:
        q = Fraction(value, scale)
        if q >= 1 and (q * 1000).denominator == 1:
            text = f"{float(q):.3f}".rstrip("0").rstrip(".")
            if Fraction(text) == q:
                return f"{text} {name}"
    return f"{value} {units[-1][0]}"


@dataclass(frozen=True, order=True)
class Size:
    """A size in bytes."""

    bytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.bytes, int) or isinstance(self.bytes, bool):
            raise TypeError(f"Size needs an integer byte count, got {self.bytes!r}")

    @classmethod
    def parse(cls, value: "str | int | Size") -> "Size":
        if isinstance(value, Size):
            return value
        if isinstance(value, bool):
            raise ValueError(f"cannot read {value!r} as a size")
        if isinstance(value, int):
            return cls(value)
        if isinstance(value, float) and value.is_integer():
            return cls(int(value))
        return cls(_split(str(value), _SIZE_UNITS, "size"))

    @classmethod
    def kib(cls, n: float) -> "Size":
        return cls(int(Fraction(n) * 1024))

    @classmethod
    def mib(cls, n: float) -> "Size":
        return cls(int(Fraction(n) * (1 << 20)))

    @property
    def kib_value(self) -> float:
        return self.bytes / 1024

    def __str__(self) -> str:
        if self.bytes == 0:
            return "0 B"
        for name, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if self.bytes % scale == 0:
                return f"{self.bytes // scale} {name}"
        return f"{self.bytes} B"

    def __mul__(self, k: int) -> "Size":
        return Size(self.bytes * k)

    __rmul__ = __mul__


@dataclass(frozen=True, order=True)
class Frequency:
    """A clock frequency in hertz."""

    hz: int

    def __post_init__(self) -> None:
        if not isinstance(self.hz, int) or isinstance(self.hz, bool):
            raise TypeError(f"Frequency needs an integer number of hertz, got {self.hz!r}")

    @classmethod
    def parse(cls, value: "str | int | Frequency") -> "Frequency":
        if isinstance(value, Frequency):
            return value
        if isinstance(value, bool):
            raise ValueError(f"cannot read {value!r} as a frequency")
        if isinstance(value, (int, float)):
            return cls(int(round(value)))
        return cls(_split(str(value), _FREQ_UNITS, "frequency"))

    @classmethod
    def mhz(cls, n: float) -> "Frequency":
        return cls(int(round(Fraction(n) * 10**6)))

    @property
    def mhz_value(self) -> float:
        return self.hz / 1e6

    @property
    def ghz_value(self) -> float:
        return self.hz / 1e9

    def __str__(self) -> str:
        return _fmt(self.hz, [("GHz", 10**9), ("MHz", 10**6), ("kHz", 10**3), ("Hz", 1)])


@dataclass(frozen=True, order=True)
class Bandwidth:
    """A bandwidth in bytes per second."""

    bytes_per_s: int

    @classmethod
    def parse(cls, value: "str | int | Bandwidth") -> "Bandwidth":
        if isinstance(value, Bandwidth):
            return value
        if isinstance(value, bool):
            raise ValueError(f"cannot read {value!r} as a bandwidth")
        if isinstance(value, (int, float)):
            return cls(int(round(value)))
        return cls(_split(str(value), _BW_UNITS, "bandwidth"))

    @property
    def tb_per_s(self) -> float:
        return self.bytes_per_s / 1e12

    @property
    def gb_per_s(self) -> float:
        return self.bytes_per_s / 1e9

    def __str__(self) -> str:
        return _fmt(self.bytes_per_s, [("TB/s", 10**12), ("GB/s", 10**9), ("MB/s", 10**6),
                                       ("B/s", 1)])


QUANTITY_TYPES = (Size, Frequency, Bandwidth)
