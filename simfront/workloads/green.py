"""Run part of a step on a subset of the GPU's SMs: a CUDA green context, per process, so no
device-wide setting changes. Green contexts split SMs, not L2 or DRAM: the ``sm_count``
variant of a GPU description changes the same thing."""

from __future__ import annotations

import contextlib
from typing import Iterator

from simfront.core.errors import ConfigError


def parse_sms(text: str) -> list[int | None]:
    """``"all,96,64"`` -> ``[None, 96, 64]`` (None: the whole GPU)."""
    out: list[int | None] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("all", "full", ""):
            out.append(None)
            continue
        try:
            n = int(part)
        except ValueError:
            raise ConfigError(f"SM count must be an integer or 'all', got {part!r}",
                              field="--sms") from None
        if n < 1:
            raise ConfigError(f"SM count must be positive, got {n}", field="--sms")
        out.append(n)
    return out


@contextlib.contextmanager
def sm_subset(sms: int | None, device: str = "cuda") -> Iterator[int | None]:
    """Run what is inside on ``sms`` SMs (a green context's stream made current); None: the
    whole GPU, unchanged. Yields the SM count the context was given."""
    if sms is None:
        yield None
        return
    import torch

    from torch.cuda.green_contexts import GreenContext

    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    total = torch.cuda.get_device_properties(index).multi_processor_count
    if sms >= total:
        yield None
        return
    ctx = GreenContext.create(num_sms=sms, device_id=index)
    stream = ctx.Stream()
    with torch.cuda.stream(stream):
        yield sms
    stream.synchronize()
