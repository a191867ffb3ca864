"""A graph-neural path scorer trained from ratings (contextual-bandit feedback), with bootstrap Thompson
sampling.

:class:`GNNPathScorer` (registered as ``gnn``) scores a query's candidate paths with :class:`GNNPathNet`:

1. **Node states.** Every entity starts from

   .. math:: h^0_v = \\mathrm{ReLU}(W_0 [\\,E_{type}(t_v) \\,\\|\\, P\\,x^{name}_v \\,\\|\\,
             E_{comm}(c_v) \\,\\|\\, \\ln(1+\\deg v)\\,])

   (entity type and community hashed into fixed buckets, so a trained net applies to any graph; the name's
   encoder embedding, sketched by a fixed random projection to 64 dimensions, projected by :math:`P`).
   ``layers`` :class:`~torch_geometric.nn.GINEConv` layers with mean aggregation then run over the
   dependency edges in both directions,
   :math:`h^{l+1} = \\mathrm{LN}(h^l + \\mathrm{GINE}(h^l, e))`, where the edge vector

   .. math:: e_{uv} = E_{dtype}(\\tau_{uv}) + E_{dir}(\\pm 1) + W_e[\\,c, s, \\mathrm{onehot}(rung),
             \\mathrm{desire}(3), w_{desire}\\,]

   holds the dependency type, the direction, confidence, strength, reason rung and learned desire-path
   statistics (from ``edge_stats``; zeros without). Pure torch: no torch-scatter / torch-sparse needed.
2. **Hop vectors.** A path's hops become vectors: entity hops their node state, dependency hops their edge
   vector in the walked direction, the aspect ``W_a[name embedding, weight]``, each attribute
   ``W_t[content embedding, importance, ln(1 + age days), is_constraint, is_stale]``; plus hop-kind and
   position embeddings, layer-normalised.
3. **Query conditioning and pooling.** The query's :class:`~signet_rl.scorers.features.QueryFeaturizer`
   vector (embedding, *predicted* intent one-hot, time features) becomes :math:`c = \\mathrm{MLP}(q)`;
   attention pooling with logits :math:`\\langle W c, \\mathrm{hop}_j \\rangle / \\sqrt{H}` and mean pooling
   summarise the hops.
4. **Heads.** An MLP over ``[attention pool, mean pool, c, attention pool ⊙ c, symlog(hand features)]``
   (hand features: :class:`~signet_rl.scorers.features.PathFeaturizer`) feeds ``n_heads`` linear heads.
   The score is their mean.

**Learning** (:meth:`GNNPathScorer.update`): each rated shown path is an example with target its rating
(-1, 0, +1). The loss is a weighted squared error, per head :math:`k`,

.. math:: L = \\frac{\\sum_i \\sum_k m_{ik}\\, w_i\\, (f_k(x_i) - r_i)^2}{\\sum_i \\sum_k m_{ik}\\, w_i}

so a score estimates the expected rating of showing the path (comparable across queries, and a natural
threshold at 0). :math:`m_{ik} \\sim \\mathrm{Poisson}(1)` is the bootstrap mask (all ones with
``uncertainty="none"``), :math:`w_i = \\min(1/\\mathrm{pscore}_i, \\text{max_importance_weight})` with
``importance_weighted`` (else 1). ``steps_per_update`` Adam steps are taken per call. Training computes node
states on the ``layers``-hop subgraph around the batch's entities only (exact for this architecture), so a
step costs the same on a 43k-entity graph as on a toy one.

**No node state sees the future.** Message passing, degrees and communities use only the dependencies
that existed at the query's time (:class:`~signet_rl.graph.timeslice.TimeSlices`: a per-time edge mask,
degrees over it, daily community snapshots; cached per slice). Node states of a timed query are computed on
the ``layers``-hop subgraph of its paths' entities over that slice — in training and inference alike; the
paths of one batch are grouped by slice.

**Inference** without a query time caches every node's state per graph (a full pass); the cache is rebuilt
when the graph's :class:`~signet_rl.graph.arrays.GraphArrays` object changes, after every parameter change (an
update, a ``load_state_dict``), and on :meth:`GNNPathScorer.invalidate` (call it after edge statistics
change).

**Exploration**: :meth:`GNNPathScorer.sample_scores` draws Thompson samples as the scores of a randomly
chosen bootstrap head per draw.

**Saving**: :meth:`GNNPathScorer.save` writes the weights and the constructor arguments;
:meth:`GNNPathScorer.load` rebuilds the scorer from them with no trainer, Hydra or MLflow import (as
Stable-Baselines3 saves a policy). :meth:`~GNNPathScorer.state_dict` additionally holds the optimizer and
random state, for checkpoints.

    >>> scorer = GNNPathScorer(hidden=16, seed=0)   # doctest: +SKIP
    >>> scores = scorer.score(query, walk.paths, context)   # doctest: +SKIP
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from signet_rl.core.checks import check_integer, check_range
from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.retrieval.intent import IntentClassifier
from signet_rl.scorers.base import Feedback, ScoringContext, check_feedback, register
from signet_rl.scorers.features import (
    INTENTS,
    PATH_FEATURES,
    TIME_FEATURES,
    EdgeStats,
    PathFeaturizer,
    PerGraphFeaturizers,
    QueryFeaturizer,
    floor_prior,
)
from signet_rl.scorers.fused import BASE_SCORES, DEFAULT_FUSED_WEIGHTS, BaseScores
from signet_rl.scorers.gnn_inputs import (  # torch-free: shared with the served (ONNX) policy
    ATTR_NUMERIC_DIM,
    DESIRE_COLUMNS,
    EDGE_NUMERIC_DIM,
    KNOWN_DEPENDENCY_TYPES,
    KNOWN_ENTITY_TYPES,
    MAX_POSITIONS,
    NAME_SKETCH_DIM,
    GraphInputs,
    NodeInputs,
    QueryPaths,
    path_inputs,
    query_vector,
)
from signet_rl.scorers.prior import PRE_STUDY_PRIOR_HALF_LIFE_DAYS
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.path import Path

__all__ = ["GNNPathNet", "GNNPathScorer"]

_FORMAT = "signet_rl.GNNPathScorer/1"
#: Constructor arguments added after format 1 was first written, with the values that reproduce a scorer
#: saved without them: a policy or checkpoint missing a key loads with that value (tests/test_premove.py).
ADDED_ARGUMENTS: dict[str, Any] = {
    "base_scores": False, "base_scale": 0.2, "lr_decay_updates": 0, "refresh_edge_stats": False,
    "aspect_buckets": 0,
    # the hand-made path features a scorer was built with: PATH_FEATURES grows at its end (the hybrid entry
    # added 13), and a scorer reads only its first ``hand_feature_count`` columns
    "hand_feature_count": 28,
    # what of the query's wording the net reads (issue 25's template shift): both on before the switches
    "query_text": True, "aspect_intent": True,
    # issue 25b: the heads start at zero (the untrained scorer ranks exactly as its base) and the loss
    "zero_residual": False, "loss": "squared",
    # a residual over the hybrid entry's floor (issue 24): off before it
    "floor_prior": 0.0,
    # the base scores' prior column took the prior's tuned half-life (issue 25 §3, session 7): 90 days before
    "prior_half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
}  # fmt: skip


def _rated_pairs(items: Sequence[tuple[Any, ...]]) -> tuple[Tensor, Tensor]:
    """``(better, worse)`` row indices into the concatenated rated paths of ``items`` (each item's ratings at
    index 3): every pair of one slate whose ratings differ, the higher-rated first."""
    hi: list[int] = []
    lo: list[int] = []
    offset = 0
    for it in items:
        r = it[3]
        for i in range(len(r)):
            for j in range(len(r)):
                if r[i] > r[j]:
                    hi.append(offset + i)
                    lo.append(offset + j)
        offset += len(r)
    return torch.tensor(hi, dtype=torch.long), torch.tensor(lo, dtype=torch.long)


def _pairwise_loss(out: Tensor, hi: Tensor, lo: Tensor, weight: Tensor) -> Tensor:
    """RankNet per pair and head, ``[pairs, heads]``: :math:`w_a w_b \\log(1 + e^{-(f(a) - f(b))})` for each
    rated pair (``a = hi``, rated higher, ``b = lo``) of outputs ``out`` ``[n, heads]``, weighted by the
    product of the two paths' weights ``weight`` ``[n, heads]`` (bootstrap x importance)."""
    return weight[hi] * weight[lo] * nn.functional.softplus(-(out[hi] - out[lo]))


def _symlog(x: Tensor) -> Tensor:
    return torch.sign(x) * torch.log1p(x.abs())


@dataclass
class _NodeInputs:
    """Per-node inputs of one graph (tensors)."""

    type_code: Tensor  # [N]
    name_vec: Tensor  # [N, NAME_SKETCH_DIM]: the name embedding's fixed random projection
    comm_code: Tensor  # [N]
    log_degree: Tensor  # [N, 1]


@dataclass
class _Subgraph:
    """A ``layers``-hop subgraph: its nodes, relabelled message edges (dependency row and direction of each)
    and where the seed nodes are in it."""

    subset: Tensor
    edge_index: Tensor
    edge: Tensor
    direction: Tensor
    mapping: Tensor


@dataclass
class _Inputs:
    """The parameter-free inputs of a batch of paths (see :meth:`GNNPathScorer._inputs`)."""

    shape: tuple[int, int]  # paths, longest path's hop count
    query: Tensor
    hand: Tensor | None
    base: Tensor | None  # [n, 3] standardised prior / PPR / flat scores (base_scores=True), else None
    aspect_key: Tensor | None  # [n] intent x aspect-name bucket of each path (aspect_buckets > 0), else None
    ent: Tensor
    ent_owner: Tensor
    ent_pos: Tensor
    dep_type: Tensor
    dep_numeric: Tensor
    dep_dir: Tensor
    dep_owner: Tensor
    dep_pos: Tensor
    asp_x: Tensor
    asp_owner: Tensor
    asp_pos: Tensor
    att_x: Tensor
    att_owner: Tensor
    att_pos: Tensor
    #: time-sliced subgraphs: per group of entity hops sharing a time slice, their positions in ``ent``,
    #: the subgraph around them and the node inputs of that slice; ``None``: the cached full pass.
    sub: list[tuple[Tensor, _Subgraph, _NodeInputs]] | None
    #: ``[n]`` the frozen floor prior added to every head (``floor_prior > 0``), else None
    floor: Tensor | None = None


class _GraphState:
    """Everything a scorer keeps per graph snapshot: featurizer, the graph's inputs
    (:class:`~signet_rl.scorers.gnn_inputs.GraphInputs`, numpy, shared with the served policy) wrapped as
    tensors, and the node-state cache."""

    def __init__(
        self,
        graph: KnowledgeGraph,
        arrays: GraphArrays,
        featurizer: PathFeaturizer,
        config: Mapping[str, Any],
    ) -> None:
        self.inputs = GraphInputs(graph, arrays, featurizer, config)
        self.graph, self.arrays, self.featurizer = graph, arrays, featurizer
        self.num_nodes = arrays.num_entities
        self.slices = self.inputs.slices
        self.nodes = _node_tensors(self.inputs.nodes)
        self.edge_type = torch.from_numpy(self.inputs.edge_type)
        self.edge_numeric = torch.from_numpy(self.inputs.edge_numeric)
        # message-passing edges: every dependency both ways (row 0 source, row 1 target of the message)
        self.edge_index, self.mp_edge, self.mp_dir = _edge_tensors(self.inputs.nodes)
        self.cache: Tensor | None = None
        self.cache_version = -1

    def nodes_at(self, t: float | None) -> _NodeInputs:
        """The node inputs at query time ``t``: degrees over the edges that existed then and the
        communities of that time (:class:`~signet_rl.graph.timeslice.TimeSlices`); all rows for None."""
        if t is None:
            return self.nodes
        return self.slices.cached("gnn_nodes", t, lambda: _node_tensors(self.inputs.at(t)))

    def message_edges(self, t: float | None) -> tuple[Tensor, Tensor, Tensor]:
        """``(edge_index, dependency row, direction)`` of the messages over the edges that existed at
        ``t`` (all for None)."""
        if t is None:
            return self.edge_index, self.mp_edge, self.mp_dir
        return self.slices.cached("gnn_edges", t, lambda: _edge_tensors(self.inputs.at(t)))


def _node_tensors(nodes: NodeInputs) -> _NodeInputs:
    """Node inputs as tensors (sharing the arrays' memory)."""
    return _NodeInputs(
        type_code=torch.from_numpy(nodes.type_code), name_vec=torch.from_numpy(nodes.name_vec),
        comm_code=torch.from_numpy(nodes.comm_code), log_degree=torch.from_numpy(nodes.log_degree),
    )  # fmt: skip


def _edge_tensors(nodes: NodeInputs) -> tuple[Tensor, Tensor, Tensor]:
    """``(edge_index [2, M], dependency row [M], direction [M])`` of the message edges, as tensors."""
    edge_index = torch.from_numpy(np.stack([nodes.src, nodes.dst]))
    return edge_index, torch.from_numpy(nodes.mp_edge), torch.from_numpy(nodes.mp_dir)


class GNNPathNet(nn.Module):
    """The network of :class:`GNNPathScorer` (see the module docstring for the maths).

    Args:
        text_dim: dimension of the encoder's text vectors (384 for ``hashing``).
        query_dim: dimension of the query features fed to the conditioning MLP.
        hidden: width ``H`` of node states, hop vectors and the trunk.
        layers: number of GINE message-passing layers (0: node inputs only).
        n_heads: number of output heads (bootstrap heads).
        name_dim: width of the projected entity-name embedding.
        type_buckets, edge_type_buckets, community_buckets: sizes of the hashed embeddings.
        edge_features: use dependency type, confidence, strength, reason and desire statistics.
        communities: use the community embedding.
        hand_dim: number of hand-made path features (0: none).

    Shapes:
        node states: ``[N, H]``; hop vectors ``[n, L, H]``; output ``[n, n_heads]``.
    """

    def __init__(
        self,
        text_dim: int,
        query_dim: int,
        hidden: int,
        layers: int,
        n_heads: int,
        name_dim: int,
        type_buckets: int,
        edge_type_buckets: int,
        community_buckets: int,
        edge_features: bool,
        communities: bool,
        hand_dim: int,
        base_dim: int = 0,
        base_init: Sequence[float] = (),
        aspect_keys: int = 0,
        zero_residual: bool = False,
    ) -> None:
        from torch_geometric.nn import GINEConv

        super().__init__()
        h = hidden
        self.hidden, self.edge_features, self.communities = h, edge_features, communities
        self.type_emb = nn.Embedding(type_buckets, 16)
        self.name_proj = nn.Linear(NAME_SKETCH_DIM, name_dim)
        self.comm_emb = nn.Embedding(community_buckets + 1, 16) if communities else None
        self.node_in = nn.Linear(16 + name_dim + (16 if communities else 0) + 1, h)
        self.edge_type_emb = nn.Embedding(edge_type_buckets, h)
        self.edge_dir_emb = nn.Embedding(2, h)
        self.edge_num = nn.Linear(EDGE_NUMERIC_DIM, h)
        self.convs = nn.ModuleList(
            GINEConv(nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h)), aggr="mean")
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(h) for _ in range(layers))
        self.hop_kind = nn.Embedding(4, h)  # entity, dependency, aspect, attribute
        self.hop_pos = nn.Embedding(MAX_POSITIONS, h)
        self.aspect_in = nn.Linear(text_dim + 1, h)
        self.attr_in = nn.Linear(text_dim + ATTR_NUMERIC_DIM, h)
        self.hop_norm = nn.LayerNorm(h)
        self.query_in = nn.Sequential(nn.Linear(query_dim, h), nn.ReLU(), nn.Linear(h, h))
        self.attn = nn.Linear(h, h, bias=False)
        self.hand_dim = hand_dim
        self.base_dim = base_dim
        self.trunk = nn.Sequential(
            nn.Linear(4 * h + hand_dim + base_dim, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU()
        )
        self.heads = nn.Linear(h, n_heads)
        # the residual's skip: a linear read of the non-learned scores, added to every head
        self.base_skip = nn.Linear(base_dim, 1, bias=False) if base_dim else None
        self._base_init = tuple(float(w) for w in base_init)
        # a learned per-head bias for each (predicted intent, aspect-name bucket): which kinds of facts help
        # which kinds of question (started at 0)
        self.aspect_bias = nn.Embedding(aspect_keys, n_heads) if aspect_keys else None
        self.zero_residual = zero_residual
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in self.modules():
            reset = getattr(module, "reset_parameters", None) if module is not self else None
            if callable(reset):
                reset()
        nn.init.zeros_(self.heads.bias)
        if self.zero_residual and self.base_skip is not None:  # untrained, the net is its base skip alone
            nn.init.zeros_(self.heads.weight)
        else:
            nn.init.normal_(self.heads.weight, std=0.1)
        if self.base_skip is not None:
            with torch.no_grad():
                init = self._base_init or (0.0,) * self.base_dim
                self.base_skip.weight.copy_(torch.tensor([init], dtype=torch.float32))
        if self.aspect_bias is not None:
            nn.init.zeros_(self.aspect_bias.weight)

    # -- pieces ---------------------------------------------------------------------------------------

    def edge_vectors(self, types: Tensor, numeric: Tensor, direction: Tensor) -> Tensor:
        """``[m, H]`` edge vectors from bucketed types ``[m]``, numeric columns ``[m, F]`` and the ±1
        directions ``[m]``."""
        return self.edge_dir_emb((direction > 0).long()) + self.edge_base(types, numeric)

    def edge_base(self, types: Tensor, numeric: Tensor) -> Tensor | float:
        """The direction-free part of edge vectors, ``[m, H]`` (0 without edge features)."""
        if not self.edge_features:
            return 0.0
        return self.edge_type_emb(types) + self.edge_num(numeric)

    def node_inputs(self, nodes: _NodeInputs, idx: Tensor | None = None) -> Tensor:
        """``[n, H]`` layer-0 states of nodes ``idx`` (all when None)."""

        def pick(t: Tensor) -> Tensor:
            return t if idx is None else t[idx]

        parts = [self.type_emb(pick(nodes.type_code)), self.name_proj(pick(nodes.name_vec))]
        if self.comm_emb is not None:
            parts.append(self.comm_emb(pick(nodes.comm_code)))
        parts.append(pick(nodes.log_degree))
        return torch.relu(self.node_in(torch.cat(parts, dim=1)))

    def propagate(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        """Run the message-passing layers: ``[n, H] -> [n, H]``."""
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = norm(x + conv(x, edge_index, edge_attr))
        return x

    def hop_vectors(
        self, kinds: Sequence[tuple[Tensor, Tensor, Tensor]], shape: tuple[int, int]
    ) -> tuple[Tensor, Tensor]:
        """Padded hop vectors ``[n, L, H]`` and their mask ``[n, L]``.

        Args:
            kinds: for entity, dependency, aspect and attribute hops in this order: their content vectors
                ``[m, H]``, the path each belongs to ``[m]`` and its position in the path ``[m]``.
            shape: ``(n, L)``, paths and the longest path's hop count.
        """
        n, length = shape
        out = torch.zeros(n, length, self.hidden)
        mask = torch.zeros(n, length, dtype=torch.bool)
        for kind, (vec, owner, pos) in enumerate(kinds):
            if len(owner) == 0:
                continue
            vec = vec + self.hop_kind.weight[kind] + self.hop_pos(pos.clamp(max=MAX_POSITIONS - 1))
            out = out.index_put((owner, pos), vec)
            mask[owner, pos] = True
        return self.hop_norm(out) * mask.unsqueeze(-1), mask

    def head(
        self, hops: Tensor, mask: Tensor, query: Tensor, hand: Tensor | None, base: Tensor | None = None
    ) -> Tensor:
        """``[n, n_heads]`` outputs from hop vectors ``[n, L, H]``, mask ``[n, L]``, per-path query
        features ``[n, Dq]``, hand features ``[n, hand_dim]`` and the standardised non-learned scores
        ``[n, base_dim]`` (the residual: they enter the trunk and, through ``base_skip``, every head)."""
        c = self.query_in(query)
        logits = torch.einsum("nlh,nh->nl", hops, self.attn(c)) / math.sqrt(self.hidden)
        # a path with no hop the net reads (the hybrid entry's memory-only floor and session paths) pools
        # nothing: its row is left unmasked and zeroed after the softmax (all -inf gave NaN, forward and back)
        some = mask.any(dim=1, keepdim=True)
        logits = logits.masked_fill(~mask & some, float("-inf"))
        attn = torch.softmax(logits, dim=1) * some
        pooled = torch.einsum("nl,nlh->nh", attn, hops)
        mean = hops.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        parts = [pooled, mean, c, pooled * c]
        if self.hand_dim:
            assert hand is not None
            parts.append(_symlog(hand))
        if self.base_skip is not None:
            assert base is not None
            parts.append(base)
            return self.heads(self.trunk(torch.cat(parts, dim=1))) + self.base_skip(base)
        return self.heads(self.trunk(torch.cat(parts, dim=1)))


@register("gnn")
class GNNPathScorer(PerGraphFeaturizers[_GraphState]):
    """A GNN policy over candidate paths, learned from ratings (see the module docstring).

    Args:
        hidden: width of node states, hop vectors and the trunk (>= 1).
        layers: message-passing layers (>= 0).
        n_heads: output heads (>= 1). With ``bootstrap`` each learns from its own Poisson(1) resample of
            every batch; with ``none`` all see every example. The score is their mean either way.
        uncertainty: ``bootstrap`` (Poisson(1) masks per head, Thompson draws from heads) or ``none``.
        lr: Adam learning rate (> 0).
        weight_decay: Adam weight decay (>= 0).
        steps_per_update: Adam steps per :meth:`update` call (>= 1).
        importance_weighted: weight each example by ``min(1 / pscore, max_importance_weight)``.
        max_importance_weight: the clip of importance weights (>= 1).
        edge_features, communities, time_features, hand_features: ablation switches (see module).
        base_scores: take the non-learned scorers' standardised scores (prior, PPR, flat:
            :class:`~signet_rl.scorers.fused.BaseScores`) as inputs and learn a residual over them: they
            enter the trunk, and a linear skip (started at the ``desire_fused`` weights times
            ``base_scale``) adds them to every head, so the untrained scorer already ranks like
            ``desire_fused`` and learning corrects it.
        base_scale: the skip's starting scale (>= 0).
        prior_half_life_days: the recency half-life of the base scores' prior column (> 0, or None: no
            recency term); by default 90 days
            (:data:`~signet_rl.scorers.prior.PRE_STUDY_PRIOR_HALF_LIFE_DAYS`), the column every study of the
            learned scorers ran with (the prior scorer's own default is its study's 27 days).
        floor_prior: > 0: learn a residual over the hybrid entry's floor (issue 24): every head's output is
            :func:`~signet_rl.scorers.features.floor_prior` (``floor_prior / (1 + flat's rank)`` on the floor,
            0 off it) plus the net's, and the output heads and the skip start at 0, so the untrained scorer
            ranks exactly as ``best_flat`` does and the loss trains the net on ``rating - floor prior``.
            0: off. The ONNX export does not carry it (refused by name).
        lr_decay_updates: learning-rate schedule: Adam's rate at update ``u`` is
            ``lr / sqrt(1 + u / lr_decay_updates)`` (0: constant).
        aspect_buckets: with > 0, learn a bias per head for each (predicted intent, aspect name hashed into
            this many buckets) pair and add it to the path's score (0: none).
        query_text: feed the query's text embedding to the net's query conditioning (False, the default:
            zeros in its place, so the net reads only the predicted intent and time of the query; the
            wording of a query template cannot be keyed on; chosen on issue 25's template-holdout
            validation). The hand features' query-path similarities are kept either way.
        aspect_intent: key the aspect bias by (predicted intent, aspect) (False: by aspect alone, one bias
            shared by every intent, so a mispredicted intent does not pick the wrong bias).
        refresh_edge_stats: re-read the desire-path statistics (``edge_stats``) into the edge features
            whenever they changed, at every use (else they are a snapshot taken when the graph's state was
            built, the behaviour of scorers saved before this switch).
        name_dim: width of the projected entity-name embedding (>= 1).
        type_buckets: entity-type buckets (> the 10 known types).
        edge_type_buckets: dependency-type buckets (> the 5 known types).
        community_buckets: community buckets (>= 1).
        encoder: name of the text encoder (``hashing`` or ``minilm``).
        seed: seeds initialisation, bootstrap masks and nothing else; the same seed and the same calls
            give the same scores.
        classifier: predicts query intents (default rule-based); not saved (pass it to :meth:`load`).
        edge_stats: learned desire-path statistics per edge (:class:`~signet_rl.scorers.features.EdgeStats`);
            not saved. Call :meth:`invalidate` after they change.

    Raises:
        ValueError: a bad argument, naming it, its value and what is allowed.
    """

    name = "gnn"

    def __init__(
        self,
        hidden: int = 64,
        layers: int = 2,
        n_heads: int = 8,
        uncertainty: Literal["bootstrap", "none"] = "bootstrap",
        lr: float = 0.00019632702887198395,
        weight_decay: float = 0.0,
        steps_per_update: int = 4,
        importance_weighted: bool = False,
        max_importance_weight: float = 10.0,
        edge_features: bool = True,
        communities: bool = True,
        time_features: bool = True,
        hand_features: bool = True,
        base_scores: bool = True,
        base_scale: float = 0.2,
        prior_half_life_days: float | None = PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
        lr_decay_updates: int = 200,
        refresh_edge_stats: bool = True,
        aspect_buckets: int = 64,
        query_text: bool = False,
        aspect_intent: bool = True,
        zero_residual: bool = True,
        loss: Literal["squared", "pairwise", "both"] = "squared",
        hand_feature_count: int | None = None,
        floor_prior: float = 0.0,
        name_dim: int = 16,
        type_buckets: int = 32,
        edge_type_buckets: int = 64,
        community_buckets: int = 64,
        encoder: str = "hashing",
        seed: int = 0,
        classifier: IntentClassifier | None = None,
        edge_stats: EdgeStats | None = None,
    ) -> None:
        who = "GNNPathScorer"
        for arg, value, low in (
            ("hidden", hidden, 1), ("layers", layers, 0), ("n_heads", n_heads, 1),
            ("steps_per_update", steps_per_update, 1), ("name_dim", name_dim, 1),
            ("type_buckets", type_buckets, len(KNOWN_ENTITY_TYPES) + 1),
            ("edge_type_buckets", edge_type_buckets, len(KNOWN_DEPENDENCY_TYPES) + 1),
            ("community_buckets", community_buckets, 1), ("lr_decay_updates", lr_decay_updates, 0),
            ("aspect_buckets", aspect_buckets, 0),
        ):  # fmt: skip
            check_integer(arg, value, low, owner=who)
        if uncertainty not in ("bootstrap", "none"):
            raise ValueError(f"{who}: uncertainty must be 'bootstrap' or 'none', got {uncertainty!r}")
        check_range("lr", lr, 0, lo_open=True, owner=who)
        check_range("weight_decay", weight_decay, 0, owner=who)
        check_range("max_importance_weight", max_importance_weight, 1, owner=who)
        check_range("base_scale", base_scale, 0, owner=who)
        check_range("prior_half_life_days", prior_half_life_days, 0, lo_open=True, optional=True, owner=who)
        if loss not in ("squared", "pairwise", "both"):
            raise ValueError(f"{who}: loss must be 'squared', 'pairwise' or 'both', got {loss!r}")
        check_range("floor_prior", floor_prior, 0, owner=who)
        if hand_feature_count is None:
            hand_feature_count = len(PATH_FEATURES)
        check_integer("hand_feature_count", hand_feature_count, 1, len(PATH_FEATURES), owner=who)
        self.hand_feature_count = hand_feature_count
        self.config: dict[str, Any] = {
            "hidden": hidden, "layers": layers, "n_heads": n_heads, "uncertainty": uncertainty, "lr": lr,
            "weight_decay": weight_decay, "steps_per_update": steps_per_update,
            "importance_weighted": importance_weighted, "max_importance_weight": max_importance_weight,
            "edge_features": edge_features, "communities": communities, "time_features": time_features,
            "hand_features": hand_features, "base_scores": base_scores, "base_scale": base_scale,
            "prior_half_life_days": prior_half_life_days, "lr_decay_updates": lr_decay_updates,
            "refresh_edge_stats": refresh_edge_stats,
            "aspect_buckets": aspect_buckets, "hand_feature_count": hand_feature_count,
            "query_text": query_text, "aspect_intent": aspect_intent, "floor_prior": floor_prior,
            "zero_residual": zero_residual, "loss": loss,
            "name_dim": name_dim, "type_buckets": type_buckets,
            "edge_type_buckets": edge_type_buckets, "community_buckets": community_buckets,
            "encoder": encoder, "seed": seed,
        }  # fmt: skip
        self.uncertainty = uncertainty
        self.steps_per_update = steps_per_update
        self.importance_weighted = importance_weighted
        self.max_importance_weight = float(max_importance_weight)
        self.time_features = time_features
        self.hand_features = hand_features
        self.base_scores = base_scores
        self.lr = float(lr)
        self.lr_decay_updates = int(lr_decay_updates)
        self.refresh_edge_stats = refresh_edge_stats
        self.base = BaseScores(half_life_days=prior_half_life_days) if base_scores else None
        if aspect_buckets == 1:
            raise ValueError(f"{who}: aspect_buckets must be 0 (off) or >= 2, got 1")
        self.aspect_buckets = aspect_buckets
        self.query_text = bool(query_text)
        self.aspect_intent = bool(aspect_intent)
        self.loss = loss
        self.layers = layers
        self.query_featurizer = QueryFeaturizer(encoder, classifier)
        self._init_graph_states(edge_stats)
        self.encoder = self.query_featurizer.encoder
        text_dim = self.query_featurizer.embedding_dim
        query_dim = text_dim + len(INTENTS) + (len(TIME_FEATURES) if time_features else 0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = GNNPathNet(
                text_dim=text_dim, query_dim=query_dim, hidden=hidden, layers=layers, n_heads=n_heads,
                name_dim=name_dim, type_buckets=type_buckets, edge_type_buckets=edge_type_buckets,
                community_buckets=community_buckets, edge_features=edge_features, communities=communities,
                hand_dim=hand_feature_count if hand_features else 0,
                base_dim=len(BASE_SCORES) if base_scores else 0,
                base_init=[base_scale * DEFAULT_FUSED_WEIGHTS[k] for k in BASE_SCORES] if base_scores else (),
                aspect_keys=len(INTENTS) * aspect_buckets, zero_residual=zero_residual,
            )  # fmt: skip
        self.floor_prior = float(floor_prior)
        if self.floor_prior:  # the residual starts at exactly 0: the untrained scorer is the floor prior
            with torch.no_grad():
                nn.init.zeros_(self.net.heads.weight)
                nn.init.zeros_(self.net.heads.bias)
                if self.net.base_skip is not None:
                    nn.init.zeros_(self.net.base_skip.weight)
        self.optimizer = torch.optim.Adam(
            self.net.parameters(), lr=lr, weight_decay=weight_decay, foreach=True
        )
        self.generator = torch.Generator().manual_seed(seed)
        self.updates = 0
        #: The traversal the policy was trained with (a full ``TraversalConfig`` as a dict), set by
        #: :meth:`load` from a policy saved with one; a ``DesirePathRetriever`` walks with it by default.
        self.traversal: dict[str, Any] | None = None
        self._version = 0  # bumped on every parameter change; node-state caches compare against it

    # -- graph state --------------------------------------------------------------------------------

    def _build_graph_state(
        self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer
    ) -> _GraphState:
        """A graph's tensors and node-state cache around its featurizer (:class:`PerGraphFeaturizers`)."""
        return _GraphState(graph, arrays, featurizer, self.config)

    def _graph_state(self, graph: KnowledgeGraph, arrays: GraphArrays) -> _GraphState:
        """The graph's state (:class:`PerGraphFeaturizers`), its desire-path edge columns re-read from the
        statistics first with ``refresh_edge_stats`` (the node-state cache is dropped when they changed)."""
        state = super()._graph_state(graph, arrays)
        stats = state.featurizer.edge_stats
        if self.refresh_edge_stats and stats is not None and len(state.edge_numeric):
            cols = DESIRE_COLUMNS
            new = torch.from_numpy(state.inputs.desire_columns())
            if not torch.equal(state.edge_numeric[:, cols], new):
                numeric = state.edge_numeric.clone()
                numeric[:, cols] = new
                state.edge_numeric = numeric
                state.cache = None
        return state

    def graph_state_dict(self, arrays: GraphArrays) -> dict[str, Tensor] | None:
        """What this scorer derived from history for the graph ``arrays`` views: the edge features, whose
        desire-path columns are a snapshot of ``edge_stats`` taken when the graph's state was built (the
        first use after :meth:`attach_edge_stats` or :meth:`invalidate`; they are not refreshed as the
        statistics learn). None when the graph has no state yet. A checkpoint needs it: a resumed scorer
        would otherwise snapshot the statistics at the resume point, and score differently from one that
        never stopped."""
        state = self._graphs.get(id(arrays))
        if state is None or state.arrays is not arrays:
            return None
        return {"edge_numeric": state.edge_numeric.clone()}

    def load_graph_state_dict(
        self, graph: KnowledgeGraph, arrays: GraphArrays, blob: Mapping[str, Tensor]
    ) -> None:
        """Restore a :meth:`graph_state_dict` for the graph ``arrays`` views (building its state first).

        Raises:
            ValueError: edge features of another shape (another graph).
        """
        state = self._graph_state(graph, arrays)
        numeric = blob["edge_numeric"]
        if tuple(numeric.shape) != tuple(state.edge_numeric.shape):
            raise ValueError(
                f"graph state has edge features of shape {tuple(numeric.shape)}, this graph "
                f"{tuple(state.edge_numeric.shape)}"
            )
        state.edge_numeric = numeric.clone()
        state.cache = None

    def node_states(self, graph: KnowledgeGraph, arrays: GraphArrays) -> Tensor:
        """Every entity's node state ``[N, H]`` under the current parameters (cached; a full pass when
        stale)."""
        state = self._graph_state(graph, arrays)
        if state.cache is None or state.cache_version != self._version:
            with torch.no_grad():
                x = self.net.node_inputs(state.nodes)
                if self.layers:
                    # once per dependency, then per direction (every dependency carries messages both ways)
                    base = self.net.edge_base(state.edge_type, state.edge_numeric)
                    dirs = self.net.edge_dir_emb((state.mp_dir > 0).long())
                    attr = dirs + (base[state.mp_edge] if isinstance(base, Tensor) else base)
                    x = self.net.propagate(x, state.edge_index, attr)
            state.cache, state.cache_version = x, self._version
        return state.cache

    def _subgraph(self, state: _GraphState, nodes: Tensor, t: float | None = None) -> _Subgraph:
        """The ``layers``-hop subgraph around ``nodes`` over the edges that existed at ``t`` (all for None):
        exact node states for them need nothing else."""
        from torch_geometric.utils import k_hop_subgraph

        if self.layers == 0:
            subset, mapping = torch.unique(nodes, return_inverse=True)
            return _Subgraph(subset, torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long),
                             torch.zeros(0), mapping)  # fmt: skip
        edge_index, mp_edge, mp_dir = state.message_edges(t)
        subset, sub_index, mapping, edge_mask = k_hop_subgraph(
            nodes, self.layers, edge_index, relabel_nodes=True, num_nodes=state.num_nodes
        )
        return _Subgraph(subset, sub_index, mp_edge[edge_mask], mp_dir[edge_mask], mapping)

    def _subgraph_states(
        self, state: _GraphState, nodes: Tensor, t: float | None = None
    ) -> tuple[Tensor, Tensor]:
        """Node states (with gradients) of the subgraph around ``nodes`` at time ``t``, and where each of
        ``nodes`` is in it."""
        sub = self._subgraph(state, nodes, t)
        return self._sub_states(state, sub, state.nodes_at(t)), sub.mapping

    def _sub_states(self, state: _GraphState, sub: _Subgraph, nodes: _NodeInputs | None = None) -> Tensor:
        x = self.net.node_inputs(state.nodes if nodes is None else nodes, sub.subset)
        if self.layers == 0:
            return x
        attr = self.net.edge_vectors(state.edge_type[sub.edge], state.edge_numeric[sub.edge], sub.direction)
        return self.net.propagate(x, sub.edge_index, attr)

    # -- forward ------------------------------------------------------------------------------------

    def _query_vector(self, query: Query) -> tuple[np.ndarray, str]:
        return query_vector(self.query_featurizer, query, self.time_features)

    def _inputs(
        self,
        state: _GraphState,
        items: Sequence[tuple[Query, Sequence[Path], ScoringContext]],
        train: bool,
        base_rows: Sequence[np.ndarray] | None = None,
    ) -> _Inputs:
        """Everything about several queries' paths over one graph that does not depend on the parameters:
        :func:`~signet_rl.scorers.gnn_inputs.path_inputs` (the arrays the served policy builds too), as
        tensors. ``base_rows``: see there."""
        queries = [QueryPaths(q, *self._query_vector(q), paths, c) for q, paths, c in items]
        hand = self.hand_feature_count if self.hand_features else None
        # query_text / aspect_intent: the wording switches of issue 25 (True: the behaviour without them)
        x = path_inputs(
            state.inputs, queries, self.query_featurizer.embedding_dim, hand, self.base, self.aspect_buckets,
            base_rows, getattr(self, "query_text", True), getattr(self, "aspect_intent", True),
        )  # fmt: skip
        t = torch.from_numpy
        ents, dep = t(x.ent), t(x.dep)
        floor = None
        if getattr(self, "floor_prior", 0.0):
            prior = [floor_prior(p, c, self.floor_prior) for _, p, c in items]
            floor = t(np.concatenate(prior).astype(np.float32))
        return _Inputs(
            shape=x.shape, query=t(x.query), hand=None if x.hand is None else t(x.hand),
            base=None if x.base is None else t(x.base),
            aspect_key=None if x.aspect_key is None else t(x.aspect_key),
            ent=ents, ent_owner=t(x.ent_owner), ent_pos=t(x.ent_pos),
            dep_type=state.edge_type[dep], dep_numeric=state.edge_numeric[dep], dep_dir=t(x.dep_dir),
            dep_owner=t(x.dep_owner), dep_pos=t(x.dep_pos),
            asp_x=t(x.asp_x), asp_owner=t(x.asp_owner), asp_pos=t(x.asp_pos),
            att_x=t(x.att_x), att_owner=t(x.att_owner), att_pos=t(x.att_pos),
            sub=self._time_groups(state, ents, x.t_ent, train), floor=floor,
        )  # fmt: skip

    def _time_groups(
        self, state: _GraphState, ents: Tensor, t_ent: np.ndarray, train: bool
    ) -> list[tuple[Tensor, _Subgraph, _NodeInputs]] | None:
        """Entity hops grouped by the time slice of their query, each with its subgraph and node inputs.

        A query's node states are computed from the edges, degrees and communities that existed at its
        time only (never the whole timeline). Inference without any query time uses the cached full pass
        (``None``); training always uses subgraphs.
        """
        timed = ~np.isnan(t_ent)
        if not train and not timed.any():
            return None
        slices = state.slices
        groups: dict[Any, list[int]] = {}
        times: dict[Any, float | None] = {}
        for i, t in enumerate(t_ent.tolist()):
            tt = None if math.isnan(t) else float(t)
            key = slices.slice_id(tt)
            groups.setdefault(key, []).append(i)
            times.setdefault(key, tt)
        out = []
        for key, positions in groups.items():
            pos = torch.as_tensor(positions, dtype=torch.long)
            t = times[key]
            out.append((pos, self._subgraph(state, ents[pos], t), state.nodes_at(t)))
        return out

    def _run(self, state: _GraphState, x: _Inputs) -> Tensor:
        """``[n, n_heads]`` outputs: node states from the subgraph (training) or the cache (inference)."""
        if x.sub is not None:
            ent_vec = torch.zeros(len(x.ent), self.net.hidden)
            for pos, sub, nodes in x.sub:
                ent_vec = ent_vec.index_put((pos,), self._sub_states(state, sub, nodes)[sub.mapping])
        else:
            ent_vec = self.node_states(state.graph, state.arrays)[x.ent]
        kinds = [
            (ent_vec, x.ent_owner, x.ent_pos),
            (self.net.edge_vectors(x.dep_type, x.dep_numeric, x.dep_dir), x.dep_owner, x.dep_pos),
            (self.net.aspect_in(x.asp_x), x.asp_owner, x.asp_pos),
            (self.net.attr_in(x.att_x), x.att_owner, x.att_pos),
        ]
        hops, mask = self.net.hop_vectors(kinds, x.shape)
        out = self.net.head(hops, mask, x.query, x.hand, x.base)
        if self.net.aspect_bias is not None and x.aspect_key is not None:
            out = out + self.net.aspect_bias(x.aspect_key)
        if x.floor is not None:  # the frozen floor prior: the net learns the residual over it
            out = out + x.floor[:, None]
        return out

    def _outputs(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> Tensor:
        state = self._graph_state(context.graph, context.arrays)
        with torch.no_grad():
            return self._run(state, self._inputs(state, [(query, paths, context)], train=False))

    # -- PathScorer ---------------------------------------------------------------------------------

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """The mean of the heads' outputs: an estimate of each path's expected rating. Shape ``[n]``."""
        if not paths:
            return np.zeros(0)
        return self._outputs(query, paths, context).mean(dim=1).double().numpy()

    def sample_scores(
        self,
        query: Query,
        paths: Sequence[Path],
        context: ScoringContext,
        n: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``n`` Thompson draws of the scores, ``[n, len(paths)]``: draw ``i`` is the output of bootstrap
        head ``rng.integers(n_heads)``. With ``uncertainty="none"`` every draw is :meth:`score`."""
        check_integer("n", n, 1, owner="GNNPathScorer.sample_scores")
        if not paths:
            return np.zeros((n, 0))
        out = self._outputs(query, paths, context).double().numpy()
        if self.uncertainty == "none":
            return np.repeat(out.mean(axis=1)[None, :], n, axis=0)
        heads = rng.integers(out.shape[1], size=n)
        return out[:, heads].T.copy()

    def update(self, feedback: Sequence[Feedback]) -> None:
        """Adam steps on the squared error of every rated shown path (see the module docstring).
        Unrated (``None``) paths are skipped; with nothing rated this is a no-op.

        Raises:
            ValueError: a bad Feedback in the batch (:func:`~signet_rl.scorers.base.check_feedback`);
                nothing is learned from the batch then.
        """
        for fb in feedback:
            check_feedback(fb)
        by_graph: dict[
            int, list[tuple[Query, list[Path], ScoringContext, list[float], list[float], Any]]
        ] = {}
        for fb in feedback:
            paths, ratings, weights, rows = [], [], [], []
            for j, (i, r) in enumerate(zip(fb.shown, fb.ratings, strict=True)):
                if r is None:
                    continue
                paths.append(fb.paths[i])
                rows.append(i)
                ratings.append(float(r))
                w = 1.0
                if self.importance_weighted and fb.pscores:
                    w = min(1.0 / float(fb.pscores[j]), self.max_importance_weight)  # pscore in (0, 1]
                weights.append(w)
            if paths:
                key = id(fb.context.arrays)
                # base scores are standardised over every candidate of the query, as when it was scored
                base = None
                if self.base is not None:
                    base = self.base.features(fb.query, fb.paths, fb.context)[np.asarray(rows)]
                by_graph.setdefault(key, []).append((fb.query, paths, fb.context, ratings, weights, base))
        if not by_graph:
            return
        groups = []
        for items in by_graph.values():
            ctx = items[0][2]
            state = self._graph_state(ctx.graph, ctx.arrays)
            target = torch.tensor([r for it in items for r in it[3]], dtype=torch.float32)
            weight = torch.tensor([w for it in items for w in it[4]], dtype=torch.float32)
            k = self.net.heads.out_features
            if self.uncertainty == "bootstrap":
                mask = torch.poisson(torch.ones(len(target), k), generator=self.generator)
            else:
                mask = torch.ones(len(target), k)
            inputs = self._inputs(
                state, [(q, p, c) for q, p, c, *_ in items], train=True,
                base_rows=[it[5] for it in items] if self.base is not None else None,
            )  # fmt: skip
            groups.append((state, inputs, target, weight[:, None] * mask, _rated_pairs(items)))
        self.updates += 1
        if self.lr_decay_updates:
            rate = self.lr / math.sqrt(1.0 + (self.updates - 1) / self.lr_decay_updates)
            for group in self.optimizer.param_groups:
                group["lr"] = rate
        squared, pairwise = self.loss in ("squared", "both"), self.loss in ("pairwise", "both")
        den = sum(float(g[3].sum()) for g in groups)
        # a pair's weight: the product of its two paths' (bootstrap x importance) weights
        pair_den = sum(float((g[3][g[4][0]] * g[3][g[4][1]]).sum()) for g in groups)
        if (not squared or den <= 0) and (not pairwise or pair_den <= 0):
            return  # every bootstrap mask drew 0, or no rated pair differs: nothing to learn this time
        for _ in range(self.steps_per_update):
            self.optimizer.zero_grad()
            loss = torch.zeros(())
            for state, inputs, target, m, (hi, lo) in groups:
                out = self._run(state, inputs)
                if squared and den > 0:
                    loss = loss + (m * (out - target[:, None]) ** 2).sum() / den
                if pairwise and pair_den > 0 and len(hi):
                    loss = loss + _pairwise_loss(out, hi, lo, m).sum() / pair_den
            loss.backward()
            self.optimizer.step()
        self._version += 1

    # -- persistence --------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """A checkpoint (a deep copy, so training on does not change it): network and optimizer state, the
        random generator, the update count and the constructor arguments."""
        return copy.deepcopy(
            {
                "format": _FORMAT,
                "config": dict(self.config),
                "net": self.net.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state(),
                "updates": self.updates,
            }
        )

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict` (network, and the optimizer and generator when present).

        Raises:
            ValueError: a checkpoint of another format, or one built with other constructor arguments.
        """
        if state.get("format") != _FORMAT:
            raise ValueError(f"not a GNNPathScorer checkpoint: format {state.get('format')!r}")
        if "config" in state:
            unread = ("lr", "weight_decay", "seed")
            if self.base is None:  # no base scores: the prior's half-life is never read
                unread += ("prior_half_life_days",)
            shape_keys = [k for k in self.config if k not in unread]
            saved = {**ADDED_ARGUMENTS, **state["config"]}
            diff = [k for k in shape_keys if saved.get(k) != self.config[k]]
            if diff:
                raise ValueError(f"checkpoint was built with other arguments: {', '.join(sorted(diff))}")
        self.net.load_state_dict(state["net"])
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        if "generator" in state:
            self.generator.set_state(state["generator"])
        self.updates = int(state.get("updates", 0))
        self._version += 1

    def save(
        self, path: str | FsPath, traversal: Mapping[str, Any] | TraversalConfig | None = None
    ) -> FsPath:
        """Write the weights and constructor arguments to ``path`` (a ``torch.save`` file); returns it.

        Args:
            path: the file.
            traversal: the traversal the policy was trained with (a :class:`TraversalConfig` or a mapping of
                its fields, e.g. a dataset config's ``traversal`` block), saved with it so that a retriever
                built on the loaded policy walks the way training did (default: :attr:`traversal`).
        """
        path = FsPath(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        blob: dict[str, Any] = {"format": _FORMAT, "config": dict(self.config), "net": self.net.state_dict()}
        if traversal is None:
            traversal = self.traversal
        if traversal is not None:
            full = (
                traversal if isinstance(traversal, TraversalConfig) else TraversalConfig.from_dict(traversal)
            )
            blob["traversal"] = full.to_dict()
        torch.save(blob, path)
        return path

    @classmethod
    def load(
        cls,
        path: str | FsPath,
        classifier: IntentClassifier | None = None,
        edge_stats: EdgeStats | None = None,
    ) -> GNNPathScorer:
        """Rebuild a scorer written by :meth:`save` (no trainer, Hydra or MLflow needed), with the traversal
        it was saved with as :attr:`traversal` (None for a policy saved without one).

        Args:
            path: the file.
            classifier, edge_stats: the unsaved collaborators (see the constructor).
        """
        blob = torch.load(FsPath(path), map_location="cpu", weights_only=True)
        if not isinstance(blob, dict) or blob.get("format") != _FORMAT:
            raise ValueError(f"{str(path)!r} is not a saved GNNPathScorer")
        scorer = cls(**{**ADDED_ARGUMENTS, **blob["config"]}, classifier=classifier, edge_stats=edge_stats)
        scorer.net.load_state_dict(blob["net"])
        if blob.get("traversal") is not None:
            scorer.traversal = TraversalConfig.from_dict(blob["traversal"]).to_dict()
        scorer._version += 1
        return scorer

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"GNNPathScorer({args})"
