"""The runner ``simfront timeline SCRIPT.py`` injects: ``python -m
simfront.capture.script_window SCRIPT.py ARGS`` runs the user's script as ``__main__`` with
``torch.cuda.profiler.start``/``stop`` replaced, so that the window the script brackets for
``simfront trace`` and ``simfront profile`` is the iteration timed here.

A script's step cannot be run again from outside, so each condition (an SM count, or an L2
set-aside) is one process, told its condition through the environment (:class:`Condition`,
``SIMFRONT_TIMELINE_*``). Everything before the window runs on the whole GPU, as it does
under the tracer and ncu: Triton autotunes there, and with ``TRITON_CACHE_AUTOTUNING=1``
(the capture's environment) every process reuses the first one's choices. When the script
calls ``profiler.start()`` the hook fills the L2 set-aside if there is one, makes a green
context's stream current (:func:`simfront.workloads.green.sm_subset`) and opens a
:class:`simfront.core.timeline.StepProbe`; at ``profiler.stop()`` it closes them and
writes ``timeline-<condition>.csv`` and ``.json`` into ``SIMFRONT_TIMELINE_DIR``.

What it cannot do, unlike the workload path (``simfront.workloads.timelines``), which runs
one warm iteration under the condition before the timed one: the window is the first
iteration on the green context, so what a context's first launches cost the host (loading
a kernel's module into it) falls into that condition's wall step and busy share, not into
the kernels' durations. Only kernels launched on the current stream move onto the green
context; a stream the script creates itself stays on the whole GPU. A script that starts
the CUDA profiler other than through ``torch.cuda.profiler`` (cudart or the driver API
through ctypes) is not seen, and only its first window is timed. No untimed iteration is
measured: the record's wall step is the timed iteration's, with CUPTI attached.

Exit status: 0 with one JSON line (the record) last on stdout; 2 for a bad environment or
command line; 3 when the script ended without opening a window; the script's own status
when it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from simfront.core.errors import ConfigError
from simfront.workloads.timelines import condition_label
from simfront.workloads.green import parse_sms
from simfront.core.timeline import StepProbe
from simfront.workloads.green import sm_subset
from simfront.core.timeline import device_gpu, record, write_timeline, write_timeline_json
from simfront.core.provenance import sha256_file, sha256_json, tool_versions
from simfront.workloads.timelines import L2SetAside

ENV_DIR = "SIMFRONT_TIMELINE_DIR"
ENV_SMS = "SIMFRONT_TIMELINE_SMS"
ENV_L2SET = "SIMFRONT_TIMELINE_L2SET_MIB"
NO_WINDOW = 3


@dataclass(frozen=True)
class Condition:
    """One condition a script's window is timed under, and the folder its record goes to."""

    out_dir: Path
    sms: int | None = None             # None: the whole GPU
    l2_setaside_mb: int | None = None

    def __post_init__(self) -> None:
        if self.sms is not None and self.l2_setaside_mb:
            # the workload path times the set-aside on the whole GPU only; so does this one
            raise ConfigError("an L2 set-aside is timed on the whole GPU, not with an SM "
                              "count", field=ENV_L2SET)

    @property
    def label(self) -> str:

        return condition_label(self.sms, self.l2_setaside_mb)

    def env(self) -> dict[str, str]:
        """The environment that tells the runner this condition."""
        out = {ENV_DIR: str(Path(self.out_dir).resolve()),
               ENV_SMS: "all" if self.sms is None else str(self.sms)}
        if self.l2_setaside_mb:
            out[ENV_L2SET] = str(self.l2_setaside_mb)
        return out

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Condition:

        if not environ.get(ENV_DIR):
            raise ConfigError(f"{ENV_DIR} is not set: run scripts through `simfront "
                              f"timeline SCRIPT.py`", field=ENV_DIR)
        try:
            sms = parse_sms(environ.get(ENV_SMS, "all"))
        except ConfigError as exc:
            raise ConfigError(exc.reason, field=ENV_SMS) from None
        if len(sms) != 1:
            raise ConfigError(f"one SM count per process, got {environ[ENV_SMS]!r}",
                              field=ENV_SMS)
        l2 = environ.get(ENV_L2SET, "").strip()
        try:
            l2_mb = int(l2) if l2 else None
        except ValueError:
            raise ConfigError(f"MiB must be an integer, got {l2!r}", field=ENV_L2SET) from None
        return cls(Path(environ[ENV_DIR]), sms[0], l2_mb)


def command(script: str | Path, args: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The command that runs ``script`` under the window hook (absolute, as the capture's
    commands are)."""
    return [sys.executable, "-m", "simfront.capture.script_window",
            os.path.abspath(script), *args]


class WindowHook:
    """Times the script's first ``torch.cuda.profiler`` window under ``condition``."""

    def __init__(self, condition: Condition, script: str, args: list[str]) -> None:
        import torch

        self.condition = condition
        self.script, self.args = script, list(args)
        self.cuda = torch.cuda.is_available()
        if not self.cuda and (condition.sms is not None or condition.l2_setaside_mb):
            raise ConfigError(f"condition {condition.label} needs a CUDA GPU", field=ENV_SMS)
        self.record: Any = None
        self._open = False
        self._stack = contextlib.ExitStack()
        self._saved: tuple[Any, Any] | None = None
        self._setaside: Any = None
        self._probe: Any = None
        self._given: int | None = None

    def install(self) -> None:
        import torch.cuda.profiler as prof

        self._saved = (prof.start, prof.stop)
        # profiler.profile() calls the module's start/stop, so it is caught too
        prof.start, prof.stop = self.start, self.stop

    def uninstall(self) -> None:
        import torch.cuda.profiler as prof

        if self._saved is not None:
            prof.start, prof.stop = self._saved
            self._saved = None
        self._stack.close()
        if self._setaside is not None:
            self._setaside.release()
            self._setaside = None

    def start(self) -> None:
        if self.record is not None or self._open:
            self._forward(0)
            return

        self._forward(0)
        c = self.condition
        Path(c.out_dir).mkdir(parents=True, exist_ok=True)
        if c.l2_setaside_mb:

            self._setaside = L2SetAside(c.l2_setaside_mb)
            self._setaside.fill()
        self._given = self._stack.enter_context(sm_subset(c.sms)) if self.cuda else None
        self._probe = StepProbe(Path(c.out_dir) / f".{c.label}.trace.json", cuda=self.cuda)
        self._open = True
        self._probe.open()

    def stop(self) -> None:
        if not self._open:
            self._forward(1)
            return
        measure = self._probe.close()
        self._open = False
        self._stack.close()
        if self._setaside is not None:
            extra_bytes = self._setaside.bytes
            self._setaside.release()
            self._setaside = None
        else:
            extra_bytes = None
        self.record = self._write(measure, extra_bytes)
        self._forward(1)

    def _forward(self, which: int) -> None:
        """The real cudaProfilerStart/Stop, for a profiler the user attached themselves."""
        if self.cuda and self._saved is not None:
            self._saved[which]()

    def _write(self, measure: Any, setaside_bytes: int | None) -> Any:

        c = self.condition
        digest = sha256_file(self.script)
        extra: dict[str, Any] = {
            "script": self.script, "script_args": self.args, "script_sha256": digest,
            # what ran, as a workload's config hash says it: the same for every condition
            "config_hash": sha256_json({"script_sha256": digest, "args": self.args}),
            "versions": tool_versions("torch", "triton", "mamba_ssm")}
        if setaside_bytes is not None:
            extra["l2_setaside_bytes"] = setaside_bytes
        rec = record(measure, c.label, device_gpu() if self.cuda else None, self._given,
                     **extra)
        write_timeline(Path(c.out_dir) / f"timeline-{c.label}.csv", measure.spans)
        write_timeline_json(Path(c.out_dir) / f"timeline-{c.label}.json", rec)
        return rec


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or not argv[0].endswith(".py"):
        print("usage: python -m simfront.capture.script_window SCRIPT.py [ARGS...]",
              file=sys.stderr)
        return 2
    script, args = os.path.abspath(argv[0]), argv[1:]
    try:
        hook = WindowHook(Condition.from_env(os.environ), script, args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    hook.install()
    saved_argv, saved_path = sys.argv, list(sys.path)
    # as `python SCRIPT.py` would see it: its own argv and folder first on the path
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    finally:
        hook.uninstall()
        sys.argv, sys.path[:] = saved_argv, saved_path
    if hook.record is None:
        print(f"error: {script} ended without calling torch.cuda.profiler.start() and "
              f"stop(): bracket the step to time with them (docs/capture.md)",
              file=sys.stderr)
        return NO_WINDOW
    print(json.dumps(asdict(hook.record), sort_keys=True, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
