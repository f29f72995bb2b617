"""Compiles the kernels of vector-work ablation variants with Triton, for sm_90 and on the CPU
(no GPU, no mamba_ssm import: the kernel's function is lifted out of its file), and counts
their SASS instructions: the check that a variant's source change reached the machine code
(exp2 doubles MUFU.EX2, noexp removes it and the clamps' FMNMX, fma4 adds FMUL+FFMA).

    python bench/ablation_sass.py [--json OUT] [--const NAME=V ...] ABL_DIR [ABL_DIR ...]

Each ABL_DIR is an ``-o`` folder of ``simfront workloads ablate`` (its ablation.json names
the kernels, files and pinned configs). Needs Triton (3.6 was used; ``pip install --target``
of its wheel is enough). Counts are static (instructions in the binary, the unrolled loop
body included), not executed instructions: the traces give those.

The compile needs every pointer's element type and every constexpr's value; the defaults are
mamba_ssm's Mamba2 training path (bf16 activations; fp32 CB, dt, dA_cumsum, states, D; causal,
D per head, no z, no seq_idx, d_state 128). ``--const`` changes a constexpr, ``--ptr
NAME=TYPE`` a pointer (Triton signature types: *bf16, *fp32, *i32).
"""

from __future__ import annotations

import argparse
import ast
import collections
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

POINTERS = {"x_ptr": "*bf16", "z_ptr": "*bf16", "out_ptr": "*bf16", "out_x_ptr": "*bf16",
            "C_ptr": "*bf16", "b_ptr": "*bf16", "dout_ptr": "*bf16", "dx_ptr": "*bf16",
            "seq_idx_ptr": "*i32"}          # others: *fp32
CONSTEXPRS = {"IS_CAUSAL": True, "HAS_D": True, "D_HAS_HDIM": False, "HAS_Z": False,
              "HAS_SEQ_IDX": False, "BLOCK_SIZE_DSTATE": 128, "IS_TRITON_22": True,
              "DETERMINISTIC_REDUCTION": False}
OPS = ("MUFU.EX2", "FMUL", "FFMA", "FADD", "FMNMX", "HGMMA", "HMMA", "LDGSTS")
# cuobjdump -sass: "/*0a30*/   @!P0 MUFU.EX2 R5, R4 ;   /* 0x... */"
_SASS_OP = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def lift(path: Path, kernel: str, work: Path):
    """The kernel as a bare ``@triton.jit`` function of a module of its own (its autotune
    decorator and the file's imports left behind)."""
    src = path.read_text()
    node = next((n for n in ast.parse(src).body
                 if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if node is None:
        raise SystemExit(f"{path}: no top-level def {kernel}(")
    body = "\n".join(src.splitlines()[node.lineno - 1:node.end_lineno])
    mod = work / f"{kernel}_{abs(hash(str(path)))}.py"
    mod.write_text(f"import triton\nimport triton.language as tl\n\n\n@triton.jit\n{body}\n")
    spec = importlib.util.spec_from_file_location(mod.stem, mod)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, kernel)


def sass_counts(fn, config: dict, constexprs: dict, pointers: dict) -> dict[str, int]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.tools.disasm import path_to_cuobjdump

    consts = {**constexprs, **{k: v for k, v in config.items()
                               if k not in ("num_warps", "num_stages", "num_ctas", "maxnreg")}}
    sig, values = {}, {}
    for a in fn.arg_names:
        if a in consts:
            sig[a], values[a] = "constexpr", consts[a]
        elif a.endswith("_ptr"):
            sig[a] = pointers.get(a, "*fp32")
        elif a.isupper():
            raise SystemExit(f"{fn.__name__}: no value for constexpr {a} (give --const {a}=V)")
        else:
            sig[a] = "i32"
    k = triton.compile(ASTSource(fn, sig, values), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": config["num_warps"],
                                "num_stages": config["num_stages"]})
    # cuobjdump itself: triton.tools.disasm.get_sass stops early on long kernels (4096 of
    # these kernels' ~4400 instructions)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"])
        f.flush()
        sass = subprocess.check_output([path_to_cuobjdump(), "-sass", f.name], text=True)
    ops = collections.Counter(_SASS_OP.findall(sass))
    short = collections.Counter()
    for op, n in ops.items():
        short[op.split(".")[0]] += n
    row = {op: (ops[op] if "." in op else short[op]) for op in OPS}
    row["total"] = sum(n for op, n in ops.items() if op != "NOP")   # NOPs: padding
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--const", action="append", default=[], metavar="NAME=V")
    ap.add_argument("--ptr", action="append", default=[], metavar="NAME=TYPE")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    constexprs = {**CONSTEXPRS, **{k: ast.literal_eval(v) for k, _, v in
                                   (c.partition("=") for c in args.const)}}
    pointers = {**POINTERS, **dict(p.split("=", 1) for p in args.ptr)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in args.dirs:
            rec = json.loads((d / "ablation.json").read_text())
            for kernel, k in rec["kernels"].items():
                fn = lift(d / rec["copy"] / k["file"], kernel, Path(tmp))
                row = {"variant": rec["variant"], "kernel": kernel,
                       **sass_counts(fn, k["config"], constexprs, pointers)}
                rows.append(row)
                print(" ".join(f"{row[c]}" if not isinstance(row[c], str) else row[c]
                               for c in ("variant", "kernel", *OPS, "total")), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"ops": list(OPS), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
