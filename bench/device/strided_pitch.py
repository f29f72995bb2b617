"""Column reads by row pitch: does a power-of-two pitch slow the L2?

The held-out Mamba2 steps' copies read down columns: each lane one bf16 element of another
row. The transposing copies (pitch 4,352 bytes) run at the model's L2 read side (68
one-sector requests a clock on the H100) and read within 5% of ncu's time; the steps'
``CatArrayBatchedCopy`` (pitches 2,048-8,192 bytes) take 1.3x the model's time on the whole
GPU and no longer on 96 SMs than on 132 (bench/RESULTS.md, *Held-out accuracy*). This times
PyTorch's transposing copy (``dst.copy_(src.t())``) of a bf16 ``[R, C]`` tensor, and a cat of
three such transposed views, for row pitches ``2C`` a power of two and a few elements off
it, on the whole GPU and fewer SMs (green contexts). Each figure: the median of CUDA-event
times of back-to-back calls; kernel names from one profiled call each.

    python bench/device/strided_pitch.py [--sms 132,96,64] [--calls 20] [-o OUT.json]

Under ncu (``--calls 1 --sms 132``) each launch's L2 requests and their spread over the L2's
slices come with it (bench/device/strided_pitch.sh).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from event_times import emit, kernel_name, median_us, write_rows  # noqa: E402
from simfront.workloads.green import sm_subset  # noqa: E402

#: elements of each source: 2^24 bf16 (32 MiB), as the held-out copies' 17.8 M
ELEMENTS = 1 << 24
#: bf16 columns (row pitch 2C bytes): powers of two beside pitches a word or more off
COLUMNS = (1024, 1026, 1088, 2048, 2050, 2176, 4096, 4098, 4352)


#: bf16 columns of the ``--rows`` cases: the grid's readers of one sector (the next columns)
#: are R / 512 blocks apart for R = 2^24 / C rows, 1 to 32 blocks here
ROW_CASES = (32768, 16384, 8192, 4096, 2048, 1024, 512)


def transpose(torch, c: int, label: str):
    """The transposing copy of a bf16 [2^24 / c, c] source: a case tuple."""
    r = ELEMENTS // c
    src = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty(c, r, device="cuda", dtype=torch.bfloat16)
    return (f"transpose {label}", 2 * c, (lambda: dst.copy_(src.t())), 2 * r * c)


def row_cases(torch):
    """The transposing copy at a fixed element count, fewer rows to more: how far apart in
    the grid a sector's readers run."""
    return [transpose(torch, c, f"R={ELEMENTS // c}") for c in ROW_CASES]


def cases(torch):
    """(name, pitch bytes, call, bytes read) for every case."""
    out = []
    for c in COLUMNS:
        out.append(transpose(torch, c, f"C={c}"))
        r = ELEMENTS // c
        parts = [torch.randn(r // 3, c, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        views = [p.t() for p in parts]
        out.append((f"cat3 C={c}", 2 * c, (lambda v=views: torch.cat(v, dim=1)),
                    2 * 3 * (r // 3) * c))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sms", default="132,96,64")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("-o", "--out", default=None)
    ap.add_argument("--rows", action="store_true",
                    help="the transposing copy by row count instead (ROW_CASES)")
    ap.add_argument("--no-names", action="store_true",
                    help="skip the profiled call that names each kernel (under ncu)")
    a = ap.parse_args(argv)
    import torch

    props = torch.cuda.get_device_properties(0)
    total = props.multi_processor_count
    rows = []
    for name, pitch, fn, nbytes in (row_cases(torch) if a.rows else cases(torch)):
        kernel = "" if a.no_names else kernel_name(fn)
        for n in (int(s) for s in a.sms.split(",")):
            with sm_subset(None if n >= total else n):
                us = median_us(fn, a.calls)
            row = {"case": name, "pitch": pitch, "pow2": pitch & (pitch - 1) == 0,
                   "sms": min(n, total), "us": round(us, 2), "read_bytes": nbytes,
                   "elements_per_ns": round(nbytes / 2 / us / 1e3, 3), "kernel": kernel[:90]}
            emit(rows, row)
    write_rows(a.out, a.calls, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
