"""The NVBit tracers the capture driver can run: simfront's own (``simfront_tracer.so``,
built by ``make tracer NVBIT_DIR=...``) and Accel-Sim's public ``tracer_tool.so``, whose
output is post-processed and then checked for its known defects rather than trusted.

A tracer is injected with ``LD_PRELOAD`` (NVBit tools load that way); simfront's is also
the NVTX injection library (``NVTX_INJECTION64_PATH``) so it can window on an NVTX range.
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from simfront.core.errors import InputError
from simfront.core.paths import PACKAGE_DIR

SIMFRONT_TRACER_NAME = "simfront_tracer.so"
ACCELSIM_TRACER_NAME = "tracer_tool.so"
BUILD_DIR = PACKAGE_DIR / "capture" / "tracer" / "build"


@dataclass(frozen=True)
class Window:
    """What part of the run is traced: ``iteration`` (cudaProfilerStart/Stop, which the
    workload runner puts around one steady-state iteration), ``nvtx:NAME`` (while an NVTX
    range of that name is open on any thread) or ``kernel:REGEX`` (launches whose name
    matches, inside the iteration)."""

    kind: str
    arg: str = ""

    @classmethod
    def parse(cls, text: str) -> "Window":
        if text in ("iteration", "profiler"):
            return cls("iteration")
        if text == "all":
            return cls("all")
        kind, sep, arg = text.partition(":")
        if sep and kind in ("nvtx", "kernel") and arg:
            if kind == "kernel":
                try:
                    re.compile(arg)
                except re.error as exc:
                    raise InputError(f"bad kernel regex '{arg}': {exc}", field="window") from None
            return cls(kind, arg)
        raise InputError(f"unknown window '{text}': use iteration, nvtx:NAME, kernel:REGEX "
                         f"or all", field="window")

    def __str__(self) -> str:
        return self.kind if not self.arg else f"{self.kind}:{self.arg}"


@dataclass(frozen=True)
class Sampling:
    """CTA sampling: trace every ``stride``-th CTA of a launch, at most ``max_ctas`` of them
    (0: no limit). Recorded in each kernel header (``-tb sampling``) so a model can scale.

    ``box`` takes the ``max_ctas`` as a box of the grid's first blocks with two of every
    dimension beyond x that has two (tracer 1.3): first-N in launch order sees one z-plane
    of a 3-D grid, so data every plane re-reads looks private to it."""

    stride: int = 1
    max_ctas: int = 0
    box: bool = False

    @classmethod
    def parse(cls, text: str | None) -> "Sampling":
        """``none``, ``every:K``, ``first:N``, ``every:K,first:N`` or ``box:N``."""
        if not text or text == "none":
            return cls()
        if text.startswith("box:"):
            try:
                n = int(text[4:])
            except ValueError:
                raise InputError(f"bad sampling '{text}': box:N takes a number",
                                 field="sample") from None
            if n < 2:
                raise InputError(f"box sampling needs at least 2 blocks, got '{text}'",
                                 field="sample")
            return cls(1, n, box=True)
        stride, max_ctas = 1, 0
        for part in text.split(","):
            key, _, val = part.partition(":")
            try:
                n = int(val)
            except ValueError:
                raise InputError(f"bad sampling '{text}'", field="sample") from None
            if n < 1:
                raise InputError(f"sampling numbers must be positive, got '{part}'",
                                 field="sample")
            if key == "every":
                stride = n
            elif key == "first":
                max_ctas = n
            else:
                raise InputError(f"bad sampling '{text}': use every:K, first:N, both, "
                                 "or box:N",
                                 field="sample")
        if stride > 4095:
            raise InputError("sampling stride above 4095", field="sample")
        return cls(stride, max_ctas)

    def __str__(self) -> str:
        if self.box:
            return f"box:{self.max_ctas}"
        parts = []
        if self.stride > 1:
            parts.append(f"every:{self.stride}")
        if self.max_ctas:
            parts.append(f"first:{self.max_ctas}")
        return ",".join(parts) or "none"

    @property
    def active(self) -> bool:
        return self.stride > 1 or self.max_ctas > 0


@dataclass(frozen=True)
class Tracer:
    kind: str          # "simfront" or "accelsim"
    path: Path
    #: the built tool's SHA-256 where it is known but the file is not here (a capture
    #: shipped on another machine than the one that built and ran the tracer)
    sha256: str | None = None

    def env(self, out_dir: Path, window: Window, sampling: Sampling,
            list_only: bool = False, compress: str = "xz",
            dedup: bool = False) -> dict[str, str]:
        # NVBit instruments loaded functions only (lazy loading hides them at launch)
        env = {"LD_PRELOAD": str(self.path), "NOBANNER": "1", "CUDA_MODULE_LOADING": "EAGER"}
        if self.kind == "simfront":
            env.update(SIMFRONT_TRACE_DIR=str(out_dir), NVTX_INJECTION64_PATH=str(self.path),
                       SIMFRONT_COMPRESS=compress,
                       SIMFRONT_SAMPLE_STRIDE=str(sampling.stride),
                       SIMFRONT_SAMPLE_MAX_CTAS=str(sampling.max_ctas),
                       SIMFRONT_SAMPLE_BOX="1" if sampling.box else "0")
            if window.kind == "iteration":
                env["SIMFRONT_WINDOW"] = "profiler"
            elif window.kind == "all":
                env["SIMFRONT_WINDOW"] = "all"
            elif window.kind == "nvtx":
                env["SIMFRONT_WINDOW"] = f"nvtx:{window.arg}"
            elif window.kind == "kernel":
                env["SIMFRONT_WINDOW"] = "profiler"
                env["SIMFRONT_KERNEL_REGEX"] = window.arg
            if list_only:
                env["SIMFRONT_LIST_ONLY"] = "1"
            if dedup:
                env["SIMFRONT_DEDUP"] = "1"
            return env
        if dedup:
            raise InputError("Accel-Sim's tracer cannot deduplicate launches", field="dedup")
        # Accel-Sim's tracer: profiler window only, no sampling, raw text out
        if window.kind not in ("iteration", "all"):
            raise InputError(f"Accel-Sim's tracer cannot window by {window.kind}; use "
                             f"--window iteration", field="window")
        if sampling.active:
            raise InputError("Accel-Sim's tracer cannot sample thread blocks", field="sample")
        env.update(USER_DEFINED_FOLDERS="1", TRACES_FOLDER=str(out_dir),
                   ACTIVE_FROM_START="0" if window.kind == "iteration" else "1",
                   TRACE_FILE_COMPRESS="0")
        return env


def resolve_tracer(path: str | Path | None = None) -> Tracer:
    """The tracer at ``path`` (kind from its name), else ``$SIMFRONT_TRACER``, else the one
    built in the package's tracer folder."""
    candidates = [path, os.environ.get("SIMFRONT_TRACER"), BUILD_DIR / SIMFRONT_TRACER_NAME]
    for c in candidates:
        if not c:
            continue
        p = Path(c).expanduser().resolve()
        if not p.is_file():
            if c is path:
                raise InputError("tracer not found", p, field="tracer")
            continue
        kind = "accelsim" if p.name == ACCELSIM_TRACER_NAME else "simfront"
        return Tracer(kind, p)
    raise InputError("no tracer: build one with `make tracer NVBIT_DIR=...` or pass --tracer",
                     field="tracer")


def accelsim_postprocess(trace_dir: Path, tool: Path | None = None, xz_preset: int = 1) -> None:
    """Turn Accel-Sim's raw ``kernel-N.trace`` files into ``kernel-N.traceg.xz`` with its
    ``post-traces-processing`` tool (found beside the tracer, or on PATH), then compress."""
    tool = tool or (shutil.which("post-traces-processing") and Path(shutil.which(
        "post-traces-processing")))
    if not tool or not Path(tool).exists():
        raise InputError("Accel-Sim's post-traces-processing tool not found (put it beside "
                         "tracer_tool.so or on PATH)", field="tracer")
    klist = trace_dir / "kernelslist"
    if not klist.exists():
        raise InputError("Accel-Sim's tracer wrote no kernelslist", trace_dir)
    subprocess.run([str(tool), str(klist)], check=True, capture_output=True, cwd=trace_dir)
    for raw in sorted(trace_dir.glob("kernel-*.traceg")):
        with open(raw, "rb") as src, lzma.open(str(raw) + ".xz.part", "wb",
                                               preset=xz_preset) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(str(raw) + ".xz.part", str(raw) + ".xz")
        raw.unlink()
    for raw in trace_dir.glob("kernel-*.trace"):
        raw.unlink()
    gl = trace_dir / "kernelslist.g"
    if gl.exists():
        lines = [ln + ".xz" if ln.startswith("kernel-") and ln.endswith(".traceg") else ln
                 for ln in gl.read_text().splitlines()]
        gl.write_text("\n".join(lines) + "\n")
