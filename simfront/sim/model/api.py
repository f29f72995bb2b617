"""Library entry points of the model: one kernel, or a whole trace set."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import time
from collections import OrderedDict
from pathlib import Path

from simfront.gpu import load_gpu
from simfront.sim.model.carry import L2Carry
from simfront.sim.model.clock import at_clock, bounded_clock, known_clock, run_clock
from simfront.sim.model.combine import combine
from simfront.sim.model.params import DEFAULT_PARAMS, ModelParams
from simfront.sim.model.decode import PIPE_INDEX
from simfront.sim.model.reuse import digest_of, model_code_hash, model_disk_dir
from simfront.sim.model.simulate import (cache_key, narrowed, op_timing, prepare_kernel,
                                        time_prepared)
from simfront.core.provenance import sha256_file

#: Prepared kernels (the trace pass) kept in memory, so that a sweep over parameters that
#: leave the caches and SM count alone (tensor:vector ratio, clock, DRAM bandwidth) reads
#: and cache-simulates each trace once per process; and on disk (``prepared_cache_dir``),
#: so that the other processes of a sweep, and later sweeps, read it once.
PREPARED_CACHE_SIZE = 64
_prepared: OrderedDict = OrderedDict()
#: The prepared kernels in memory that the disk cache does not hold (above MAX_DISK_BYTES,
#: or no disk cache): a trace pass to get back, where the others cost a file read, so they
#: are dropped last (a set's largest kernels otherwise fall out of memory before the next
#: configuration comes back to them).
_unsaved: set = set()


def prepared_cache_dir() -> Path | None:
    """Where prepared kernels are kept between processes: ``$SIMFRONT_CACHE/prepared``
    (default ``~/.cache/simfront/prepared``); None when ``SIMFRONT_MODEL_CACHE`` is off."""
    return model_disk_dir("prepared")


def _disk_key(kernel, gpu, launch, params) -> str:

    h = hashlib.sha256()
    for part in (model_code_hash(), sha256_file(kernel.path), repr(cache_key(gpu)),
                 repr(sorted((launch or {}).items())), repr(params)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _widened(prep, dtypes: dict):
    """A prepared kernel read from disk with its columns back in the types the issue model
    was compiled for."""
    prep.cols = {k: a.astype(dtypes[k], copy=False) for k, a in prep.cols.items()}
    return prep


def _from_disk(path: Path):
    try:
        with open(path, "rb") as f:
            prep, dtypes = pickle.load(f)
        return _widened(prep, dtypes)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ValueError,
            TypeError, KeyError):
        return None  # absent, torn or from another layout: prepare again


#: The largest prepared kernel kept on disk, in bytes of SM 0's rows as stored (narrowed):
#: the largest of the shipped sets' (one traced block of a 1,024-thread kernel, 1M rows)
#: is about 40 MB.
MAX_DISK_BYTES = 256 << 20


def _to_disk(path: Path, prep) -> bool:
    """Whether ``prep`` is now on disk at ``path``."""
    cols = narrowed(prep.cols)  # a fifth of the size; read back exactly (_widened)
    if sum(a.nbytes for a in cols.values()) + prep.warp_off.nbytes > MAX_DISK_BYTES:
        return False
    dtypes = {k: a.dtype for k, a in prep.cols.items()}
    stored = dataclasses.replace(prep, cols=cols)
    stored.rows_digest = digest_of(prep)  # of the rows as read back (_widened)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            pickle.dump((stored, dtypes), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        return False  # a cache that cannot be written only costs time
    return True


def _prepared_kernel(kernel, gpu, launch, params):
    st = kernel.path.stat()
    key = (str(kernel.path.resolve()), st.st_size, st.st_mtime_ns, cache_key(gpu),
           tuple(sorted((launch or {}).items())), params)
    prep = _prepared.get(key)
    if prep is not None:
        _prepared.move_to_end(key)
        return prep
    where = prepared_cache_dir()
    path = where / f"{_disk_key(kernel, gpu, launch, params)}.pkl" if where else None
    prep = _from_disk(path) if path else None
    if prep is None:
        prep = prepare_kernel(kernel, gpu, launch, params)
        if not (path and _to_disk(path, prep)):
            _unsaved.add(key)
    _prepared[key] = prep
    _evict()
    return prep


def _evict() -> None:
    """Down to PREPARED_CACHE_SIZE prepared kernels in memory: the least recently used of
    those on disk first, then of the others."""
    while len(_prepared) > PREPARED_CACHE_SIZE:
        key = next((k for k in _prepared if k not in _unsaved), next(iter(_prepared)))
        del _prepared[key]
        _unsaved.discard(key)


def timed_record(prep, gpu, params: ModelParams = DEFAULT_PARAMS) -> dict:
    """A prepared kernel (the trace pass) through the issue model at the clock it runs at
    (``clock``: below the core clock where the description's limits say so) and combined
    into its record: how every caller times a kernel."""
    known = known_clock(prep, gpu)
    if known is None and prep.pipe_counts[PIPE_INDEX["tensor"]] > 0:
        known = bounded_clock(prep, gpu, op_timing(prep, gpu, params))
    run = None
    if known is None:
        run = time_prepared(prep, gpu, params)
        hz, limit = run_clock(run, gpu)
    else:
        hz, limit = known
    timed_gpu = gpu
    if hz < gpu.clocks.core.hz:
        # time it (again) where its memory latencies and bandwidths are that clock's cycles
        timed_gpu = at_clock(gpu, hz)
        run = time_prepared(prep, timed_gpu, params)
    elif run is None:
        run = time_prepared(prep, gpu, params)
    rec = combine(run, timed_gpu, params)
    rec["sim_clock_mhz"] = timed_gpu.clocks.core.hz / 1e6
    rec["sim_clock_limit"] = limit
    return rec


def simulate_kernel(kernel, gpu, launch: dict | None = None,
                    params: ModelParams = DEFAULT_PARAMS, cache: bool = True,
                    l2: L2Carry | None = None) -> dict:
    """Model one kernel launch: ``kernel`` a :class:`simfront.traces.reader.KernelTrace`,
    ``gpu`` a GPU description (or a preset name), ``launch`` optional launch facts
    (``regs``, ``shmem``) where the trace header is not to be trusted. Returns a record with
    the columns of ``simfront.stats.schema`` (identity columns: kernel ones only).
    ``cache``: reuse this process's trace pass of the same file, launch and cache geometry
    (False: always read the trace). ``l2``: start from the L2 the step's previous kernel
    left and leave this kernel's in it (``carry``; the trace pass is then never reused)."""
    gpu = load_gpu(gpu)
    t0 = time.perf_counter()
    if cache and l2 is None:
        prep = _prepared_kernel(kernel, gpu, launch, params)
    else:
        prep = prepare_kernel(kernel, gpu, launch, params, l2)
    rec = timed_record(prep, gpu, params)
    h = kernel.header
    rec = {"kernel_id": kernel.kernel_id, "kernel_name": h.name,
           "grid": ",".join(map(str, h.grid)), "block": ",".join(map(str, h.block)),
           "complete": True, **rec}
    rec["sim_wall_s"] = time.perf_counter() - t0
    return rec
