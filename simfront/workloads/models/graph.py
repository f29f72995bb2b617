"""GraphMamba: Graph-Mamba (Wang et al., 2024) style graph classification. Each layer adds
a local message-passing update (torch_geometric ``GINConv``) and a global update by a Mamba
layer run over each graph's nodes as a sequence ordered by degree (ties broken at random
while training, as Graph-Mamba does), then a feed-forward block; BatchNorm after each.

torch_geometric is optional: without it this workload raises BackendError saying how to
install it, and its tests skip."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from simfront.core.errors import BackendError
from simfront.workloads import impl as impls
from simfront.workloads.presets import GraphConfig


def _pyg():
    try:
        import torch_geometric.nn as pyg_nn
        import torch_geometric.utils as pyg_utils
    except ImportError as exc:
        raise BackendError(f"the graphmamba workload needs torch_geometric ({exc}); "
                           "pip install torch_geometric (pure Python; see "
                           "simfront/workloads/requirements-gpu.txt)") from exc
    return pyg_nn, pyg_utils


class GraphMambaLayer(nn.Module):
    def __init__(self, cfg: GraphConfig, mamba_cls: type):
        super().__init__()
        pyg_nn, _ = _pyg()
        d = cfg.d_model
        self.local = pyg_nn.GINConv(nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d)))
        self.norm_local = nn.BatchNorm1d(d)
        self.mamba = mamba_cls(d_model=d, d_state=cfg.d_state, d_conv=cfg.d_conv,
                               expand=cfg.expand)
        self.norm_global = nn.BatchNorm1d(d)
        self.ffn = nn.Sequential(nn.Linear(d, cfg.ffn_ratio * d), nn.ReLU(),
                                 nn.Linear(cfg.ffn_ratio * d, d))
        self.norm_ffn = nn.BatchNorm1d(d)

    def forward(self, h, edge_index, order, batch_sorted, slots, graphs: int, nodes: int):
        _, pyg_utils = _pyg()
        h_local = self.norm_local(h + self.local(h, edge_index))
        # Sizes are given so that to_dense_batch needs no device->host copy, and the way
        # back is a gather by slot, not a boolean mask (which would synchronise).
        dense, _ = pyg_utils.to_dense_batch(h[order], batch_sorted, batch_size=graphs,
                                            max_num_nodes=nodes)
        g = self.mamba(dense).reshape(-1, dense.shape[-1])[slots]
        h_global = torch.empty_like(g).index_copy_(0, order, g)
        h_global = self.norm_global(h + h_global)
        h = h_local + h_global
        return self.norm_ffn(h + self.ffn(h))


class GraphMamba(nn.Module):
    def __init__(self, cfg: GraphConfig, mamba_cls: type):
        super().__init__()
        self.cfg = cfg
        self._gen: torch.Generator | None = None
        self.encoder = nn.Linear(cfg.in_features, cfg.d_model)
        self.layers = nn.ModuleList([GraphMambaLayer(cfg, mamba_cls) for _ in range(cfg.n_layer)])
        self.head = nn.Linear(cfg.d_model, cfg.num_classes)

    def node_order(self, edge_index, batch, num_nodes: int):
        """Nodes sorted by (graph, degree): low-degree nodes first, hubs last so they see the
        most context; random tie-breaking while training."""
        _, pyg_utils = _pyg()
        deg = pyg_utils.degree(edge_index[1], num_nodes=num_nodes)
        if self.training:
            # A generator of the model's own keeps steps reproducible per build.
            if self._gen is None or self._gen.device != deg.device:
                self._gen = torch.Generator(device=deg.device).manual_seed(self.cfg.seed)
            key = deg + torch.rand(deg.shape, generator=self._gen, device=deg.device)
        else:
            key = deg
        key = batch.to(key.dtype) * (deg.max() + 2) + key
        order = torch.argsort(key)
        batch_sorted = batch[order]
        # Slot of each sorted node in the dense (graphs x nodes) layout.
        counts = torch.zeros(self.cfg.graphs, dtype=torch.long, device=batch.device)
        counts.scatter_add_(0, batch, torch.ones_like(batch))
        first = torch.cumsum(counts, 0) - counts
        rank = torch.arange(num_nodes, device=batch.device) - first[batch_sorted]
        slots = batch_sorted * self.cfg.nodes_per_graph + rank
        return order, batch_sorted, slots

    def forward(self, x, edge_index, batch):
        pyg_nn, _ = _pyg()
        cfg = self.cfg
        order, batch_sorted, slots = self.node_order(edge_index, batch, x.shape[0])
        h = self.encoder(x)
        for layer in self.layers:
            h = layer(h, edge_index, order, batch_sorted, slots, cfg.graphs,
                      cfg.nodes_per_graph)
        return self.head(pyg_nn.global_mean_pool(h, batch, size=cfg.graphs))


def build_model(cfg: GraphConfig, impl: str, device: str) -> nn.Module:
    _pyg()
    with torch.device(device):
        return GraphMamba(cfg, impls.mamba1_class(impl))


def make_batch(cfg: GraphConfig, device: str, generator: torch.Generator):
    """``graphs`` random graphs of ``nodes_per_graph`` nodes with about ``avg_degree`` edges
    per node (undirected, both directions stored), node features, one label per graph."""
    n, g = cfg.nodes_per_graph, cfg.graphs
    m = n * cfg.avg_degree // 2
    src = torch.randint(0, n, (g, m), generator=generator)
    dst = torch.randint(0, n, (g, m), generator=generator)
    offset = (torch.arange(g) * n)[:, None]
    src, dst = (src + offset).reshape(-1), (dst + offset).reshape(-1)
    edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    x = torch.randn(g * n, cfg.in_features, generator=generator)
    y = torch.randint(0, cfg.num_classes, (g,), generator=generator)
    batch = torch.arange(g).repeat_interleave(n)
    return {"x": x.to(device), "edge_index": edge_index.to(device), "batch": batch.to(device),
            "y": y.to(device)}


def forward(model, b):
    return model(b["x"], b["edge_index"], b["batch"])


def loss(model, b):
    return F.cross_entropy(forward(model, b).float(), b["y"])


def output_shape(cfg: GraphConfig) -> tuple[int, ...]:
    return (cfg.graphs, cfg.num_classes)
