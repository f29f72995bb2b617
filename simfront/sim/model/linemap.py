"""A map from 64-bit keys (cache lines, or a line and a cache) to 64-bit values, in two
numpy arrays, for the trace pass's compiled loops.

numba's typed dict costs two reference-count calls a lookup, and a loop that looks one up
cannot be compiled without reference counts; with them, the cache simulation spent more
time counting references than simulating (perf, ``mamba2_lm-paper-box``). These arrays are
read (``get``) in loops compiled without them and written (``entry``) where the map
may grow. Open addressing with linear probing, kept at most half full.
"""

from __future__ import annotations

import numba
import numpy as np

#: the key of an empty slot (lines and line keys are never negative)
EMPTY = np.int64(np.iinfo(np.int64).min)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: lines that differ in low bits spread


class LineMap:
    """The map: ``keys``, ``vals`` (power-of-two sized; ``EMPTY`` keys are free slots) and
    ``n``, a one-element array with the number of entries."""

    def __init__(self, capacity: int = 1 << 10):
        size = 1 << max(4, int(capacity - 1).bit_length())
        self.keys = np.full(size, EMPTY, np.int64)
        self.vals = np.zeros(size, np.int64)
        self.n = np.zeros(1, np.int64)

    def __len__(self) -> int:
        return int(self.n[0])

    def values(self) -> np.ndarray:
        return self.vals[self.keys != EMPTY]

    def get(self, key: int, default: int) -> int:
        return int(get(self.keys, self.vals, np.int64(key), np.int64(default)))

    def grown(self, keys: np.ndarray, vals: np.ndarray) -> None:
        """Take the arrays a compiled writer returned (larger ones where it grew them)."""
        self.keys, self.vals = keys, vals


@numba.njit(cache=True, inline="always")
def _home(key, mask):
    return np.int64((np.uint64(key) * _MIX) >> np.uint64(32)) & mask


@numba.njit(cache=True, inline="always")
def get(keys, vals, key, default):
    """The value of ``key``, or ``default``."""
    mask = np.int64(keys.shape[0] - 1)
    s = _home(key, mask)
    while True:
        k = keys[s]
        if k == key:
            return vals[s]
        if k == EMPTY:
            return default
        s = (s + 1) & mask


@numba.njit(cache=True, inline="always")
def slot(keys, key):
    """The slot that holds ``key``, or the free one it would go to."""
    mask = np.int64(keys.shape[0] - 1)
    s = _home(key, mask)
    while keys[s] != key and keys[s] != EMPTY:
        s = (s + 1) & mask
    return s


@numba.njit(cache=True)
def _rehashed(keys, vals):
    nk = np.full(keys.shape[0] * 2, EMPTY, np.int64)
    nv = np.zeros(keys.shape[0] * 2, np.int64)
    for i in range(keys.shape[0]):
        if keys[i] != EMPTY:
            s = slot(nk, keys[i])
            nk[s] = keys[i]
            nv[s] = vals[i]
    return nk, nv


@numba.njit(cache=True, inline="always")
def entry(keys, vals, n, key, value):
    """The slot of ``key``, added with ``value`` where absent (``n`` counts it), in arrays
    twice the size once half full: (keys, vals, slot); the caller keeps the arrays."""
    if 2 * (n[0] + 1) > keys.shape[0]:
        keys, vals = _rehashed(keys, vals)
    s = slot(keys, key)
    if keys[s] == EMPTY:
        keys[s] = key
        vals[s] = value
        n[0] += 1
    return keys, vals, s
