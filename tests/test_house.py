"""House rules the code is held to (issue 31): no function in ``simfront/`` longer than
``MAX_FUNCTION_LINES`` lines, found by walking every module's syntax tree, and no manual in
``docs/`` longer than ``MAX_DOC_LINES``."""

from __future__ import annotations

import ast

from simfront.core.paths import PACKAGE_DIR, REPO_ROOT

#: The longest a function may be, decorators and docstring included.
MAX_FUNCTION_LINES = 100
#: Functions still over the limit, left to split (issue 31). The set only shrinks: a function
#: split below the limit must leave it, and any other long function fails.
NOT_YET_SPLIT: set[str] = set()
#: The longest a manual in docs/ may be ("at most ~300 lines"): a manual says what the code
#: does now; how it got there goes to docs/history.md, which is exempt.
MAX_DOC_LINES = 320
HISTORY = "history.md"


def long_functions(root=PACKAGE_DIR, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function under ``root`` longer than ``limit``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                n = node.end_lineno - first + 1
                if n > limit:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                               f"({n} lines)")
    return out


def _key(entry: str) -> str:
    """``path:line name (n lines)`` -> ``path name``."""
    where, name = entry.split(" ")[:2]
    return f"{where.split(':')[0]} {name}"


def test_no_function_is_longer_than_the_limit():
    long = [e for e in long_functions() if _key(e) not in NOT_YET_SPLIT]
    assert not long, (f"{len(long)} functions over {MAX_FUNCTION_LINES} lines (split them "
                      "into named steps):\n" + "\n".join(long))


def test_the_functions_left_to_split_are_still_long():
    still = {_key(e) for e in long_functions()}
    done = sorted(NOT_YET_SPLIT - still)
    assert not done, "split below the limit, take them off NOT_YET_SPLIT: " + ", ".join(done)


def test_the_walk_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert [s.split(" ")[1] for s in long_functions(tmp_path)] == ["long"]


def test_no_manual_is_longer_than_the_limit():
    docs = sorted((REPO_ROOT / "docs").glob("*.md"))
    assert len(docs) > 5  # the walk found the manuals
    long = [f"{p.name} ({n} lines)" for p in docs if p.name != HISTORY
            for n in [len(p.read_text().splitlines())] if n > MAX_DOC_LINES]
    assert not long, (f"manuals over {MAX_DOC_LINES} lines (move how the code got there to "
                      f"docs/{HISTORY}, results to bench/RESULTS.md): " + ", ".join(long))
