"""Quantities: sizes, clocks and bandwidths parse from the spellings YAML uses and print
back exactly."""

import pytest

from simfront.gpu.units import Bandwidth, Frequency, Size


@pytest.mark.parametrize("text,nbytes", [("50 MiB", 50 << 20), ("256KiB", 256 << 10),
                                         ("32 B", 32), (4096, 4096), ("80 GiB", 80 << 30),
                                         ("1.5 KiB", 1536)])
def test_size_parse(text, nbytes):
    assert Size.parse(text).bytes == nbytes
    assert Size.parse(str(Size.parse(text))) == Size.parse(text)


def test_frequency_and_bandwidth_round_trip():
    f = Frequency.parse("1.98 GHz")
    assert f.hz == 1_980_000_000 and Frequency.parse(str(f)) == f
    assert Frequency.parse("2619 MHz").mhz_value == 2619
    bw = Bandwidth.parse("3.35 TB/s")
    assert bw.bytes_per_s == 3_350_000_000_000 and Bandwidth.parse(str(bw)) == bw


@pytest.mark.parametrize("bad", ["fifty MiB", "50 parsecs", "0.3 B", True])
def test_size_rejects(bad):
    with pytest.raises(ValueError):
        Size.parse(bad)


def test_no_bare_strings_in_api():
    with pytest.raises(TypeError):
        Size("32KiB")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Frequency("1 GHz")  # type: ignore[arg-type]
