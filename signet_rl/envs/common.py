"""What the Gymnasium environments share: datasets from specs, the desire-path candidate pipeline, the query
schedule, the episode scaffolding of a one-query-per-episode environment (:class:`QueryEpisodeEnv`), and
action checks.

:class:`CandidatePipeline` is :class:`~signet_rl.pipeline.desire.DesirePathRetriever` up to its candidates:
the *predicted* intent (rule classifier), the *searched* entry entities, and the bounded walk of the intent's
strategy. It never reads ground truth; only :class:`~signet_rl.rating.view.RatingView` (the simulated
rater's side) does. One pipeline is built per ``(dataset, traversal config, encoder, entry search
settings)`` per process and shared by every environment that asks for it (:meth:`CandidatePipeline.shared`),
so a vector of eight environments in one process indexes the graph once.

    >>> pipe = CandidatePipeline.shared("synthetic:tiny")  # doctest: +SKIP
    >>> cands = pipe.candidates(pipe.dataset.split("train")[0])  # doctest: +SKIP
    >>> cands.intent, len(cands.paths) <= pipe.config.max_paths  # doctest: +SKIP
    ('what', True)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode

from signet_rl.core.types import SPLITS, Query
from signet_rl.datasets.base import Dataset
from signet_rl.datasets.registry import load_dataset
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.rating.view import RatingView
from signet_rl.retrieval.flat import BEST_FLAT
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.features import QueryFeaturizer
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.path import Path
from signet_rl.traversal.walk import Relevance

__all__ = [
    "ORDERS",
    "CandidatePipeline",
    "Candidates",
    "DatasetLike",
    "QueryEpisodeEnv",
    "QuerySchedule",
    "action_index",
    "dataset_key",
    "resolve_dataset",
    "traversal_config",
]

#: What an environment's ``dataset`` argument may be: a spec string for
#: :func:`~signet_rl.datasets.registry.load_dataset` or a loaded :class:`Dataset`.
DatasetLike = Dataset | str
#: Query orders of an environment: ``random`` (uniform, with replacement, from the env's seeded RNG) or
#: ``sequential`` (the split in dataset order, cycling; a seeded reset starts over).
ORDERS: tuple[str, ...] = ("random", "sequential")

FloatArray = npt.NDArray[np.float32]

_DATASETS: OrderedDict[str, Dataset] = OrderedDict()
_PIPELINES: OrderedDict[tuple[Any, ...], tuple[Dataset, CandidatePipeline]] = OrderedDict()
_CACHE_SIZE = 4


def resolve_dataset(dataset: DatasetLike) -> Dataset:
    """A loaded dataset: ``dataset`` itself, or the spec loaded once per process (spec strings are cached).

    Raises:
        ValueError: an unknown spec (the registry's message), or neither a string nor a Dataset.
    """
    if isinstance(dataset, Dataset):
        return dataset
    if not isinstance(dataset, str):
        raise ValueError(f"dataset must be a spec string or a Dataset, got {type(dataset).__name__}")
    if dataset not in _DATASETS:
        _DATASETS[dataset] = load_dataset(dataset)
        while len(_DATASETS) > _CACHE_SIZE:
            _DATASETS.popitem(last=False)
    _DATASETS.move_to_end(dataset)
    return _DATASETS[dataset]


def dataset_key(dataset: DatasetLike) -> tuple[str, Any]:
    """A cache key: the spec string, or the identity of a Dataset object."""
    return ("spec", dataset) if isinstance(dataset, str) else ("object", id(dataset))


def traversal_config(traversal: TraversalConfig | Mapping[str, Any] | None) -> TraversalConfig:
    """A :class:`TraversalConfig` from None (defaults), a config, or a mapping of overrides.

    Raises:
        ValueError: an unknown key or a bad value (:meth:`TraversalConfig.from_dict`'s message).
    """
    if traversal is None:
        return TraversalConfig()
    if isinstance(traversal, TraversalConfig):
        return traversal
    if not isinstance(traversal, Mapping):
        raise ValueError(f"traversal must be a TraversalConfig or a mapping, got {type(traversal).__name__}")
    return TraversalConfig.from_dict(dict(traversal))


@dataclass
class Candidates:
    """What the pipeline found for one query (no ground truth).

    Attributes:
        query: the query.
        intent: the predicted intent.
        entries: the searched entry entity ids (empty for a non-query or a query nothing matched).
        paths: candidate paths of the intent's strategy, best first (at most ``max_paths``).
        context: the scoring context (graph, arrays, entries, query time in epoch seconds).
        query_vec: the query's embedding in the pipeline's encoder space, ``float32 [d]``.
        relevance: attribute index -> cosine with the query (None without attribute vectors).
    """

    query: Query
    intent: str
    entries: tuple[str, ...]
    paths: list[Path]
    context: ScoringContext
    query_vec: FloatArray
    relevance: Relevance | None


class CandidatePipeline:
    """Predicted intent, entry search and bounded walk over a dataset's graphs (see the module docstring).

    Args:
        dataset: a spec string or a loaded dataset.
        traversal: traversal budgets, or a mapping of overrides (defaults: :class:`TraversalConfig`).
        encoder: the encoder of entry search, attribute relevance and query features.
        entry_k: most entry entities per query (as the retriever).
        entry_ratio: extra entries must score this share of the best one (as the retriever).
        flat: the flat variant whose hits are the hybrid entry's floor (``best_flat``: frozen per dataset
            family); used only when the traversal config switches the hybrid entry on.

    Attributes:
        dataset: the dataset.
        config: the traversal budgets.
        retriever: the indexed :class:`DesirePathRetriever` whose entry search and traverser are used.
        query_features: a :class:`QueryFeaturizer` with the retriever's classifier.
    """

    #: Most queries whose candidates are kept.
    CACHE_SIZE = 8192

    def __init__(
        self,
        dataset: DatasetLike,
        traversal: TraversalConfig | Mapping[str, Any] | None = None,
        encoder: str = "hashing",
        entry_k: int = 2,
        entry_ratio: float = 0.8,
        flat: str = BEST_FLAT,
    ) -> None:
        self.dataset = resolve_dataset(dataset)
        self.config = traversal_config(traversal)
        self.retriever = DesirePathRetriever(
            "prior", self.config, encoder=encoder, entry_k=entry_k, entry_ratio=entry_ratio, flat=flat
        )
        self.retriever.index(self.dataset)
        self.query_features = QueryFeaturizer(encoder, classifier=self.retriever.classifier)
        self.by_id: dict[str, Query] = {q.id: q for q in self.dataset.queries}
        self._cache: OrderedDict[str, Candidates] = OrderedDict()
        self._entries: OrderedDict[str, tuple[str, tuple[str, ...], FloatArray]] = OrderedDict()
        #: Per-graph precomputations an environment shares with the others on this pipeline.
        self.extras: dict[Any, Any] = {}

    @classmethod
    def shared(
        cls,
        dataset: DatasetLike,
        traversal: TraversalConfig | Mapping[str, Any] | None = None,
        encoder: str = "hashing",
        entry_k: int = 2,
        entry_ratio: float = 0.8,
        flat: str = BEST_FLAT,
    ) -> CandidatePipeline:
        """The process-wide pipeline for these arguments (built on first use, a few kept)."""
        config = traversal_config(traversal)
        key = (dataset_key(dataset), tuple(sorted(config.to_dict().items())), encoder, entry_k, entry_ratio,
               flat)  # fmt: skip
        hit = _PIPELINES.get(key)
        if hit is not None and (isinstance(dataset, str) or hit[0] is dataset):
            _PIPELINES.move_to_end(key)
            return hit[1]
        pipe = cls(dataset, config, encoder, entry_k, entry_ratio, flat)
        _PIPELINES[key] = (pipe.dataset, pipe)
        while len(_PIPELINES) > _CACHE_SIZE:
            _PIPELINES.popitem(last=False)
        return pipe

    def state(self, graph_id: str) -> Any:
        """The retriever's per-graph state: ``graph``, ``arrays``, ``traverser``, ``builder``, ``entry``,
        ``encoder``, ``attr_vectors``."""
        return self.retriever._state(graph_id)

    def queries(self, split: str) -> list[Query]:
        """The queries of ``split`` (``train``, ``validation``, ``test``) or ``all``.

        Raises:
            ValueError: an unknown split.
        """
        if split == "all":
            return list(self.dataset.queries)
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join((*SPLITS, 'all'))}")
        return self.dataset.split(split)  # type: ignore[arg-type]

    def query(self, query_id: str) -> Query:
        """The query with this id.

        Raises:
            ValueError: no such query in the dataset.
        """
        try:
            return self.by_id[query_id]
        except KeyError:
            raise ValueError(f"query {query_id!r} is not in dataset {self.dataset.name!r}") from None

    def entries(self, query: Query) -> tuple[str, tuple[str, ...], FloatArray]:
        """``(intent, entry entity ids, query embedding)`` of ``query``, memoised by query id: the predicted
        intent, the searched entries (none for a non-query), and the embedding in the encoder's space."""
        hit = self._entries.get(query.id)
        if hit is not None:
            return hit
        state = self.state(query.graph_id)
        intent = self.query_features.intent(query)
        entries = () if intent == "none" else tuple(self.retriever.entries(query, intent))
        qv = np.asarray(state.encoder.encode([(query.text or "")[:1000]])[0], dtype=np.float32)
        qv.setflags(write=False)
        out = (intent, entries, qv)
        self._entries[query.id] = out
        while len(self._entries) > self.CACHE_SIZE:
            self._entries.popitem(last=False)
        return out

    def candidates(self, query: Query) -> Candidates:
        """Intent, entries and candidate paths of ``query`` (memoised by query id)."""
        hit = self._cache.get(query.id)
        if hit is not None:
            return hit
        state = self.state(query.graph_id)
        # the hybrid entry: flat's floor, session steps, entity walks
        out = self._hybrid(query) if state.hybrid is not None else self._walked(query, state)
        self._cache[query.id] = out
        while len(self._cache) > self.CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    def _hybrid(self, query: Query) -> Candidates:
        """The retriever's hybrid-entry candidates (floor first), as :class:`Candidates`."""
        intent, _, qv = self.entries(query)
        cands = self.retriever.candidates(query)
        if cands is None:
            state = self.state(query.graph_id)
            ts = None if query.timestamp is None else float(query.timestamp.timestamp())
            ctx = ScoringContext(state.graph, state.arrays, (), ts)
            return Candidates(query, intent, (), [], ctx, qv, None)
        return Candidates(
            query, intent, tuple(cands.entries), list(cands.walk.paths), cands.context, qv,
            cands.context.relevance,
        )  # fmt: skip

    def _walked(self, query: Query, state: Any) -> Candidates:
        """The intent's strategy walk from the searched entries."""
        intent, entries, qv = self.entries(query)
        rel: Relevance | None = None
        if state.attr_vectors is not None:
            vectors = state.attr_vectors
            rel = lambda idx: vectors[idx] @ qv  # noqa: E731
        paths = (
            state.traverser.walk(list(entries), intent, query.timestamp, relevance=rel).paths
            if entries
            else []
        )
        ts = None if query.timestamp is None else float(query.timestamp.timestamp())
        ctx = ScoringContext(state.graph, state.arrays, entries, ts)
        return Candidates(query, intent, entries, paths, ctx, qv, rel)


class QuerySchedule:
    """Which query the next episode asks: ``random`` or ``sequential`` over a list, skipping the queries a
    predicate rejects (their candidate set is empty) unless ``include_empty``.

    The sequential position is part of the environment's state (``position``); a seeded reset starts it
    over. ``rejected`` holds the positions found unusable (a cache: it changes no draw).

    Raises:
        ValueError: (from :meth:`next`) every query is rejected, naming the split and the dataset.
    """

    def __init__(self, queries: Sequence[Query], order: str, split: str, dataset_name: str) -> None:
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        if not queries:
            raise ValueError(f"split {split!r} of {dataset_name!r} has no queries")
        self.queries = list(queries)
        self.order = order
        self.split = split
        self.dataset_name = dataset_name
        self.position = 0
        self.rejected: set[int] = set()

    def next(self, rng: np.random.Generator, usable: Callable[[Query], bool]) -> Query:
        """The next usable query (``rng`` draws it in ``random`` order).

        Draws do not depend on which queries were found unusable before (an unusable draw is simply drawn
        again), so the same seed gives the same queries whatever the cache holds.
        """
        n = len(self.queries)
        while len(self.rejected) < n:
            if self.order == "random":
                i = int(rng.random() * n)  # Generator.integers costs ~10x more per call
            else:
                i = self.position % n
                self.position += 1
            if i in self.rejected:
                continue
            if usable(self.queries[i]):
                return self.queries[i]
            self.rejected.add(i)
        raise ValueError(
            f"no query of split {self.split!r} in {self.dataset_name!r} has candidates "
            f"({n} queries: non-queries or no entry entity); pass include_empty=True to serve them anyway"
        )


def action_index(action: Any, n: int, who: str) -> int:
    """``action`` as an int in ``[0, n)``.

    Raises:
        ValueError: not an integer, or outside ``Discrete(n)``, naming the action and the space.
    """
    value = action
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{who}: action {action!r} is not an integer of the action space Discrete({n})")
    i = int(value)
    if not 0 <= i < n:
        raise ValueError(f"{who}: action {i} is outside the action space Discrete({n})")
    return i


class QueryEpisodeEnv(gym.Env[dict[str, Any], Any]):
    """The scaffolding of an environment whose episode asks one query of a split (PathBandit, EdgeWalk).

    A subclass records its constructor arguments in ``_init_args`` (``{k: v for k, v in locals().items()
    if k != "self"}``, first thing in ``__init__``), builds :attr:`pipeline`, calls :meth:`_episodes`,
    and says how an episode starts (:meth:`_begin`, called by :meth:`reset` with the chosen query), which
    queries it can serve (:meth:`_usable`) and what of an episode a pickle keeps (:meth:`_episode_state`,
    :meth:`_restore_episode`).

    Pickling keeps the configuration, the RNG streams (the environment's and the rater's), the schedule's
    position and the episode, not the caches: an unpickled environment rebuilds them (sharing the process's
    pipeline) and continues exactly where the pickled one stood.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 - gymnasium declares it an instance attribute
        "render_modes": [],
        "autoreset_mode": AutoresetMode.SAME_STEP,
    }
    #: The name error messages start with (``PathBandit``, ``EdgeWalk``).
    env_name = "QueryEpisodeEnv"

    _init_args: dict[str, Any]
    pipeline: CandidatePipeline
    include_empty: bool

    def _episodes(self, split: str, order: str, noise_rate: float, rating_prob: float) -> None:
        """Set :attr:`split`, the query :attr:`schedule` over it and the rater's view :attr:`rating`.

        Raises:
            ValueError: an unknown split or order, an empty split, or a bad rater probability.
        """
        self.split = split
        self.schedule = QuerySchedule(self.pipeline.queries(split), order, split, self.pipeline.dataset.name)
        self.rating = RatingView(self.pipeline.dataset, noise_rate, rating_prob)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode: the next query of the schedule, or ``options["query_id"]``.

        A seeded reset also restarts the sequential order and reseeds the rater.

        Raises:
            ValueError: an unknown ``options`` key or query id; no usable query in the split.
        """
        super().reset(seed=seed)
        if seed is not None:
            self.schedule.position = 0
            self.rating.seed(int(self.np_random.integers(2**63)))
        options = dict(options or {})
        unknown = sorted(set(options) - {"query_id"})
        if unknown:
            raise ValueError(f"{self.env_name}.reset: unknown options {unknown}; known: ['query_id']")
        if "query_id" in options:
            query = self.pipeline.query(str(options["query_id"]))
        else:
            query = self.schedule.next(self.np_random, self._usable)
        return self._begin(query)

    def _begin(self, query: Query) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start the episode that asks ``query``: its first observation and info."""
        raise NotImplementedError

    def _usable(self, query: Query) -> bool:
        """Whether an episode may ask ``query`` (one with no candidate only with ``include_empty``)."""
        raise NotImplementedError

    def episode_queries(self) -> list[Query]:
        """The queries of this environment's split that episodes are drawn from (every one with
        ``include_empty``; else those with candidates), in split order."""
        return [q for q in self.schedule.queries if self._usable(q)]

    # -- pickling: configuration, RNG streams and the episode, not the caches ---------------------------

    def _episode_state(self) -> dict[str, Any]:
        """What of the current episode a pickle keeps (plain values)."""
        raise NotImplementedError

    def _restore_episode(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`_episode_state` kept (the environment is freshly constructed)."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        return {
            "init": self._init_args | {"seed": None},
            "np_random": None if self._np_random is None else self._np_random.bit_generator.state,
            "rater": self.rating.get_state(),
            "position": self.schedule.position,
            **self._episode_state(),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state["init"])  # type: ignore[misc]
        if state["np_random"] is not None:
            rng = np.random.default_rng()
            rng.bit_generator.state = state["np_random"]
            self._np_random = rng
        self.rating.set_state(state["rater"])
        self.schedule.position = state["position"]
        self._restore_episode(state)
