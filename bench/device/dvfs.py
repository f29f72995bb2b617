"""What clock an H100 runs a kernel at, by kernel and by how many SMs run it.

The ncu profiles of the paper steps (``--clock-control none``) show the SM clock moving with
the kernel: 1.97-1.99 GHz for elementwise and memory-bound kernels, 1.80-1.83 for the Triton
SSD kernels, 1.73-1.80 for the small cuBLAS GEMMs and 1.55-1.56 for the LM head's. The model
counts cycles at one clock, so where the clock moves with the SM count (a green context of
fewer SMs draws less power) a what-if's time ratio moves too. This measures it: each
operation loops for about a second on the whole GPU and in green contexts of 96, 64 and 32
SMs while ``nvidia-smi`` samples the SM clock, the board power and the clock-event reasons.
Nothing device-wide is changed: the clocks are read, never set.

    python bench/device/dvfs.py OUT_DIR [--sms 132,96,64,32] [--ops gemm8k,lmhead_dx,...]
    python bench/device/dvfs.py --ncu [--sms ...] [--ops ...]   (three launches each, for ncu)

Writes OUT_DIR/dvfs.csv (one row per SM count and operation: ms per call, the median
sampled clock and power, the share of samples with the software power cap active) and
OUT_DIR/smi.csv (the raw samples).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simfront.workloads.timelines import sm_subset  # noqa: E402

# The paper steps' LM head: 4 x 2048 tokens, d_model 768, vocabulary 50280 (tied).
TOKENS, D_MODEL, VOCAB = 8192, 768, 50280
SMI_FIELDS = ["timestamp", "clocks.sm", "power.draw", "temperature.gpu",
              "clocks_event_reasons.sw_power_cap", "clocks_event_reasons.hw_slowdown",
              "clocks_event_reasons.sw_thermal_slowdown"]


def make_ops(names: list[str]):
    import torch

    dev, bf = "cuda", torch.bfloat16
    ops = {}
    if "gemm8k" in names:
        a = torch.randn(8192, 8192, device=dev, dtype=bf)
        b = torch.randn(8192, 8192, device=dev, dtype=bf)
        ops["gemm8k"] = lambda: a @ b
    if {"lmhead_dx", "lmhead_dw"} & set(names):
        g = torch.randn(TOKENS, VOCAB, device=dev, dtype=bf)
        w = torch.randn(VOCAB, D_MODEL, device=dev, dtype=bf)
        x = torch.randn(TOKENS, D_MODEL, device=dev, dtype=bf)
        # F.linear's backward: grad_input = grad_out @ W, grad_weight = grad_out^T @ x
        ops["lmhead_dx"] = lambda: g @ w
        ops["lmhead_dw"] = lambda: g.t() @ x
    if "copy" in names:
        src = torch.randn(1 << 29, device=dev, dtype=bf)   # 1 GiB
        dst = torch.empty_like(src)
        ops["copy"] = lambda: dst.copy_(src)
    if "ssd_fwd" in names:
        try:
            from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined
        except ImportError as exc:
            print(f"ssd_fwd skipped: {exc}", file=sys.stderr)
        else:
            bsz, L, H, P, N = 4, 2048, 24, 64, 128
            xs = torch.randn(bsz, L, H, P, device=dev, dtype=bf)
            dts = torch.rand(bsz, L, H, device=dev, dtype=torch.float32) * 0.1
            A = -torch.rand(H, device=dev, dtype=torch.float32)
            B = torch.randn(bsz, L, 1, N, device=dev, dtype=bf)
            C = torch.randn(bsz, L, 1, N, device=dev, dtype=bf)
            ops["ssd_fwd"] = lambda: mamba_chunk_scan_combined(xs, dts, A, B, C, chunk_size=256)
    return {n: ops[n] for n in names if n in ops}


def loop(fn, seconds: float) -> tuple[int, float, float, float]:
    """Calls until ``seconds`` have passed (synchronising every few calls): calls, ms per
    call, and the host clock's start and end."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    n, batch = 0, 1
    while True:
        for _ in range(batch):
            fn()
        n += batch
        torch.cuda.synchronize()
        el = time.time() - t0
        if el >= seconds:
            return n, el * 1e3 / n, t0, t0 + el
        batch = max(1, min(64, int(n * (seconds - el) / max(el, 1e-6) / 4) or 1))


def start_smi(path: Path) -> subprocess.Popen | None:
    fields = list(SMI_FIELDS)
    for _ in range(2):
        probe = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True)
        if probe.returncode == 0:
            break
        fields = fields[:4]   # an older nvidia-smi: no clock-event reasons
    else:
        print(f"nvidia-smi: {probe.stderr.strip()}", file=sys.stderr)
        return None
    f = path.open("w")
    f.write(",".join(fields) + "\n")
    f.flush()
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(fields)}",
                             "--format=csv,noheader,nounits", "-lms", "20"], stdout=f)


def read_smi(path: Path) -> list[dict]:
    rows = []
    with path.open() as f:
        for r in csv.DictReader(f, skipinitialspace=True):
            try:
                r["t"] = dt.datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            except (KeyError, ValueError):
                continue
            rows.append(r)
    return rows


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default=None)
    ap.add_argument("--sms", default="132,96,64,32")
    ap.add_argument("--ops", default="gemm8k,lmhead_dx,lmhead_dw,copy,ssd_fwd")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--ncu", action="store_true", help="three calls each, no sampling")
    a = ap.parse_args(argv)
    import torch

    total = torch.cuda.get_device_properties(0).multi_processor_count
    sms = [int(s) for s in a.sms.split(",")]
    ops = make_ops(a.ops.split(","))
    if a.ncu:
        for n in sms:
            with sm_subset(None if n >= total else n):
                for fn in ops.values():
                    for _ in range(3):
                        fn()
                torch.cuda.synchronize()
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    smi = start_smi(out / "smi.csv")
    time.sleep(0.5)
    phases = []
    for n in sms:
        with sm_subset(None if n >= total else n):
            for name, fn in ops.items():
                calls, ms, t0, t1 = loop(fn, a.seconds)
                phases.append((n, name, calls, ms, t0, t1))
                print(f"{n:4d} SMs {name:10s} {calls:5d} calls {ms:9.3f} ms", flush=True)
                time.sleep(0.3)   # let the power controller see the next phase apart
    time.sleep(0.3)
    if smi is not None:
        smi.terminate()
        smi.wait()
    samples = read_smi(out / "smi.csv") if smi is not None else []
    with (out / "dvfs.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sms", "op", "calls", "ms_per_call", "samples", "clock_mhz", "power_w",
                    "power_cap_share", "device"])
        for n, name, calls, ms, t0, t1 in phases:
            # the middle of the phase: the controller settles within ~100 ms
            lo, hi = t0 + 0.25 * (t1 - t0), t1
            s = [r for r in samples if lo <= r["t"] <= hi]
            clk = median([float(r["clocks.sm"]) for r in s])
            pw = median([float(r["power.draw"]) for r in s])
            cap = [r.get("clocks_event_reasons.sw_power_cap", "") for r in s]
            cap_share = (sum(c.strip() == "Active" for c in cap) / len(cap)) if cap and cap[0] \
                else float("nan")
            w.writerow([n, name, calls, f"{ms:.4f}", len(s), clk, pw, f"{cap_share:.2f}",
                        torch.cuda.get_device_name(0)])
    print((out / "dvfs.csv").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
