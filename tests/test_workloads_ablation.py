"""The vector-work ablation's source rewriting (simfront.workloads.ablation): on small
Triton-like kernels written here, and on mamba_ssm 2.3.2's own SSD kernels from the wheel in
shared/wheels (those tests skip without it). Nothing here imports mamba_ssm or Triton: the
rewriting works on source text, and the rewritten expressions are evaluated with Python's
math standing in for ``tl``."""

from __future__ import annotations

import ast
import json
import lzma
import math
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from simfront.core.paths import REPO_ROOT, shared_dir
from simfront.workloads.ablation import (ABLATION_JSON, ALL_KERNELS, VARIANTS, AblationError,
                                         TritonConfig, ablation_report, apply_variant,
                                         find_calls, kernel_span, make_variant,
                                         parse_autotune_log, pin_config, split_args,
                                         timeline_kernel_times)
from simfront.workloads.cli import workloads

KERNELS = '''import triton
import triton.language as tl


def init_to_zero(names):
    return lambda nargs: [nargs[n].zero_() for n in names]


@triton.autotune(
    configs=autotune_configs([
        triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_K': 64}, num_stages=3, num_warps=8),
        triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_K': 32}, num_stages=4, num_warps=4),
    ]),
    key=['chunk_size', 'hdim'],
)
@triton.jit
def scan_kernel(
    x_ptr, dA_ptr, chunk_size, hdim,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
):
    dA_m = tl.load(dA_ptr)
    scale = tl.exp(dA_m)  # tl.exp(in a comment) stays
    label = "tl.exp(in a string) stays"
    acc = tl.zeros((BLOCK_SIZE_M,), dtype=tl.float32) * scale
    for k in range(0, chunk_size, BLOCK_SIZE_K):
        dA_k = tl.load(dA_ptr + k)
        # cb *= tl.exp(dA_m[:, None] - dA_k[None, :])
        cb = tl.load(x_ptr + k)
        cb *= tl.exp(tl.minimum((dA_m[:, None] -
                                 dA_k[None, :]), 0.0))
        cb *= tl.exp2(dA_k)
        if k > 0:
            acc *= tl.exp(tl.minimum(dA_k, 1.0))
        acc += tl.sum(cb, axis=1)
    tl.store(x_ptr, acc)


@triton.autotune(
    configs=[
        triton.Config({'BLOCK_SIZE_N': 32}, num_warps=4, pre_hook=init_to_zero(["y_ptr"])),
        triton.Config({'BLOCK_SIZE_N': 64}, num_warps=8, pre_hook=init_to_zero(["y_ptr"])),
    ],
    key=['n'],
)
@triton.jit
def plain_kernel(y_ptr, n, BLOCK_SIZE_N: tl.constexpr):
    acc = tl.load(y_ptr)
    for k in range(0, n, BLOCK_SIZE_N):
        acc *= 2.0
    tl.store(y_ptr, acc)


def launcher(x):
    return x
'''

# Triton 3.6's printout (runtime/autotuner.py), two keys for one kernel, with step output
# around it; the last entry is Triton 3.0's one-line form.
AUTOTUNE_LOG = """step 0 loss 9.71
Triton autotuning for function scan_kernel,
with key as (256, 64, 'torch.float32', 'torch.bfloat16'),
finished after 1.23s,
best config selected: BLOCK_SIZE_M: 64, BLOCK_SIZE_K: 32, num_warps: 4, num_ctas: 1, num_stages: 4, maxnreg: None;
Triton autotuning for function plain_kernel,
with key as (4096, 'torch.float32'),
finished after 0.40s,
best config selected: BLOCK_SIZE_N: 64, num_warps: 8, num_ctas: 1, num_stages: 3, maxnreg: None;
Triton autotuning for function scan_kernel,
with key as (128, 64, 'torch.float32', 'torch.bfloat16'),
finished after 0.98s,
best config selected: BLOCK_SIZE_M: 128, BLOCK_SIZE_K: 64, num_warps: 8, num_ctas: 1, num_stages: 3, maxnreg: None;
Triton autotuning for function old_kernel finished after 0.50s; best config selected: BLOCK_SIZE: 1024, num_warps: 4, num_ctas: 1, num_stages: 2, maxnreg: None;
step 1 loss 9.64
"""


def _kernel_text(source: str, name: str) -> str:
    span = kernel_span(source, name)
    return source[span.body_start:span.end]


def _code(text: str) -> str:
    """Text without comments and string literals (what the rewriting may touch)."""
    import io
    import tokenize
    toks = tokenize.generate_tokens(io.StringIO(text).readline)
    return " ".join(t.string for t in toks if t.type not in (tokenize.COMMENT, tokenize.STRING))


def test_kernel_span_runs_from_the_autotune_decorator_to_the_last_line():
    span = kernel_span(KERNELS, "scan_kernel")
    assert KERNELS[span.start:].startswith("@triton.autotune(\n    configs=autotune_configs")
    assert KERNELS[span.body_start:].startswith("def scan_kernel(\n")
    # the signature's closing '):' at column 0 is not the end; the next decorator is
    assert KERNELS[:span.end].endswith("    tl.store(x_ptr, acc)\n")
    assert KERNELS[span.end:].lstrip().startswith("@triton.autotune(\n    configs=[")
    last = kernel_span(KERNELS, "plain_kernel")
    assert KERNELS[last.end:].lstrip().startswith("def launcher(x):")
    with pytest.raises(AblationError, match="no top-level 'def missing_kernel\\('"):
        kernel_span(KERNELS, "missing_kernel", path="ops/k.py")


def test_calls_are_found_in_code_with_balanced_parentheses():
    body = _kernel_text(KERNELS, "scan_kernel")
    calls = find_calls(body, "tl.exp")
    # the comment, the string and tl.exp2 are not calls of tl.exp
    assert len(calls) == 3
    args = [body[c.open + 1:c.close] for c in calls]
    assert args[0] == "dA_m"
    wrap = "\n" + " " * 33
    assert args[1] == f"tl.minimum((dA_m[:, None] -{wrap}dA_k[None, :]), 0.0)"
    inner = find_calls(args[1], "tl.minimum")[0]
    assert split_args(args[1][inner.open + 1:inner.close]) == [
        f"(dA_m[:, None] -{wrap}dA_k[None, :])", "0.0"]
    assert split_args("f(a, b), [1, 2], 'x, y'") == ["f(a, b)", "[1, 2]", "'x, y'"]
    with pytest.raises(AblationError, match="unbalanced parenthesis"):
        find_calls("y = tl.exp((a + b)\n", "tl.exp")


def _values(expr: str, **names: float) -> float:
    tl = SimpleNamespace(exp=math.exp, minimum=min, exp2=lambda v: 2.0 ** v)
    return eval(expr, {"tl": tl}, dict(names))  # noqa: S307 - our own rewritten text


def test_exp2_doubles_the_exps_and_keeps_the_value():
    new, sites = apply_variant(KERNELS, "scan_kernel", "exp2")
    assert sites == 3
    ast.parse(new)
    body = _kernel_text(new, "scan_kernel")
    assert "(tl.exp((dA_m) * 0.5) * tl.exp((dA_m) - (dA_m) * 0.5))" in body
    assert _code(body).count("tl . exp (") == 6
    assert "# tl.exp(in a comment) stays" in body and '"tl.exp(in a string) stays"' in body
    # the same value as the one exp, for the in-loop decay tile
    line = next(ln for ln in body.splitlines() if ln.strip().startswith("acc *="))
    expr = line.split("*=", 1)[1]
    for dA_k in (-3.0, -0.2, 0.7, 2.5):
        assert _values(expr, dA_k=dA_k) == pytest.approx(math.exp(min(dA_k, 1.0)), rel=1e-12)
    # the other kernel and the code outside the kernel are untouched
    assert _kernel_text(new, "plain_kernel") == _kernel_text(KERNELS, "plain_kernel")
    assert new[:kernel_span(new, "scan_kernel").body_start] == \
        KERNELS[:kernel_span(KERNELS, "scan_kernel").body_start]


def test_noexp_removes_the_exps_and_the_zero_clamps_only():
    new, sites = apply_variant(KERNELS, "scan_kernel", "noexp")
    assert sites == 3
    ast.parse(new)
    body = _kernel_text(new, "scan_kernel")
    code = _code(body)
    assert "tl . exp (" not in code
    assert "scale = (dA_m)" in body
    assert "cb *= (((dA_m[:, None] -\n                                 dA_k[None, :])))" in body
    # a clamp at 1.0 is not the exp's overflow guard: it stays
    assert "acc *= (tl.minimum(dA_k, 1.0))" in body
    assert "tl.exp2(dA_k)" in body


def test_fma4_adds_four_dependent_ops_after_the_in_loop_exp_multiply():
    new, sites = apply_variant(KERNELS, "scan_kernel", "fma4")
    ast.parse(new)
    # the decay tile of the loop and the exp-scaled acc inside the loop's if; not the
    # tl.exp2 multiply, not the exp outside the loop
    assert sites == 2
    lines = _kernel_text(new, "scan_kernel").splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("cb *= tl.exp("))
    assert lines[i + 2:i + 4] == ["        cb = cb * 1.0000001 - cb * 1e-07"] * 2
    j = next(i for i, ln in enumerate(lines) if ln.strip().startswith("acc *= tl.exp("))
    assert lines[j + 1:j + 3] == ["            acc = acc * 1.0000001 - acc * 1e-07"] * 2
    # the value is kept (to FP rounding)
    x = 0.3712
    for _ in range(2):
        x = x * 1.0000001 - x * 1e-07
    assert x == pytest.approx(0.3712, rel=1e-12)


def test_a_variant_that_changes_nothing_names_the_kernel_and_file():
    for variant in ("exp2", "noexp", "fma4"):
        with pytest.raises(AblationError) as exc:
            apply_variant(KERNELS, "plain_kernel", variant, path="ops/triton/plain.py")
        assert "plain_kernel" in str(exc.value) and "ops/triton/plain.py" in str(exc.value)
    assert apply_variant(KERNELS, "plain_kernel", "base") == (KERNELS, 0)
    with pytest.raises(AblationError, match="unknown variant 'exp3': use one of base"):
        apply_variant(KERNELS, "scan_kernel", "exp3")


def _autotune_configs(source: str, kernel: str) -> tuple[list[str], list[str]]:
    node = next(n for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name == kernel)
    call = node.decorator_list[0]
    value = next(k.value for k in call.keywords if k.arg == "configs")
    lst = value if isinstance(value, ast.List) else value.args[0]
    key = next(k.value for k in call.keywords if k.arg == "key")
    return [ast.unparse(e) for e in lst.elts], [ast.literal_eval(key)]


def test_pin_config_keeps_the_listed_config_and_its_pre_hook():
    new = pin_config(KERNELS, "plain_kernel", TritonConfig({"BLOCK_SIZE_N": 64}, num_warps=8))
    configs, key = _autotune_configs(new, "plain_kernel")
    assert configs == ["triton.Config({'BLOCK_SIZE_N': 64}, num_warps=8, "
                       "pre_hook=init_to_zero(['y_ptr']))"]
    assert key == [["n"]]
    assert _autotune_configs(new, "scan_kernel") == _autotune_configs(KERNELS, "scan_kernel")
    # the wrapped list (mamba_ssm's autotune_configs([...])) is cut inside the wrapper
    new = pin_config(KERNELS, "scan_kernel",
                     TritonConfig({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_K": 32}, 4, 4))
    assert "configs=autotune_configs([triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_K': 32}, " \
           "num_stages=4, num_warps=4)])," in new
    assert _autotune_configs(new, "scan_kernel")[1] == [["chunk_size", "hdim"]]


def test_pin_config_writes_an_unlisted_config_with_the_shared_pre_hook():
    new = pin_config(KERNELS, "plain_kernel",
                     TritonConfig({"BLOCK_SIZE_N": 128}, num_warps=4, num_stages=2))
    assert _autotune_configs(new, "plain_kernel")[0] == [
        "triton.Config({'BLOCK_SIZE_N': 128}, num_stages=2, num_warps=4, "
        "pre_hook=init_to_zero(['y_ptr']))"]
    with pytest.raises(AblationError, match="kernel launcher has no @triton.autotune"):
        pin_config(KERNELS, "launcher", TritonConfig({"BLOCK_SIZE_N": 128}))


def test_autotune_log_gives_the_first_key_per_kernel_and_reports_the_others():
    log = parse_autotune_log(AUTOTUNE_LOG)
    assert log.configs["scan_kernel"] == TritonConfig(
        {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_K": 32}, num_warps=4, num_stages=4)
    assert log.configs["plain_kernel"].as_dict() == {
        "BLOCK_SIZE_N": 64, "num_warps": 8, "num_stages": 3, "num_ctas": 1, "maxnreg": None}
    assert log.configs["old_kernel"].meta == {"BLOCK_SIZE": 1024}
    assert [fn for fn, _, _ in log.tunings] == ["scan_kernel", "plain_kernel", "scan_kernel",
                                                "old_kernel"]
    others = log.others("scan_kernel")
    assert others == [("(128, 64, 'torch.float32', 'torch.bfloat16')",
                       TritonConfig({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_K": 64}, 8, 3))]
    assert log.others("plain_kernel") == []
    assert parse_autotune_log("step 0 loss 9.71\n").configs == {}


def test_config_text_parses_or_names_the_bad_item():
    cfg = TritonConfig.parse("BLOCK_SIZE_M=64,BLOCK_SIZE_N=64,BLOCK_SIZE_K=32,num_warps=4,"
                             "num_stages=4")
    assert cfg == TritonConfig({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32},
                               num_warps=4, num_stages=4)
    with pytest.raises(AblationError, match="'num_warps' is not KEY=VALUE"):
        TritonConfig.parse("BLOCK_SIZE_M=64,num_warps")
    with pytest.raises(AblationError, match="BLOCK_SIZE_M='big' is not an integer"):
        TritonConfig.parse("BLOCK_SIZE_M=big")
    # kernels tuned on warps alone (mamba_ssm's layer norms) have no meta-parameters
    assert TritonConfig.parse("num_warps=8").source() == "triton.Config({}, num_stages=3, " \
        "num_warps=8)"


def _package(root: Path) -> Path:
    pkg = root / "toykern"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "kernels.py").write_text(KERNELS)
    (pkg / "ops" / "other.py").write_text("def helper():\n    return 1\n")
    return pkg


def test_cli_makes_the_variant_package_from_an_autotune_log(tmp_path):
    pkg = _package(tmp_path / "site")
    log = tmp_path / "autotune.log"
    log.write_text(AUTOTUNE_LOG)
    out = tmp_path / "abl"
    res = CliRunner().invoke(workloads, [
        "ablate", "--package", str(pkg), "--kernel", "scan_kernel", "--kernel",
        "plain_kernel", "--variant", "base", "--config-from", str(log), "--config",
        "plain_kernel=BLOCK_SIZE_N=32,num_warps=2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "scan_kernel: tuned for 2 keys" in res.output
    rec = json.loads((out / ABLATION_JSON).read_text())
    assert rec["variant"] == "base" and rec["copy"] == "toykern"
    assert rec["kernels"]["scan_kernel"]["config"]["BLOCK_SIZE_M"] == 64
    assert rec["kernels"]["plain_kernel"]["config"]["BLOCK_SIZE_N"] == 32   # --config wins
    assert rec["kernels"]["scan_kernel"]["config_listed"]
    assert not rec["kernels"]["plain_kernel"]["config_listed"]       # 2 warps: not listed
    assert list(rec["files"]) == ["ops/kernels.py"]
    f = rec["files"]["ops/kernels.py"]
    assert f["sha256_before"] != f["sha256_after"]
    new = (out / "toykern" / "ops" / "kernels.py").read_text()
    assert _autotune_configs(new, "plain_kernel")[0] == [
        "triton.Config({'BLOCK_SIZE_N': 32}, num_stages=3, num_warps=2, "
        "pre_hook=init_to_zero(['y_ptr']))"]
    assert (out / "toykern" / "ops" / "other.py").read_text() == "def helper():\n    return 1\n"
    assert (pkg / "ops" / "kernels.py").read_text() == KERNELS      # the original untouched

    # again into the same folder: an earlier ablation's copy is replaced
    res = CliRunner().invoke(workloads, [
        "ablate", "--package", str(pkg), "--kernel", "scan_kernel", "--variant", "noexp",
        "--config", "scan_kernel=BLOCK_SIZE_M=64,BLOCK_SIZE_K=32,num_stages=4", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["scan_kernel"]["sites"] == 3
    assert "tl.exp(" not in _code(_kernel_text(
        (out / "toykern" / "ops" / "kernels.py").read_text(), "scan_kernel"))

    res = CliRunner().invoke(workloads, ["ablate", "--list"])
    assert res.exit_code == 0 and [ln.split()[0] for ln in res.output.splitlines()] == \
        list(VARIANTS)


def test_make_variant_refuses_a_kernel_without_config_or_a_foreign_folder(tmp_path):
    pkg = _package(tmp_path / "site")
    cfg = {"scan_kernel": TritonConfig({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_K": 32}, 4, 4)}
    with pytest.raises(AblationError, match="no config to pin for plain_kernel"):
        make_variant(pkg, tmp_path / "a", ["scan_kernel", "plain_kernel"], "base", cfg)
    with pytest.raises(AblationError, match="no 'def nope_kernel\\(' in any .py file"):
        make_variant(pkg, tmp_path / "b", ["nope_kernel"], "base",
                     {"nope_kernel": cfg["scan_kernel"]})
    (tmp_path / "c" / "toykern").mkdir(parents=True)
    with pytest.raises(AblationError, match="is not an earlier ablation's copy"):
        make_variant(pkg, tmp_path / "c", ["scan_kernel"], "base", cfg)


# --- mamba_ssm 2.3.2's own kernels -------------------------------------------------------

WHEEL_GLOB = "mamba_ssm-2.3.2*.whl"
FWD, BWD_DX = "_chunk_scan_fwd_kernel", "_chunk_scan_chunk_state_bwd_dx_kernel"


@pytest.fixture(scope="module")
def mamba_pkg(tmp_path_factory) -> Path:
    wheels = sorted((shared_dir() / "wheels").glob(WHEEL_GLOB))
    if not wheels:
        pytest.skip(f"no {WHEEL_GLOB} in {shared_dir() / 'wheels'} (mamba_ssm is third-party, "
                    f"not shipped; set SIMFRONT_SHARED to the shared data)")
    root = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheels[-1]) as zf:          # the Python files only, never the .so
        for name in zf.namelist():
            if name.startswith("mamba_ssm/") and name.endswith(".py"):
                zf.extract(name, root)
    return root / "mamba_ssm"


@pytest.mark.parametrize("variant", ["base", "exp2", "noexp", "fma4"])
def test_mamba_ssm_ssd_kernels_variants(mamba_pkg, tmp_path, variant):
    configs = {FWD: TritonConfig({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32},
                                 num_warps=2, num_stages=4),
               BWD_DX: TritonConfig({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64,
                                     "BLOCK_SIZE_K": 32}, num_warps=4, num_stages=4)}
    rec = make_variant(mamba_pkg, tmp_path, [FWD, BWD_DX], variant, configs)
    assert rec["kernels"][FWD]["file"] == "ops/triton/ssd_chunk_scan.py"
    assert rec["kernels"][BWD_DX]["file"] == "ops/triton/ssd_combined.py"
    # the scale outside the loop, its seq_idx form, and the decay tile in the loop
    want = {"base": 0, "exp2": 3, "noexp": 3, "fma4": 1}[variant]
    assert rec["kernels"][FWD]["sites"] == rec["kernels"][BWD_DX]["sites"] == want
    for kernel, rel in ((FWD, "ops/triton/ssd_chunk_scan.py"),
                        (BWD_DX, "ops/triton/ssd_combined.py")):
        before = (mamba_pkg / rel).read_text()
        after = (tmp_path / "mamba_ssm" / rel).read_text()
        ast.parse(after)
        assert rec["kernels"][kernel]["config_listed"]
        cfgs, key = _autotune_configs(after, kernel)
        assert len(cfgs) == 1 and key == _autotune_configs(before, kernel)[1]
        if kernel == BWD_DX:   # the listed config, with the pre_hook that zeroes ddt and dD
            assert "pre_hook=init_to_zero(['ddt_ptr', 'dD_ptr'])" in cfgs[0]
        old, new = _code(_kernel_text(before, kernel)), _code(_kernel_text(after, kernel))
        n_exp = old.count("tl . exp (")
        assert n_exp == 3
        assert new.count("tl . exp (") == {"base": 3, "exp2": 6, "noexp": 0, "fma4": 3}[variant]
        if variant == "noexp":
            assert "tl . minimum (" not in new
        if variant == "base":
            assert new == old
        # every other function of the file is as it was
        assert _functions(after, skip=kernel) == _functions(before, skip=kernel)


def _functions(source: str, skip: str) -> dict[str, str]:
    """Each top-level function's text with its decorators, but ``skip``'s."""
    lines = source.splitlines()
    return {n.name: "\n".join(lines[n.decorator_list[0].lineno - 1 if n.decorator_list
                                     else n.lineno - 1:n.end_lineno])
            for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name != skip}


# --- reading the timelines back ---------------------------------------------------------

SHIPPED_WHATIF = REPO_ROOT / "traces" / "ho-m2-d1024" / "whatif"


def test_report_pairs_each_kernel_with_base_on_shipped_timelines(tmp_path):
    """The shipped H100 timelines of ho-m2-d1024 stand in for two variants (the whole GPU as
    base, 64 SMs as 'exp2'): the report's sums and ratios against read_ncu_csv's reading of
    the same files."""
    from simfront.core.ncu import read_ncu_csv

    if not (SHIPPED_WHATIF / "h100-all.csv.xz").is_file():
        pytest.skip(f"{SHIPPED_WHATIF} not in this checkout")
    kernels = {k: {"file": "ops/triton/x.py", "sites": 3, "config": {"BLOCK_SIZE_M": 64}}
               for k in ("_chunk_scan_fwd_kernel", "_chunk_scan_chunk_state_bwd_dx_kernel")}
    for variant, src in (("base", "h100-all"), ("exp2", "h100-sms64")):
        d = tmp_path / "set" / variant
        d.mkdir(parents=True)
        (d / ABLATION_JSON).write_text(json.dumps({"variant": variant, "kernels": kernels}))
        (d / "timeline-all.csv").write_bytes(
            lzma.decompress((SHIPPED_WHATIF / f"{src}.csv.xz").read_bytes()))
    rows = ablation_report(tmp_path / "set")
    assert [(r.kernel, r.condition, r.variant) for r in rows] == [
        ("_chunk_scan_fwd_kernel", "all", "exp2"),
        ("_chunk_scan_chunk_state_bwd_dx_kernel", "all", "exp2"),
        (ALL_KERNELS, "all", "exp2")]
    whole = read_ncu_csv(SHIPPED_WHATIF / "h100-all.csv.xz")
    sms64 = read_ncu_csv(SHIPPED_WHATIF / "h100-sms64.csv.xz")
    for r in rows:
        pick = (lambda df: df) if r.kernel == ALL_KERNELS else \
            (lambda df, k=r.kernel: df[df["Kernel Name"] == k])
        assert r.launches == len(pick(sms64)) > 0 and r.base_launches == len(pick(whole))
        assert r.base_us == pytest.approx(pick(whole)["gpu__time_duration.sum"].sum() * 1e6)
        assert r.time_us == pytest.approx(pick(sms64)["gpu__time_duration.sum"].sum() * 1e6)
        assert r.ratio > 1.0                         # 64 of 132 SMs: every SSD kernel slower
    res = CliRunner().invoke(workloads, ["ablate-report", str(tmp_path / "set")])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[1].split()[:3] == ["_chunk_scan_fwd_kernel", "all", "exp2"]


def test_report_needs_base_and_a_timeline_csv(tmp_path):
    (tmp_path / "exp2").mkdir()
    (tmp_path / "exp2" / ABLATION_JSON).write_text("{}")
    with pytest.raises(AblationError, match="no base/ablation.json"):
        ablation_report(tmp_path)
    bad = tmp_path / "timeline-all.csv"
    bad.write_text('"ID","Name"\n')
    with pytest.raises(AblationError, match="not a timeline CSV"):
        timeline_kernel_times(bad)
