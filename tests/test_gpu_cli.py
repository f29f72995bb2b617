"""`simfront config show|gen|diff|validate|list` through click's CliRunner."""

from click.testing import CliRunner

from simfront.cli import cli
from simfront.gpu import load_gpu
from simfront.sim.accelsim.config import read_accelsim_config


def run(*args):
    return CliRunner().invoke(cli, ["config", *args], catch_exceptions=False)


def test_show_h100_prints_peaks_and_16_to_1():
    r = run("show", "h100")
    assert r.exit_code == 0
    assert "16:1" in r.output
    assert "bf16 4096" in r.output and "fp32 256" in r.output and "3.352 TB/s" in r.output


def test_show_tv8_prints_8_to_1():
    r = run("show", "h100-tv8")
    assert r.exit_code == 0 and "8:1" in r.output and "16:1" not in r.output


def test_show_with_set_and_yaml():
    r = run("show", "h100", "--set", "sm_count=66", "--yaml")
    assert r.exit_code == 0 and "sm_count: 66" in r.output


def test_gen_writes_accelsim_files(tmp_path):
    r = run("gen", "h100-l2-25mb", "--out", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "gpgpusim.config").is_file() and (tmp_path / "trace.config").is_file()
    assert read_accelsim_config(tmp_path) == load_gpu("h100-l2-25mb")
    r = run("gen", "h100", "h100-66sm", "--out", str(tmp_path / "many"))
    assert (tmp_path / "many" / "h100-66sm" / "gpgpusim.config").is_file()


def test_diff_lists_changed_fields():
    r = run("diff", "h100", "h100-tv8")
    assert r.exit_code == 0
    assert "sm.tensor.fma_per_clk.bf16" in r.output and "16:1  ->  8:1" in r.output
    assert "same GPU" in run("diff", "h100", "h100").output


def test_validate_ok_and_failing(tmp_path, shared_data):
    assert "OK" in run("validate", "h100-vec2x").output
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: h100\ndram:\n  partition_indexing: ipoly\n")
    r = CliRunner().invoke(cli, ["config", "validate", str(bad)])
    assert r.exit_code != 0
    assert "IPOLY" in str(r.exception)
    public = shared_data / "accelsim" / "selective_scan_fwd" / "vector_2x"
    r = CliRunner().invoke(cli, ["config", "validate", str(public)])
    assert r.exit_code == 0 and "never execute" in r.output


def test_list_shows_ratios():
    r = run("list")
    assert r.exit_code == 0
    assert any(line.startswith("h100-tv32") and "32:1" in line for line in r.output.splitlines())
