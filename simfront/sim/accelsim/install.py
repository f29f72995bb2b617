"""Finding an Accel-Sim install: its simulator binary, library path, version line (1.x or 2.x).

The user names the install with ``ACCELSIM_ROOT`` (as Accel-Sim's own
``gpu-simulator/setup_environment.sh`` sets it: the ``gpu-simulator`` folder) or a flag; the
framework's top folder and the binary's own path are accepted too. Accel-Sim's
``setup_environment.sh`` puts GPGPU-Sim's ``lib/<gcc>/<cuda>/<release|debug>`` (where its
``libcudart.so`` lives, which ``accel-sim.out`` links against) on ``LD_LIBRARY_PATH``; that
script refuses CUDA toolkits newer than 11.1, so simfront does not source it but sets the
same variable from what it finds (``GPGPUSIM_ROOT`` when set, else the ``gpgpu-sim`` folder
inside the install).

Accel-Sim 2.x (Hopper support, tag v2.0.0) is recognised by its Hopper opcode map
(``ISA_Def/hopper_opcode.h``) and its ``traceDsm`` converter of ``.tracez`` traces; 1.x has
neither and reads only ``.traceg`` (plain or ``.xz``) with opcode maps up to Ampere.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from simfront.core.errors import BackendError

BINARY = "accel-sim.out"

#: Binary versions each line's opcode maps accept (ISA_Def/*_opcode.h).
BINARY_VERSIONS_1X = frozenset({35, 37, 60, 61, 62, 70, 72, 75, 80, 86})
BINARY_VERSIONS_2X = BINARY_VERSIONS_1X | {89, 90}


@dataclass(frozen=True)
class AccelSimInstall:
    root: Path  #: the gpu-simulator folder
    binary: Path
    lib_dirs: tuple[Path, ...]
    major: int  #: 1 or 2
    trace_dsm: Path | None = None
    build: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def version(self) -> str:
        return f"accelsim-{self.major}.x" + (f"+{self.build}" if self.build else "")

    @property
    def binary_versions(self) -> frozenset[int]:
        return BINARY_VERSIONS_2X if self.major >= 2 else BINARY_VERSIONS_1X

    @property
    def reads_tracez(self) -> bool:
        return self.major >= 2

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The child's environment: the library path Accel-Sim's setup script would set."""
        env = dict(os.environ if base is None else base)
        libs = [str(p) for p in self.lib_dirs]
        old = env.get("LD_LIBRARY_PATH", "")
        env["LD_LIBRARY_PATH"] = ":".join(libs + ([old] if old else []))
        env.setdefault("ACCELSIM_ROOT", str(self.root))
        return env

    def describe(self) -> dict[str, str]:
        return {"root": str(self.root), "binary": str(self.binary), "major": str(self.major),
                "lib_dirs": ":".join(map(str, self.lib_dirs)), "build": self.build,
                "trace_dsm": str(self.trace_dsm or "")}


def _candidates(root: Path) -> list[Path]:
    """gpu-simulator folders a user-given path may mean."""
    if root.is_file():
        # .../gpu-simulator/bin/release/accel-sim.out
        return [root.parent.parent.parent]
    return [root, root / "gpu-simulator"]


def _find_binary(sim_dir: Path) -> Path | None:
    for config in (os.environ.get("ACCELSIM_CONFIG") or "release", "release", "debug"):
        p = sim_dir / "bin" / config / BINARY
        if p.is_file() and os.access(p, os.X_OK):
            return p
    hits = sorted(sim_dir.glob(f"**/{BINARY}"))  # a CMake build folder
    return hits[0] if hits else None


def _lib_dirs(sim_dir: Path) -> list[Path]:
    roots = []
    if os.environ.get("GPGPUSIM_ROOT"):
        roots.append(Path(os.environ["GPGPUSIM_ROOT"]))
    roots.append(sim_dir / "gpgpu-sim")
    config = os.environ.get("ACCELSIM_CONFIG") or "release"
    out: list[Path] = []
    for r in roots:
        hits = sorted((r / "lib").glob(f"*/*/{config}/libcudart.so*")) if (r / "lib").is_dir() else []
        for h in hits:
            if h.parent not in out:
                out.append(h.parent)
    for build in (sim_dir / "build",):  # CMake layout
        for h in sorted(build.glob("**/libcudart.so*")) if build.is_dir() else []:
            if h.parent not in out:
                out.append(h.parent)
    return out


def _major(sim_dir: Path) -> int:
    if (sim_dir / "ISA_Def" / "hopper_opcode.h").exists():
        return 2
    return 1


def _trace_dsm(sim_dir: Path) -> Path | None:
    util = sim_dir.parent / "util" / "tracer_nvbit"
    for p in (util / "tracer_tool" / "traceDsm", util / "others" / "traceDsm_tool" / "traceDsm",
              sim_dir / "bin" / "traceDsm"):
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def find_install(root: str | Path | None = None) -> AccelSimInstall:
    """The install named by ``root`` or ``ACCELSIM_ROOT``; BackendError says what is missing."""
    given = root if root is not None else os.environ.get("ACCELSIM_ROOT")
    if not given:
        raise BackendError("no Accel-Sim install named: set ACCELSIM_ROOT to its gpu-simulator "
                           "folder (or pass --accelsim-root)")
    given = Path(given).expanduser()
    if not given.exists():
        raise BackendError(f"ACCELSIM_ROOT {given} does not exist")
    for sim_dir in _candidates(given):
        binary = _find_binary(sim_dir) if sim_dir.is_dir() else None
        if binary is None:
            continue
        libs = _lib_dirs(sim_dir)
        notes = []
        if not libs:
            notes.append("no GPGPU-Sim libcudart.so found; relying on the current library path")
        major = _major(sim_dir)
        return AccelSimInstall(root=sim_dir, binary=binary, lib_dirs=tuple(libs), major=major,
                               trace_dsm=_trace_dsm(sim_dir), build=_build_string(sim_dir),
                               notes=tuple(notes))
    raise BackendError(f"no {BINARY} under {given} (looked in bin/release and bin/debug of "
                       f"{', '.join(str(c) for c in _candidates(given))}); build Accel-Sim first")


def _build_string(sim_dir: Path) -> str:
    """The accel-sim git commit, when the install is a git checkout (cheap, no binary run)."""
    git = sim_dir.parent / ".git"
    if not git.exists():
        return ""
    try:
        out = subprocess.run(["git", "--git-dir", str(git), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def tracez_to_traceg(install: AccelSimInstall, src: Path, dst: Path) -> Path:
    """Convert one ``.tracez`` (Accel-Sim 2.x) to ``.traceg`` text with the install's traceDsm.

    traceDsm writes next to its input, so the input is linked into ``dst``'s folder first."""
    if install.trace_dsm is None:
        raise BackendError(f"{src.name} is an Accel-Sim 2.x .tracez trace and this install has "
                           "no traceDsm converter (util/tracer_nvbit/.../traceDsm); build it or "
                           "use an Accel-Sim 2.x simulator, which reads .tracez itself")
    dst.parent.mkdir(parents=True, exist_ok=True)
    link = dst.with_suffix(".tracez")
    if not link.exists():
        os.symlink(src.resolve(), link)
    proc = subprocess.run([str(install.trace_dsm), str(link)], capture_output=True, text=True)
    out = link.with_suffix(".traceg")
    if proc.returncode != 0 or not out.exists():
        raise BackendError(f"traceDsm failed on {src}: {proc.stderr.strip()[-500:]}")
    if out != dst:
        os.replace(out, dst)
    link.unlink(missing_ok=True)
    return dst
