"""The package's import graph, read from the source (nothing is imported).

An edge A -> B means a file of ``simfront`` names module B in an ``import`` or ``from ...
import`` statement anywhere in A: at the top or inside a function (a deferred import is still
a dependency, it only runs later). ``from pkg import name`` is an edge to ``pkg/name.py``
when that file exists, else to ``pkg/__init__.py``. Not edges: imports under ``if
TYPE_CHECKING:`` (never run), the parent packages Python initialises on the way to a module,
and registries that load a module by a name held in a string (``sim/backend.py``'s
``BUILTIN_MODULES``, ``sweep/registry.py``'s): that is how an interface below its
implementations finds them without importing them.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "simfront"

#: Everything that knows Accel-Sim: its options, its rules, its install, its log, its ISA.
ACCELSIM = "simfront.sim.accelsim"

#: Modules outside simfront/sim/accelsim/ allowed to import from it: the CLI glue of the
#: stages whose commands take Accel-Sim files (``config gen/validate`` write and check its
#: configs, ``stats parse`` reads its log, ``sim`` mounts ``sim accelsim``). Each one only
#: wires a command to the library in sim/accelsim/.
ACCELSIM_GLUE = {"simfront.gpu.cli", "simfront.stats.cli", "simfront.sim.cli"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Import statements, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _resolve_from(node: ast.ImportFrom, module: str, is_pkg: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first import of it}, within simfront."""
    mods = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_pkg = path.name == "__init__.py"
        edges: dict[str, int] = {}

        def add(target: str, line: int) -> None:
            # the longest prefix that is a module of ours (``import a.b.c`` of a.b.c)
            parts = target.split(".")
            while parts and ".".join(parts) not in mods:
                parts.pop()
            if parts and ".".join(parts) != name:
                edges.setdefault(".".join(parts), line)

        for node in _import_nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("simfront"):
                        add(alias.name, node.lineno)
            else:
                base = _resolve_from(node, name, is_pkg)
                if not base or not base.startswith("simfront"):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    add(sub if sub in mods else base, node.lineno)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        # iterative to stay clear of the recursion limit on a long chain
        work = [(v, iter(sorted(graph.get(v, {}))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _describe(comp: list[str], graph: dict[str, dict[str, int]]) -> str:
    members = set(comp)
    edges = [f"{a} -> {b} (line {line})" for a in comp for b, line in sorted(graph[a].items())
             if b in members]
    return "; ".join(edges)


def test_the_graph_sees_real_imports():
    # the checks below mean nothing if the reader misses imports: spot-check known edges
    g = import_graph()
    assert "simfront.gpu.gpu" in g["simfront.gpu.validate"]
    assert "simfront.sim.accelsim.checks" in g["simfront.sim.accelsim.config"]  # top level
    assert "simfront.sim.accelsim.parse" in g["simfront.stats.cli"]  # inside a function
    assert "simfront.sweep.registry" in g["simfront.sweep.runner"]


def test_the_cycle_finder_finds_a_cycle():
    g = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert _cycles(g) == [["a", "b", "c"]]
    assert "c -> a (line 3)" in _describe(["a", "b", "c"], g)


@pytest.mark.parametrize("stage", ["gpu", "sweep"])
def test_no_import_cycle_in_stage(stage):
    g = import_graph()
    prefix = f"simfront.{stage}."
    sub = {a: {b: ln for b, ln in e.items() if b.startswith(prefix)}
           for a, e in g.items() if a.startswith(prefix)}
    bad = _cycles(sub)
    assert not bad, "import cycles in simfront/%s/: %s" % (
        stage, " | ".join(_describe(c, sub) for c in bad))


def test_no_import_cycle_in_the_package():
    g = import_graph()
    bad = _cycles(g)
    assert not bad, "import cycles: " + " | ".join(_describe(c, g) for c in bad)


def accelsim_offenders(graph: dict[str, dict[str, int]]) -> list[str]:
    """Imports of simfront/sim/accelsim/ from outside it, glue excepted."""
    def inside(m: str) -> bool:
        return m == ACCELSIM or m.startswith(ACCELSIM + ".")

    return [f"{a} imports {b} (line {line})"
            for a, edges in sorted(graph.items()) for b, line in sorted(edges.items())
            if inside(b) and not inside(a) and a not in ACCELSIM_GLUE]


def test_only_sim_accelsim_knows_accelsim():
    bad = accelsim_offenders(import_graph())
    assert not bad, ("Accel-Sim specifics belong in simfront/sim/accelsim/ (reach the "
                     "simulator through simfront.sim.backend): " + "; ".join(bad))


def test_the_accelsim_rule_names_an_offender():
    g = {"simfront.gpu.presets": {"simfront.sim.accelsim.config": 12},
         "simfront.gpu.cli": {"simfront.sim.accelsim.config": 3},
         "simfront.sim.accelsim.runner": {"simfront.sim.accelsim.parse": 49},
         "simfront.sweep.worker": {"simfront.sim.accelsim": 7}}
    assert accelsim_offenders(g) == [
        "simfront.gpu.presets imports simfront.sim.accelsim.config (line 12)",
        "simfront.sweep.worker imports simfront.sim.accelsim (line 7)"]


# --------------------------------------------------------------------------- the contract

REPO = PKG.parent

#: What an import inside a function may defer: a heavy dependency the importing module does
#: not load otherwise (docs/architecture.md).
HEAVY = frozenset({"torch", "numba", "matplotlib", "h5py", "mamba_ssm", "torch_geometric",
                   "triton"})


def test_the_layers_contract_holds():
    # the contract lives in .importlinter; lint-imports (import-linter, in the test extras)
    # reads it from the repository root
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports not found: `make install` installs import-linter")
    run = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Stages import downward only KEPT" in run.stdout


def test_the_contract_names_every_stage():
    # a new stage must take its place in the order, or nothing checks its imports
    text = (REPO / ".importlinter").read_text()
    stages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    layered = set(re.findall(r"^\s+simfront\.(\w+)", text, re.M)) | {
        m for line in re.findall(r"^\s+simfront\.\w+(?: \| simfront\.\w+)+$", text, re.M)
        for m in re.findall(r"simfront\.(\w+)", line)}
    assert stages <= layered, f"not in .importlinter's layers: {sorted(stages - layered)}"


def _top_level_imports(tree: ast.AST):
    """Import statements that run when the module is imported (not in a function)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(ch, ast.If) and _is_type_checking(ch.test):
                continue
            if isinstance(ch, (ast.Import, ast.ImportFrom)):
                yield ch
            stack.append(ch)


def _targets(node, name: str, is_pkg: bool, mods) -> tuple[set[str], set[str]]:
    """(modules of ours, top-level external packages) an import statement names."""
    ours, ext = set(), set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith("simfront"):
                parts = alias.name.split(".")
                while parts and ".".join(parts) not in mods:
                    parts.pop()
                ours.add(".".join(parts))
            else:
                ext.add(alias.name.split(".")[0])
        return ours, ext
    base = _resolve_from(node, name, is_pkg)
    if not base or not base.startswith("simfront"):
        ext.add((node.module or "").split(".")[0])
        return ours, ext
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        ours.add(sub if sub in mods else base)
    return ours, ext


def heavy_loads() -> dict[str, frozenset[str]]:
    """module -> the heavy packages importing it loads (its top-level imports, theirs, and
    the packages Python initialises on the way)."""
    mods = _modules()
    direct: dict[str, tuple[set[str], set[str]]] = {}
    for name, path in mods.items():
        ours, ext = set(), set()
        for node in _top_level_imports(ast.parse(path.read_text())):
            o, e = _targets(node, name, path.name == "__init__.py", mods)
            ours |= o
            ext |= e
        parts = name.split(".")
        ours |= {".".join(parts[:i]) for i in range(1, len(parts))} & set(mods)
        direct[name] = (ours - {name}, ext & HEAVY)
    out: dict[str, frozenset[str]] = {}
    for name in mods:
        seen, stack, heavy = {name}, [name], set()
        while stack:
            m = stack.pop()
            ours, ext = direct.get(m, (set(), set()))
            heavy |= ext
            for t in ours:
                for p in [t] + [".".join(t.split(".")[:i]) for i in range(1, t.count(".") + 1)]:
                    if p in direct and p not in seen:
                        seen.add(p)
                        stack.append(p)
        out[name] = frozenset(heavy)
    return out


def deferred_import_offenders() -> list[str]:
    """Imports of simfront modules inside functions that defer nothing heavy."""
    mods = _modules()
    heavy = heavy_loads()
    bad = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        top = set(map(id, _top_level_imports(tree)))
        for node in _import_nodes(tree):
            if id(node) in top:
                continue
            ours, _ = _targets(node, name, path.name == "__init__.py", mods)
            for t in ours:
                if t and not heavy[t] - heavy[name]:
                    bad.append(f"{name} (line {node.lineno}) imports {t} inside a function")
    return bad


def test_imports_inside_functions_only_defer_heavy_dependencies():
    bad = deferred_import_offenders()
    assert not bad, ("move these imports to the top of their module (a function may only "
                     "defer numba, matplotlib, torch or h5py): " + "; ".join(bad))


def test_the_deferred_import_rule_sees_what_is_heavy():
    heavy = heavy_loads()
    assert "numba" in heavy["simfront.traces.reader"]       # through traces/__init__
    assert "matplotlib" in heavy["simfront.analysis.plots"]
    assert not heavy["simfront.core.ncu"] and not heavy["simfront.sweep.spec"]
    assert "numba" not in heavy["simfront.sim.backend"]  # backends are imported by name
