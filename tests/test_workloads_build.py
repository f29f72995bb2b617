"""Each workload's presets build on the CPU with the reference kernels: shapes, parameter
counts against the analytic formulas, training steps, determinism, and the capture window."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is needed for the workloads stage")

from simfront.core.errors import ConfigError  # noqa: E402
from simfront.workloads import WORKLOADS, build, counts, get_spec  # noqa: E402
from simfront.workloads.runner import run_workload  # noqa: E402

NAMES = list(WORKLOADS)
# Shorter sequences for the multi-step tests: the reference scan loops over time steps.
FAST = {"mamba1_lm": {"seqlen": 32}, "mamba2_lm": {"seqlen": 32, "chunk_size": 16},
        "hybrid_lm": {"seqlen": 32, "chunk_size": 16}, "mambavision": {"image_size": 32},
        "graphmamba": {}}


def needs(name):
    if name == "graphmamba":
        pytest.importorskip("torch_geometric",
                            reason="graphmamba needs torch_geometric (pip install torch_geometric)")


@pytest.fixture(scope="module", params=NAMES)
def tiny(request):
    needs(request.param)
    return build(request.param, "tiny", device="cpu", impl="reference", amp="none")


def test_tiny_output_shape_and_params(tiny):
    out = tiny.forward()
    assert tuple(out.shape) == tiny.output_shape()
    assert torch.isfinite(out).all()
    assert tiny.param_count == counts.param_count(tiny.config)


@pytest.mark.parametrize("name", NAMES)
def test_preset_param_counts_follow_the_formula(name):
    """Every preset, built on the meta device (no memory), has the analytic count."""
    needs(name)
    for preset in get_spec(name).preset_names:
        wl = build(name, preset, device="meta", impl="reference")
        assert wl.param_count == counts.param_count(wl.config), preset


def test_paper_sizes_are_the_seed_studys():
    """paper = the shared ncu data's lm_step.py (2 layers, d_model 768, batch 4, length
    2048, vocab 50280); full = the 24-layer ~130M model; MambaVision-T is 31.8M
    parameters (its paper's figure)."""
    for name in ("mamba1_lm", "mamba2_lm"):
        cfg = get_spec(name).config("paper")
        assert (cfg.n_layer, cfg.d_model, cfg.batch, cfg.seqlen, cfg.vocab_size) == \
            (2, 768, 4, 2048, 50280)
        full = counts.param_count(get_spec(name).config("full"))
        assert 125e6 < full < 135e6, (name, full)
    assert get_spec("mamba1_lm").config("paper").d_state == 16
    vt = get_spec("mambavision").config("paper")
    assert vt.image_size == 224 and vt.stage_resolutions() == [56, 28, 14, 7]
    assert round(counts.param_count(vt) / 1e6, 1) == 31.8
    assert get_spec("hybrid_lm").config("paper").attn_layer_idx


# The checkpoints' own names: the Mamba1 family calls the same sizes 790m, 1.4b and 2.8b.
PUBLISHED = {"mamba1_lm": {"130m": 130e6, "370m": 370e6, "780m": 790e6, "1.3b": 1.4e9,
                           "2.7b": 2.8e9},
             "mamba2_lm": {"130m": 130e6, "370m": 370e6, "780m": 780e6, "1.3b": 1.3e9,
                           "2.7b": 2.7e9}}


@pytest.mark.parametrize("name", ["mamba1_lm", "mamba2_lm"])
def test_published_presets_have_the_published_sizes(name):
    """Built on the meta device (the reference impl, nothing allocated): the parameter count
    of every published preset is within 4% of its checkpoint's name (the names round), the
    vocabulary is mamba_ssm's 50277 padded to 50280, and batch x length is 4 x 2048."""
    for preset, size in PUBLISHED[name].items():
        wl = build(name, preset, device="meta", impl="reference")
        assert abs(wl.param_count - size) < 0.04 * size, (preset, wl.param_count)
        cfg = wl.config
        assert cfg.padded_vocab == 50280 and (cfg.batch, cfg.seqlen) == (4, 2048)
        assert cfg.d_state == (128 if name == "mamba2_lm" else 16)


def test_sweep_points_keep_the_token_count():
    from simfront.workloads.presets import SWEEP_130M, mamba2_lm, with_overrides

    base = mamba2_lm("130m")
    lengths = [with_overrides(base, pt) for pt in SWEEP_130M["seqlen"]]
    assert [c.seqlen for c in lengths] == [512, 1024, 2048, 4096, 8192, 16384]
    assert {c.batch * c.seqlen for c in lengths[:-1]} == {base.batch * base.seqlen}
    assert [with_overrides(base, pt).chunk_size for pt in SWEEP_130M["chunk"]] == [64, 128, 256]


def test_mambavision_t_mixes_mamba_then_attention():
    """MambaVision-T's token stages: first half of each stage's blocks the MambaVision mixer,
    second half self-attention (4+4 blocks in stage 3, 2+2 in stage 4)."""
    from simfront.workloads.models.vision import Attention, MambaVisionMixer
    wl = build("mambavision", "paper", device="meta", impl="reference")
    kinds = [["M" if isinstance(b.mixer, MambaVisionMixer) else
              "A" if isinstance(b.mixer, Attention) else "?" for b in level.blocks]
             for level in wl.model.levels[2:]]
    assert kinds == [list("MMMMAAAA"), list("MMAA")]
    assert all(not hasattr(b, "mixer") for level in wl.model.levels[:2] for b in level.blocks)


def test_lm_parameter_names_are_mamba_ssms():
    """Names as mamba_ssm's MambaLMHeadModel has them, so state dicts move between paths."""
    wl = build("hybrid_lm", "tiny", device="meta", impl="reference")
    names = {n for n, _ in wl.model.named_parameters()}
    mamba2 = {f"backbone.layers.0.mixer.{p}" for p in
              ("in_proj.weight", "conv1d.weight", "conv1d.bias", "dt_bias", "A_log", "D",
               "norm.weight", "out_proj.weight")}
    mha = {f"backbone.layers.1.mixer.{p}" for p in
           ("in_proj.weight", "in_proj.bias", "out_proj.weight", "out_proj.bias")}
    other = {"backbone.embedding.weight", "backbone.norm_f.weight",
             "backbone.layers.0.norm.weight", "backbone.layers.1.norm.weight"}
    assert names == mamba2 | mha | other       # lm_head.weight is tied to the embedding
    assert wl.model.lm_head.weight is wl.model.backbone.embedding.weight
    m1 = build("mamba1_lm", "tiny", device="meta", impl="reference")
    mixer = {n.split("mixer.")[1] for n, _ in m1.model.named_parameters() if "mixer." in n}
    assert mixer == {"in_proj.weight", "conv1d.weight", "conv1d.bias", "x_proj.weight",
                     "dt_proj.weight", "dt_proj.bias", "A_log", "D", "out_proj.weight"}


@pytest.mark.parametrize("name", NAMES)
def test_training_steps_reduce_loss_on_a_fixed_batch(name):
    needs(name)
    wl = build(name, "tiny", device="cpu", impl="reference", amp="none", overrides=FAST[name])
    before = [p.detach().clone() for p in wl.model.parameters()]
    losses = [float(wl.step()) for _ in range(4)]
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0], losses
    changed = sum(not torch.equal(a, b) for a, b in zip(before, wl.model.parameters(), strict=True))
    assert changed == len(before)           # every parameter gets a gradient and moves
    assert all(p.grad is None for p in wl.model.parameters())   # zero_grad(set_to_none)


def test_default_step_runs_under_bf16_autocast():
    wl = build("mamba2_lm", "tiny", device="cpu", impl="reference")
    assert wl.amp == "bf16"
    loss = wl.step()
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


@pytest.mark.parametrize("name", NAMES)
def test_seeds_make_two_builds_identical(name):
    needs(name)
    a = build(name, "tiny", device="cpu", impl="reference", amp="none")
    b = build(name, "tiny", device="cpu", impl="reference", amp="none")
    sa, sb = a.model.state_dict(), b.model.state_dict()
    for (na, ta), (nb, tb) in zip(sa.items(), sb.items(), strict=True):
        assert na == nb and torch.equal(ta, tb), na
    for k in a.batch:
        assert torch.equal(a.batch[k], b.batch[k])
    assert float(a.step()) == float(b.step())
    c = build(name, "tiny", device="cpu", impl="reference", overrides={"seed": 1})
    assert any(not torch.equal(x, y)
               for x, y in zip(a.batch.values(), c.batch.values(), strict=True))


def test_window_brackets_one_steady_state_iteration():
    wl = build("mamba1_lm", "tiny", device="cpu", impl="reference", overrides=FAST["mamba1_lm"])
    seen = []
    summary = run_workload(wl, iterations=3, window=1,
                           on_window_start=lambda w: seen.append(("start", w.name)),
                           on_window_end=lambda w: seen.append(("end", w.name)))
    assert seen == [("start", "mamba1_lm"), ("end", "mamba1_lm")]
    assert summary.window == 1 and len(summary.step_ms) == 3 and len(summary.losses) == 3
    assert summary.params == counts.param_count(wl.config)
    with pytest.raises(ConfigError, match="steady-state"):
        run_workload(wl, iterations=3, window=0)
    with pytest.raises(ConfigError, match="steady-state"):
        run_workload(wl, iterations=2, window=2)


def test_bad_names_and_settings_are_clear_errors():
    with pytest.raises(ConfigError, match="valid: mamba1_lm"):
        build("mamba3_lm", "tiny", device="cpu")
    with pytest.raises(ConfigError, match="no preset 'huge'"):
        build("mamba2_lm", "huge", device="cpu")
    with pytest.raises(ConfigError, match="unknown setting"):
        build("mamba2_lm", "tiny", device="cpu", overrides={"d_modle": 8})
    with pytest.raises(ConfigError, match="headdim"):
        build("mamba2_lm", "tiny", device="cpu", overrides={"headdim": "48"})
    with pytest.raises(ConfigError, match="impl"):
        build("mamba2_lm", "tiny", device="cpu", impl="triton")
    with pytest.raises(ConfigError, match="CUDA"):
        build("mamba2_lm", "tiny", device="cpu", impl="mamba_ssm")


def test_overrides_from_text():
    wl = build("hybrid_lm", "tiny", device="meta",
               overrides={"seqlen": "32", "attn_layer_idx": "0,1", "fused_add_norm": "false"})
    assert wl.config.seqlen == 32 and wl.config.attn_layer_idx == (0, 1)
    assert wl.config.fused_add_norm is False
    assert wl.batch["input_ids"].shape == (wl.config.batch, 33)


def test_graphmamba_sequences_are_degree_ordered_graphs():
    """The Mamba of each GraphMamba layer sees one graph per sequence, nodes by degree, and
    its outputs go back to the right nodes (slots agree with torch_geometric's dense layout)."""
    needs("graphmamba")
    from torch_geometric.utils import degree, to_dense_batch
    wl = build("graphmamba", "tiny", device="cpu", impl="reference")
    b, cfg = wl.batch, wl.config
    n = b["x"].shape[0]
    order, batch_sorted, slots = wl.model.node_order(b["edge_index"], b["batch"], n)
    assert sorted(order.tolist()) == list(range(n)) and sorted(slots.tolist()) == list(range(n))
    deg = degree(b["edge_index"][1], num_nodes=n)[order].reshape(cfg.graphs, -1)
    assert torch.equal(batch_sorted.reshape(cfg.graphs, -1),
                       torch.arange(cfg.graphs)[:, None].expand(-1, cfg.nodes_per_graph))
    assert bool((deg[:, 1:] >= deg[:, :-1]).all())
    h = torch.randn(n, 5)
    dense, mask = to_dense_batch(h[order], batch_sorted, batch_size=cfg.graphs,
                                 max_num_nodes=cfg.nodes_per_graph)
    assert bool(mask.all()) and torch.equal(dense.reshape(-1, 5)[slots], h[order])
