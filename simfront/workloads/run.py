"""``python -m simfront.workloads.run NAME --preset P --iterations N --window K``: the process
the capture driver runs under a tracer or ncu. Prints one JSON line (RunSummary) on stdout
as its last line, and writes it to ``--summary PATH`` when given. Exit status 2 with a
one-line message on stderr for bad input.

Only argparse and the standard library besides torch (and mamba_ssm), so it runs on the
capture machine with nothing else installed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simfront.core.atomic import write_text
from simfront.core.errors import ConfigError, SimfrontError
from simfront.workloads.green import parse_sms
from simfront.workloads.impl import IMPLS
from simfront.workloads.registry import WORKLOADS
from simfront.workloads.runner import run
from simfront.workloads.shared_hold import parse_kib
from simfront.workloads.timelines import run_timelines
from simfront.workloads.workload import AMP_DTYPES, build


def parse_sets(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected KEY=VALUE, got {item!r}", field="--set")
        out[key.strip()] = value.strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m simfront.workloads.run",
                                description="Run a workload's training step; bracket one "
                                            "steady-state iteration for a tracer/profiler.")
    p.add_argument("name", choices=sorted(WORKLOADS))
    p.add_argument("--preset", default="tiny")
    p.add_argument("--iterations", "-n", type=int, default=3)
    p.add_argument("--window", "-w", type=int, default=-1,
                   help="0-based iteration to bracket (cudaProfilerStart/Stop + NVTX range "
                        "'simfront.step'); -1 (default): the last")
    p.add_argument("--no-window", action="store_true", help="bracket no iteration")
    p.add_argument("--device", default="cuda")
    p.add_argument("--impl", choices=IMPLS, default="auto")
    p.add_argument("--amp", choices=AMP_DTYPES, default="bf16")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, e.g. --set seqlen=256 (repeatable)")
    p.add_argument("--summary", type=Path, help="also write the JSON summary to this file")
    p.add_argument("--timeline", type=Path, metavar="DIR",
                   help="instead of bracketing a window for a tracer, time every kernel of a "
                        "steady-state step with CUPTI (torch.profiler) into DIR/timeline-*.csv")
    p.add_argument("--sms", default="all", metavar="N[,N...]",
                   help="SMs to run on (CUDA green contexts), 'all' for the whole GPU: with "
                        "--timeline, the SM counts to time the step on, e.g. all,96,64,32; "
                        "else one count, for the window and the iteration before it")
    p.add_argument("--l2-setaside", type=int, metavar="MIB",
                   help="with --timeline: also time the step on the whole GPU with MIB of "
                        "its L2 held by persisting lines (a smaller L2)")
    p.add_argument("--hold-shared", metavar="KIB[,KIB...]",
                   help="with --timeline: also time the step on the whole GPU with KIB of "
                        "shared memory held on every SM around each launch of mamba_ssm's "
                        "Triton kernels (--hold-kernels)")
    p.add_argument("--hold-kernels", action="append", metavar="PATTERN",
                   help="the Triton kernels --hold-shared holds (fnmatch; default all)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.timeline is not None:
            return _timelines(args)
        result = run(args.name, args.preset, args.iterations,
                     None if args.no_window else args.window, device=args.device,
                     impl=args.impl, overrides=parse_sets(args.sets), amp=args.amp,
                     window_sms=_window_sms(args.sms))
    except SimfrontError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    line = result.to_json()
    if args.summary is not None:
        write_text(args.summary, line + "\n")
    print(line, flush=True)
    return 0


def _window_sms(text: str) -> int | None:
    counts = parse_sms(text)
    if len(counts) != 1:
        raise ConfigError(f"one SM count for the window, got {text!r}", field="--sms")
    return counts[0]


def _timelines(args: argparse.Namespace) -> int:
    sms = parse_sms(args.sms)
    wl = build(args.name, args.preset, device=args.device, impl=args.impl,
               overrides=parse_sets(args.sets), amp=args.amp)
    holds = tuple(parse_kib(args.hold_shared)) if args.hold_shared else ()
    for s in run_timelines(wl, sms, args.timeline, warmup=max(1, args.iterations - 1),
                           l2_setaside_mb=args.l2_setaside, shared_hold_kib=holds,
                           hold_kernels=tuple(args.hold_kernels or ("*",))):
        mem = "" if s.peak_mem_bytes is None else f", peak {s.peak_mem_bytes / 2**30:.2f} GiB"
        print(f"{s.label}: {s.launches} kernels, kernel {s.kernel_ms:.3f} ms, busy "
              f"{s.busy_ms:.3f} ms, step {s.step_ms} ms{mem}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
