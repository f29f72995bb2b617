"""The trace store: the shipped samples are registered, valid and hash-stable; register is
validated and atomic; hashes ignore compression."""

from __future__ import annotations

import json
import lzma
import shutil

import pytest
from click.testing import CliRunner

from simfront.cli import cli
from simfront.core.errors import InputError
from simfront.traces.reader import TraceSet
from simfront.traces.store import TraceStore, kernel_text_hash, trace_hash
from simfront.traces.validate import validate_set

SAMPLES = {"mamba1_selective_scan": {35636: 394_240, 35643: 1_092_992},
           "mamba1_torch_elementwise": {35621: None, 35622: None, 35624: None, 35637: None}}


def test_shipped_samples(repo_root):
    store = TraceStore(repo_root / "traces")
    assert set(SAMPLES) <= set(store.names())
    total = 0
    for name, kernels in SAMPLES.items():
        s = store.get(name)
        m = s.manifest
        for key in ("workload", "gpu", "driver", "cuda", "tools", "capture_window", "source"):
            assert m.get(key), (name, key)
        assert [k["kernel_id"] for k in s.kernels] == list(kernels)
        assert s.verify() == []  # every hash still matches its file
        report = validate_set(s.path)
        assert report.ok, [str(p) for p in report.problems]
        for k in s.kernels:
            if kernels[k["kernel_id"]] is not None:
                count = TraceSet(s.path).kernel(k["file"]).instruction_count()
                assert count == kernels[k["kernel_id"]]
            total += k["stored_bytes"]
            assert (s.path / "repairs.json").is_file()
    assert total < 5_000_000  # samples stay small


def test_hash_ignores_compression(tmp_path, repo_root):
    s = TraceStore(repo_root / "traces").get("mamba1_torch_elementwise")
    src = s.path / s.kernels[0]["file"]
    raw = lzma.open(src).read()
    for level in (0, 9):
        p = tmp_path / f"k{level}.traceg.xz"
        with lzma.open(p, "wb", preset=level) as f:
            f.write(raw)
        assert kernel_text_hash(p)[0] == s.kernels[0]["sha256"]
    plain = tmp_path / "k.traceg"
    plain.write_bytes(raw)
    assert kernel_text_hash(plain) == (s.kernels[0]["sha256"], len(raw))


def test_register_refuses_invalid_set(tmp_path, scan_step):
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(scan_step / "kernel-35621.traceg.xz", bad)
    (bad / "kernelslist.g").write_text("kernel-35621.traceg.xz\n")
    store = TraceStore(tmp_path / "store")
    with pytest.raises(InputError) as exc:
        store.register(bad, {"workload": "x"})
    assert "fails validation" in str(exc.value) and "nregs" in str(exc.value)
    assert not (tmp_path / "store" / "bad").exists()
    assert list((tmp_path / "store").glob(".*")) == []  # no temporary left


def test_register_get_hash_and_cli(tmp_path, repo_root):
    src = TraceStore(repo_root / "traces").get("mamba1_torch_elementwise")
    store = TraceStore(tmp_path / "store")
    fields = {"workload": "w", "gpu": {"name": "H100"}, "driver": "d", "cuda": "13.0"}
    s = store.register(src.path, fields, name="copy")
    assert s.manifest["workload"] == "w" and s.manifest["format_version"] == 2
    assert [k["sha256"] for k in s.kernels] == [k["sha256"] for k in src.kernels]
    assert s.set_hash == src.set_hash
    assert store.trace_hash("copy", 35621) == src.trace_hash("kernel-35621")
    assert trace_hash(s.path, "kernel-35621.traceg.xz") == src.trace_hash(35621)
    with pytest.raises(InputError):
        store.register(src.path, fields, name="copy")  # taken
    with pytest.raises(InputError):
        store.get("nope")
    runner = CliRunner()
    res = runner.invoke(cli, ["traces", "ls", "--store", str(store.root)])
    assert res.exit_code == 0 and "copy" in res.output
    res = runner.invoke(cli, ["traces", "show", "copy", "--store", str(store.root), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["set_sha256"] == src.set_hash
    res = runner.invoke(cli, ["traces", "hash", "copy", "35637", "--store", str(store.root)])
    assert res.output.strip() == src.trace_hash(35637)


def test_memcpy_events_are_kept_and_hashed(tmp_path, repo_root):
    src = TraceStore(repo_root / "traces").get("mamba1_torch_elementwise")
    d = tmp_path / "with_copy"
    shutil.copytree(src.path, d)
    listed = (d / "kernelslist.g").read_text().splitlines()
    (d / "kernelslist.g").write_text("\n".join(["MemcpyHtoD,0x00007f0000000000,4096"]
                                               + listed) + "\n")
    s = TraceStore(tmp_path / "store").register(d, {}, name="with_copy")
    assert s.manifest["memcpys"] == 1
    assert [k["sha256"] for k in s.kernels] == [k["sha256"] for k in src.kernels]
    assert s.set_hash != src.set_hash
    assert TraceSet(s.path).memcpys[0].size == 4096
