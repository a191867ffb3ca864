"""Signet's own predictor, reproduced as a learned path scorer: the learned baseline desire paths must beat.

Signet (release 0.58.1) ships a small cross-attention scorer in a Rust sidecar that re-ranks its session-start
candidates and is fused with its baseline ranking by reciprocal-rank fusion. :class:`SignetPredictorScorer`
(registered as ``signet_predictor``) reproduces it over signet_rl's candidate paths (a path is the memory
it constructs: its facts, or its end entity), from what the candidate and the graph carry at the query time
(never ground truth):

1. **Baseline ranking.** A non-learned scorer (``baseline``: ``prior``, importance × recency ×
   confidence, signet_rl's analogue of Signet's ``importance·0.95^age`` candidate score, as Signet ships
   it; or ``ppr``, the default chosen by the equal-tuning sweep, issue 25 §3) ranks the
   candidates. Over the hybrid entry (candidates on best_flat's floor, ``path_info[...]["floor_rank"]``)
   with ``floor_baseline`` on, the baseline ranking is the floor in best_flat's order, then the other
   candidates in the baseline scorer's order (:func:`~signet_rl.scorers.features.floor_first`): in Signet
   the baseline is its own flat recall, and best_flat's order is that ranking's analogue here.
2. **Embeddings.** A candidate's embedding is the mean of its facts' text embeddings (the scorer's own
   encoder), L2-normalised; a path with no facts is represented by its aspect's name, else its end entity's
   name (``embedded`` = 0 then). The **query embedding** is Signet's: the mean embedding of the top
   ``context_top`` (10) baseline candidates, not the query text.
3. **Features.** 17 per candidate, :data:`PREDICTOR_FEATURES`, as Signet lists them (see
   :meth:`SignetPredictorScorer.features` for how each is read off a path). With ``base_scores`` (the
   framework's default, issue 25 §1: the inputs the GNN and LinUCB get) the candidate also carries the
   non-learned scorers' standardised prior / PPR / flat scores (:class:`~signet_rl.scorers.fused.BaseScores`,
   :data:`~signet_rl.scorers.fused.BASE_SCORES`), projected into :math:`h_i` by one more matrix
   :math:`W_b z_i`; these are **not** part of Signet's 17-feature sidecar contract, so :meth:`predict` on
   the sidecar's inputs alone is refused for such a predictor, naming the option (``base_scores=false`` is
   Signet's exact predictor).
4. **Network** (:class:`PredictorNet`, a plain torch module over dense tensors): the query embedding and
   each candidate are projected ``d -> H`` (``hidden``, 64);

   .. math:: q = W_q c + b_q, \\qquad
             h_i = W_c x_i + b_c + W_f f_i + E_{ent}[\\mathrm{slot}_e(f_i)] + E_{asp}[\\mathrm{slot}_a(f_i)]
                   \\; [+ W_b z_i]

   .. math:: s_i = \\frac{\\langle q, h_i \\rangle}{\\sqrt{H}} + w_o^\\top \\mathrm{ReLU}(h_i) + b_o

   The first term is the cross-attention logit of the query over the candidates (its softmax over the list
   is the predicted attention distribution the loss trains), the second a per-candidate value head. The
   entity and aspect hash slots are features (``slot / hash_slots``) *and* index learned slot embeddings.
5. **Loss.** Listwise KL at temperature :math:`T` (0.5) over the rated shown candidates of one interaction:

   .. math:: p = \\mathrm{softmax}(r / T), \\quad \\hat p = \\mathrm{softmax}(s), \\quad
             L = \\sum_i p_i (\\ln p_i - \\ln \\hat p_i)

   (ratings -1, 0, +1; a list of fewer than two rated candidates carries no listwise signal and is
   skipped), Adam at ``lr`` (1e-3), ``epochs`` (3) passes over each update's batch.
6. **Fusion.** Reciprocal-rank fusion with the baseline ranking (:func:`rrf_fuse`, ``k`` = 12):
   :math:`\\alpha/(k + \\mathrm{rank}_{base}) + (1 - \\alpha)/(k + \\mathrm{rank}_{pred})`, ranks from 1.
   :math:`\\alpha` is 1 (the baseline alone) during cold start, until ``cold_start_sessions`` (10) sessions
   of training data, then ramps linearly to ``final_alpha`` over ``ramp_sessions`` sessions
   (:func:`ramp_alpha`). The scorer's scores are the fused ones.

Signet trains on which memories a session used, not on agent ratings; here, as every desire scorer, it
learns from the simulated ratings of the trainer's rated interactions (same interactions, same budget).
Propensities are not used (Signet's loss has no importance weights), and there are no Thompson draws
(exploration ``thompson`` is refused by the trainer; ``epsilon`` and ``softmax`` work on the fused scores).

    >>> scorer = SignetPredictorScorer()            # doctest: +SKIP
    >>> scorer.update([feedback])                   # doctest: +SKIP
    >>> scorer.score(query, paths, context)         # doctest: +SKIP
"""

from __future__ import annotations

import copy
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from signet_rl.core.checks import check_integer, check_range
from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.base import (
    Feedback,
    PathScorer,
    ScoringContext,
    check_feedback,
    forget_arrays,
    make_scorer,
    register,
)
from signet_rl.scorers.features import (
    EdgeStats,
    PathFeaturizer,
    PerGraphFeaturizers,
    QueryFeaturizer,
    floor_first,
    time_features,
)
from signet_rl.scorers.fused import BASE_SCORES, BaseScores
from signet_rl.scorers.prior import PRE_STUDY_PRIOR_HALF_LIFE_DAYS
from signet_rl.traversal.path import Path

__all__ = [
    "PREDICTOR_FEATURES",
    "PredictorNet",
    "SignetPredictorScorer",
    "check_predictor_inputs",
    "listwise_kl",
    "ramp_alpha",
    "rrf_fuse",
]

DAY = 86400.0
_FORMAT = "signet_rl.SignetPredictorScorer/1"
_WHO = "SignetPredictorScorer"

#: The 17 candidate features, in column order (Signet's list; :meth:`SignetPredictorScorer.features`).
PREDICTOR_FEATURES: tuple[str, ...] = (
    "log_age_days",
    "importance",
    "log_access_count",
    "hour_sin",
    "hour_cos",
    "weekday_sin",
    "weekday_cos",
    "month_sin",
    "month_cos",
    "log_session_gap_days",
    "embedded",
    "superseded",
    "entity_slot",
    "aspect_slot",
    "constraint",
    "structural_density",
    "traversal",
)
assert len(PREDICTOR_FEATURES) == 17
ENTITY_SLOT = PREDICTOR_FEATURES.index("entity_slot")
ASPECT_SLOT = PREDICTOR_FEATURES.index("aspect_slot")
BASELINES = ("prior", "ppr")


# -- the pure pieces: fusion, ramp, loss, input checks ------------------------------------------------


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks of ``scores``, best (highest) first; ties keep input order."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(1, len(order) + 1)
    return out


def rrf_fuse(baseline: np.ndarray, predicted: np.ndarray, alpha: float, k: float = 12.0) -> np.ndarray:
    """Reciprocal-rank fusion of two rankings of the same candidates, Signet's way.

    .. math:: s_i = \\frac{\\alpha}{k + \\mathrm{rank}_{base}(i)}
              + \\frac{1 - \\alpha}{k + \\mathrm{rank}_{pred}(i)}

    Args:
        baseline, predicted: scores ``[n]`` (higher is better); only their ranks matter.
        alpha: the baseline's weight in [0, 1] (1: the baseline ranking alone).
        k: the RRF constant (Signet: 12).

        >>> rrf_fuse(np.array([0.9, 0.1]), np.array([0.0, 5.0]), alpha=0.5, k=12).round(5).tolist()
        [0.07143, 0.07143]
    """
    b, p = np.asarray(baseline), np.asarray(predicted)
    if b.shape != p.shape:
        raise ValueError(f"rrf_fuse: {b.shape[0]} baseline scores for {p.shape[0]} predicted ones")
    return alpha / (k + ranks(b)) + (1.0 - alpha) / (k + ranks(p))


def ramp_alpha(sessions: int, cold_start: int = 10, ramp: int = 10, final: float = 0.5) -> float:
    """The baseline's RRF weight after ``sessions`` sessions of training data.

    1.0 during cold start (fewer than ``cold_start`` sessions); from there it falls linearly, reaching
    ``final`` at ``cold_start + ramp - 1`` sessions (at ``cold_start`` at once when ``ramp`` is 0).

        >>> [ramp_alpha(s, cold_start=2, ramp=4, final=0.2) for s in (0, 1, 2, 3, 5, 9)]
        [1.0, 1.0, 0.8, 0.6, 0.2, 0.2]
    """
    if sessions < cold_start:
        return 1.0
    progress = 1.0 if ramp == 0 else min(1.0, (sessions - cold_start + 1) / ramp)
    return 1.0 - (1.0 - final) * progress


def listwise_kl(scores: Tensor, labels: Tensor, temperature: float = 0.5) -> Tensor:
    """Signet's listwise loss: ``KL(softmax(labels / T) || softmax(scores))`` over one list ``[n]``."""
    target = torch.softmax(labels / temperature, dim=0)
    log_pred = torch.log_softmax(scores, dim=0)
    return (target * (torch.log(target) - log_pred)).sum()


def _first_nonfinite(x: np.ndarray, name_of: Callable[[int], str] | None) -> tuple[str, int, float] | None:
    """The first non-finite entry of the candidates-by-columns ``x``: (its candidate's name, its column,
    its value); None when every entry is finite."""
    bad = ~np.isfinite(x)
    if not bad.any():
        return None
    i, j = (int(v) for v in np.argwhere(bad)[0])
    return (name_of(i) if name_of is not None else f"candidate {i}"), j, float(x[i, j])


def check_predictor_inputs(
    context: np.ndarray,
    candidates: np.ndarray,
    features: np.ndarray,
    embed_dim: int,
    name_of: Callable[[int], str] | None = None,
    base: np.ndarray | None = None,
) -> None:
    """Refuse inputs the predictor would silently mis-score: embeddings of another dimension than its
    encoder's, a feature matrix of another shape, non-finite features or embeddings.

    Args:
        context: the query embedding ``[d]``.
        candidates: candidate embeddings ``[n, d]``.
        features: ``[n, 17]``.
        embed_dim: the predictor's ``d``.
        name_of: a candidate's name for the messages, by index (default ``candidate <i>``).
        base: the standardised base scores ``[n, 3]`` of a predictor built with ``base_scores`` (else None).

    Raises:
        ValueError: naming the input, the value and the way out, e.g. ``SignetPredictorScorer: feature
            'importance' of candidate 2 is nan; features must be finite numbers (a NaN importance or time in
            the store?)``.
    """
    way = f"this predictor takes {embed_dim} (its encoder's); embed with the encoder it was built with"
    if context.ndim != 1 or context.shape[0] != embed_dim:
        raise ValueError(f"{_WHO}: context_embedding has {context.shape[-1]} dimensions; {way}")
    if candidates.ndim != 2 or candidates.shape[1] != embed_dim:
        got = candidates.shape[-1] if candidates.ndim else 0
        raise ValueError(f"{_WHO}: candidate_embeddings have {got} dimensions; {way}")
    n = candidates.shape[0]
    if features.shape != (n, len(PREDICTOR_FEATURES)):
        k = len(PREDICTOR_FEATURES)
        raise ValueError(
            f"{_WHO}: candidate_features has shape {features.shape}; expected ({n}, {k}): one row of the "
            f"{k} features ({', '.join(PREDICTOR_FEATURES)}) per candidate"
        )
    bad = _first_nonfinite(features, name_of)
    if bad is not None:
        who, j, value = bad
        raise ValueError(
            f"{_WHO}: feature {PREDICTOR_FEATURES[j]!r} of {who} is {value}; features must be "
            "finite numbers (a NaN importance or time in the store?)"
        )
    for what, x in (("context_embedding", context), ("candidate_embeddings", candidates)):
        if not np.isfinite(x).all():
            raise ValueError(f"{_WHO}: {what} holds a non-finite value; embeddings must be finite")
    if base is not None:
        k = len(BASE_SCORES)
        if base.shape != (n, k):
            raise ValueError(
                f"{_WHO}: base_scores has shape {base.shape}; expected ({n}, {k}): one row of the "
                f"standardised {', '.join(BASE_SCORES)} scores per candidate"
            )
        bad = _first_nonfinite(base, name_of)
        if bad is not None:
            who, j, value = bad
            raise ValueError(f"{_WHO}: base score {BASE_SCORES[j]!r} of {who} is {value}; must be finite")


# -- the network ----------------------------------------------------------------------------------------


class PredictorNet(nn.Module):
    """Signet's cross-attention scorer (the module docstring has the maths): dense tensors in, one score
    per candidate out, so it traces and exports as it is.

    Args:
        embed_dim: ``d``, the encoder's dimension.
        hidden: ``H``, the internal projection (Signet: 64).
        hash_slots: buckets of the entity and aspect hash slots.
        base_dim: columns of extra per-candidate inputs (the standardised base scores, 3) projected into
            ``h`` by ``base_proj`` (0: none, Signet's network; its parameters are then exactly Signet's, and
            drawn from the seed in the same order).

    Shapes:
        ``forward(context [d], candidates [n, d], features [n, 17], base [n, base_dim]?) -> [n]``.
    """

    def __init__(self, embed_dim: int, hidden: int = 64, hash_slots: int = 32, base_dim: int = 0) -> None:
        super().__init__()
        self.embed_dim, self.hidden, self.hash_slots, self.base_dim = embed_dim, hidden, hash_slots, base_dim
        self.query_proj = nn.Linear(embed_dim, hidden)
        self.cand_proj = nn.Linear(embed_dim, hidden)
        self.feat_proj = nn.Linear(len(PREDICTOR_FEATURES), hidden, bias=False)
        self.entity_slots = nn.Embedding(hash_slots, hidden)
        self.aspect_slots = nn.Embedding(hash_slots, hidden)
        self.value = nn.Linear(hidden, 1)
        nn.init.normal_(self.entity_slots.weight, std=0.1)
        nn.init.normal_(self.aspect_slots.weight, std=0.1)
        # created last, so a net without it draws Signet's parameters from the seed unchanged
        self.base_proj = nn.Linear(base_dim, hidden, bias=False) if base_dim else None

    def slots(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """The entity and aspect slot indices ``[n]`` encoded in the features (``slot / hash_slots``)."""
        idx = torch.round(features[:, [ENTITY_SLOT, ASPECT_SLOT]] * self.hash_slots).long()
        idx = idx.clamp(0, self.hash_slots - 1)
        return idx[:, 0], idx[:, 1]

    def forward(
        self, context: Tensor, candidates: Tensor, features: Tensor, base: Tensor | None = None
    ) -> Tensor:
        q = self.query_proj(context.reshape(1, -1))  # [1, H]
        ent, asp = self.slots(features)
        h = (
            self.cand_proj(candidates)
            + self.feat_proj(features)
            + self.entity_slots(ent)
            + self.aspect_slots(asp)
        )  # [n, H]
        if self.base_proj is not None:
            if base is None:
                raise ValueError(f"PredictorNet: built with base_dim={self.base_dim}, called without base")
            h = h + self.base_proj(base)
        attn = (h @ q.reshape(-1, 1)).reshape(-1) / math.sqrt(self.hidden)
        return attn + self.value(torch.relu(h)).reshape(-1)


# -- the scorer -----------------------------------------------------------------------------------------


class _GraphState:
    """What the predictor keeps per graph: the featurizer (hop rows, text vectors, time slices) and the
    per-entity and per-aspect lookups its features read."""

    def __init__(self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer, slots: int):
        a = arrays
        self.graph, self.arrays, self.featurizer = graph, arrays, featurizer
        entity_slot = [zlib.crc32(str(e).encode()) % slots for e in a.entity_ids]
        self.entity_slot = np.asarray(entity_slot, dtype=np.float64) / slots
        # slot 0 is "no aspect"
        aspect_slot = [1 + zlib.crc32(str(x).encode()) % (slots - 1) for x in a.aspect_ids]
        self.aspect_slot = np.asarray(aspect_slot, dtype=np.float64) / slots
        sb = a.attr_superseded_by
        self.sb_created = np.where(sb >= 0, a.attr_created[np.maximum(sb, 0)], np.inf)
        # each entity's mentioning memories' creation times, sorted (access counts as of a time)
        times = a.memory_created[a.ent_mem] if len(a.ent_mem) else np.zeros(0)
        owner = np.repeat(np.arange(a.num_entities), np.diff(a.ent_mem_indptr))
        order = np.lexsort((times, owner))
        self.mention_times = times[order]
        self.mention_indptr = a.ent_mem_indptr
        self.memory_times = np.sort(a.memory_created[np.isfinite(a.memory_created)])


@register("signet_predictor")
class SignetPredictorScorer(PerGraphFeaturizers[_GraphState]):
    """Signet's predictor fused with its baseline ranking by RRF, learned from ratings (see the module).

    Args:
        hidden: the internal projection width ``H`` (Signet: 64).
        hash_slots: entity and aspect hash-slot buckets (>= 2).
        lr: Adam learning rate (Signet: 1e-3).
        temperature: the listwise loss's label temperature (Signet: 0.5).
        epochs: passes over each update's batch (Signet: 3).
            The defaults of ``lr``, ``temperature``, ``epochs``, ``final_alpha`` and ``baseline`` are the
            best trial of the equal-tuning sweep (study ``learning-signet_predictor``, issue 25 §3), not
            Signet's own values given here.
        rrf_k: the RRF constant (Signet: 12).
        cold_start_sessions: sessions of training data before the predictor enters the fusion (Signet: 10).
        ramp_sessions: sessions over which the baseline's weight falls from 1 to ``final_alpha`` (0: at once).
        final_alpha: the baseline's RRF weight after the ramp, in [0, 1].
        context_top: baseline candidates whose mean embedding is the query embedding (Signet: 10).
        baseline: the non-learned scorer whose ranking is fused and fills the context: ``prior`` or ``ppr``.
        floor_baseline: with the hybrid entry's floor among the candidates, the baseline ranking is the
            floor in best_flat's order, then the rest in ``baseline``'s order (false: ``baseline``'s order
            alone, the behaviour before the switch).
        base_scores: also read the non-learned scorers' standardised prior / PPR / flat scores
            (:class:`~signet_rl.scorers.fused.BaseScores`), the inputs the GNN and LinUCB get (issue 25 §1;
            the framework's default). False: Signet's exact 17-feature predictor, the one its sidecar contract
            can serve (:meth:`predict` refuses the sidecar's inputs alone when this is on).
        prior_half_life_days: the recency half-life of the prior this predictor reads: the base scores'
            prior column and, with ``baseline="prior"``, the baseline ranking (> 0, or None: no recency
            term); by default 90 days
            (:data:`~signet_rl.scorers.prior.PRE_STUDY_PRIOR_HALF_LIFE_DAYS`), the column every study of the
            learned scorers ran with (the prior scorer's own default is its study's 27 days).
        session_size: interactions per session for queries with neither a session nor a time.
        encoder: the text encoder of candidate embeddings (``hashing`` or ``minilm``).
        seed: seeds the initial weights (training draws no random numbers).
        edge_stats: accepted for the trainer's interface (the predictor's features do not read them).

    Attributes:
        net: the :class:`PredictorNet`.
        updates: update calls that held at least one rated list.
        sessions: sessions of training data seen (distinct sessions of the rated interactions).

    Raises:
        ValueError: a bad argument, naming it and its value.
    """

    name = "signet_predictor"

    def __init__(
        self,
        hidden: int = 64,
        hash_slots: int = 32,
        lr: float = 0.001408582979439242,
        temperature: float = 0.32888124668963814,
        epochs: int = 1,
        rrf_k: float = 12.0,
        cold_start_sessions: int = 10,
        ramp_sessions: int = 10,
        final_alpha: float = 0.6093329644577116,
        context_top: int = 10,
        baseline: str = "ppr",
        floor_baseline: bool = True,
        base_scores: bool = True,
        prior_half_life_days: float | None = PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
        session_size: int = 20,
        encoder: str = "hashing",
        seed: int = 0,
        edge_stats: EdgeStats | None = None,
    ) -> None:
        for arg, value, low in (
            ("hidden", hidden, 1), ("hash_slots", hash_slots, 2), ("epochs", epochs, 1),
            ("cold_start_sessions", cold_start_sessions, 0), ("ramp_sessions", ramp_sessions, 0),
            ("context_top", context_top, 1), ("session_size", session_size, 1),
        ):  # fmt: skip
            check_integer(arg, value, low, owner=_WHO)
        check_range("lr", lr, 0, lo_open=True, owner=_WHO)
        check_range("temperature", temperature, 0, lo_open=True, owner=_WHO)
        check_range("rrf_k", rrf_k, 0, owner=_WHO)
        check_range("final_alpha", final_alpha, 0, 1, owner=_WHO)
        check_range("prior_half_life_days", prior_half_life_days, 0, lo_open=True, optional=True, owner=_WHO)
        if baseline not in BASELINES:
            raise ValueError(f"{_WHO}: baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
        if not isinstance(floor_baseline, bool):
            raise ValueError(f"{_WHO}: floor_baseline must be true or false, got {floor_baseline!r}")
        if not isinstance(base_scores, bool):
            raise ValueError(f"{_WHO}: base_scores must be true or false, got {base_scores!r}")
        self.config: dict[str, Any] = {
            "hidden": hidden, "hash_slots": hash_slots, "lr": lr, "temperature": temperature,
            "epochs": epochs, "rrf_k": rrf_k, "cold_start_sessions": cold_start_sessions,
            "ramp_sessions": ramp_sessions, "final_alpha": final_alpha, "context_top": context_top,
            "baseline": baseline, "floor_baseline": floor_baseline, "base_scores": base_scores,
            "prior_half_life_days": prior_half_life_days, "session_size": session_size,
            "encoder": encoder, "seed": seed,
        }  # fmt: skip
        self.temperature = float(temperature)
        self.epochs = epochs
        self.rrf_k = float(rrf_k)
        self.context_top = context_top
        half_life = {"half_life_days": prior_half_life_days} if baseline == "prior" else {}
        self.baseline: PathScorer = make_scorer(baseline, **half_life)
        self.base = BaseScores(half_life_days=prior_half_life_days) if base_scores else None
        self.query_featurizer = QueryFeaturizer(encoder)
        self._init_graph_states(edge_stats)
        self.embed_dim = self.query_featurizer.embedding_dim
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = PredictorNet(
                self.embed_dim, hidden, hash_slots, len(BASE_SCORES) if base_scores else 0
            )
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.updates = 0
        self._session_keys: set[str] = set()
        self._undated = 0

    # -- sessions and fusion weight -----------------------------------------------------------------

    @property
    def sessions(self) -> int:
        """Sessions of training data seen: distinct sessions (``meta["session"]``, else the query's UTC
        day) plus blocks of ``session_size`` interactions for queries with neither."""
        return len(self._session_keys) + math.ceil(self._undated / self.config["session_size"])

    @property
    def fusion_alpha(self) -> float:
        """The baseline's RRF weight now (:func:`ramp_alpha` of :attr:`sessions`)."""
        c = self.config
        return ramp_alpha(self.sessions, c["cold_start_sessions"], c["ramp_sessions"], c["final_alpha"])

    def _count_session(self, query: Query) -> None:
        if "session" in query.meta:
            self._session_keys.add(f"{query.graph_id}:{query.meta['session']}")
        elif query.timestamp is not None:
            self._session_keys.add(f"{query.graph_id}:{query.timestamp.date().isoformat()}")
        else:
            self._undated += 1

    # -- graph state and inputs ---------------------------------------------------------------------

    def _build_graph_state(
        self, graph: KnowledgeGraph, arrays: GraphArrays, featurizer: PathFeaturizer
    ) -> _GraphState:
        return _GraphState(graph, arrays, featurizer, self.config["hash_slots"])

    def prepare(self, graph: KnowledgeGraph, arrays: GraphArrays) -> None:
        """Build the graph's lookups and prepare the baseline scorer."""
        self._graph_state(graph, arrays)
        self.baseline.prepare(graph, arrays)
        if self.base is not None:
            self.base.prepare(graph, arrays)

    def forget(self, arrays: GraphArrays) -> None:
        """Drop what is kept for ``arrays``, and the baseline's (its graph was replaced)."""
        super().forget(arrays)
        forget_arrays(self.baseline, arrays)

    def features(self, paths: Sequence[Path], context: ScoringContext) -> tuple[np.ndarray, np.ndarray]:
        """The candidates' embeddings ``float32 [n, d]`` and their 17 features ``float64 [n, 17]``.

        Features (:data:`PREDICTOR_FEATURES`), at the context's time ``t`` (rows after ``t`` never count;
        the walk admits none into a path):

        * ``log_age_days``: ``ln(1 + age in days)`` of the path's newest fact (0 with none or no ``t``).
        * ``importance``: the facts' mean importance (1 with none).
        * ``log_access_count``: ``ln(1 + memories mentioning the end entity written by t)`` (the store's
          ``access_count`` is a whole-timeline counter, so the time-sliced mention count stands in for it).
        * ``hour_*``, ``weekday_*``, ``month_*``: the session's (query's) time of day, day of week and month
          of year on the unit circle (zeros with no ``t``).
        * ``log_session_gap_days``: ``ln(1 + days since the last memory written before t)``, the gap since
          the previous activity (0 with no ``t`` or none before).
        * ``embedded``: 1 when the candidate has text of its own (facts, or a memory path's memories), 0 when
          its name stands in. A memory path (the hybrid entry's floor and session units) has no end entity:
          its entity columns (access count, entity slot, density) are 0.
        * ``superseded``: 1 when a fact was superseded by a row written by ``t`` (any superseded one
          without ``t``).
        * ``entity_slot``, ``aspect_slot``: CRC32 hash slot of the end entity and of the aspect, divided by
          ``hash_slots`` (aspect slot 0: no aspect).
        * ``constraint``: 1 when a fact is a constraint.
        * ``structural_density``: ``ln(1 + degree)`` of the end entity over the edges that existed at ``t``.
        * ``traversal``: 1 when the path leaves its start entity (found by traversal).
        """
        n = len(paths)
        state = self._graph_state(context.graph, context.arrays)
        feat, a = state.featurizer, state.arrays
        b = feat.index(paths)
        t = context.timestamp
        out = np.zeros((n, len(PREDICTOR_FEATURES)), dtype=np.float64)
        col = {name: j for j, name in enumerate(PREDICTOR_FEATURES)}
        n_att = np.bincount(b.att_owner, minlength=n).astype(np.float64)
        has_att = n_att > 0
        imp = np.bincount(b.att_owner, weights=a.attr_importance[b.att].astype(np.float64), minlength=n)
        out[:, col["importance"]] = np.where(has_att, imp / np.maximum(n_att, 1.0), 1.0)
        newest = np.full(n, -np.inf)
        np.maximum.at(newest, b.att_owner, a.attr_created[b.att])
        if t is not None:
            age = np.maximum(0.0, (float(t) - newest[has_att]) / DAY)
            out[has_att, col["log_age_days"]] = np.log1p(age)
            stale = state.sb_created[b.att] <= float(t)
        else:
            stale = np.isfinite(state.sb_created[b.att])
        out[:, col["superseded"]] = np.bincount(b.att_owner, weights=stale, minlength=n) > 0
        constraint = (a.attr_kind[b.att] == 1).astype(np.float64)
        out[:, col["constraint"]] = np.bincount(b.att_owner, weights=constraint, minlength=n) > 0
        # a memory path (the hybrid entry's floor and session units) has no end entity (-1): its entity
        # columns stay 0 and its embedding is its memories' text
        has_end = b.end >= 0
        end = np.maximum(b.end, 0)
        lo, hi = state.mention_indptr[end], state.mention_indptr[end + 1]
        access = (hi - lo).astype(np.float64)
        if t is not None:
            times = state.mention_times
            pairs = zip(lo.tolist(), hi.tolist(), strict=True)
            access = np.array([np.searchsorted(times[s:e], float(t), "right") for s, e in pairs], np.float64)
        out[:, col["log_access_count"]] = np.where(has_end, np.log1p(access), 0.0)
        if t is not None:
            out[:, col["hour_sin"] : col["weekday_cos"] + 1] = time_features(float(t))
            month = pd.Timestamp(float(t), unit="s", tz="UTC").month - 1
            out[:, col["month_sin"]] = math.sin(2 * math.pi * month / 12)
            out[:, col["month_cos"]] = math.cos(2 * math.pi * month / 12)
            before = int(np.searchsorted(state.memory_times, float(t), "left"))
            if before:
                gap = max(0.0, (float(t) - float(state.memory_times[before - 1])) / DAY)
                out[:, col["log_session_gap_days"]] = math.log1p(gap)
        memory_path = ~has_end & np.array([bool(p.memories) for p in paths], dtype=bool)
        out[:, col["embedded"]] = has_att | memory_path  # a memory's own text is its embedding
        out[:, col["entity_slot"]] = np.where(has_end, state.entity_slot[end], 0.0)
        has_asp = b.asp >= 0
        out[has_asp, col["aspect_slot"]] = state.aspect_slot[b.asp[has_asp]]
        degree = feat.slices.degree(t)
        out[:, col["structural_density"]] = np.where(has_end, np.log1p(degree[end].astype(np.float64)), 0.0)
        out[:, col["traversal"]] = np.bincount(b.dep_owner, minlength=n) > 0

        # embeddings: mean of the facts' vectors, else the aspect's name, else the end entity's name
        emb = np.zeros((n, self.embed_dim), dtype=np.float64)
        if len(b.att):
            np.add.at(emb, b.att_owner, feat.attribute_vectors(b.att))
        name_only = ~has_att & has_asp
        if name_only.any():
            emb[name_only] = feat.aspect_vectors(b.asp[name_only])
        bare = ~has_att & ~has_asp & has_end
        if bare.any():
            emb[bare] = feat.entity_vectors()[b.end[bare]]
        for i in np.flatnonzero(~has_att & ~has_asp & memory_path):
            emb[i] = feat.memory_vectors(paths[i].memories).mean(axis=0)
        norm = np.linalg.norm(emb, axis=1, keepdims=True)
        emb = np.where(norm > 0, emb / np.maximum(norm, 1e-12), 0.0)
        return emb.astype(np.float32), out

    def _baseline_scores(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """The baseline ranking's scores ``[n]``: the baseline scorer's, or with ``floor_baseline`` and a
        floor among the candidates, the floor first in best_flat's order and the rest in the scorer's."""
        scores = np.asarray(self.baseline.score(query, paths, context), dtype=np.float64)
        info = context.path_info
        on_floor = (info.get(p.id, {}).get("floor_rank", -1.0) >= 0 for p in paths)
        if self.config["floor_baseline"] and any(on_floor):
            return floor_first(scores, paths, info)
        return scores

    def context_embedding(self, baseline_scores: np.ndarray, embeddings: np.ndarray) -> np.ndarray:
        """Signet's query embedding: the mean embedding of the top ``context_top`` baseline candidates
        (ties keep input order)."""
        top = np.argsort(-baseline_scores, kind="stable")[: self.context_top]
        return embeddings[top].mean(axis=0)

    def _inputs(
        self, query: Query, paths: Sequence[Path], context: ScoringContext
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(baseline scores, context embedding, candidate embeddings, features, standardised base scores or
        None without ``base_scores``) of all ``paths``."""
        base = self._baseline_scores(query, paths, context)
        emb, feats = self.features(paths, context)
        ctx = self.context_embedding(base, emb)
        z = None if self.base is None else self.base.features(query, paths, context).astype(np.float64)
        check_predictor_inputs(
            ctx, emb, feats, self.embed_dim, lambda i: f"candidate {i} ({paths[i].serialise()})", z
        )
        return base, ctx, emb, feats, z

    # -- scoring ------------------------------------------------------------------------------------

    def predict(
        self,
        context_embedding: Any,
        candidate_embeddings: Any,
        candidate_features: Any,
        base_scores: Any = None,
    ) -> np.ndarray:
        """The predictor's raw scores ``[n]`` (before fusion), from the sidecar's ``score`` inputs (Signet's
        17 features) and, for a predictor built with ``base_scores``, the candidates' standardised base
        scores ``[n, 3]``, which Signet's contract does not carry.

        Raises:
            ValueError: mismatched embedding dimensions, a feature matrix of another shape, non-finite
                features (:func:`check_predictor_inputs`); base scores missing for a predictor built with
                ``base_scores`` (Signet's sidecar inputs alone cannot score it), or given to one without.
        """
        if self.base is not None and base_scores is None:
            raise ValueError(
                f"{_WHO}: this predictor was built with base_scores=true: it reads the standardised "
                f"{', '.join(BASE_SCORES)} scores beside Signet's {len(PREDICTOR_FEATURES)} features, which "
                "Signet's sidecar contract does not carry; pass base_scores, or train it with "
                "scorer.base_scores=false to serve Signet's 17-feature contract"
            )
        if self.base is None and base_scores is not None:
            raise ValueError(
                f"{_WHO}: base_scores given to a predictor built with base_scores=false (Signet's "
                f"{len(PREDICTOR_FEATURES)} features only); build it with base_scores=true to read them"
            )
        ctx = np.asarray(context_embedding, dtype=np.float32)
        emb = np.asarray(candidate_embeddings, dtype=np.float32)
        feats = np.asarray(candidate_features, dtype=np.float64)
        z = None if base_scores is None else np.asarray(base_scores, dtype=np.float64)
        if emb.ndim == 2 and emb.shape[0] == 0:
            return np.zeros(0)
        check_predictor_inputs(ctx, emb, feats, self.embed_dim, base=z)
        with torch.no_grad():
            out = self.net(
                torch.from_numpy(ctx), torch.from_numpy(emb), torch.from_numpy(feats).float(),
                None if z is None else torch.from_numpy(z).float(),
            )  # fmt: skip
        return out.double().numpy()

    def score(self, query: Query, paths: Sequence[Path], context: ScoringContext) -> np.ndarray:
        """The RRF fusion of the baseline ranking and the predictor's (the baseline's alone during cold
        start). Shape ``[n]``."""
        if not paths:
            return np.zeros(0)
        alpha = self.fusion_alpha
        if alpha >= 1.0:  # cold start: the predictor's ranking carries no weight
            base = self._baseline_scores(query, paths, context)
            return rrf_fuse(base, base, 1.0, self.rrf_k)
        base, ctx, emb, feats, z = self._inputs(query, paths, context)
        return rrf_fuse(base, self.predict(ctx, emb, feats, z), alpha, self.rrf_k)

    # -- learning -----------------------------------------------------------------------------------

    def update(self, feedback: Sequence[Feedback]) -> None:
        """``epochs`` Adam steps on the mean listwise KL of the batch's rated lists (see the module).

        Every interaction with a rated path counts towards :attr:`sessions`; lists of fewer than two rated
        paths carry no listwise signal and train nothing.

        Raises:
            ValueError: a bad Feedback (:func:`~signet_rl.scorers.base.check_feedback`) or non-finite
                features of a rated path; nothing is learned from the batch then.
        """
        for fb in feedback:
            check_feedback(fb)
        lists: list[tuple[Tensor, ...]] = []
        rated_queries: list[Query] = []
        for fb in feedback:
            rated = [(i, float(r)) for i, r in zip(fb.shown, fb.ratings, strict=True) if r is not None]
            if not rated:
                continue
            rated_queries.append(fb.query)
            if len(rated) < 2:
                continue
            # the base scores are standardised over every candidate, as when the query was scored
            _, ctx, emb, feats, z = self._inputs(fb.query, fb.paths, fb.context)
            idx = [i for i, _ in rated]
            inputs = [torch.from_numpy(ctx), torch.from_numpy(emb[idx]), torch.from_numpy(feats[idx]).float()]
            if z is not None:
                inputs.append(torch.from_numpy(z[idx]).float())
            lists.append((*inputs, torch.tensor([r for _, r in rated], dtype=torch.float32)))
        for q in rated_queries:
            self._count_session(q)
        if lists:
            self.fit(lists)

    def fit(self, lists: Sequence[tuple[Tensor, ...]]) -> float:
        """``epochs`` Adam steps on the mean listwise KL of ``lists``; returns the last step's loss.

        Args:
            lists: per list, the context embedding ``[d]``, candidate embeddings ``[m, d]``, features
                ``[m, 17]``, with ``base_scores`` the standardised base scores ``[m, 3]``, and labels ``[m]``
                (ratings), as float32 tensors.
        """
        self.updates += 1
        value = math.nan
        for _ in range(self.epochs):
            self.optimizer.zero_grad()
            loss = torch.stack(
                [listwise_kl(self.net(*inputs), r, self.temperature) for *inputs, r in lists]
            ).mean()
            loss.backward()
            self.optimizer.step()
            value = float(loss.detach())
        return value

    # -- persistence --------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """A checkpoint (a deep copy): network and optimizer state, the sessions seen, the update count and
        the constructor arguments."""
        return copy.deepcopy({
            "format": _FORMAT, "config": dict(self.config), "net": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(), "updates": self.updates,
            "session_keys": sorted(self._session_keys), "undated": self._undated,
        })  # fmt: skip

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict`.

        Raises:
            ValueError: another format, or a network of another shape (naming the arguments that differ).
        """
        if state.get("format") != _FORMAT:
            raise ValueError(f"not a {_WHO} checkpoint: format {state.get('format')!r}")
        shape_keys = ("hidden", "hash_slots", "encoder", "base_scores")
        if self.base is not None or self.config["baseline"] == "prior":  # the half-life is read
            shape_keys += ("prior_half_life_days",)
        # a checkpoint from before the base_scores option is Signet's 17-feature network, and one from before
        # the prior's tuned half-life read 90 days
        old = {"base_scores": False, "prior_half_life_days": PRE_STUDY_PRIOR_HALF_LIFE_DAYS,
               **state.get("config", {})}  # fmt: skip
        diff = [k for k in shape_keys if old.get(k) != self.config[k]]
        if diff:
            raise ValueError(f"checkpoint was built with other arguments: {', '.join(diff)}")
        self.net.load_state_dict(state["net"])
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state.get("updates", 0))
        self._session_keys = set(state.get("session_keys", ()))
        self._undated = int(state.get("undated", 0))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"{_WHO}({args})"
