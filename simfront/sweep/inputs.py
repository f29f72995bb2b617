"""The sweep stage's edges to other stages: trace sets, GPU descriptions, backends.

Kept in one small module so the rest of the sweep code depends on names, not on how the
trace store, ``simfront.gpu`` or the backend registry are laid out. A sweep's GPUs are built
here once, at plan time, and travel in the job specs (``JobSpec.gpu``) to the workers.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import json
import os
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simfront.core.errors import SimfrontError, SweepError
from simfront.core.paths import repo_dir, shared_dir
from simfront.core.provenance import sha256_file, sha256_json
from simfront.gpu import GPU, VARIANT_PARAMS, config_hash, load_gpu, with_variants
from simfront.gpu import validate as validate_gpu
from simfront.sim.backend import check_gpu as check_backends
from simfront.core.atomic import write_text

_KERNELSLIST = ("kernelslist.g", "kernelslist.g.xz")


# --------------------------------------------------------------------------- trace sets


def resolve_traces(value: str, base_dir: Path) -> Path:
    """A trace set directory from a sweep file's ``traces:`` value.

    ``{shared}`` expands to the shared reference data folder; a value with a ``/`` is a path
    (relative to the sweep file); a bare name is looked up in the trace store (``traces/``).
    Raises FileNotFoundError saying where it looked."""
    text = value.replace("{shared}", str(shared_dir()))
    text = os.path.expanduser(text)
    candidates: list[Path] = []
    p = Path(text)
    if p.is_absolute():
        candidates.append(p)
    else:
        candidates.append(base_dir / p)
        if "/" not in text.rstrip("/"):
            store = _store_lookup(text)
            if store is not None:
                candidates.insert(0, store)
            candidates.append(repo_dir("traces") / text)
    for c in candidates:
        if c.is_dir() and any((c / k).exists() for k in _KERNELSLIST):
            return c.resolve()
    raise FileNotFoundError("no trace set (a folder with kernelslist.g) at "
                            + " or ".join(str(c) for c in candidates))


def _store_lookup(name: str) -> Path | None:
    """The trace store's directory for a registered set name, if there is one."""
    from simfront.traces.store import TraceStore  # loads numba: only for bare set names

    try:
        return TraceStore().get(name).path
    except (SimfrontError, LookupError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class TraceInfo:
    path: Path
    content_hash: str
    n_bytes: int
    #: files of a registered set that no longer match its manifest (edited since it was
    #: registered): file -> what they hash to now ("missing" for a file that is gone)
    edited: tuple[tuple[str, str], ...] = ()


_TRACE_CACHE: dict[tuple, TraceInfo] = {}


def trace_info(path: Path, cache_dir: Path | None = None) -> TraceInfo:
    """Content hash and size of a trace set: the hash covers every file (kernelslist and
    kernel traces), so an edited trace means new job ids.

    A registered set is named by its manifest's hash, checked against the files: every
    kernel's decompressed text is hashed again (kept in ``cache_dir`` by file size and
    modification time, so an unchanged file is hashed once) and a file that no longer
    matches adds what it hashes to now, so the jobs on an edited set are new jobs. A plain
    folder hashes its files (cached per size and mtime)."""
    files = sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
    key = (str(path),) + tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    hit = _TRACE_CACHE.get(key)
    if hit is not None:
        return hit
    manifest = _manifest(path)
    h = manifest.get("set_sha256") if manifest else None
    edited: dict[str, str] = {}
    if isinstance(h, str) and h:
        edited = _edited_files(path, manifest, cache_dir)
        hashes: dict[str, Any] = {"set_sha256": h}
        if edited:
            hashes["edited"] = edited
    else:
        hashes = {f.name: sha256_file(f) for f in files
                  if f.name.startswith(("kernel", "kernelslist")) or ".traceg" in f.name}
    info = TraceInfo(path=path, content_hash=sha256_json(hashes),
                     n_bytes=sum(f.stat().st_size for f in files),
                     edited=tuple(sorted(edited.items())))
    _TRACE_CACHE[key] = info
    return info


def _manifest(path: Path) -> dict[str, Any] | None:
    """The store's manifest of a registered set (hashes of the decompressed kernel texts, so
    recompressing a set keeps its job ids), else None."""
    from simfront.traces.store import MANIFEST_NAMES, read_manifest  # loads numba

    if not any((path / n).is_file() for n in MANIFEST_NAMES):
        return None
    try:
        return read_manifest(path)
    except (SimfrontError, OSError, ValueError):
        return None


def _edited_files(path: Path, manifest: dict[str, Any],
                  cache_dir: Path | None) -> dict[str, str]:
    """Files of a registered set whose content is not what its manifest says: kernel traces
    whose text hash differs (or that are gone), and a kernelslist.g that lists other files.
    A file whose stored bytes hash to the manifest's ``stored_sha256`` is unchanged; one
    without it, or recompressed, has its decompressed text hashed."""
    from simfront.traces.kernelslist import KernelRef, parse_kernelslist
    from simfront.traces.store import kernel_text_hash

    cache_file = (cache_dir / f"{sha256_json(str(path))[:16]}.json") if cache_dir else None
    known: dict[str, Any] = {}
    if cache_file is not None:
        try:
            known = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
    seen: dict[str, Any] = {}
    edited: dict[str, str] = {}
    entries = [k for k in manifest.get("kernels", []) if isinstance(k, dict) and "file" in k]
    for k in entries:
        f = path / k["file"]
        try:
            st = f.stat()
        except FileNotFoundError:
            edited[k["file"]] = "missing"
            continue
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        entry = known.get(k["file"])
        if isinstance(entry, list) and entry[:3] == stamp and len(entry) == 4:
            digest = entry[3]
        elif k.get("stored_sha256") and sha256_file(f) == k["stored_sha256"]:
            # the very bytes registered, so the very text: no need to decompress it
            digest = k.get("sha256")
        else:
            try:
                digest = kernel_text_hash(f)[0]
            except (SimfrontError, OSError) as exc:
                digest = f"unreadable: {exc}"
        seen[k["file"]] = stamp + [digest]
        if digest != k.get("sha256"):
            edited[k["file"]] = digest
    listed = path / "kernelslist.g"
    if listed.is_file():
        try:
            refs = [e.file for e in parse_kernelslist(listed) if isinstance(e, KernelRef)]
        except SimfrontError as exc:
            refs = [f"unreadable: {exc}"]
        if refs != [k["file"] for k in entries]:
            edited["kernelslist.g"] = sha256_file(listed)
    if cache_file is not None and seen != known:
        try:
            write_text(cache_file, json.dumps(seen, sort_keys=True))
        except OSError:
            pass  # only a cache: the next plan hashes again
    return edited


_KERNEL_CACHE: dict[tuple, list[tuple[str, str, int]]] = {}


def kernel_files(path: Path) -> list[tuple[str, str, int]]:
    """(file name, kernel name, stored bytes) of every kernel launch of a trace set, from
    the store's manifest when there is one, else from the trace headers."""
    key = (str(path), (path / "kernelslist.g").stat().st_mtime_ns
           if (path / "kernelslist.g").exists() else 0)
    if key in _KERNEL_CACHE:
        return _KERNEL_CACHE[key]
    out: list[tuple[str, str, int]] | None = None
    from simfront.traces.reader import TraceSet  # loads numba
    from simfront.traces.store import MANIFEST_NAMES, read_manifest

    try:
        if any((path / n).is_file() for n in MANIFEST_NAMES):
            m = read_manifest(path)
            out = [(k["file"], k.get("name", ""), int(k.get("stored_bytes") or 0))
                   for k in m.get("kernels", [])]
    except (SimfrontError, OSError, KeyError, ValueError):
        out = None
    if not out:
        out = [(k.path.name, k.header.name, k.path.stat().st_size)
               for k in TraceSet(path).kernels()]
    _KERNEL_CACHE[key] = out
    return out


def select_kernels(files: list[tuple[str, str, int]],
                   patterns: tuple[str, ...] | None) -> list[tuple[str, str, int]]:
    """The launches a ``kernels:`` filter selects: a trace file name or its stem
    (``kernel-35636``), or an fnmatch pattern on the file name or the (mangled) kernel name
    (the backends' rule, :class:`simfront.sim.backend.SimJob`)."""
    if not patterns:
        return list(files)
    out = []
    for f, name, size in files:
        stem = f.split(".")[0]
        if any(f == p or stem == p or fnmatch.fnmatchcase(f, p) or fnmatch.fnmatchcase(name, p)
               for p in patterns):
            out.append((f, name, size))
    return out


# --------------------------------------------------------------------------- GPUs


def variant_params() -> tuple[str, ...]:
    """The names a sweep file may set or sweep under ``gpu:``."""
    return tuple(VARIANT_PARAMS)


_BASES: dict[str, GPU] = {}


def build_gpu(base: str, params: dict[str, Any], validate: bool = True,
              backends: "tuple[str, ...] | None" = None) -> GPU:
    """``with_variants(load_gpu(base), **params)``, validated: the description's own rules,
    then what the ``backends`` refuse (default: every built-in backend's rules, see
    ``simfront.sim.backend.check_gpu``); errors are ConfigErrors, which the caller turns
    into SweepErrors. Bases are loaded once per process (descriptions are frozen)."""
    key: Any = base
    if os.path.isfile(base):  # a description file: an edit makes a new description
        st = os.stat(base)
        key = (os.path.abspath(base), st.st_size, st.st_mtime_ns)
    gpu = _BASES.get(key)
    if gpu is None:
        gpu = _BASES[key] = load_gpu(base)
    if params:
        gpu = with_variants(gpu, **params)
    if validate:
        check_gpu(gpu, backends)
    return gpu


def check_gpu(gpu: GPU, backends: "tuple[str, ...] | None" = None) -> None:
    """The description's own rules (``simfront.gpu.validate``), then the backends'."""
    validate_gpu(gpu)
    check_backends(gpu, backends)


def job_gpu(gpu: GPU, chash: str, backend: str) -> GPU:
    """A job's GPU as its spec carries it, checked before it runs: the spec's config hash
    (the job id's) must be the description's, and the description must pass its own rules
    and the backend's."""
    got = config_hash(gpu)
    if got != chash:
        raise SweepError(f"the job's GPU description '{gpu.name}' hashes to {got}, not to the "
                         f"config hash {chash} its job id was made from (an edited job spec?)",
                         field="gpu")
    check_gpu(gpu, (backend,))
    return gpu


def gpu_identity(gpu: GPU, base: str, params: dict[str, Any]) -> tuple[str, str]:
    """(config name, config hash) of a built GPU."""
    name = gpu.name or base
    if params and not any(str(v) in name for v in params.values()):
        name = base + "[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]"
    return name, config_hash(gpu)


# --------------------------------------------------------------------------- backends


def import_plugins(modules: tuple[str, ...] | list[str], base_dir: Path | None = None) -> None:
    """Import modules that register user backends: a dotted module name or a ``.py`` path."""
    for m in modules:
        if m.endswith(".py"):
            p = Path(m)
            if not p.is_absolute() and base_dir is not None:
                p = base_dir / p
            if str(p) in _LOADED_FILES:
                continue
            runpy.run_path(str(p), run_name=f"simfront_plugin_{p.stem}")
            _LOADED_FILES.add(str(p))
        else:
            importlib.import_module(m)


_LOADED_FILES: set[str] = set()
