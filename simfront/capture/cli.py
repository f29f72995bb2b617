"""CLI of the capture stage: thin wrappers over the library functions of simfront.capture."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from simfront.analysis.whatif import pair_timeline, trace_launches
from simfront.core.ncu import read_ncu_csv
from simfront.capture.driver import Step, match_profile, profile, trace
from simfront.capture.tracers import Sampling, Window, resolve_tracer
from simfront.core.timeline import store_beside
from simfront.workloads.green import parse_sms
from simfront.workloads.run import parse_sets
from simfront.workloads.shared_hold import parse_kib
from simfront.workloads.timelines import run_timelines
from simfront.workloads.workload import build
from simfront.capture.script_timeline import run_script_timelines


def _step(workload, preset, iterations, window_iteration, sets, script_args) -> Step:
    return Step(workload=workload, preset=preset, iterations=iterations,
                window_iteration=window_iteration, overrides=tuple(sets),
                script_args=tuple(script_args))


def _step_options(f):
    f = click.argument("script_args", nargs=-1, type=click.UNPROCESSED)(f)
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                     help="Override a workload config field (repeatable).")(f)
    f = click.option("--window-iteration", default=-1, show_default=True, type=int,
                     help="Which iteration the workload brackets (-1: the last).")(f)
    f = click.option("--iterations", "-n", default=3, show_default=True, type=int)(f)
    f = click.option("--preset", default="tiny", show_default=True)(f)
    f = click.argument("workload")(f)
    return f


@click.command(name="trace", context_settings={"ignore_unknown_options": True})
@_step_options
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Capture folder (must be new or empty).")
@click.option("--window", default="iteration", show_default=True,
              help="iteration | nvtx:NAME | kernel:REGEX | all")
@click.option("--sample", default="none", show_default=True,
              help="CTA sampling: none | every:K | first:N | every:K,first:N | box:N")
@click.option("--tracer", type=click.Path(dir_okay=False, path_type=Path),
              help="NVBit tool (.so): simfront's (default: the built one or $SIMFRONT_TRACER) "
                   "or Accel-Sim's tracer_tool.so.")
@click.option("--baseline", is_flag=True, help="Also run untraced, to measure the slowdown.")
@click.option("--reference-ncu", type=click.Path(exists=True, dir_okay=False),
              help="ncu CSV of the same step: the trace must match it launch by launch.")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path),
              help="Register the validated set in this trace store.")
@click.option("--name", help="Name in the store (default WORKLOAD-PRESET).")
@click.option("--list-only", is_flag=True, help="Record launches only; trace nothing.")
@click.option("--dedup", is_flag=True,
              help="Trace each distinct launch once; repeats are counted (multiplicity.txt).")
@click.option("--timeout", default=1800.0, show_default=True, help="Seconds per run.")
def trace_cmd(workload, preset, iterations, window_iteration, sets, script_args, out, window,
              sample, tracer, baseline, reference_ncu, store, name, list_only, dedup, timeout):
    """Trace WORKLOAD's step (a registered workload, or a .py script) under an NVBit tracer.

    The output is validated (headers against the tracer's launch records and, with
    --reference-ncu, against ncu) and, with --store, registered with its provenance.
    """
    res = trace(_step(workload, preset, iterations, window_iteration, sets, script_args), out,
                resolve_tracer(tracer), Window.parse(window), Sampling.parse(sample),
                timeout=timeout, baseline=baseline, reference_ncu=reference_ncu, store=store,
                name=name, list_only=list_only, dedup=dedup)
    rep = res.report
    if rep is not None:
        for f in rep.findings[:20]:
            click.echo(str(f), err=True)
    click.echo(json.dumps({"out": res.out_dir, "registered": res.registered, **res.stats,
                           "match": res.match}, default=str))


@click.command(name="profile", context_settings={"ignore_unknown_options": True})
@_step_options
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--metrics", default="full", show_default=True,
              type=click.Choice(["time", "clock", "core", "full"]),
              help="Metric set (simfront.capture.metrics).")
@click.option("--sms", type=click.IntRange(min=1), metavar="N",
              help="Run the profiled iteration (and the one before it) on N SMs of a CUDA "
                   "green context; the earlier ones on the whole GPU.")
@click.option("--trace-dir", type=click.Path(exists=True, file_okay=False),
              help="A capture or stored set of the same step to match launch by launch.")
@click.option("--ncu", default="ncu", show_default=True)
@click.option("--timeout", default=1800.0, show_default=True)
@click.option("--per-config", is_flag=True,
              help="One launch per launch configuration (ncu-configs.csv): model-size steps.")
def profile_cmd(workload, preset, iterations, window_iteration, sets, script_args, out, metrics,
                sms, trace_dir, ncu, timeout, per_config):
    """Profile WORKLOAD's windowed iteration under ncu (one row per launch, or per launch
    configuration with --per-config)."""
    step = replace(_step(workload, preset, iterations, window_iteration, sets, script_args),
                   sms=sms)
    res = profile(step, out,
                  metrics=metrics, timeout=timeout, ncu=ncu, trace_dir=trace_dir,
                  per_config=per_config)
    click.echo(json.dumps({"out": res.out_dir, **res.stats, "match": res.match}, default=str))


@click.command(name="match-profile")
@click.argument("ncu_csv", type=click.Path(exists=True, dir_okay=False))
@click.argument("trace_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", type=click.Path(dir_okay=False), help="Write the pairs as CSV.")
def match_cmd(ncu_csv, trace_dir, out):
    """Match an ncu profile to a capture's launches one to one."""
    click.echo(json.dumps(match_profile(ncu_csv, trace_dir, out), indent=1))


@click.command(name="timeline", context_settings={"ignore_unknown_options": True})
@click.argument("workload")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--preset", default="tiny", show_default=True)
@click.option("--iterations", "-n", default=2, show_default=True, type=int,
              help="As `python -m simfront.workloads.run --timeline`: N-1 (at least one) "
                   "warm-up iterations on the whole GPU, then two per condition.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a workload config field (repeatable).")
@click.option("--sms", default="all", show_default=True, metavar="N[,N...]",
              help="SM counts to time the step on (CUDA green contexts); 'all': the whole GPU.")
@click.option("--l2-setaside", type=int, metavar="MIB", default=None,
              help="Also time the whole GPU with MIB of L2 held by persisting lines.")
@click.option("--hold-shared", metavar="KIB[,KIB...]", default=None,
              help="Also time the whole GPU with KIB of shared memory held on every SM "
                   "around each launch of the held Triton kernels (condition shmem<KIB>k; "
                   "a registered workload only).")
@click.option("--hold-kernels", multiple=True, metavar="PATTERN", default=("*",),
              show_default=True,
              help="Which of mamba_ssm's Triton kernels --hold-shared holds (fnmatch, "
                   "repeatable).")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for timeline-<condition>.csv/.json.")
@click.option("--trace-set", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Also store the timelines in this trace set's whatif/ folder "
                   "(<gpu>-<condition>.csv.xz) and pair them with its launches.")
@click.option("--force", is_flag=True, help="Replace timelines already in the trace set.")
@click.option("--device", default="cuda", show_default=True)
@click.option("--timeout", default=1800.0, show_default=True,
              help="Seconds per condition (a script's run).")
def timeline_cmd(workload, script_args, preset, iterations, sets, sms, l2_setaside,
                 hold_shared, hold_kernels, out, trace_set, force, device, timeout):
    """Time every kernel of WORKLOAD's steady-state step with CUPTI, on the whole GPU or on
    a green context's SMs: the hardware side of a what-if (see docs/capture.md).

    WORKLOAD is a registered workload, or a .py script followed by its arguments: the
    script's torch.cuda.profiler.start()/stop() window is timed, one run per condition."""

    holds = parse_kib(hold_shared) if hold_shared else []
    if workload.endswith(".py"):

        if holds:
            raise click.UsageError("--hold-shared holds a registered workload's kernels, "
                                   "not a script's")
        if sets:
            raise click.UsageError("--set overrides a registered workload's config; a "
                                   "script takes its own arguments")
        summaries = run_script_timelines(workload, script_args, parse_sms(sms), out,
                                         l2_setaside_mb=l2_setaside, timeout=timeout)
    else:

        if script_args:
            raise click.UsageError(f"unexpected arguments {' '.join(script_args)} (only a "
                                   f".py script takes arguments)")
        wl = build(workload, preset, device=device, overrides=parse_sets(list(sets)))
        summaries = run_timelines(wl, parse_sms(sms), out, warmup=max(1, iterations - 1),
                                  l2_setaside_mb=l2_setaside, shared_hold_kib=tuple(holds),
                                  hold_kernels=tuple(hold_kernels))
    report = []
    for s in summaries:
        row = {"condition": s.label, "device": s.device_name, "sms": s.sms,
               "launches": s.launches, "kernel_ms": s.kernel_ms, "step_ms": s.step_ms,
               "busy_share": s.busy_share, "peak_mem_bytes": s.peak_mem_bytes}
        if trace_set is not None:
            # a hold's run keeps its own base beside its held conditions: another
            # process's autotuning may tile some kernels otherwise
            row.update(store_and_pair(out, s.label, trace_set, force,
                                      "hold" if holds else "whatif"))
        report.append(row)
    click.echo(json.dumps(report, indent=1))


def store_and_pair(out: Path, label: str, trace_set: Path, force: bool,
                   folder: str = "whatif") -> dict:
    """Store one condition's timeline in the trace set's ``folder`` (whatif/, or hold/ for
    a run with shared memory held) and say how its launches paired with the set's."""

    csv_out, _ = store_beside(out, label, trace_set, force=force, folder=folder)
    tl = read_ncu_csv(csv_out)
    pairs = pair_timeline(trace_launches(trace_set), tl)
    return {"stored": str(csv_out),
            "paired": {str(k): int(v) for k, v in pairs.match.value_counts(dropna=False).items()}}


# Every click command or group this stage adds to `simfront`.
commands: list[click.Command] = [trace_cmd, profile_cmd, match_cmd, timeline_cmd]
