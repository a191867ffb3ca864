"""A MINERVA / MultiHopKG-style walking policy, batched rollouts, beam search and REINFORCE.

The policy (:class:`KGPolicy`) scores the candidate actions of a walk answering ``(e1, r_q, ?)``:

.. math::

    a_t &= [\\mathbf r_{t}; \\mathbf e_{t}] \\qquad\\text{(relation taken, entity reached)}\\\\
    h_t &= \\mathrm{LSTM}(a_t, h_{t-1}), \\quad a_0 = [\\mathbf r_{\\text{START}}; \\mathbf e_1]\\\\
    x_t &= W_2\\,\\mathrm{ReLU}(W_1 [h_t; \\mathbf e_t; \\mathbf r_q])\\\\
    \\pi(a \\mid s_t) &= \\operatorname{softmax}_{a \\in \\mathcal A_t}
        \\big([\\mathbf r_a; \\mathbf e_a]^\\top x_t\\big)

with the softmax over the unmasked slots of the current entity's action space
(:class:`~signet_rl.kg.walk_task.KGWalker`). ``use_entity_embeddings=False`` drops every entity
vector (MINERVA's setting for Kinship, UMLS and NELL); ``gnn_layers > 0`` replaces the entity embedding
table by the node states of a relational GNN over the walking graph (:class:`RelationalGNN`), recomputed on
every forward pass so it trains end to end.

Training (:func:`rollout`, :class:`Reinforce`): ``num_rollouts`` sampled walks per query, terminal reward
(1 for a correct answer, or MultiHopKG's reward shaping ``R = hit + (1 - hit) σ(f(e1, r_q, e_T))`` with a
KG-embedding anchor ``f``), REINFORCE with a moving-average baseline, normalised advantages and a decaying
entropy bonus, as MINERVA. MultiHopKG's action dropout masks each candidate with probability ``p`` while
sampling (never all of them) but scores the log-probability under the full distribution.

Testing (:func:`beam_search`): the ``k`` best partial paths survive each step; after the last step each
entity scores the best log-probability of a path ending there, and only the ``k`` best entities keep a
finite score (MultiHopKG's unique top-k); every other entity is ``-inf``: never reached, a miss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from signet_rl.kg.walk_task import KGWalker

__all__ = [
    "ADVANTAGES",
    "KGPolicy",
    "Reinforce",
    "RelationalGNN",
    "Rollout",
    "anchor_end_scores",
    "beam_search",
    "rollout",
    "shaped_rewards",
]

State = tuple[Tensor, Tensor]
#: Score a whole embedding table at once when it has at most this many rows per candidate action.
FULL_SCORING_RATIO = 4


class RelationalGNN(nn.Module):
    r"""Relational message passing over a fixed graph (CompGCN-style composition, mean aggregation).

    .. math::

        \mathbf h_v^{(l+1)} = \mathbf h_v^{(l)} + \mathrm{ReLU}\Big(W_0^{(l)} \mathbf h_v^{(l)}
            + \frac{1}{\max(1, |\mathcal N(v)|)} \sum_{(u, r, v) \in \mathcal E} W_1^{(l)}
              (\mathbf h_u^{(l)} \odot \mathbf z_r)\Big)

    Messages flow along each edge ``u -r-> v`` (inverse edges, when the graph holds them, carry the other
    direction). Pure torch (``index_add_``), so it needs no scatter extension; one pass costs
    ``O(E · d + N · d²)`` per layer.

    Args:
        num_relations: relation ids ``0..R-1`` (each gets a composition vector ``z_r``).
        dim: node state width ``d``.
        edge_index: ``(source, target)`` of every edge. ``int64 [2, E]``.
        edge_type: relation of every edge. ``int64 [E]``.
        num_nodes: ``N``.
        num_layers: ``L >= 1``.

    Shapes:
        - input: node features ``[N, d]``
        - output: node states ``[N, d]``
    """

    edge_index: Tensor
    edge_type: Tensor
    inv_degree: Tensor

    def __init__(
        self,
        num_relations: int,
        dim: int,
        edge_index: Tensor,
        edge_type: Tensor,
        num_nodes: int,
        num_layers: int = 1,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers={num_layers} must be >= 1")
        self.num_nodes = int(num_nodes)
        self.relation = nn.Parameter(torch.empty(num_relations, dim))
        self.self_lin = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_layers))
        self.msg_lin = nn.ModuleList(nn.Linear(dim, dim, bias=False) for _ in range(num_layers))
        self.register_buffer("edge_index", edge_index.long(), persistent=False)
        self.register_buffer("edge_type", edge_type.long(), persistent=False)
        deg = torch.bincount(edge_index[1].long(), minlength=num_nodes).clamp(min=1).float()
        self.register_buffer("inv_degree", (1.0 / deg)[:, None], persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.relation, mean=1.0, std=0.1)
        for lin in [*self.self_lin, *self.msg_lin]:
            lin.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        src, dst = self.edge_index[0], self.edge_index[1]
        z = self.relation[self.edge_type]
        for w0, w1 in zip(self.self_lin, self.msg_lin, strict=True):
            msg = torch.zeros_like(x).index_add_(0, dst, x[src] * z)
            x = x + F.relu(w0(x) + w1(msg * self.inv_degree))
        return x


class KGPolicy(nn.Module):
    """The walking policy (module docstring). Rebuild from :attr:`config` plus ``graph_triples``.

    Args:
        num_entities: ``N``.
        num_relations: ``R`` dataset relations; tokens ``NO_OP``, ``START``, ``PAD`` are added.
        entity_dim: entity embedding width (ignored without entity embeddings).
        relation_dim: relation embedding width.
        history_dim: LSTM state width.
        history_layers: stacked LSTM layers (MultiHopKG: 3); the MLP reads the top one. A walk's state
            holds every layer's ``h`` and ``c`` side by side, ``[B, layers * history_dim]`` each.
        hidden_dim: MLP hidden width (MINERVA: ``4 * hidden_size``).
        use_entity_embeddings: include entity vectors in actions and state.
        train_entity_embeddings: false keeps the entity vectors at their seeded random initialisation
            (MINERVA's ``train_entity_embeddings=0`` on Countries S3): an entity no training query starts
            from then looks like any other instead of carrying an untrained vector among trained ones.
        dropout: dropout after the MLP's hidden layer (training only).
        emb_dropout: dropout on every entity and relation vector the history and the MLP read (the
            action taken, the current entity, the query relation; MultiHopKG's ``emb_dropout_rate``);
            the candidates' vectors they are scored against stay whole. Training only.
        gnn_layers: ``> 0`` computes entity vectors with a :class:`RelationalGNN` over ``graph_triples``.
        graph_triples: ``(head, relation, tail)`` ids ``[E, 3]``, needed when ``gnn_layers > 0``.
    """

    def __init__(
        self,
        num_entities: int,
        num_relations: int,
        entity_dim: int = 50,
        relation_dim: int = 50,
        history_dim: int = 50,
        hidden_dim: int = 200,
        use_entity_embeddings: bool = True,
        train_entity_embeddings: bool = True,
        dropout: float = 0.0,
        gnn_layers: int = 0,
        graph_triples: np.ndarray | Tensor | None = None,
        emb_dropout: float = 0.0,
        history_layers: int = 1,
    ) -> None:
        super().__init__()
        if int(history_layers) < 1:
            raise ValueError(f"history_layers={history_layers} must be >= 1")
        self.config: dict[str, Any] = {
            "num_entities": int(num_entities),
            "num_relations": int(num_relations),
            "entity_dim": int(entity_dim),
            "relation_dim": int(relation_dim),
            "history_dim": int(history_dim),
            "hidden_dim": int(hidden_dim),
            "use_entity_embeddings": bool(use_entity_embeddings),
            "train_entity_embeddings": bool(train_entity_embeddings),
            "dropout": float(dropout),
            "gnn_layers": int(gnn_layers),
            "emb_dropout": float(emb_dropout),
            "history_layers": int(history_layers),
        }
        self.num_entities = int(num_entities)
        self.num_relations = int(num_relations)
        self.start_token = num_relations + 1
        self.use_entities = bool(use_entity_embeddings)
        self.relation_dim = int(relation_dim)
        self.entity_dim = int(entity_dim) if self.use_entities else 0
        self.relation_emb = nn.Embedding(num_relations + 3, relation_dim)
        self.emb_drop = nn.Dropout(emb_dropout)
        self.entity_emb = nn.Embedding(num_entities, entity_dim) if self.use_entities else None
        self.gnn: RelationalGNN | None = None
        if gnn_layers > 0:
            if not self.use_entities:
                raise ValueError("gnn_layers > 0 needs use_entity_embeddings=True (the GNN computes them)")
            if graph_triples is None:
                raise ValueError("gnn_layers > 0 needs graph_triples, the [E, 3] edges to pass messages on")
            g = torch.from_numpy(np.array(graph_triples, dtype=np.int64).reshape(-1, 3))
            self.gnn = RelationalGNN(
                num_relations,
                entity_dim,
                g[:, [0, 2]].T.contiguous(),
                g[:, 1],
                num_entities,
                num_layers=gnn_layers,
            )
        action_dim = self.relation_dim + self.entity_dim
        self.action_dim = action_dim
        self.history = nn.LSTMCell(action_dim, history_dim)
        # layers 2.. of the stack (a separate list, so one-layer checkpoints keep their keys)
        self.history_upper = nn.ModuleList(
            nn.LSTMCell(history_dim, history_dim) for _ in range(int(history_layers) - 1)
        )
        self.history_dim = int(history_dim)
        self.mlp = nn.Sequential(
            nn.Linear(history_dim + self.entity_dim + relation_dim, hidden_dim),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, action_dim),
        )
        self.reset_parameters()
        if self.entity_emb is not None and not train_entity_embeddings:
            self.entity_emb.weight.requires_grad_(False)

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.relation_emb.weight)
        if self.entity_emb is not None:
            nn.init.xavier_uniform_(self.entity_emb.weight)
        if self.gnn is not None:
            self.gnn.reset_parameters()
        self.history.reset_parameters()
        for cell in self.history_upper:
            assert isinstance(cell, nn.LSTMCell)
            cell.reset_parameters()
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                m.reset_parameters()

    @torch.no_grad()
    def warm_start(
        self,
        entity: Tensor | None,
        relation: Tensor | None,
        generator: torch.Generator | None = None,
    ) -> None:
        """Start the entity and relation tables from pretrained vectors (a KG-embedding model's).

        ``entity`` ``[N, D_e]`` replaces every entity vector; ``relation`` ``[R', D_r]`` replaces the first
        ``min(R', R)`` relation vectors (the dataset relations; the NO_OP, START and PAD tokens keep their
        own). Vectors wider or narrower than the table are mapped by one seeded random orthonormal
        projection per table (``generator``), exact for the inner products when widening and approximate
        when narrowing; each table is then centred and rescaled to the standard deviation of its own
        initialisation, so the policy's early logits are as large as those of a fresh start.

        Raises:
            ValueError: ``entity`` without entity embeddings, or a row count that does not match.
        """

        def project(x: Tensor, width: int, like: Tensor) -> Tensor:
            x = x.float()
            if x.shape[1] != width:
                big, small = max(x.shape[1], width), min(x.shape[1], width)
                q, _ = torch.linalg.qr(torch.randn(big, small, generator=generator))
                x = x @ (q if x.shape[1] == big else q.T)
            x = x - x.mean(dim=0, keepdim=True)
            return x * (like.std() / x.std().clamp_min(1e-12))

        if entity is not None:
            if self.entity_emb is None:
                raise ValueError("warm_start: entity vectors given but the policy has no entity embeddings")
            if entity.shape[0] != self.num_entities:
                got, want = entity.shape[0], self.num_entities
                raise ValueError(f"warm_start: {got} entity vectors for a policy of {want} entities")
            w = self.entity_emb.weight
            w.copy_(project(entity, w.shape[1], w))
        if relation is not None:
            w = self.relation_emb.weight
            k = min(int(relation.shape[0]), self.num_relations)
            w[:k] = project(relation[:k], w.shape[1], w)

    # -- building blocks ----------------------------------------------------------------------------

    def entity_table(self) -> Tensor | None:
        """Entity vectors ``[N, d_e]`` for this forward pass (GNN states when configured), or None."""
        if self.entity_emb is None:
            return None
        x = self.entity_emb.weight
        return self.gnn(x) if self.gnn is not None else x

    def _action(self, rel: Tensor, ent: Tensor, table: Tensor | None) -> Tensor:
        r = self.relation_emb(rel)
        return self.emb_drop(r if table is None else torch.cat([r, table[ent]], dim=-1))

    def begin(self, heads: Tensor, table: Tensor | None) -> State:
        """The history after the dummy start action ``(START, e1)``."""
        start = torch.full_like(heads, self.start_token)
        width = self.history_dim * (1 + len(self.history_upper))
        h = torch.zeros(len(heads), width, device=heads.device)
        return self.advance((h, h.clone()), start, heads, table)

    def advance(self, state: State, rel: Tensor, ent: Tensor, table: Tensor | None) -> State:
        """The history after taking ``(rel, ent)``."""
        if not len(self.history_upper):
            h, c = self.history(self._action(rel, ent, table), state)
            return h, c
        d = self.history_dim
        hs, cs = [], []
        x = self._action(rel, ent, table)
        for i, cell in enumerate([self.history, *self.history_upper]):
            h, c = cell(x, (state[0][:, i * d : (i + 1) * d], state[1][:, i * d : (i + 1) * d]))
            hs.append(h)
            cs.append(c)
            x = h
        return torch.cat(hs, dim=1), torch.cat(cs, dim=1)

    def logits(
        self,
        state: State,
        current: Tensor,
        query_relation: Tensor,
        cand_rel: Tensor,
        cand_ent: Tensor,
        mask: Tensor,
        table: Tensor | None,
    ) -> Tensor:
        """Scores of the candidate actions, ``-inf`` where masked. ``[B, A]``."""
        parts = [state[0][:, -self.history_dim :]]  # the top layer
        if table is not None:
            parts.append(self.emb_drop(table[current]))
        parts.append(self.emb_drop(self.relation_emb(query_relation)))
        x = self.mlp(torch.cat(parts, dim=-1))
        x_r, x_e = x[:, : self.relation_dim], x[:, self.relation_dim :]
        a = cand_rel.shape[1]
        n_tok = self.relation_emb.num_embeddings
        n_ent = 0 if table is None else table.shape[0]
        # Scoring every relation / entity once costs B x rows x d; gathering the candidates' vectors costs
        # B x A x d (with slower memory access). Score all rows when there are few (Kinship, UMLS), gather
        # when the table dwarfs the action space (NELL-995: 75k entities, 200 actions).
        if n_tok <= FULL_SCORING_RATIO * a:
            s = (x_r @ self.relation_emb.weight.T).gather(1, cand_rel)
        else:
            s = torch.bmm(self.relation_emb(cand_rel), x_r[:, :, None]).squeeze(-1)
        if table is not None:
            if n_ent <= FULL_SCORING_RATIO * a:
                s = s + (x_e @ table.T).gather(1, cand_ent)
            else:
                s = s + torch.bmm(table[cand_ent], x_e[:, :, None]).squeeze(-1)
        return s.masked_fill(~mask, float("-inf"))


def _entropy(logp: Tensor) -> Tensor:
    p = logp.exp()
    return -(p * torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp))).sum(-1)


def _sample(probs: Tensor, generator: torch.Generator | None) -> Tensor:
    """One draw per row by inverse CDF (one uniform per row; ``torch.multinomial`` draws one exponential per
    entry, which dominates a CPU rollout step). ``[B, A] -> int64 [B, 1]``."""
    cdf = probs.cumsum(dim=1)
    u = torch.rand(probs.shape[0], 1, generator=generator, device=probs.device) * cdf[:, -1:]
    idx = torch.searchsorted(cdf, u, right=True).clamp_(max=probs.shape[1] - 1)
    ok = probs.gather(1, idx) > 0
    return torch.where(ok, idx, probs.argmax(dim=1, keepdim=True))


class Rollout(NamedTuple):
    """Sampled walks. ``B`` walks, ``T`` steps."""

    final: Tensor  #: entity each walk ends at, ``[B]``
    log_probs: Tensor  #: log-probability of each action under the full policy, ``[B, T]``
    entropies: Tensor  #: entropy of each step's action distribution, ``[B, T]``
    relations: Tensor  #: relation token taken at each step, ``[B, T]``
    entities: Tensor  #: entities visited, ``e1`` first, ``[B, T + 1]``
    #: with ``expected_last``: the last step's action distribution (differentiable; 0 where masked) ``[B, A]``
    last_probs: Tensor | None = None
    #: with ``expected_last``: the entity each last-step slot leads to, ``[B, A]``
    last_entities: Tensor | None = None


def _representatives(node: Tensor, b: int) -> Tensor:
    """One walk index per trie node ``0..U-1`` (``node``: each walk's node, ``int64 [B]``)."""
    u = int(node.max()) + 1 if b else 0
    return torch.empty(u, dtype=torch.long, device=node.device).scatter_(
        0, node, torch.arange(b, device=node.device)
    )


def rollout(
    policy: KGPolicy,
    walker: KGWalker,
    heads: Tensor,
    relations: Tensor,
    tails: Tensor | None,
    path_length: int,
    generator: torch.Generator | None = None,
    action_dropout: float = 0.0,
    last_step_exclude: Callable[[Tensor], Tensor] | None = None,
    expected_last: bool = False,
    hide_query_relation: Tensor | None = None,
    share_prefixes: bool = True,
) -> Rollout:
    """Sample one walk per row.

    Args:
        policy: the policy (train mode for training rollouts).
        walker: the action space.
        heads, relations: the queries, ``int64 [B]`` (repeat them for several rollouts per query).
        tails: labelled answers whose edges are masked (see :meth:`KGWalker.candidates`), or None.
        path_length: ``T``.
        generator: the random source of sampling and action dropout.
        action_dropout: MultiHopKG's rate ``p`` of hiding each valid action while sampling; the sampled
            action's log-probability and the entropy use the full distribution.
        last_step_exclude: ``candidate entities [B, A] -> bool [B, A]``, slots hidden at the last step
            (MINERVA / MultiHopKG hide the *other* correct answers there, so a walk is rewarded for the
            labelled one only); a row left with no valid slot keeps its ``NO_OP``.
        expected_last: also return the last step's whole action distribution (``last_probs``, computed
            without action dropout) and its slots' entities, so the trainer can take the expected terminal
            reward over the last action exactly instead of from the one sampled action (:class:`Reinforce`,
            ``exact``). The last action is still sampled, for ``final``.
        hide_query_relation: ``bool [B]``, walks from whose head every edge of the query relation is
            hidden, not just the query edge: the walk must reach the answer the way a test query whose
            head lacks such facts must (a row left with no valid slot keeps its ``NO_OP``).
        share_prefixes: compute each distinct (query, actions so far) once (below); False computes every
            walk on its own (the baseline of ``benchmarks/bench_kg_walk.py``). Same values either way.
    """
    table = policy.entity_table()
    last_probs: Tensor | None = None
    last_entities: Tensor | None = None
    b = len(heads)
    # Walks with the same query and the same actions so far share their history and their action scores:
    # each distinct prefix (a node of the trie over the batch's walks) is computed once and every walk
    # indexes its node. At the first step the nodes are the distinct queries (the rollouts of one query
    # coincide); later, the distinct (node, action) pairs. Masks that differ per walk (hidden relations,
    # action dropout, last-step exclusions) apply per walk after the scores are spread out.
    n_ent, n_rel = walker.num_entities, int(relations.max()) + 1 if b else 1
    qkey = heads * n_rel + relations
    if tails is not None:
        qkey = qkey * (n_ent + 1) + (tails + 1)
    node = torch.unique(qkey, return_inverse=True)[1] if share_prefixes else torch.arange(b)
    rep = _representatives(node, b)
    state = policy.begin(heads[rep], table)
    cur = heads
    logps, ents_, rels_, visited = [], [], [], [heads]
    for t in range(path_length):
        u_tails = tails[rep] if tails is not None else None
        u_rel, u_ent, u_mask = walker.candidates(cur[rep], heads[rep], relations[rep], u_tails)
        u_logits = policy.logits(state, cur[rep], relations[rep], u_rel, u_ent, u_mask, table)
        cand_rel, cand_ent, mask, logits = u_rel[node], u_ent[node], u_mask[node], u_logits[node]
        extra = torch.zeros_like(mask)
        if hide_query_relation is not None:
            at_head = (hide_query_relation & (cur == heads))[:, None]
            extra |= at_head & (cand_rel == relations[:, None])
        if last_step_exclude is not None and t == path_length - 1:
            extra |= last_step_exclude(cand_ent)
        if hide_query_relation is not None or (last_step_exclude is not None and t == path_length - 1):
            new_mask = mask & ~extra
            new_mask[:, 0] |= ~new_mask.any(dim=1)
            # a walk left with only its NO_OP scores it even where the shared scores masked it
            logits = torch.where(new_mask & ~mask, u_logits.detach().new_zeros(()), logits)
            logits = logits.masked_fill(~new_mask, float("-inf"))
            mask = new_mask
        logp = torch.log_softmax(logits, dim=-1)
        if expected_last and t == path_length - 1:
            last_probs, last_entities = logp.exp(), cand_ent
        with torch.no_grad():
            if action_dropout > 0.0:
                keep = torch.rand(mask.shape, generator=generator, device=mask.device) >= action_dropout
                keep &= mask
                keep[~keep.any(dim=1)] = mask[~keep.any(dim=1)]
                sample_logits = logits.detach().masked_fill(~keep, float("-inf"))
            else:
                sample_logits = logits.detach()
            action = _sample(torch.softmax(sample_logits, dim=-1), generator)
        logps.append(logp.gather(1, action).squeeze(1))
        ents_.append(_entropy(logp))
        rel = cand_rel.gather(1, action).squeeze(1)
        cur = cand_ent.gather(1, action).squeeze(1)
        rels_.append(rel)
        visited.append(cur)
        if t < path_length - 1:  # the history after the last action is never scored
            key = node * walker.num_actions + action.squeeze(1)
            child = torch.unique(key, return_inverse=True)[1] if share_prefixes else node
            rep = _representatives(child, b)
            parent, node = node[rep], child
            state = policy.advance((state[0][parent], state[1][parent]), rel[rep], cur[rep], table)
    return Rollout(
        cur,
        torch.stack(logps, 1),
        torch.stack(ents_, 1),
        torch.stack(rels_, 1),
        torch.stack(visited, 1),
        last_probs,
        last_entities,
    )


@torch.no_grad()
def beam_search(
    policy: KGPolicy,
    walker: KGWalker,
    heads: Tensor,
    relations: Tensor,
    path_length: int,
    beam_width: int,
    tails: Tensor | None = None,
    pool: str = "max",
) -> Tensor:
    """Entity scores of ``B`` queries by beam search (module docstring).

    Args:
        policy: the policy (put it in eval mode first).
        walker: the action space.
        heads, relations: the queries, ``int64 [B]``.
        path_length: ``T``.
        beam_width: ``k``, paths kept per step and entities scored at the end.
        tails: labelled answers whose direct edge is masked (MultiHopKG passes the query triple; it only
            matters when the triple is itself a graph edge), or None.
        pool: how the kept paths ending at one entity combine: ``"max"`` (MINERVA's default and
            MultiHopKG: the best path's log-probability) or ``"sum"`` (MINERVA's other option: the log of
            their total probability, the beam's estimate of the walk ending there).

    Returns:
        ``float [B, N]``: per entity the pooled log-probability of the kept paths ending there, ``-inf``
        where none ends (or the entity is not among the ``k`` best).
    """
    if beam_width < 1:
        raise ValueError(f"beam_width={beam_width} must be >= 1")
    if pool not in ("max", "sum"):
        raise ValueError(f"pool={pool!r} is not one of ('max', 'sum')")
    b = len(heads)
    n = walker.num_entities
    a = walker.num_actions
    table = policy.entity_table()
    state = policy.begin(heads, table)
    cur = heads
    score = torch.zeros(b, 1, device=heads.device)
    out = torch.full((b, n), float("-inf"), device=heads.device)
    for t in range(path_length):
        k = cur.numel() // b
        e1 = heads.repeat_interleave(k)
        rq = relations.repeat_interleave(k)
        e2 = tails.repeat_interleave(k) if tails is not None else None
        cand_rel, cand_ent, mask = walker.candidates(cur, e1, rq, e2)
        logp = torch.log_softmax(policy.logits(state, cur, rq, cand_rel, cand_ent, mask, table), dim=-1)
        total = (score.reshape(-1, 1) + logp).reshape(b, k * a)
        if t == path_length - 1:
            ends = cand_ent.reshape(b, k * a)
            if pool == "max":
                out.scatter_reduce_(1, ends, total, reduce="amax")
            else:  # log-sum-exp per entity, shifted by each query's best path
                top = total.max(dim=1, keepdim=True).values.clamp(min=-1e30)
                mass = torch.zeros(b, n, dtype=torch.float64, device=heads.device)
                mass.scatter_add_(1, ends, (total - top).double().exp())
                out = (mass.log() + top.double()).float()
            break
        width = min(beam_width, k * a)
        score, idx = total.topk(width, dim=1)
        parent = (torch.arange(b, device=heads.device)[:, None] * k + idx // a).reshape(-1)
        rel = cand_rel.reshape(b, k * a).gather(1, idx).reshape(-1)
        cur = cand_ent.reshape(b, k * a).gather(1, idx).reshape(-1)
        state = (state[0][parent], state[1][parent])
        state = policy.advance(state, rel, cur, table)
    if beam_width < n:
        vals, idx = out.topk(beam_width, dim=1)
        out = torch.full_like(out, float("-inf")).scatter_(1, idx, vals)
    return out


def shaped_rewards(hit: Tensor, anchor_scores: Tensor | None) -> Tensor:
    """MultiHopKG's reward shaping: ``hit + (1 - hit) * sigmoid(score)``; plain ``hit`` without an anchor.

    Args:
        hit: 1.0 where the walk ended at a correct answer. ``[B]``.
        anchor_scores: the anchor's raw score ``f(e1, r_q, e_T)`` of each walk's end, or None. ``[B]``.
    """
    hit = hit.float()
    if anchor_scores is None:
        return hit
    return hit + (1.0 - hit) * torch.sigmoid(anchor_scores.float())


LIKELIHOOD_EPS = 1e-3
#: What :func:`last_step_objective` can maximise of the exact last step.
LAST_STEP_OBJECTIVES = ("expected", "likelihood", "cross_entropy")


def last_step_objective(probs: Tensor, rewards: Tensor, kind: str = "expected") -> Tensor:
    """What the trainer maximises of each walk's exact last step ``π(· | s_T)`` given each action's reward.

    ``expected`` is ``V = Σ_a π(a | s_T) R(a)``, REINFORCE's objective with the last action summed out.
    ``likelihood`` is ``log(V + eps)``: with a 0/1 reward for one answer, the log-probability of stepping onto
    it, the cross-entropy a KG-embedding model is trained with. Its gradient ``∇V / (V + eps)`` is as strong
    for a walk that gives the answer little mass as for one that gives it much, where ``∇V`` fades as
    ``V → 0``; ``eps`` keeps a walk that cannot reach any reward finite. ``cross_entropy`` is
    ``Σ_a R(a) log π(a | s_T)``, the cross-entropy against the rewards as unnormalised targets: its logit
    gradient ``R(a) - π(a) Σ_b R(b)`` moves ``π`` towards ``R / Σ R``, where the other two are maximised by
    putting all the mass on the best-rewarded action. With shaped rewards (``R = σ(f)`` for a miss) it matches
    the anchor's graded scores rather than its top choice; it is also what MultiHopKG's REINFORCE estimates at
    a high action-dropout rate, where the sampled action is close to uniform over the valid ones.

    Args:
        probs: ``π(a | s_T)`` over each walk's last-step slots, differentiable, 0 where masked, ``[B, A]``.
        rewards: the reward of ending at each slot's entity, ``[B, A]``.
        kind: one of :data:`LAST_STEP_OBJECTIVES`.

    Returns:
        One value per walk, ``[B]``.
    """
    if kind == "expected":
        return (probs * rewards).sum(dim=1)
    if kind == "likelihood":
        return torch.log((probs * rewards).sum(dim=1) + LIKELIHOOD_EPS)
    if kind == "cross_entropy":
        valid = probs > 0  # masked slots (and underflowed ones) carry no target
        logp = torch.log(probs.clamp(min=torch.finfo(probs.dtype).tiny))
        return torch.where(valid, rewards * logp, torch.zeros_like(logp)).sum(dim=1)
    raise ValueError(f"last-step objective {kind!r} is not one of {LAST_STEP_OBJECTIVES}")


#: How :class:`Reinforce` turns returns into advantages.
ADVANTAGES = ("normalised", "raw")


class Reinforce:
    """REINFORCE with a moving-average baseline and a decaying entropy bonus (MINERVA's trainer).

    ``loss = -mean_{b,t}(A_b · log π(a_bt)) - β · mean_{b,t} H(π_bt)`` with ``A = (R - b̄) / std``
    (normalised over the batch), ``b̄ ← (1 - λ) b̄ + λ · mean(R)`` after each batch, and
    ``β ← β · decay`` every ``decay_every`` batches.

    With ``exact`` (the expected terminal reward of each walk's last step, ``V_b = Σ_a π(a | s_T) R(a)``,
    differentiable) the last step is not sampled but summed out: ``rewards`` is ``V`` (detached) for the
    earlier, sampled steps and the loss adds ``-mean_b V_b``, whose gradient is the last step's exact policy
    gradient. Unbiased for the same objective, with the last action's sampling noise gone (a
    Rao-Blackwellised REINFORCE).

    Args:
        beta: initial entropy weight (MINERVA 0.05).
        beta_decay: multiplicative decay (MINERVA 0.9).
        decay_every: batches between decays (MINERVA 200).
        baseline_rate: ``λ`` of the baseline average (MINERVA's ``Lambda``).
        advantage: ``normalised`` (MINERVA: ``A = (R - b̄) / std`` as above) or ``raw`` (MultiHopKG, whose
            configs set no baseline: ``A = R``, the return itself; with shaped rewards in ``[0, 1]`` every
            sampled action is pushed up in proportion to its reward).
    """

    def __init__(
        self,
        beta: float = 0.05,
        beta_decay: float = 0.9,
        decay_every: int = 200,
        baseline_rate: float = 0.05,
        advantage: str = "normalised",
    ) -> None:
        if beta < 0 or not 0 < beta_decay <= 1 or decay_every < 1 or not 0 <= baseline_rate <= 1:
            raise ValueError(
                f"Reinforce(beta={beta}, beta_decay={beta_decay}, decay_every={decay_every}, "
                f"baseline_rate={baseline_rate}): need beta >= 0, 0 < beta_decay <= 1, decay_every >= 1, "
                "0 <= baseline_rate <= 1"
            )
        if advantage not in ADVANTAGES:
            raise ValueError(f"Reinforce(advantage={advantage!r}): not one of {ADVANTAGES}")
        self.advantage = advantage
        self.beta0 = float(beta)
        self.beta_decay = float(beta_decay)
        self.decay_every = int(decay_every)
        self.baseline_rate = float(baseline_rate)
        self.baseline = 0.0
        self.updates = 0

    @property
    def beta(self) -> float:
        return self.beta0 * self.beta_decay ** (self.updates // self.decay_every)

    def loss(
        self, log_probs: Tensor, entropies: Tensor, rewards: Tensor, exact: Tensor | None = None
    ) -> Tensor:
        """The batch loss; also advances the baseline and the entropy schedule.

        Args:
            log_probs: log-probabilities of the sampled actions, ``[B, T']`` (``T' = 0`` allowed).
            entropies: per-step entropies, ``[B, T]``.
            rewards: each walk's return, ``[B]``.
            exact: the differentiable expected last-step reward ``V`` (then ``rewards`` should be ``V``
                and ``log_probs`` the steps before the last), or None.
        """
        r = rewards.detach().float()
        if self.advantage == "raw":
            adv = r
        else:
            adv = r - self.baseline
            adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-6) if r.numel() > 1 else adv
        pg = -(adv[:, None] * log_probs).mean() if log_probs.numel() else log_probs.new_zeros(())
        if exact is not None:
            pg = pg - exact.mean()
        loss = pg - self.beta * entropies.mean()
        self.baseline += self.baseline_rate * (float(r.mean()) - self.baseline)
        self.updates += 1
        return loss

    def state_dict(self) -> dict[str, float]:
        return {"baseline": self.baseline, "updates": float(self.updates)}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.baseline = float(state["baseline"])
        self.updates = int(state["updates"])


def anchor_end_scores(
    score_tails: Callable[[Tensor, Tensor], Tensor],
    heads: Tensor,
    relations: Tensor,
    ends: Tensor,
    group: int,
) -> Tensor:
    """An anchor's score of each walk's end entity, calling ``score_tails`` once per query.

    Args:
        score_tails: ``(heads [Q], relations [Q]) -> [Q, N]`` (e.g. ``KGEAnchor.score_tails``).
        heads, relations: per walk, ``[Q * group]``, ``group`` consecutive walks per query.
        ends: each walk's final entity ``[Q * group]``, or several candidate ends per walk
            ``[Q * group, K]``; the result has the same shape.
        group: rollouts per query.
    """
    q = heads.numel() // group
    h = heads.reshape(q, group)[:, 0]
    r = relations.reshape(q, group)[:, 0]
    with torch.no_grad():
        s = score_tails(h, r)
    return s.gather(1, ends.reshape(q, -1)).reshape(ends.shape)
