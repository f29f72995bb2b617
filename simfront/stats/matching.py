"""Pairing the launches of one step as two sources list them (a trace set or simulated records
against ncu records), and the error figures of a pairing.

Two lists of the same step rarely agree position by position: the 2024 tracer missed every
``cuLaunchKernelEx`` launch, a sampled capture may skip some, and Triton autotunes another
launch shape in another process. So launches are *aligned*: the longest common subsequence
of the two lists in launch order, where two launches pair only when their kernel (by short
name, so mangled trace names meet ncu's demangled ones), grid and block agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simfront.core.categories import short_name


def _dims(value) -> tuple[int, ...] | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    parts = value.strip("()").split(",") if isinstance(value, str) else value
    try:
        return tuple(int(x) for x in parts)
    except (TypeError, ValueError):
        return None


def launch_key(name: str, grid=None, block=None) -> tuple:
    """What must agree for two records to be the same launch: short kernel name, grid, block
    (grid and block left out where a source does not state them)."""
    return (short_name(str(name)), _dims(grid), _dims(block))


def align(a: Sequence, b: Sequence) -> list[tuple[int, int]]:
    """Longest common subsequence of two key lists: index pairs (i in a, j in b), in order."""
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            L[i, j] = L[i + 1, j + 1] + 1 if a[i] == b[j] else max(L[i + 1, j], L[i, j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif L[i + 1, j] >= L[i, j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def mape(measured, predicted) -> float:
    """Mean absolute percentage error of ``predicted`` against ``measured`` (a fraction)."""
    measured, predicted = np.asarray(measured, float), np.asarray(predicted, float)
    return float(np.mean(np.abs(predicted - measured) / measured))


def pearson(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
