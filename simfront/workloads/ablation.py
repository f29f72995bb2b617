"""Vector-work ablation of Triton kernels: variants of a kernel with its elementwise work
changed at the source and its tiling pinned, so a timed and traced run measures, on the GPU,
how much the kernel's time rests on that work.

The rewriting works on the source text of an installed package (mamba_ssm imports a CUDA
extension, so nothing here imports it): ``make_variant`` copies the package folder, rewrites
the named kernels' bodies and cuts each kernel's ``@triton.autotune`` config list to the one
config the unchanged kernel was tuned to (``parse_autotune_log`` reads Triton's
``TRITON_PRINT_AUTOTUNING=1`` lines), and the caller puts the copy first on PYTHONPATH.

Variants change the kernel body only (from its ``def`` to its last line); comments and
strings are never rewritten. A variant that finds nothing to change in a kernel is an error:
its timing would be the base's under another name.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from simfront.core.atomic import write_text
from simfront.core.errors import InputError

ABLATION_JSON = "ablation.json"
FORMAT_VERSION = 1


class AblationError(InputError):
    """A kernel, config or variant that cannot be applied to the given source."""


# --- kernel location -------------------------------------------------------------------

@dataclass(frozen=True)
class KernelSpan:
    """Character offsets of a top-level kernel in its file: ``start`` at its first decorator
    (the ``@triton.autotune(`` line where there is one), ``body_start`` at ``def``, ``end``
    after its last line (newline included)."""

    name: str
    start: int
    body_start: int
    end: int


def _line_starts(source: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", source)]


def _offset(source: str, starts: list[int], lineno: int, col_bytes: int) -> int:
    """ast positions are 1-based lines and UTF-8 byte columns; this is the str offset."""
    line_start = starts[lineno - 1]
    line_end = starts[lineno] if lineno < len(starts) else len(source)
    line = source[line_start:line_end]
    return line_start + len(line.encode()[:col_bytes].decode())


def _function_node(source: str, name: str, path: str | Path | None) -> ast.FunctionDef:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise AblationError(f"does not parse: {exc.msg}", path=path, line=exc.lineno) from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AblationError(f"no top-level 'def {name}(' here", path=path, field="kernel")


def kernel_span(source: str, name: str, path: str | Path | None = None) -> KernelSpan:
    """Where kernel ``name`` (a top-level function) sits in ``source``."""
    node = _function_node(source, name, path)
    starts = _line_starts(source)
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    # a decorator's node starts after its '@'
    start = starts[first - 1]
    body_start = starts[node.lineno - 1]
    end = starts[node.end_lineno] if node.end_lineno < len(starts) else len(source)
    return KernelSpan(name, start, body_start, end)


# --- scanning code, not comments or strings ----------------------------------------------

def _code_mask(text: str) -> list[bool]:
    """True for each character of ``text`` that is code: outside comments and string
    literals (single, double and triple quotes; enough for Triton kernels)."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                mask[k] = False
            i = j
        elif ch in "'\"":
            quote = text[i:i + 3] if text[i:i + 3] in ("'''", '"""') else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + len(quote))
            for k in range(i, j):
                mask[k] = False
            i = j
        else:
            i += 1
    return mask


@dataclass(frozen=True)
class Call:
    """A call ``FUNC(ARGS)`` in a text: ``start`` at FUNC, ``open``/``close`` at the
    parentheses."""

    start: int
    open: int
    close: int


def find_calls(text: str, func: str) -> list[Call]:
    """The outermost calls of dotted name ``func`` (``tl.exp``) in ``text``'s code, in order.
    ``tl.exp2(`` or ``x.tl.exp(`` are other names and do not match."""
    mask = _code_mask(text)
    parts = [re.escape(p) for p in func.split(".")]
    pattern = re.compile(r"(?<![\w.])" + r"\s*\.\s*".join(parts) + r"\s*\(")
    calls: list[Call] = []
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return calls
        if not mask[m.start()]:
            pos = m.start() + 1
            continue
        open_ = m.end() - 1
        close = _matching_paren(text, mask, open_)
        calls.append(Call(m.start(), open_, close))
        pos = close + 1


def _matching_paren(text: str, mask: list[bool], open_: int) -> int:
    depth = 0
    for i in range(open_, len(text)):
        if not mask[i]:
            continue
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    line = text.count("\n", 0, open_) + 1
    raise AblationError(f"unbalanced parenthesis opened at line {line} of the kernel text")


def split_args(args: str) -> list[str]:
    """A call's argument text split at its top-level commas (stripped)."""
    mask = _code_mask(args)
    out, depth, last = [], 0, 0
    for i, ch in enumerate(args):
        if not mask[i]:
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(args[last:i].strip())
            last = i + 1
    tail = args[last:].strip()
    if tail:
        out.append(tail)
    return out


def rewrite_calls(text: str, func: str, make: Callable[[str], str]) -> tuple[str, int]:
    """``text`` with every call of ``func`` replaced by ``make(ARGS)``, inner calls first;
    returns the new text and the number of calls replaced."""
    out, last, count = [], 0, 0
    for call in find_calls(text, func):
        inner, n = rewrite_calls(text[call.open + 1:call.close], func, make)
        out.append(text[last:call.start])
        out.append(make(inner))
        last = call.close + 1
        count += 1 + n
    out.append(text[last:])
    return "".join(out), count


# --- variants --------------------------------------------------------------------------

def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0.0
    except ValueError:
        return False


def _exp_arg(args: str, where: str) -> str:
    parts = split_args(args)
    if len(parts) != 1:
        raise AblationError(f"tl.exp with {len(parts)} arguments in {where}: '{args.strip()}'")
    return parts[0]


def _exp2(body: str, where: str) -> tuple[str, int]:
    # Two exps of different arguments whose product is exp(ARG): the compiler cannot merge
    # them (no reassociation in FP32), so each element pays a second MUFU.EX2 and its scaling.
    def make(args: str) -> str:
        a = _exp_arg(args, where)
        return f"(tl.exp(({a}) * 0.5) * tl.exp(({a}) - ({a}) * 0.5))"
    return rewrite_calls(body, "tl.exp", make)


def _strip_min_zero(args: str) -> str:
    def make(margs: str) -> str:
        parts = split_args(margs)
        if len(parts) == 2 and _is_zero(parts[1]):
            return f"({parts[0]})"
        return f"tl.minimum({margs})"
    return rewrite_calls(args, "tl.minimum", make)[0]


def _noexp(body: str, where: str) -> tuple[str, int]:
    # The exp and its clamp go; the value is the exponent itself, so the data flow, loads
    # and stores stay and only the transcendental and the min leave the instruction mix.
    def make(args: str) -> str:
        return f"({_strip_min_zero(_exp_arg(args, where))})"
    return rewrite_calls(body, "tl.exp", make)


FMA_LINE = "{x} = {x} * 1.0000001 - {x} * 1e-07"
FMA_LINES = 2      # each line is a multiply and a dependent multiply-add: 4 FP32 ops


def _fma4(body: str, where: str) -> tuple[str, int]:
    """After each in-place multiply ``NAME *= EXPR`` that is a statement of a ``for`` or
    ``while`` loop (at any depth of ifs inside it) and whose EXPR calls ``tl.exp``, two
    lines that each keep NAME's value (``x*1.0000001 - x*1e-07``) as a multiply and a
    dependent FMA: four dependent FP32 ops per element per iteration. Tying the rule to the
    exp-scaled tile keeps it to the fp32 decay tile of the SSD kernels (the product with
    tl.exp is fp32)."""
    tree = ast.parse(body)
    sites: list[tuple[int, int, str]] = []

    def calls_exp(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "exp" and isinstance(n.func.value, ast.Name)
                   and n.func.value.id == "tl" for n in ast.walk(node))

    def visit(stmts: list[ast.stmt], in_loop: bool) -> None:
        for st in stmts:
            if (in_loop and isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Mult)
                    and isinstance(st.target, ast.Name) and calls_exp(st.value)):
                sites.append((st.end_lineno, st.col_offset, st.target.id))
            for name in ("body", "orelse"):
                inner = getattr(st, name, None)
                if isinstance(inner, list) and not isinstance(st, ast.FunctionDef):
                    visit(inner, in_loop or isinstance(st, (ast.For, ast.While)))

    visit(tree.body[0].body, False)
    lines = body.splitlines(keepends=True)
    for end_lineno, col, name in sorted(sites, reverse=True):
        indent = lines[end_lineno - 1][:col]
        extra = "".join(indent + FMA_LINE.format(x=name) + "\n" for _ in range(FMA_LINES))
        lines.insert(end_lineno, extra)
    return "".join(lines), len(sites)


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    rewrite: Callable[[str, str], tuple[str, int]] | None


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("base", "the kernel unchanged (its tiling pinned like every variant's)", None),
    Variant("exp2", "every tl.exp(A) -> tl.exp(A*0.5) * tl.exp(A - A*0.5): a second exp "
            "per element", _exp2),
    Variant("noexp", "every tl.exp(A) -> (A), with tl.minimum(X, 0.0) inside it -> X: no "
            "exp, no clamp", _noexp),
    Variant("fma4", "after each in-loop 'X *= ...tl.exp(...)', 4 dependent FP32 ops that "
            "keep X (x*1.0000001 - x*1e-07, twice)", _fma4),
)}


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise AblationError(f"unknown variant '{name}': use one of {', '.join(VARIANTS)}",
                            field="variant")
    return VARIANTS[name]


def apply_variant(source: str, kernel: str, variant: str,
                  path: str | Path | None = None) -> tuple[str, int]:
    """``source`` with ``variant`` applied to ``kernel``'s body; returns the new source and
    the number of sites changed. A variant other than ``base`` that changes nothing raises."""
    v = get_variant(variant)
    if v.rewrite is None:
        return source, 0
    span = kernel_span(source, kernel, path)
    where = f"{kernel} ({path})" if path is not None else kernel
    body, count = v.rewrite(source[span.body_start:span.end], where)
    if count == 0:
        raise AblationError(f"variant '{variant}' changes nothing in kernel {kernel} "
                            f"(no site for it: {v.description})", path=path, field="kernel")
    new = source[:span.body_start] + body + source[span.end:]
    try:
        ast.parse(new)
    except SyntaxError as exc:
        raise AblationError(f"variant '{variant}' of {kernel} does not parse: {exc.msg}",
                            path=path, line=exc.lineno) from None
    return new, count


# --- tiling ----------------------------------------------------------------------------

_CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_CONFIG_DEFAULTS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}


@dataclass(frozen=True)
class TritonConfig:
    """One ``triton.Config``: the meta-parameters (BLOCK_SIZE_*) and the launch options."""

    meta: dict[str, int]
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None

    @classmethod
    def from_items(cls, items: dict[str, object], where: str = "") -> "TritonConfig":
        opts = {k: items[k] for k in _CONFIG_OPTIONS if k in items}
        meta = {k: v for k, v in items.items() if k not in _CONFIG_OPTIONS}
        for k, v in {**meta, **opts}.items():
            if v is not None and not isinstance(v, int):
                raise AblationError(f"config value {k}={v!r} is not an integer{where}",
                                    field=k)
        return cls(meta, **opts)

    @classmethod
    def parse(cls, text: str) -> "TritonConfig":
        """``BLOCK_SIZE_M=64,BLOCK_SIZE_N=64,num_warps=4,num_stages=4`` (``:`` also works)."""
        items: dict[str, object] = {}
        for part in text.split(","):
            key, sep, value = part.replace(":", "=", 1).partition("=")
            if not sep or not key.strip():
                raise AblationError(f"config item '{part}' is not KEY=VALUE (in '{text}')",
                                    field="config")
            items[key.strip()] = _literal(value.strip())
        return cls.from_items(items, f" (in '{text}')")

    def as_dict(self) -> dict[str, object]:
        return {**self.meta, "num_warps": self.num_warps, "num_stages": self.num_stages,
                "num_ctas": self.num_ctas, "maxnreg": self.maxnreg}

    def source(self, pre_hook: str | None = None) -> str:
        meta = ", ".join(f"'{k}': {v}" for k, v in self.meta.items())
        opts = [f"num_stages={self.num_stages}", f"num_warps={self.num_warps}"]
        if self.num_ctas != 1:
            opts.append(f"num_ctas={self.num_ctas}")
        if self.maxnreg is not None:
            opts.append(f"maxnreg={self.maxnreg}")
        if pre_hook:
            opts.append(f"pre_hook={pre_hook}")
        return f"triton.Config({{{meta}}}, {', '.join(opts)})"


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _autotune_call(node: ast.FunctionDef) -> ast.Call | None:
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call):
            f = dec.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == "autotune":
                return dec
    return None


def _config_list(call: ast.Call) -> ast.List | None:
    value = next((k.value for k in call.keywords if k.arg == "configs"),
                 call.args[0] if call.args else None)
    if isinstance(value, ast.List):
        return value
    # mamba_ssm wraps the list: configs=autotune_configs([...])
    if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.List):
        return value.args[0]
    return None


def _config_of(node: ast.expr, source: str) -> tuple[TritonConfig, str | None] | None:
    """The config a ``triton.Config({...}, ...)`` literal stands for, and its pre_hook's
    source text; None when it is not such a literal."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Dict)):
        return None
    try:
        items = dict(ast.literal_eval(node.args[0]))
        pre_hook = None
        for kw in node.keywords:
            if kw.arg == "pre_hook":
                pre_hook = ast.get_source_segment(source, kw.value)
            elif kw.arg in _CONFIG_OPTIONS:
                items[kw.arg] = ast.literal_eval(kw.value)
    except ValueError:
        return None
    return TritonConfig.from_items({**_CONFIG_DEFAULTS, **items}), pre_hook


def pin_config(source: str, kernel: str, config: TritonConfig,
               path: str | Path | None = None) -> str:
    """``source`` with ``kernel``'s autotune config list cut to ``config`` (``key=`` and the
    rest of the decorator kept). The list's own element is kept verbatim where one matches
    (meta-parameters, warps, stages, CTAs, registers), so its ``pre_hook`` (mamba_ssm zeroes
    atomically-added outputs there) still runs; otherwise a new ``triton.Config`` is written,
    with the pre_hook every element shares."""
    return _pin(source, kernel, config, path)[0]


def _pin(source: str, kernel: str, config: TritonConfig,
         path: str | Path | None) -> tuple[str, bool]:
    """``pin_config``'s source, and whether ``config`` was one of the list's elements."""
    node = _function_node(source, kernel, path)
    call = _autotune_call(node)
    if call is None:
        raise AblationError(f"kernel {kernel} has no @triton.autotune decorator to pin",
                            path=path, line=node.lineno, field="kernel")
    lst = _config_list(call)
    if lst is None:
        raise AblationError(f"the @triton.autotune of {kernel} has no literal config list",
                            path=path, line=call.lineno, field="configs")
    parsed = [_config_of(e, source) for e in lst.elts]
    match = next((e for e, p in zip(lst.elts, parsed) if p and p[0] == config), None)
    if match is not None:
        text = ast.get_source_segment(source, match)
    else:
        hooks = {p[1] for p in parsed if p}
        if len(hooks) > 1:
            raise AblationError(f"{config.as_dict()} is not in {kernel}'s config list and its "
                                f"configs differ in pre_hook: cannot tell which to keep",
                                path=path, line=lst.lineno, field="configs")
        text = config.source(hooks.pop() if hooks else None)
    starts = _line_starts(source)
    a = _offset(source, starts, lst.lineno, lst.col_offset)
    b = _offset(source, starts, lst.end_lineno, lst.end_col_offset)
    new = f"{source[:a]}[{text}]{source[b:]}"
    ast.parse(new)
    return new, match is not None


# --- Triton's autotuning printout ------------------------------------------------------

_TUNED = re.compile(
    r"Triton autotuning for function (?P<fn>\w+),?\s*"
    r"(?:with key as (?P<key>.*?),\s*)?"
    r"finished after (?P<secs>[\d.]+)s[,;]?\s*"
    r"best config selected: (?P<config>[^;\n]*);", re.S)


@dataclass
class AutotuneLog:
    """What ``TRITON_PRINT_AUTOTUNING=1`` said: per kernel the first key's chosen config
    (``configs``), and every tuning in order (``tunings``: kernel, key text, config)."""

    configs: dict[str, TritonConfig] = field(default_factory=dict)
    tunings: list[tuple[str, str, TritonConfig]] = field(default_factory=list)

    def others(self, kernel: str) -> list[tuple[str, TritonConfig]]:
        """The keys ``kernel`` was tuned for after the first (not pinned), with configs."""
        rows = [(k, c) for fn, k, c in self.tunings if fn == kernel]
        return rows[1:]


def parse_autotune_log(text: str) -> AutotuneLog:
    """Triton 3.x's printout after each autotuning (``runtime/autotuner.py``: "Triton
    autotuning for function F,\\nwith key as K,\\nfinished after Ts,\\nbest config selected:
    C;" with C as ``Config.__str__``: ``NAME: V, ..., num_warps: W, num_ctas: N,
    num_stages: S, maxnreg: R``). Other lines are skipped."""
    log = AutotuneLog()
    for m in _TUNED.finditer(text):
        items: dict[str, object] = {}
        for part in m["config"].split(", "):
            key, sep, value = part.partition(": ")
            if sep:
                items[key.strip()] = _literal(value.strip())
        line = text.count("\n", 0, m.start()) + 1
        cfg = TritonConfig.from_items({**_CONFIG_DEFAULTS, **items},
                                      f" (autotuning log line {line})")
        key = (m["key"] or "").strip()
        log.tunings.append((m["fn"], key, cfg))
        log.configs.setdefault(m["fn"], cfg)
    return log


# --- the package copy ------------------------------------------------------------------

def find_kernel_file(package_dir: Path, kernel: str) -> Path:
    """The one .py file under ``package_dir`` with a top-level ``def KERNEL(``."""
    pattern = re.compile(rf"^def {re.escape(kernel)}\(", re.M)
    hits = [p for p in sorted(package_dir.rglob("*.py"))
            if "__pycache__" not in p.parts and pattern.search(p.read_text(errors="replace"))]
    if not hits:
        raise AblationError(f"no 'def {kernel}(' in any .py file", path=package_dir,
                            field="kernel")
    if len(hits) > 1:
        raise AblationError(f"'def {kernel}(' in {len(hits)} files: "
                            f"{', '.join(str(h.relative_to(package_dir)) for h in hits)}",
                            path=package_dir, field="kernel")
    return hits[0]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_variant(package_dir: str | Path, out_dir: str | Path, kernels: list[str],
                 variant: str, configs: dict[str, TritonConfig]) -> dict:
    """Copy package folder ``package_dir`` (e.g. .../site-packages/mamba_ssm) to
    ``out_dir/<its name>``, apply ``variant`` to each kernel and pin each to its config, and
    write ``out_dir/ablation.json``; returns that record. Put ``out_dir`` first on
    PYTHONPATH to run the variant."""
    package_dir, out_dir = Path(package_dir), Path(out_dir)
    v = get_variant(variant)
    if not (package_dir / "__init__.py").is_file():
        raise AblationError("not a Python package folder (no __init__.py)", path=package_dir)
    if not kernels:
        raise AblationError("no kernel named", field="kernel")
    missing = [k for k in kernels if k not in configs]
    if missing:
        raise AblationError(f"no config to pin for {', '.join(missing)}: every variant keeps "
                            f"one tiling (give --config or --config-from)", field="config")
    dest = out_dir / package_dir.name
    if dest.exists():
        if not (out_dir / ABLATION_JSON).is_file():
            raise AblationError(f"{dest} exists and is not an earlier ablation's copy (no "
                                f"{ABLATION_JSON} beside it): choose another folder",
                                path=out_dir)
        shutil.rmtree(dest)
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(package_dir, dest, ignore=shutil.ignore_patterns("__pycache__"))

    files: dict[str, dict[str, str]] = {}
    rows: dict[str, dict] = {}
    for kernel in kernels:
        src_file = find_kernel_file(package_dir, kernel)
        rel = src_file.relative_to(package_dir).as_posix()
        target = dest / rel
        text = target.read_text()
        files.setdefault(rel, {"sha256_before": _sha(text)})
        text, count = apply_variant(text, kernel, variant, path=src_file)
        text, listed = _pin(text, kernel, configs[kernel], src_file)
        target.write_text(text)
        rows[kernel] = {"file": rel, "sites": count, "config": configs[kernel].as_dict(),
                        "config_listed": listed}
    for rel in files:
        files[rel]["sha256_after"] = _sha((dest / rel).read_text())
    record = {"format": FORMAT_VERSION, "variant": variant, "description": v.description,
              "package": str(package_dir), "copy": package_dir.name, "kernels": rows,
              "files": files}
    write_text(out_dir / ABLATION_JSON, json.dumps(record, indent=1) + "\n")
    return record


# --- reading a set's ablation back ---------------------------------------------------------

ALL_KERNELS = "(all kernels)"


@dataclass(frozen=True)
class AblationRow:
    """One ablated kernel (or ``ALL_KERNELS``: the step's summed kernel time) under one
    timeline condition and variant, against the same condition of ``base``."""

    kernel: str
    condition: str
    variant: str
    launches: int
    base_launches: int
    time_us: float
    base_us: float

    @property
    def ratio(self) -> float:
        return self.time_us / self.base_us if self.base_us else float("nan")


def timeline_kernel_times(path: str | Path) -> dict[str, list[float]]:
    """Each kernel name's launch durations (ns) in a timeline CSV (``timeline-<cond>.csv``,
    the layout of ``ncu --csv --page raw``; .xz read too)."""
    import csv
    import lzma

    path = Path(path)
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or "Kernel Name" not in rows[0] or "gpu__time_duration.sum" not in rows[0]:
        raise AblationError("not a timeline CSV (no 'Kernel Name' and "
                            "'gpu__time_duration.sum' header)", path=path, line=1)
    name, dur = rows[0].index("Kernel Name"), rows[0].index("gpu__time_duration.sum")
    out: dict[str, list[float]] = {}
    for i, row in enumerate(rows[2:], start=3):     # row 2: units
        try:
            out.setdefault(row[name], []).append(float(row[dur]))
        except (ValueError, IndexError):
            raise AblationError("bad launch row", path=path, line=i,
                                field="gpu__time_duration.sum") from None
    return out


def ablation_report(set_dir: str | Path) -> list[AblationRow]:
    """The variants of one set (``set_dir/<variant>/`` with ablation.json and
    ``timeline-<condition>.csv``, as bench/device/ablate.sh stores them) against ``base``:
    per ablated kernel, condition and variant, its summed time and launches beside base's."""
    set_dir = Path(set_dir)
    variants = {p.parent.name: json.loads(p.read_text())
                for p in sorted(set_dir.glob(f"*/{ABLATION_JSON}"))}
    if "base" not in variants:
        raise AblationError(f"no base/{ABLATION_JSON}: the ratios need the base variant",
                            path=set_dir)
    kernels = list(variants["base"]["kernels"])
    conditions = sorted(p.name[len("timeline-"):-len(".csv")]
                        for p in (set_dir / "base").glob("timeline-*.csv"))
    if not conditions:
        raise AblationError("no timeline-<condition>.csv in base/", path=set_dir)
    rows: list[AblationRow] = []
    for cond in conditions:
        base = timeline_kernel_times(set_dir / "base" / f"timeline-{cond}.csv")
        for variant in variants:
            path = set_dir / variant / f"timeline-{cond}.csv"
            if variant == "base" or not path.is_file():
                continue
            times = timeline_kernel_times(path)
            for kernel in [*kernels, ALL_KERNELS]:
                if kernel == ALL_KERNELS:
                    mine = [t for ts in times.values() for t in ts]
                    ref = [t for ts in base.values() for t in ts]
                else:
                    mine, ref = times.get(kernel, []), base.get(kernel, [])
                rows.append(AblationRow(kernel, cond, variant, len(mine), len(ref),
                                        sum(mine) / 1e3, sum(ref) / 1e3))
    return rows
