"""The bandit loop: a path scorer learns desire paths from ratings alone (docs/design.md §1).

For each training interaction, in timeline order:

1. **candidates** come from bounded traversal (:meth:`DesirePathRetriever.candidates`: predicted intent,
   searched entries, edges followed in the learned desire-path order);
2. the policy **picks a slate** of ``slate_size`` paths with exploration (``greedy``, ``epsilon``,
   ``softmax`` or ``thompson``, see :func:`~signet_rl.learning.exploration.select_slate`);
3. the **explorer quota** of the query's timeline session (default 1 slot, at most 2) replaces the slate's
   last slot with a speculative candidate: an uncertain route (low confidence, rarely walked) or the facts of
   an entity close to the query in meaning but two or more hops from its entries
   (:meth:`DesirePathRetriever.far_paths`); explorer units are tagged speculative. With a cold explorer
   (:meth:`BanditTrainer.use_cold_explorer`, issue 29 §4) the walk covers a pruned graph's hot part and
   the slot may step into its cold tier; a positive rating of that path restores the entity;
4. each shown path's **propensity** is logged: its marginal probability of being in the slate under the
   exploration strategy (closed form or Monte Carlo, see the exploration module); an explorer slot is filled
   deterministically once the quota allows it, so its propensity is 1;
5. the **simulated rater** rates each shown unit (some go unrated);
6. **updates**: the scorer takes gradient steps on the rated paths (importance-weighted if configured), and
   **path reinforcement** strengthens or weakens every edge of a rated path for its intent and time-of-day
   bucket, boundedly (:class:`~signet_rl.learning.reinforcement.EdgeStats`); unwalked edges cool.

Every ``eval_every`` interactions a frozen copy of the scorer and of the edge statistics answers the
validation queries through the evaluation harness; at the end the frozen policy answers the test queries
beside the flat baseline and the non-learned scorers, at the same budget. Validation and test queries never
update a weight or a statistic. Ground truth is read by the rater and the evaluator only (and for the
regret metric: the best slate the candidates allowed, computed from noiseless ratings and never fed back).

The loop checkpoints every ``checkpoint_every`` interactions (scorer with its optimizer and the state it
derived from history, edge statistics, every random stream: the loop's, the rater's, torch's, numpy's and
Python's global ones; quota, metrics, the feedback log) and a restarted run resumes from the last
checkpoint: the interactions it replays draw the same numbers, so an interrupted-and-resumed run ends with
the same metrics as an uninterrupted one, bit for bit. The run folder is opened through
:class:`~signet_rl.core.run_folder.RunFolder` (a lock, a run marker with the run's fingerprint).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import pickle
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path as FsPath
from typing import Any

import numpy as np
import pandas as pd
import torch

from signet_rl.core.checks import check_integer
from signet_rl.core.run_folder import RunFolder, atomic_writer
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset
from signet_rl.learning.exploration import ExplorerQuota, select_slate, speculative_candidates
from signet_rl.learning.feedback_log import FeedbackLog, FeedbackRecord
from signet_rl.learning.reinforcement import EdgeStats
from signet_rl.pipeline.desire import Candidates, DesirePathRetriever
from signet_rl.pipeline.hybrid import floor_head
from signet_rl.rating.items import ItemResolver
from signet_rl.rating.rater import SimulatedRater
from signet_rl.scorers.base import Feedback, PathScorer
from signet_rl.traversal.path import Path

__all__ = ["CHECKPOINT", "PREVIOUS_CHECKPOINT", "RUN_FILES", "BanditConfig", "BanditTrainer", "Interaction",
           "session_of"]  # fmt: skip

CHECKPOINT = "checkpoint.pkl"
#: The checkpoint before the last one, kept so a damaged ``checkpoint.pkl`` is not the end of a run.
PREVIOUS_CHECKPOINT = "checkpoint.prev.pkl"
#: What a bandit run writes in its run folder (``fresh=true`` removes these and nothing else).
RUN_FILES = (CHECKPOINT, PREVIOUS_CHECKPOINT, "feedback.parquet", "artifacts", "mlflow_run_id")


@dataclass
class BanditConfig:
    """The knobs of the bandit loop (``cfg.task`` of ``conf/task/bandit.yaml``).

    Attributes:
        slate_size: paths shown per interaction, >= 1.
        exploration: ``greedy``, ``epsilon``, ``softmax`` or ``thompson``.
        epsilon: ``epsilon``'s random-slot probability.
        temperature: ``softmax``'s temperature.
        thompson_samples: posterior draws for ``thompson`` (the scorer's ``sample_scores``).
        explorer_per_session: explorer slots per timeline session, in [0, 2] (the base quota when
            regulated).
        explorer_regulation: let an explorer regulator set each new session's explorer slots from the
            feedback logged so far on the session's graph (one user's timeline;
            :attr:`BanditTrainer.explorer_regulator`, which the entry layer builds from
            ``regulator``: :func:`signet_rl.emergence.staleness.regulated_slots`). Off by default.
        regulator: the regulator's settings (``regulated_slots`` keywords); ignored unless regulated.
        session_size: queries per session when the dataset has no timestamps.
        reinforcement: whether ratings reinforce edges (path reinforcement) and the walk follows them.
        reinforce_lr, reinforce_floor, reinforce_ceiling, reinforce_cool: :class:`EdgeStats` settings.
        time_buckets: time-of-day buckets of the edge statistics.
        update_every: interactions per scorer update (a batch of feedback).
        importance_weighted: pass ``1 / pscore`` weights to scorers that support them.
        epochs: passes over the training queries.
        max_interactions: stop after this many interactions (None: every epoch).
        eval_every: interactions between validation evaluations (0: only at the end).
        max_val_queries, max_test_queries: seeded query subsets for evaluation (None: all).
        checkpoint_every: interactions between checkpoints (0: none).
        budget_chars: the character budget of every slate and of the evaluation.
        rater_noise, rater_prob: the simulated rater's noise and rating probability.
        ope_window: logged interactions the off-policy estimates use at the end (the last ones).
    """

    slate_size: int = 3
    exploration: str = "epsilon"
    epsilon: float = 0.1
    temperature: float = 0.5
    thompson_samples: int = 16
    explorer_per_session: int = 1
    explorer_regulation: bool = False
    regulator: dict[str, Any] | None = None
    session_size: int = 20
    reinforcement: bool = True
    reinforce_lr: float = 0.2
    reinforce_floor: float = 0.2
    reinforce_ceiling: float = 3.0
    reinforce_cool: float = 0.01
    time_buckets: int = 4
    update_every: int = 1
    importance_weighted: bool = False
    epochs: int = 1
    max_interactions: int | None = None
    eval_every: int = 200
    max_val_queries: int | None = 200
    max_test_queries: int | None = None
    checkpoint_every: int = 100
    budget_chars: int = 2000
    rater_noise: float = 0.05
    rater_prob: float = 0.8
    ope_window: int = 500

    def __post_init__(self) -> None:
        check_integer("slate_size", self.slate_size, 1)
        check_integer("explorer_per_session", self.explorer_per_session, 0, 2)
        for name in ("update_every", "epochs", "session_size"):
            check_integer(name, getattr(self, name), 1)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BanditConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"BanditConfig: unknown keys {unknown}; known: {sorted(known)}")
        return cls(**values)


@dataclass
class Interaction:
    """What one training interaction produced (kept for metrics and off-policy evaluation)."""

    step: int
    query_id: str
    intent: str
    mean_rating: float  # mean observed rating of the rated shown units (nan when none was rated)
    true_value: float  # mean noiseless rating of the shown units
    oracle_value: float  # the best mean noiseless rating any slate of the same size could have had
    explorer_shown: int
    explorer_hits: int  # explorer units whose noiseless rating is +1
    candidates: int
    seconds: float


@dataclass
class _Logged:
    """A rated interaction without its scoring context (checkpointable; the context is rebuilt)."""

    query: Query
    paths: list[Path]
    entries: list[str]
    shown: list[int]
    ratings: list[float | None]
    pscores: list[float]
    explorer: list[bool]
    #: The hybrid entry's per-path records (``ScoringContext.path_info``: flat's scores, floor rank, session
    #: distance...), so an update sees the features the candidates were scored with (empty without it).
    info: dict[str, dict[str, float]] = field(default_factory=dict)


def session_of(query: Query, position: int, session_size: int) -> str:
    """A query's timeline session: ``meta["session"]`` when the dataset has one, else the calendar day of its
    timestamp, else consecutive blocks of ``session_size`` queries; always within its graph."""
    if "session" in query.meta:
        return f"{query.graph_id}:{query.meta['session']}"
    if query.timestamp is not None:
        return f"{query.graph_id}:{query.timestamp.date().isoformat()}"
    return f"{query.graph_id}:block{position // session_size}"


def _timeline(queries: Sequence[Query]) -> list[Query]:
    """Queries in time order (undated ones keep their order, after the dated ones)."""
    keyed = [
        (0, q.timestamp.value, i) if q.timestamp is not None else (1, 0, i) for i, q in enumerate(queries)
    ]
    return [queries[i] for *_, i in sorted(keyed)]


class BanditTrainer:
    """Runs the bandit loop for one scorer on one dataset (see the module docstring).

    Args:
        dataset: the dataset (its truth goes to the rater and the evaluator only).
        scorer: the learned scorer (it needs ``update``; ``sample_scores`` for Thompson sampling).
        config: the loop's knobs.
        traversal: bounded-traversal overrides (a dataset config's ``traversal`` block).
        seed: seeds every random stream of the loop (exploration, rater, torch).
        run_dir: where checkpoints, the feedback log and artifacts go (None: no checkpoints): a folder,
            locked and marked with :meth:`fingerprint` while :meth:`run` runs, or a
            :class:`~signet_rl.core.run_folder.RunFolder` the caller opened (and closes).
        encoder: entry search and relevance encoder.
        validate: evaluation, handed in by the entry point: called with a frozen copy of the policy (a
            retriever) every ``eval_every`` interactions, returns the validation metrics that go on the
            learning curve (:func:`signet_rl.evaluation.harness.validation_callback`); None: no validation.
        on_eval: called with ``(step, metrics)`` after every validation evaluation (MLflow logging).
        progress: show a progress bar.
        flat: the hybrid entry's flat retriever (its hits are the floor; a retriever or a flat variant
            name); None: ``best_flat``, frozen per dataset family. Used only when the traversal switches a
            hybrid piece on.
    """

    def __init__(
        self,
        dataset: Dataset,
        scorer: PathScorer,
        config: BanditConfig | None = None,
        traversal: Mapping[str, Any] | None = None,
        seed: int = 0,
        run_dir: str | os.PathLike[str] | RunFolder | None = None,
        encoder: str = "hashing",
        validate: Callable[[DesirePathRetriever], dict[str, float]] | None = None,
        on_eval: Callable[[int, dict[str, float]], None] | None = None,
        progress: bool = True,
        flat: Any = None,
    ) -> None:
        self.dataset = dataset
        self.scorer = scorer
        self.config = config or BanditConfig()
        self.seed = seed
        self.folder = run_dir if isinstance(run_dir, RunFolder) else None
        if isinstance(run_dir, RunFolder):
            run_dir = run_dir.path
        self.run_dir = FsPath(run_dir) if run_dir is not None else None
        self.validate = validate
        self.on_eval = on_eval
        self.progress = progress
        self.traversal = dict(traversal or {})
        self.encoder = encoder
        self.train_queries = _timeline(dataset.split("train"))
        if not self.train_queries:
            raise ValueError(f"{dataset.name}: no training queries; the bandit loop needs a train split")
        self.retriever = DesirePathRetriever(
            scorer, config=self.traversal, encoder=encoder, name="learned",
            **({} if flat is None else {"flat": flat}),
        )  # fmt: skip
        self.retriever.index(dataset)
        self.resolver = ItemResolver(dataset)
        self.rater = SimulatedRater(dataset.truth, self.config.rater_noise, self.config.rater_prob, seed=seed)
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        self.quota = ExplorerQuota(per_session=self.config.explorer_per_session)
        #: ``(feedback so far on the session's graph, slate_size) -> explorer slots`` for a new session; set
        #: by the entry layer when ``config.explorer_regulation`` (the regulator lives above this layer).
        self.explorer_regulator: Callable[[Sequence[FeedbackRecord], int], int] | None = None
        #: ``(query, entry entity ids) -> paths`` the explorer slot should try first (e.g. bridge candidates:
        #: :class:`signet_rl.emergence.components.BridgeTargets`); set by the entry layer, None: off. The
        #: first target not already on the slate takes the slot, logged like any explorer unit.
        self.explorer_targets: Callable[[Query, Sequence[str]], list[Path]] | None = None
        #: session-start pre-warm (issue 29 §5): ``(query, construct, log so far, rng) -> slate`` called
        #: when a timeline session opens, before its first query is answered; the slate (``candidates``,
        #: ``scores``, ``shown``, ``pscores``, ``units``: :class:`signet_rl.emergence.prewarm.PrewarmSlate`)
        #: is rated against that first query and logged with its propensities as query
        #: ``prewarm:<session>``, intent ``prewarm``. Set by the entry layer; None: off.
        self.session_start: Callable[[Query, Callable[[Path], Any], Sequence[FeedbackRecord],
                                      np.random.Generator], Any] | None = None
        self._prewarmed: set[str] = set()
        #: explorers into cold territory (issue 29 §4): a
        #: :class:`signet_rl.emergence.rediscovery.ColdExplorer`, set with :meth:`use_cold_explorer`;
        #: None: off.
        self.cold_explorer: Any = None
        self.session_slots: dict[str, int] = {}
        self.stats: dict[str, EdgeStats] = {}
        for gid in dataset.graphs:
            arrays = self.retriever._state(gid).arrays
            self.stats[gid] = EdgeStats(
                arrays.num_dependencies,
                time_buckets=self.config.time_buckets,
                lr=self.config.reinforce_lr,
                floor=self.config.reinforce_floor,
                ceiling=self.config.reinforce_ceiling,
                cool=self.config.reinforce_cool,
            )
            attach = getattr(scorer, "attach_edge_stats", None)
            if attach is not None and self.config.reinforcement:
                attach(arrays, self.stats[gid])
        if self.config.reinforcement:
            self.retriever.edge_weight_fn = self._edge_weight_fn(self.stats)
        self._entity_vectors: dict[str, np.ndarray] = {}
        self.step = 0
        self.history: list[Interaction] = []
        self.curve: list[dict[str, float]] = []
        self.log = FeedbackLog()
        self._pending: list[_Logged] = []
        self._ope_feedback: list[_Logged] = []
        self.run_id = self.run_dir.name if self.run_dir is not None else f"run-{seed}"
        self.resumed_from: int | None = None

    # -- cold territory ------------------------------------------------------------------------------

    def use_cold_explorer(self, explorer: Any) -> None:
        """Walk each graph's hot part and let the explorer slot step into its cold tier
        (:class:`~signet_rl.emergence.rediscovery.ColdExplorer`; binds the retriever's encoder when the
        explorer has none). A positive rating of a cold path restores its entity in the graph the policy
        walks (:meth:`_reindex`). Call before :meth:`run`.

        Raises:
            ValueError: the hybrid entry is on (its flat floor cannot drop the cold memories), or the run
                has already started.
        """
        if self.step or self.log.records:
            raise ValueError("use_cold_explorer must be called before the loop starts")
        if self.retriever.config.hybrid:
            raise ValueError("cold explorers walk the graph's hot part, and the hybrid entry's flat floor "
                             "indexes the whole dataset; run without it (signet_rl.train: hybrid=false; "
                             "TraversalConfig: floor, session and entity_walks off)")
        for gid in explorer.splits:
            if explorer.encoder is None:
                explorer.encoder = self.retriever._state(gid).encoder
            self._reindex(gid, explorer.hot(gid))
        self.cold_explorer = explorer

    def _reindex(self, graph_id: str, graph: Any) -> None:
        """Walk ``graph`` for ``graph_id`` from now on: new arrays, the edge statistics carried over by
        dependency id (a restored edge starts at the initial weight), the scorer prepared for it."""
        from signet_rl.learning.reinforcement import edge_index

        old_arrays = self.retriever._state(graph_id).arrays
        old = self.stats[graph_id]
        arrays = self.retriever.replace_graph(graph_id, graph)
        new = EdgeStats(arrays.num_dependencies, old.intents, old.time_buckets, old.lr, old.floor,
                        old.ceiling, old.cool_rate, old.init)
        new.carry_over(old, edge_index(old_arrays), edge_index(arrays))
        self.stats[graph_id] = new
        attach = getattr(self.scorer, "attach_edge_stats", None)
        if attach is not None and self.config.reinforcement:
            attach(arrays, new)
        self._entity_vectors.pop(graph_id, None)

    def _cold_rated(self, query: Query, paths: list[Path], shown: list[int],
                    ratings: list[float | None]) -> None:
        """Hand the ratings of the shown cold paths to the cold explorer; re-index a graph it restored in."""
        for j, r in zip(shown, ratings, strict=True):
            if self.cold_explorer.is_cold(query.graph_id, paths[j]):
                graph = self.cold_explorer.rate(query.graph_id, paths[j], r, step=self.step,
                                                query_id=query.id)
                if graph is not None:
                    self._reindex(query.graph_id, graph)

    # -- edge order ----------------------------------------------------------------------------------

    def _edge_weight_fn(self, stats: Mapping[str, EdgeStats]) -> Callable[[str, str, Any], Any]:
        def fn(graph_id: str, intent: str, timestamp: Any) -> Any:
            s = stats[graph_id]
            return s.edge_weight_fn(intent if intent in s.intents else None, s.time_bucket(timestamp))

        return fn

    # -- one interaction -----------------------------------------------------------------------------

    def _vectors(self, graph_id: str) -> np.ndarray:
        if graph_id not in self._entity_vectors:
            state = self.retriever._state(graph_id)
            names = state.graph.entities.set_index("id")["name"].reindex(state.arrays.entity_ids)
            self._entity_vectors[graph_id] = state.encoder.encode(names.fillna("").astype(str).tolist())
        return self._entity_vectors[graph_id]

    def _kept(self, paths: list[Path], cands: Candidates) -> np.ndarray | None:
        """With ``floor_keep`` (a learned scorer under ``best_flat``'s head), the candidates the head injects
        whatever the scorer says: they are not shown for rating, since their place does not depend on it.
        None when off or when the head would take every candidate."""
        keep = self.retriever.config.floor_keep
        if not keep or cands.pool is None:
            return None
        info = cands.context.path_info
        chars = [int(info.get(p.id, {}).get("chars", 0)) for p in paths]
        head = floor_head(paths, info, chars, self.config.budget_chars, keep)
        return head if not head.all() else None

    def _select(
        self, query: Query, paths: list[Path], cands: Candidates, kept: np.ndarray | None = None
    ) -> tuple[np.ndarray, Any]:
        """The policy's scores of ``paths`` and the slate it shows; ``kept`` (a mask) are never shown (the
        slate is drawn from the others, its propensities under that draw)."""
        cfg = self.config
        scores = np.asarray(self.scorer.score(query, paths, cands.context), dtype=np.float64)
        samples = None
        if cfg.exploration == "thompson":
            sample = getattr(self.scorer, "sample_scores", None)
            if sample is None:
                raise ValueError(
                    f"exploration 'thompson' needs a scorer with sample_scores; {self.scorer.name!r} has none"
                )
            samples = np.asarray(sample(query, paths, cands.context, cfg.thompson_samples, self.rng))
        rest = np.arange(len(paths)) if kept is None else np.flatnonzero(~kept)
        slate = select_slate(
            scores[rest],
            cfg.slate_size,
            cfg.exploration,
            self.rng,
            epsilon=cfg.epsilon,
            temperature=cfg.temperature,
            samples=None if samples is None else samples[:, rest],
        )
        if kept is not None:
            slate = dataclasses.replace(slate, indices=rest[np.asarray(slate.indices, dtype=np.int64)])
        return scores, slate

    def interact(self, query: Query, position: int) -> Interaction | None:
        """One training interaction for ``query`` (None when the query walks nothing)."""
        t0 = time.perf_counter()
        cfg = self.config
        if self.retriever.config.hybrid:  # the hybrid entry's bounds follow the budget
            cands = self.retriever.candidates(query, cfg.budget_chars)
        else:
            cands = self.retriever.candidates(query)
        if cands is None or not cands.walk.paths:
            return None
        paths = list(cands.walk.paths)
        session = session_of(query, position, cfg.session_size)
        self._open_session(session, query.graph_id)
        self._prewarm(query, session)
        n_walk = len(paths)
        targets: list[int] = []
        if self.quota.per_session and self.quota.available(session) > 0:
            paths += self.retriever.far_paths(query, cands)
            if self.explorer_targets is not None:
                extra = self.explorer_targets(query, list(cands.entries))
                targets = list(range(len(paths), len(paths) + len(extra)))
                paths += extra
        scores, slate = self._select(query, paths[:n_walk], cands, self._kept(paths[:n_walk], cands))
        shown = [int(i) for i in slate.indices]
        pscores = [float(p) for p in slate.propensities]
        explorer = [False] * len(shown)
        if self.quota.per_session and self.quota.available(session) > 0:
            state = self.retriever._state(query.graph_id)
            qv = state.encoder.encode([query.text[:1000]])[0]
            ranked = speculative_candidates(
                paths,
                state.arrays,
                self.stats[query.graph_id] if cfg.reinforcement else None,
                qv,
                self._vectors(query.graph_id),
                cands.entries,
                k=len(paths),
            )
            spec = [i for i in targets if i not in shown]
            if self.cold_explorer is not None:  # a step into cold territory, after any bridge target
                extra = self.cold_explorer.paths(query, list(cands.entries), paths[:n_walk], qv)
                spec += list(range(len(paths), len(paths) + len(extra)))
                paths += extra
            spec += [int(i) for i in ranked if int(i) not in shown and int(i) not in targets]
            if spec:
                pick = spec[0]
                paths[pick] = Path(
                    paths[pick].hops, strategy=paths[pick].strategy or cands.intent, explorer=True
                )
                if len(shown) >= cfg.slate_size:
                    shown[-1], pscores[-1], explorer[-1] = pick, 1.0, True
                else:
                    shown.append(pick)
                    pscores.append(1.0)
                    explorer.append(True)
                self.quota.use(session, 1)
        if len(scores) < len(paths):  # far paths were never scored by the policy: log them below the walk
            scores = np.concatenate(
                [scores, np.full(len(paths) - len(scores), scores.min(initial=0.0) - 1.0)]
            )
        builder = self.retriever.builder(query.graph_id)
        ratings: list[float | None] = []
        true: list[int] = []
        cold_builder = None if self.cold_explorer is None or query.graph_id not in self.cold_explorer.splits \
            else self.cold_explorer.builder(query.graph_id)
        for j in shown:
            if cold_builder is not None and self.cold_explorer.is_cold(query.graph_id, paths[j]):
                # its rows are not in the hot graph
                unit = cold_builder.construct(paths[j], at=query.timestamp)
            else:
                unit = builder.construct(paths[j], at=query.timestamp)
            items = self.resolver.unit_items(query, unit)
            r = self.rater.rate(query.id, items)
            ratings.append(None if r is None else float(int(r)))
            true.append(int(self.rater.true_rating(query.id, items)))
        # The best slate the candidates allowed (noiseless; a metric only, never fed back).
        all_true = np.array(
            [
                int(
                    self.rater.true_rating(
                        query.id, self.resolver.unit_items(query, builder.construct(p, at=query.timestamp))
                    )
                )
                for p in paths[:n_walk]
            ]
        )
        k = min(len(shown), len(all_true))
        oracle = float(np.sort(all_true)[::-1][:k].mean()) if k else 0.0
        if self.cold_explorer is not None:
            self._cold_rated(query, paths, shown, ratings)
        fb = Feedback(query, paths, cands.context, shown, ratings, pscores, explorer)
        info = dict(cands.context.path_info)
        light = _Logged(query, paths, list(cands.entries), shown, ratings, pscores, explorer, info)
        self._pending.append(light)
        if len(self._pending) >= cfg.update_every:
            self._flush()
        self.log.append(
            FeedbackRecord.from_feedback(
                fb,
                run_id=self.run_id,
                step=self.step,
                session=session,
                intent=cands.intent,
                candidate_scores=scores.tolist(),
                policy_version=f"{self.scorer.name}@{self.step}",
            )
        )
        self._ope_feedback.append(light)
        if len(self._ope_feedback) > cfg.ope_window:
            self._ope_feedback.pop(0)
        rated = [r for r in ratings if r is not None]
        ex_true = [t for t, e in zip(true, explorer, strict=True) if e]
        return Interaction(
            step=self.step,
            query_id=query.id,
            intent=cands.intent,
            mean_rating=float(np.mean(rated)) if rated else math.nan,
            true_value=float(np.mean(true)) if true else 0.0,
            oracle_value=oracle,
            explorer_shown=len(ex_true),
            explorer_hits=sum(1 for t in ex_true if t == 1),
            candidates=n_walk,
            seconds=time.perf_counter() - t0,
        )

    def _open_session(self, session: str, graph_id: str) -> None:
        """With explorer regulation, set ``session``'s explorer slots once, when its first interaction
        comes, from the feedback logged before it **on the same graph** (one user's timeline: on a
        multi-graph dataset such as LoCoMo, one graph per conversation, another graph's sessions say nothing
        about this user's staleness). Sessions of several graphs interleave on the timeline, so a session
        that comes back gets its own slots back (the quota's one ``per_session`` serves the open session)."""
        if not self.config.explorer_regulation:
            return
        if session in self.session_slots:
            self.quota.per_session = self.session_slots[session]
            return
        if self.explorer_regulator is None:
            raise ValueError(
                "task.explorer_regulation=true needs an explorer regulator; signet_rl.train builds it from "
                "task.regulator (BanditTrainer.explorer_regulator), or set task.explorer_regulation=false"
            )
        mine = [r for r in self.log.records if r.context.get("graph_id") == graph_id]
        slots = self.explorer_regulator(mine, self.config.slate_size)
        slots = check_integer("explorer slots", slots, 0)
        self.session_slots[session] = slots
        self.quota.max_per_session = max(self.quota.max_per_session, slots)
        self.quota.per_session = slots

    def _prewarm(self, query: Query, session: str) -> None:
        """Log the session-start pre-warm slate of a newly opened ``session`` (:attr:`session_start`), rated
        against the session's first query. Its draws come from a generator seeded by the run seed and the
        step, so a resumed run draws the same slate."""
        if self.session_start is None:
            return
        if not self._prewarmed:  # a resumed run: every session its log holds has had its start
            self._prewarmed = {r.session for r in self.log.records}
        if session in self._prewarmed:
            return
        self._prewarmed.add(session)
        builder = self.retriever.builder(query.graph_id)

        def construct(path: Path) -> Any:
            return builder.construct(path, at=query.timestamp)

        rng = np.random.default_rng([self.seed, self.step, 29])
        slate = self.session_start(query, construct, self.log.records, rng)
        if not slate.shown:
            return
        ratings: list[float | None] = []
        for unit in slate.units:
            r = self.rater.rate(query.id, self.resolver.unit_items(query, unit))
            ratings.append(None if r is None else float(int(r)))
        self.log.append(FeedbackRecord(
            run_id=self.run_id, step=self.step, query_id=f"prewarm:{session}", timestamp=query.timestamp,
            session=session, intent="prewarm", context={"entries": [], "graph_id": query.graph_id},
            candidates=list(slate.candidates), candidate_scores=list(slate.scores), shown=list(slate.shown),
            positions=list(range(len(slate.shown))), pscores=list(slate.pscores), ratings=ratings,
            explorer=[False] * len(slate.shown), policy_version="prewarm",
        ))  # fmt: skip

    def _flush(self) -> None:
        if not self._pending:
            return
        batch = [self._feedback(x) for x in self._pending]
        self._pending = []
        if self.config.importance_weighted and hasattr(self.scorer, "importance_weighted"):
            self.scorer.importance_weighted = True
        self.scorer.update(batch)
        if self.config.reinforcement:
            by_graph: dict[str, list[Feedback]] = {}
            for fb in batch:
                by_graph.setdefault(fb.query.graph_id, []).append(fb)
            for gid, fbs in by_graph.items():
                self.stats[gid].apply(fbs)

    def _feedback(self, x: _Logged) -> Feedback:
        context = self.retriever.context(x.query, x.entries)
        # the hybrid entry's records of the candidates (a checkpoint from before they were kept has none)
        context.path_info = getattr(x, "info", None) or {}
        if self.cold_explorer is not None:  # a path into territory still cold is not in the policy's graph
            return self._hot_feedback(x, context)
        return Feedback(x.query, x.paths, context, x.shown, x.ratings, x.pscores, x.explorer)

    def _hot_feedback(self, x: _Logged, context: Any) -> Feedback:
        """``x``'s feedback without the candidates that reach a cold entity (shown indices renumbered)."""
        gid = x.query.graph_id
        keep = [i for i, p in enumerate(x.paths) if not self.cold_explorer.is_cold(gid, p)]
        if len(keep) == len(x.paths):
            return Feedback(x.query, x.paths, context, x.shown, x.ratings, x.pscores, x.explorer)
        new = {old: i for i, old in enumerate(keep)}
        rows = [j for j, s in enumerate(x.shown) if s in new]
        return Feedback(x.query, [x.paths[i] for i in keep], context, [new[x.shown[j]] for j in rows],
                        [x.ratings[j] for j in rows], [x.pscores[j] for j in rows],
                        [x.explorer[j] for j in rows])

    # -- evaluation ----------------------------------------------------------------------------------

    def _shared(self) -> dict[int, Any]:
        """A deepcopy memo that shares the read-only graphs and their array views instead of copying them."""
        memo: dict[int, Any] = {}
        for gid in self.dataset.graphs:
            state = self.retriever._state(gid)
            shared = [state.graph, state.arrays, state.encoder, state.entry]
            shared += [getattr(state.arrays, f) for f in state.arrays.__dataclass_fields__]
            for obj in shared:
                memo[id(obj)] = obj
        return memo

    def frozen(self, name: str | None = None) -> DesirePathRetriever:
        """A retriever over a frozen copy of the scorer and the edge statistics (evaluation never learns)."""
        scorer = copy.deepcopy(self.scorer, self._shared())
        if hasattr(scorer, "alpha"):  # an upper-confidence-bound scorer evaluates greedily
            scorer.alpha = 0.0
        ret = copy.copy(self.retriever)
        ret.scorer = scorer
        ret.name = name or f"desire_{self.scorer.name}"
        if self.config.reinforcement:
            stats = {gid: copy.deepcopy(s, self._shared()) for gid, s in self.stats.items()}
            ret.edge_weight_fn = self._edge_weight_fn(stats)
        return ret

    def validation_metrics(self) -> dict[str, float]:
        """The frozen policy's validation metrics from the ``validate`` callback ({} without one)."""
        if self.validate is None or not self.dataset.split("validation"):
            return {}
        return self.validate(self.frozen("learned"))

    # -- the loop ------------------------------------------------------------------------------------

    def schedule(self) -> list[tuple[Query, int]]:
        """Every interaction of the run, in order: (query, its position in the timeline)."""
        out = [(q, i) for _ in range(self.config.epochs) for i, q in enumerate(self.train_queries)]
        if self.config.max_interactions is not None:
            out = out[: self.config.max_interactions]
        return out

    def run(
        self, stop_after: int | None = None, stop_requested: Callable[[], bool] | None = None
    ) -> list[dict[str, float]]:
        """Run (or resume) the loop; returns the learning curve (one row per evaluation). A ``run_dir``
        given as a path is opened as a :class:`~signet_rl.core.run_folder.RunFolder` (locked, marked with
        :meth:`fingerprint`) for the run.

        Args:
            stop_after: stop once this many schedule positions are done, without a checkpoint there
                (simulates a kill after the last checkpoint: the test of resumption); None runs to the end.
            stop_requested: polled between interactions; when it returns True the loop checkpoints the
                interactions done so far and returns (Ctrl-C in ``signet_rl.train``), to be resumed later.
        """
        if self.run_dir is None or self.folder is not None:
            return self._loop(stop_after, stop_requested)
        with RunFolder.open(self.run_dir, self.fingerprint(), RUN_FILES) as self.folder:
            try:
                return self._loop(stop_after, stop_requested)
            finally:
                self.folder = None

    def _loop(
        self, stop_after: int | None, stop_requested: Callable[[], bool] | None
    ) -> list[dict[str, float]]:
        from tqdm.auto import tqdm

        self.resume()
        plan = self.schedule()
        cfg = self.config
        bar = tqdm(total=len(plan), initial=self.step, disable=not self.progress, desc="bandit", unit="q")
        while self.step < len(plan):
            if stop_after is not None and self.step >= stop_after:
                break
            if stop_requested is not None and stop_requested():
                self.checkpoint()
                break
            query, position = plan[self.step]
            inter = self.interact(query, position)
            if inter is not None:
                self.history.append(inter)
            self.step += 1
            bar.update(1)
            if cfg.eval_every and self.step % cfg.eval_every == 0:
                self._record_eval()
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
                self.checkpoint()
        bar.close()
        if self.step >= len(plan):
            self._flush()
            if not self.curve or self.curve[-1]["interactions"] != self.step:
                self._record_eval()
            self.checkpoint()
        return self.curve

    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes this loop's results, ``key -> value`` (the run marker compares it): the
        dataset, the scorer and its constructor arguments, the seed, every loop knob and the traversal."""
        out: dict[str, Any] = {"dataset": self.dataset.name, "scorer": self.scorer.name, "seed": self.seed}
        for k, v in sorted((getattr(self.scorer, "config", None) or {}).items()):
            out[f"scorer.{k}"] = v
        for k in sorted(self.config.__dataclass_fields__):
            out[f"task.{k}"] = getattr(self.config, k)
        for k, v in sorted(self.traversal.items()):
            out[f"traversal.{k}"] = v
        out["encoder"] = self.encoder
        if self.cold_explorer is not None:  # rediscovery: its settings and the plan's cold entities
            out["emergence.rediscovery"] = True
            for k, v in sorted(asdict(self.cold_explorer.params).items()):
                out[f"emergence.rediscover.{k}"] = v
        return out

    def _record_eval(self) -> None:
        self._flush()
        row: dict[str, float] = {"interactions": float(self.step)}
        row.update(self.running_metrics())
        row.update(self.validation_metrics())
        self.curve.append(row)
        if self.on_eval is not None:
            self.on_eval(self.step, row)

    def running_metrics(self, window: int | None = None) -> dict[str, float]:
        """Means over the interactions so far (or the last ``window``): rating, regret, explorer figures."""
        hist = self.history[-window:] if window else self.history
        if not hist:
            return {}
        rated = [h.mean_rating for h in hist if not math.isnan(h.mean_rating)]
        regret = np.cumsum([h.oracle_value - h.true_value for h in hist])
        shown = sum(h.explorer_shown for h in hist)
        slots = sum(min(self.config.slate_size, h.candidates) for h in hist)
        return {
            "train/mean_rating": float(np.mean(rated)) if rated else math.nan,
            "train/mean_true_value": float(np.mean([h.true_value for h in hist])),
            "train/cumulative_regret": float(regret[-1]),
            "train/explorer_share": shown / max(slots, 1),
            "train/explorer_hit_rate": (sum(h.explorer_hits for h in hist) / shown) if shown else math.nan,
            "train/latency_ms": 1000 * float(np.median([h.seconds for h in hist])),
        }

    # -- off-policy evaluation -----------------------------------------------------------------------

    def ope(self, n_boot: int = 200) -> dict[str, float]:
        """IPS / SNIPS / DR estimates of the final greedy policy's per-item value on the last logged
        interactions (target: the frozen scorer's top ``slate_size``; reward model: its own scores clipped
        to [-1, 1])."""
        from signet_rl.learning.ope import LoggedBandit, estimate_all

        data = [self._feedback(x) for x in self._ope_feedback if len(x.shown)]
        if not data:
            return {}
        scorer = self.frozen().scorer
        c = max(len(fb.paths) for fb in data)
        k = max(len(fb.shown) for fb in data)
        n = len(data)
        shown = np.full((n, k), -1, dtype=np.int64)
        reward = np.zeros((n, k))
        pscore = np.ones((n, k))
        target = np.zeros((n, c))
        reward_hat = np.zeros((n, c))
        for i, fb in enumerate(data):
            s = np.asarray(scorer.score(fb.query, fb.paths, fb.context), dtype=np.float64)
            top = np.argsort(-s, kind="stable")[: self.config.slate_size]
            target[i, top] = 1.0
            reward_hat[i, : len(s)] = np.clip(s, -1, 1)
            for j, (idx, r, p) in enumerate(zip(fb.shown, fb.ratings, fb.pscores, strict=True)):
                shown[i, j] = idx
                reward[i, j] = 0.0 if r is None else float(r)
                pscore[i, j] = p
        est = estimate_all(
            LoggedBandit(shown, reward, pscore, target, reward_hat), n_boot=n_boot, seed=self.seed
        )
        out: dict[str, float] = {}
        for name, e in est.items():
            out.update(e.metrics(name))
        return out

    # -- checkpoints ---------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        graph_state = getattr(self.scorer, "graph_state_dict", None)
        scorer_graphs = {}
        if graph_state is not None:  # what the scorer derived from history per graph (GNN edge features)
            for gid in self.dataset.graphs:
                blob = graph_state(self.retriever._state(gid).arrays)
                if blob is not None:
                    scorer_graphs[gid] = blob
        return {
            "step": self.step,
            "seed": self.seed,
            "scorer": self.scorer.state_dict() if hasattr(self.scorer, "state_dict") else None,
            "scorer_graphs": scorer_graphs,
            "stats": {gid: s.state_dict() for gid, s in self.stats.items()},
            "rng": self.rng.bit_generator.state,
            "rater_rng": self.rater.rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "numpy_global_rng": np.random.get_state(),
            "python_rng": random.getstate(),
            "quota": copy.deepcopy(self.quota),
            "session_slots": dict(self.session_slots),
            "history": self.history,
            "curve": self.curve,
            "log": list(self.log),
            "pending": self._pending,
            "ope": self._ope_feedback,
            "config": self.config,
            "traversal": self.traversal,
            "dataset": self.dataset.name,
            "scorer_name": self.scorer.name,
            **({} if self.cold_explorer is None else {"cold": self.cold_explorer.state_dict()}),
        }

    def checkpoint(self) -> FsPath | None:
        """Write the loop's whole state to ``run_dir/checkpoint.pkl`` atomically (a uniquely named temporary
        file, then ``os.replace``); the checkpoint it replaces stays as ``checkpoint.prev.pkl``."""
        if self.run_dir is None:
            return None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / CHECKPOINT
        if path.exists():  # keep the previous checkpoint (a hard link: a checkpoint.pkl always exists)
            fd, link = tempfile.mkstemp(prefix=f".{PREVIOUS_CHECKPOINT}.", suffix=".tmp", dir=self.run_dir)
            os.close(fd)
            os.unlink(link)
            os.link(path, link)
            os.replace(link, self.run_dir / PREVIOUS_CHECKPOINT)
            FsPath(link).unlink(missing_ok=True)  # rename is a no-op when both names link one file already
        with atomic_writer(path) as fh:
            pickle.dump(self._state(), fh, protocol=pickle.HIGHEST_PROTOCOL)
        self.log.write(self.run_dir / "feedback.parquet")
        return path

    def _load_checkpoint(self, path: FsPath) -> dict[str, Any]:
        """The state pickled in ``path``; a damaged file is named with the ways out."""
        try:
            with open(path, "rb") as fh:
                state = pickle.load(fh)  # our own checkpoint file
        except (EOFError, pickle.UnpicklingError, ValueError, AttributeError, ImportError, IndexError) as err:
            prev = path.parent / PREVIOUS_CHECKPOINT
            way = f", or resume from the previous checkpoint: mv {prev} {path}" if prev.exists() else ""
            raise ValueError(
                f"checkpoint {path} is unreadable (truncated or corrupt: {type(err).__name__}: {err}); "
                f"rerun with fresh=true to start over{way}"
            ) from err
        if not isinstance(state, dict) or "step" not in state:
            raise ValueError(
                f"checkpoint {path} is not a bandit checkpoint; rerun with fresh=true to start over"
            )
        return state

    def resume(self) -> bool:
        """Load ``run_dir/checkpoint.pkl`` when there is one; True when the loop resumed.

        Raises:
            ValueError: an unreadable checkpoint, or one written with another dataset, scorer, seed, loop
                config or traversal (naming the key and both values).
        """
        if self.run_dir is None or not (self.run_dir / CHECKPOINT).exists():
            return False
        path = self.run_dir / CHECKPOINT
        state = self._load_checkpoint(path)
        for key, mine in (
            ("dataset", self.dataset.name),
            ("scorer_name", self.scorer.name),
            ("seed", self.seed),
            ("config", self.config),
            ("traversal", self.traversal),
        ):
            if key in state and state[key] != mine:
                raise ValueError(
                    f"checkpoint {path} is incompatible: it was written with {key}="
                    f"{state[key]!r}, this run has {mine!r}; use another run_dir or fresh=true"
                )
        if "cold" in state or self.cold_explorer is not None:  # the graphs as they were: restores replayed
            if self.cold_explorer is None or "cold" not in state:
                had = "with" if "cold" in state else "without"
                has = "none" if self.cold_explorer is None else "them"
                raise ValueError(f"checkpoint {path} is incompatible: it was written {had} cold explorers, "
                                 f"this run has {has}; use another run_dir or fresh=true")
            try:
                self.cold_explorer.load_state_dict(state["cold"])
            except ValueError as exc:
                raise ValueError(f"checkpoint {path} is incompatible: {exc}; use another run_dir or "
                                 "fresh=true") from None
            for gid in self.cold_explorer.splits:
                self._reindex(gid, self.cold_explorer.hot(gid))
        if state["scorer"] is not None:
            self.scorer.load_state_dict(state["scorer"])  # type: ignore[attr-defined]
        for gid, s in state["stats"].items():
            self.stats[gid].load_state_dict(s)
        load_graph = getattr(self.scorer, "load_graph_state_dict", None)
        for gid, blob in state.get("scorer_graphs", {}).items():
            if load_graph is not None:
                graph_state = self.retriever._state(gid)
                load_graph(graph_state.graph, graph_state.arrays, blob)
        self.rng.bit_generator.state = state["rng"]
        self.rater.rng.bit_generator.state = state["rater_rng"]
        torch.set_rng_state(state["torch_rng"])
        if "numpy_global_rng" in state:
            np.random.set_state(state["numpy_global_rng"])
        if "python_rng" in state:
            random.setstate(state["python_rng"])
        self.quota = state["quota"]
        self.session_slots = dict(state.get("session_slots", {}))
        self.history = state["history"]
        self.curve = state["curve"]
        self.log = FeedbackLog(state["log"])
        self._pending = state["pending"]
        self._ope_feedback = state["ope"]
        self.step = state["step"]
        self.resumed_from = self.step
        return True


def learning_curve_png(
    curve: Sequence[Mapping[str, float]],
    path: str | os.PathLike[str],
    metric: str = "val/needed_recall",
    baselines: Mapping[str, float] | None = None,
) -> None:
    """Plot ``metric`` (and the running mean rating) against interactions, with flat lines for baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(list(curve))
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    if metric in frame:
        ax[0].plot(frame["interactions"], frame[metric], marker="o", label="learned")
    for name, value in (baselines or {}).items():
        ax[0].axhline(value, linestyle="--", linewidth=1, label=name, color=None)
    ax[0].set_xlabel("rated interactions")
    ax[0].set_ylabel(metric)
    if ax[0].get_legend_handles_labels()[0]:  # nothing to label when there was no validation
        ax[0].legend(fontsize=8)
    if "train/mean_rating" in frame:
        ax[1].plot(frame["interactions"], frame["train/mean_rating"], marker="o")
        ax[1].set_xlabel("interactions")
        ax[1].set_ylabel("mean observed rating (running)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
