"""bench/results_md.py on the shipped bench/RESULTS.md: every bench script rewrites its own
section by its heading, so rewriting a section must leave the rest of the file (the topic
headings included) as it was, and every heading a script writes must be in the file."""

from __future__ import annotations

import ast
import re
import sys

from simfront.core.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import results_md  # noqa: E402  (bench/results_md.py)

RESULTS = REPO_ROOT / "bench" / "RESULTS.md"


def _sections(text: str) -> list[str]:
    return [s for s in re.split(r"(?m)^(?=##? )", text) if s.startswith("## ")]


def test_rewriting_each_section_with_itself_changes_nothing(tmp_path):
    text = RESULTS.read_text()
    path = tmp_path / "RESULTS.md"
    path.write_text(text)
    for sec in _sections(text):
        results_md.update_section(sec.split("\n", 1)[0], sec, path)
    assert path.read_text() == text


def test_the_last_section_of_a_topic_keeps_the_next_topic(tmp_path):
    text = RESULTS.read_text()
    topics = re.findall(r"(?m)^# (.+)$", text)
    assert len(topics) > 5, "RESULTS.md is grouped by topic under '# ' headings"
    path = tmp_path / "RESULTS.md"
    path.write_text(text)
    for sec in _sections(text):
        results_md.update_section(sec.split("\n", 1)[0], sec.split("\n", 1)[0] + "\n\nx\n", path)
    assert re.findall(r"(?m)^# (.+)$", path.read_text()) == topics


def test_a_new_section_goes_to_the_end_of_its_topic(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text(RESULTS.read_text())
    topics = re.findall(r"(?m)^# (.+)$", path.read_text())
    results_md.update_section("## New (bench/x.py)", "## New (bench/x.py)\n\nnew\n", path,
                              topic=topics[2])
    text = path.read_text()
    new, nxt = text.index("## New (bench/x.py)"), text.index("# " + topics[3] + "\n")
    assert text.index("# " + topics[2] + "\n") < new < nxt
    assert not re.search(r"(?m)^## ", text[new + 5:nxt])


def test_every_heading_a_bench_script_writes_is_in_results():
    """The headings the scripts name as section constants (a ``## `` string at module
    level); a section only a flag writes may be absent, so the plain run's must be here."""
    text = RESULTS.read_text()
    have = {s.split("\n", 1)[0] for s in _sections(text)}
    missing = []
    for script in sorted((REPO_ROOT / "bench").glob("bench_*.py")):
        for node in ast.parse(script.read_text()).body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in ("SECTION", "STEP_SECTION")):
                continue
            heading = ast.literal_eval(node.value)
            if heading not in have:
                missing.append(f"{script.name}: {node.targets[0].id} = {heading!r}")
    assert not missing, "bench sections not in bench/RESULTS.md: " + "; ".join(missing)
