"""Bad trace input through the CLI: each error names the file and line, the command exits
non-zero, and nothing is written."""

from __future__ import annotations

import lzma

import pytest
from click.testing import CliRunner

from simfront.cli import cli, main
from simfront.core.paths import repo_dir

SIDECAR = repo_dir("traces") / "provenance" / "mamba1_scan_step.launches.jsonl"
KERNEL = "kernel-35621.traceg.xz"  # 123 lines, one block of 4 warps


def _run_main(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out + out.err


def _text(scan_step) -> list[str]:
    return lzma.open(scan_step / KERNEL, "rt").read().splitlines(keepends=True)


def _set(tmp_path, name, files: dict[str, bytes], listed: list[str]):
    d = tmp_path / name
    d.mkdir()
    for fname, data in files.items():
        (d / fname).write_bytes(data)
    (d / "kernelslist.g").write_text("".join(f + "\n" for f in listed))
    return d


def _truncated(tmp_path, scan_step):
    lines = _text(scan_step)
    cut = "".join(lines[:40]) + lines[40][:9]  # ends inside instruction line 41
    return _set(tmp_path, "trunc", {"kernel-1.traceg": cut.encode()}, ["kernel-1.traceg"]), 41


def _bad_opcode(tmp_path, scan_step):
    lines = _text(scan_step)
    assert lines[30].split()[4] == "LEA"  # line 31: '0060 ffffffff 1 R0 LEA 2 R0 R3 0 8'
    lines[30] = lines[30].replace(" LEA ", " 0x1f ")
    return _set(tmp_path, "badop", {"kernel-1.traceg": "".join(lines).encode()},
                ["kernel-1.traceg"]), 31


def _bad_register(tmp_path, scan_step):
    lines = _text(scan_step)
    lines[30] = lines[30].replace(" R3 ", " Q3 ")
    return _set(tmp_path, "badreg", {"kernel-1.traceg": "".join(lines).encode()},
                ["kernel-1.traceg"]), 31


def _missing(tmp_path, scan_step):
    d = _set(tmp_path, "missing", {KERNEL: (scan_step / KERNEL).read_bytes()},
             [KERNEL, "kernel-99.traceg.xz"])
    return d, 2  # line 2 of kernelslist.g


def _bad_xz(tmp_path, scan_step):
    data = (scan_step / KERNEL).read_bytes()
    return _set(tmp_path, "badxz", {KERNEL: data[: len(data) // 2]}, [KERNEL]), None


CASES = {"truncated": _truncated, "unknown opcode token": _bad_opcode,
         "unknown register token": _bad_register, "missing file": _missing,
         "unreadable xz": _bad_xz}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_names_file_and_line_and_writes_nothing(case, tmp_path, scan_step, capsys):
    d, line = CASES[case](tmp_path, scan_step)
    before = sorted(p.name for p in tmp_path.rglob("*"))

    out_csv = tmp_path / "stats.csv"
    code, text = _run_main(["traces", "stats", str(d), "--out", str(out_csv)], capsys)
    assert code != 0
    assert "error:" in text
    bad_file = "kernelslist.g" if case == "missing file" else ("kernel-1.traceg" if
                                                              "kernel-1.traceg" in
                                                              (d / "kernelslist.g").read_text()
                                                              else KERNEL)
    assert bad_file in text
    assert "line" in text
    if line is not None:
        assert f"line {line}" in text
    if case == "unknown opcode token":
        assert "field 'opcode'" in text
    if case == "unknown register token":
        assert "register" in text

    code, text = _run_main(["traces", "validate", str(d)], capsys)
    assert code != 0 and bad_file in text
    if line is not None:
        assert f":{line}:" in text

    code, text = _run_main(["traces", "repair", str(d), "--out", str(tmp_path / "fixed"),
                            "--launches", str(SIDECAR), "--binary-version", "90"], capsys)
    assert code != 0 and bad_file in text

    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_validate_real_set_fails_and_repaired_copy_passes(tmp_path, scan_step):
    runner = CliRunner()
    res = runner.invoke(cli, ["traces", "validate", str(scan_step), "--headers-only",
                                  "--max-problems", "1000"])
    assert res.exit_code == 1
    assert "kernel-35636.traceg.xz:6: error: field 'nregs'" in res.output
    out = tmp_path / "fixed"
    res = runner.invoke(cli, ["traces", "repair", str(scan_step), "--out", str(out),
                              "--launches", str(SIDECAR), "--binary-version", "90",
                              "--kernel", "35621", "--kernel", "35637", "--xz-preset", "0"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["traces", "validate", str(out)])
    assert res.exit_code == 0, res.output
    assert "OK: 2 kernels" in res.output


def test_stored_set_by_name(repo_root):
    res = CliRunner().invoke(cli, ["traces", "stats", "mamba1_selective_scan"])
    assert res.exit_code == 0, res.output
    assert "394,240" in res.output and "1,092,992" in res.output
    assert "selective_scan_fwd_kernel" in res.output


def test_unknown_set_name_is_an_error(capsys):
    code, text = _run_main(["traces", "stats", "no_such_set_here"], capsys)
    assert code != 0 and "no_such_set_here" in text
