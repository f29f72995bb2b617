"""The trace store: captured trace sets with their provenance.

A store is a directory (the repository's ``traces/`` by default) of trace sets, one
sub-directory each, holding ``kernelslist.g``, the kernel files (``.traceg``, ``.traceg.xz``
or ``.traceg.zst``) and a ``manifest.json`` (``manifest.yaml`` is read too)::

    traces/
      scan_fwd_bwd/
        manifest.json
        kernelslist.g
        kernel-35636.traceg.xz
        kernel-35643.traceg.xz

The manifest says what the set is (workload, GPU, driver, CUDA and tool versions, capture
window, source) and, per kernel, the SHA-256 of its **decompressed** text, so the hash
does not change with the compression level; jobs name their input by these hashes
(:meth:`TraceStore.trace_hash`, :meth:`StoredSet.set_hash`). ``docs/traces.md`` gives the
manifest's fields.

:meth:`TraceStore.register` is the only way in: it validates the set (headers and
structure) and refuses it on any error, computes the hashes, and appears atomically (a
temporary directory renamed into place), so a half-copied set is never visible.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from simfront import __version__
from simfront.core.errors import InputError, TraceFormatError
from simfront.core.paths import repo_dir
from simfront.core.provenance import sha256_file
from simfront.traces.multiplicity import count_of, read_multiplicity
from simfront.traces.reader import KernelTrace, TraceSet, open_trace_file
from simfront.traces.validate import validate_set

MANIFEST_NAMES = ("manifest.json", "manifest.yaml", "manifest.yml")
FORMAT = "simfront-trace-set"
# 2: a set may be deduplicated: multiplicity.txt beside kernelslist.g, a "count" per kernel
# entry, "launches" (their sum); a reader of version 1 would count each kernel once.
FORMAT_VERSION = 2
#: Fields a manifest should carry besides the computed ones (empty values are allowed, so
#: that what is not known is visibly not known).
PROVENANCE_FIELDS = ("workload", "gpu", "driver", "cuda", "tools", "capture_window",
                     "captured", "source")
_CHUNK = 1 << 20


def kernel_text_hash(path: str | Path) -> tuple[str, int]:
    """SHA-256 of a kernel file's decompressed text, and the text's size in bytes."""
    h = hashlib.sha256()
    size = 0
    path = Path(path)
    with open_trace_file(path) as f:
        while True:
            try:
                block = f.read(_CHUNK)
            except (OSError, EOFError) as exc:
                raise TraceFormatError(f"cannot decompress ({exc})", path) from None
            if not block:
                break
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def _kernel_entry(kernel: KernelTrace) -> dict[str, Any]:
    digest, size = kernel_text_hash(kernel.path)
    hdr = kernel.header
    return {"file": kernel.path.name, "kernel_id": hdr.kernel_id, "name": hdr.name,
            "grid": list(hdr.grid), "block": list(hdr.block), "nregs": hdr.nregs,
            "shmem": hdr.shmem, "binary_version": hdr.binary_version,
            "sha256": digest, "text_bytes": size, "stored_bytes": kernel.path.stat().st_size,
            "stored_sha256": sha256_file(kernel.path)}


def read_manifest(set_dir: str | Path) -> dict[str, Any]:
    set_dir = Path(set_dir)
    for name in MANIFEST_NAMES:
        p = set_dir / name
        if p.is_file():
            try:
                text = p.read_text()
                data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
            except (json.JSONDecodeError, yaml.YAMLError) as exc:
                raise InputError(f"unreadable manifest ({exc})", p) from None
            if not isinstance(data, dict):
                raise InputError("manifest is not a mapping", p)
            return data
    raise InputError("no manifest.json here: not a registered trace set", set_dir)


@dataclass(frozen=True)
class StoredSet:
    """One registered trace set."""

    name: str
    path: Path
    manifest: dict[str, Any]

    def trace_set(self) -> TraceSet:
        return TraceSet(self.path)

    @property
    def kernels(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("kernels", []))

    def kernel_entry(self, kernel: str | int) -> dict[str, Any]:
        """The manifest entry of a kernel by file name, stem (``kernel-35636``) or id."""
        for k in self.kernels:
            stem = k["file"].split(".", 1)[0]
            if str(kernel) in (k["file"], stem, str(k["kernel_id"])) or kernel == k["kernel_id"]:
                return k
        raise InputError(f"no kernel '{kernel}' in trace set '{self.name}'", self.path)

    def trace_hash(self, kernel: str | int) -> str:
        return self.kernel_entry(kernel)["sha256"]

    @property
    def set_hash(self) -> str:
        return self.manifest["set_sha256"]

    def verify(self) -> list[str]:
        """Recompute every kernel hash; return the files whose text no longer matches."""
        return [k["file"] for k in self.kernels
                if kernel_text_hash(self.path / k["file"])[0] != k["sha256"]]


def set_hash(kernel_entries: list[dict[str, Any]], memcpys: list[str] = ()) -> str:
    """The hash of a whole set: its kernels' text hashes in launch order, then its memcpy
    events (``MemcpyHtoD,0x...,bytes`` lines of kernelslist.g) if any."""
    # a count other than 1 (deduplicated sets) is part of what the set is
    lines = [f"{k['file']} {k['sha256']}" + (f" x{k['count']}" if k.get("count", 1) != 1
                                              else "") for k in kernel_entries] + list(memcpys)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def build_manifest(set_dir: str | Path, fields: dict[str, Any], name: str) -> dict[str, Any]:
    """Compute a manifest for a trace directory: the given provenance fields plus
    per-kernel hashes and sizes (and launch counts of a deduplicated set)."""
    ts = TraceSet(set_dir)
    kernels = [_kernel_entry(k) for k in ts.kernels()]
    mult = read_multiplicity(set_dir)
    for k in kernels:
        k["count"] = count_of(mult, k["file"])
    manifest: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION,
                                "name": name}
    for key in PROVENANCE_FIELDS:
        manifest[key] = fields.get(key)
    manifest.update({k: v for k, v in fields.items() if k not in manifest})
    manifest.update({
        "memcpys": len(ts.memcpys),
        "launches": sum(k["count"] for k in kernels),
        "kernels": kernels,
        "set_sha256": set_hash(kernels, [f"{m.kind},0x{m.address:016x},{m.size}"
                                         for m in ts.memcpys]),
        "registered": {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "by": f"simfront {__version__}"},
    })
    return manifest


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)


class TraceStore:
    """A directory of registered trace sets (the repository's ``traces/`` by default)."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else repo_dir("traces")

    def __repr__(self) -> str:
        return f"TraceStore({str(self.root)!r})"

    def sets(self) -> list[StoredSet]:
        if not self.root.is_dir():
            return []
        out = []
        for d in sorted(self.root.iterdir()):
            if d.is_dir() and not d.name.startswith(".") and \
                    any((d / n).is_file() for n in MANIFEST_NAMES):
                out.append(StoredSet(d.name, d, read_manifest(d)))
        return out

    def names(self) -> list[str]:
        return [s.name for s in self.sets()]

    def get(self, name: str) -> StoredSet:
        d = self.root / name
        if not d.is_dir() or name.startswith("."):
            known = ", ".join(self.names()) or "none"
            raise InputError(f"no trace set '{name}' in the store (known: {known})", self.root)
        return StoredSet(name, d, read_manifest(d))

    def trace_hash(self, set_name: str, kernel: str | int) -> str:
        """SHA-256 of a stored kernel's decompressed text (from the manifest)."""
        return self.get(set_name).trace_hash(kernel)

    def register(self, directory: str | Path, manifest_fields: dict[str, Any],
                 name: str | None = None, overwrite: bool = False,
                 check_body: bool = True) -> StoredSet:
        """Copy a validated trace directory into the store with a computed manifest.

        Refuses (InputError, nothing written) a set that fails validation, a name already
        taken (unless ``overwrite``) or a directory without ``kernelslist.g``. Only
        ``kernelslist.g`` and the listed kernel files are copied (as they are: compressed
        files stay compressed).
        """
        src = Path(directory)
        name = name or src.name
        if not name or "/" in name or name.startswith("."):
            raise InputError(f"'{name}' is not a usable trace-set name", src)
        report = validate_set(src, body=check_body)
        if not report.ok:
            first = "\n  ".join(str(p) for p in report.errors[:10])
            more = f"\n  ... and {len(report.errors) - 10} more" if len(report.errors) > 10 else ""
            raise InputError(f"refusing to register a set that fails validation "
                             f"({len(report.errors)} errors):\n  {first}{more}", src)
        dest = self.root / name
        if dest.exists() and not overwrite:
            raise InputError(f"trace set '{name}' already exists in the store", dest)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=self.root))
        tmp.chmod(0o755)  # mkdtemp's 0700 would survive the rename
        try:
            ts = TraceSet(src)
            shutil.copy2(ts.kernelslist, tmp / "kernelslist.g")
            for ref in ts.kernel_refs:
                shutil.copy2(src / ref.file, tmp / ref.file)
            for extra in ("repairs.json", "multiplicity.txt"):
                if (src / extra).is_file():
                    shutil.copy2(src / extra, tmp / extra)
            fields = dict(manifest_fields)
            if (src / "repairs.json").is_file() and "repairs" not in fields:
                fields["repairs"] = "repairs.json"
            write_json_atomic(tmp / "manifest.json", build_manifest(tmp, fields, name))
            if dest.exists():
                old = dest.with_name(f".{name}.old-{os.getpid()}")
                os.replace(dest, old)
                os.replace(tmp, dest)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.get(name)


def trace_hash(set_: str | Path | StoredSet, kernel: str | int,
               store: TraceStore | None = None) -> str:
    """SHA-256 of a kernel's decompressed text: from the manifest of a stored set (by name
    or StoredSet), or computed from the file for a plain trace directory."""
    if isinstance(set_, StoredSet):
        return set_.trace_hash(kernel)
    p = Path(set_)
    if p.is_dir():
        if any((p / n).is_file() for n in MANIFEST_NAMES):
            return StoredSet(p.name, p, read_manifest(p)).trace_hash(kernel)
        return kernel_text_hash(TraceSet(p).kernel(kernel).path)[0]
    return (store or TraceStore()).trace_hash(str(set_), kernel)
