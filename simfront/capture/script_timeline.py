"""``simfront timeline SCRIPT.py ARGS --sms all,96,64,32``: a user's own step timed like a
workload, one process per condition, each run under the window hook of
:mod:`simfront.capture.script_window` (the design and its limits are there)."""

from __future__ import annotations

from pathlib import Path

from simfront.capture.driver import STEP_ENV, CaptureError, _tail, run_logged
from simfront.capture.script_window import NO_WINDOW, Condition, command
from simfront.core.timeline import TimelineSummary, read_timeline_json
from simfront.core.errors import InputError


def conditions(out_dir: str | Path, sms_list: list[int | None],
               l2_setaside_mb: int | None = None) -> list[Condition]:
    """The conditions of one ``simfront timeline`` call, in the order they run: each SM count,
    then the whole GPU with the L2 set-aside (as the workload path orders them)."""
    out = [Condition(Path(out_dir), sms) for sms in sms_list]
    if l2_setaside_mb:
        out.append(Condition(Path(out_dir), None, l2_setaside_mb))
    labels = [c.label for c in out]
    if len(set(labels)) != len(labels):
        raise InputError(f"a condition is named twice: {labels}", field="--sms")
    return out


def run_script_timelines(script: str | Path, args: tuple[str, ...] | list[str],
                         sms_list: list[int | None], out_dir: str | Path,
                         l2_setaside_mb: int | None = None,
                         timeout: float = 1800) -> list[TimelineSummary]:
    """Run ``script`` once per condition; each run writes ``timeline-<condition>.csv`` and
    ``.json`` into ``out_dir`` (its log: ``timeline-<condition>.log``). A run that fails, or
    brackets no window, raises :class:`CaptureError` with its log's tail."""
    script = Path(script)
    if not script.is_file():
        raise InputError("script not found", script)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for cond in conditions(out_dir, sms_list, l2_setaside_mb):
        log = out_dir / f"timeline-{cond.label}.log"
        rec = run_logged(command(script, tuple(args)), {**STEP_ENV, **cond.env()}, log,
                         timeout)
        if rec.returncode != 0:
            why = ("it bracketed no window (torch.cuda.profiler.start/stop)"
                   if rec.returncode == NO_WINDOW else f"status {rec.returncode}")
            raise CaptureError(f"{script.name} under condition {cond.label}: {why}. Log "
                               f"{log}:\n{_tail(log, 1500)}")
        results.append(read_timeline_json(out_dir / f"timeline-{cond.label}.json"))
    return results
