"""Where the model's warps wait, instruction by instruction, beside ncu's source page.

For each code address of a kernel: the clocks SM 0's warps spent with that instruction next
(since their previous issue, or their block's start), as shares of all of them. ncu's
per-instruction warp samples (``--section SourceCounters``, its source page) measure the
same on hardware: a sample finds a warp at the instruction it is about to issue. Where the
shares differ is where the model's picture of a kernel differs from the hardware's; the
comparison needs a trace and a profile of the same binary (one Triton tiling).

ncu puts a wait for earlier work that SASS encodes on the next instruction (a cp.async
wait's ``DEPBAR`` shows on the instruction after it), where the model charges the waiting
instruction itself; compare families of opcodes, or neighbouring addresses, not single
rows, there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simfront.gpu import load_gpu
from simfront.sim.model.params import DEFAULT_PARAMS, ModelParams
from simfront.sim.model.simulate import prepare_kernel, row_waits

#: ncu's per-instruction stall columns, as the source page names them
NCU_STALLS = ("stall_wait", "stall_short_sb", "stall_long_sb", "stall_barrier", "stall_mio",
              "stall_math", "stall_membar", "stall_selected", "stall_not_selected",
              "stall_branch_resolving", "stall_dispatch", "stall_no_inst", "stall_drain")


def pc_waits(kernel, gpu, launch: dict | None = None,
             params: ModelParams = DEFAULT_PARAMS) -> pd.DataFrame:
    """The model's waits of one kernel launch by code address: ``pc``, ``opcode``,
    ``issues`` (rows of SM 0 at that address), ``wait`` (clocks) and ``share``."""
    gpu = load_gpu(gpu)
    prep = prepare_kernel(kernel, gpu, launch, params)
    rows, wait = row_waits(prep, gpu, params)
    names = np.asarray(prep.table.opcodes, dtype=object)
    df = pd.DataFrame({"pc": rows.pc.astype(np.int64), "opcode": names[rows.op],
                       "wait": wait})
    g = df.groupby("pc").agg(opcode=("opcode", "first"), issues=("wait", "size"),
                             wait=("wait", "sum")).reset_index()
    g["share"] = g.wait / max(int(g.wait.sum()), 1)
    return g


def family(opcode: pd.Series) -> pd.Series:
    """An instruction's opcode without guard and modifiers: ``@!P6 FMUL.FTZ R1`` -> FMUL."""
    text = opcode.astype(str).str.strip().str.replace(r"^@!?U?P\w+\s+", "", regex=True)
    return text.str.split().str[0].str.split(".").str[0]


def against_ncu(model: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """The model's waits (:func:`pc_waits`) beside ncu's source page of the same binary
    (``simfront.core.ncu.read_source_pages``), one row per address: ``share_hw`` (of
    ncu's warp samples), ``share_model``, their difference and ncu's stall samples. Raises
    ValueError where the two are not the same code (another opcode at more than one
    address in twenty)."""
    hw = source.set_index("pc")
    m = model.set_index("pc")
    both = m.index.intersection(hw.index)
    differ = both[family(m.opcode[both]).to_numpy() != family(hw.Source[both]).to_numpy()]
    # a few addresses may read differently (ncu and the tracer spell some opcodes apart);
    # another tiling differs at most of them
    if len(differ) > len(both) // 20:
        raise ValueError(f"not the same binary: {len(differ)} of {len(both)} addresses "
                         f"hold another opcode (first at {differ[0]:#x})")
    samples = hw["Warp Stall Sampling (All Samples)"].astype(float)
    out = pd.DataFrame({"source": hw.Source, "share_hw": samples / samples.sum()})
    out = out.join(m[["share", "issues"]].rename(columns={"share": "share_model"}),
                   how="outer")
    out["share_hw"] = out.share_hw.fillna(0.0)
    out["share_model"] = out.share_model.fillna(0.0)
    out["diff"] = out.share_hw - out.share_model
    for c in NCU_STALLS:
        if c in hw:
            out[c] = hw[c].reindex(out.index).fillna(0.0)
    out["family"] = family(out.source.fillna(m.opcode.reindex(out.index)))
    return out


def by_family(joined: pd.DataFrame) -> pd.DataFrame:
    """:func:`against_ncu` summed by opcode family, most under-waited (hardware over the
    model) first."""
    g = joined.groupby("family")[["share_hw", "share_model"]].sum()
    g["diff"] = g.share_hw - g.share_model
    return g.sort_values("diff", ascending=False)
