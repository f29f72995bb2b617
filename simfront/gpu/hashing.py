"""A stable identity for a GPU description, for job ids and provenance."""

from __future__ import annotations

from simfront.core.provenance import sha256_json
from simfront.gpu.gpu import GPU


def config_hash(gpu: GPU) -> str:
    """Hex SHA-256 (first 16 digits) of the description's modelled content. The name is
    left out: two names for the same hardware give the same hash, and renaming a preset
    does not invalidate results."""
    data = gpu.to_dict()
    data.pop("name", None)
    return sha256_json(data)[:16]
