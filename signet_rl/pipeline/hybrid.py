"""Hybrid search as the entry of the walk: the flat retriever's hits are the floor, and the walk goes from
there (docs/design.md §3).

For one query, :class:`HybridEntry` gathers the candidates the desire-path scorer chooses from, in pieces
that :class:`~signet_rl.traversal.config.TraversalConfig` switches on one by one (the ablations *floor only*,
*+ session DAG*, *+ entity walks*, *full*):

1. **floor** (``floor``) — the flat retriever's units (``best_flat``'s, frozen per dataset family) as
   length-0 paths, in its ranking (skipping, as the budget rule does, a unit that would overflow): a
   memory hit is the path ``M:<memory>``, an attribute hit (LoCoMo's observations are flat documents
   too) the own-fact path ``E:<owner>>A:<aspect>>T:<attribute>``; both carry ``strategy="floor"``.
   Every unit flat itself injects at the budget, then more of its ranking while the floor holds at most
   ``max_floor_paths`` and its text fits ``floor_budget_factor`` budgets.
2. **session steps** (``session``) — from the floor's first ``session_anchors`` memory hits, the typed
   steps of the session DAG (:class:`~signet_rl.traversal.session.SessionDAG`: neighbouring turns within
   ``session_window``, the same session, the next and previous sessions) as paths ``M:<anchor>>M:<turn>``
   (``strategy`` = the step kind); the ``session_paths`` whose turn is most similar to the query.
3. **entity walks** (``entity_walks``) — from the entry entities and the entities the floor's hits mention:
   co-mention steps to the memories that mention them (``E:<e>>M:<memory>``, strategy ``mention``) and one
   dependency hop further (``E:<e>>D:<d>>E:<f>>M:<memory>``, strategy ``dependency``); each entity gives
   its ``walk_memories_per_entity`` memories most similar to the query; the ``walk_paths`` best overall.
4. **graph walk** (``graph_walk``) — the intent's strategy walk over aspects and attributes
   (:class:`~signet_rl.traversal.walk.Traverser`), as before.

Bounds: at most ``max_paths`` candidates (pieces in the order above; slots one piece leaves unused go to the
next), and their text at most ``candidate_chars_factor`` (≤ 10) × the budget, the floor counted first. A
memory is a candidate once (its first piece). :attr:`Pool.sizes` reports how many each piece contributed.
Nothing here reads ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.extract import session_dag
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import KnowledgeGraph
from signet_rl.scorers.features import floor_first  # re-exported (it moved beside floor_prior)
from signet_rl.text.encoders import CachedEncoder, Encoder
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.construct import MemoryBuilder
from signet_rl.traversal.path import Hop, Path
from signet_rl.traversal.session import SessionDAG

__all__ = [
    "PIECES",
    "SESSION_SOURCES",
    "HybridEntry",
    "Pool",
    "density_order",
    "floor_first",
    "floor_head",
    "floor_part",
    "floor_share_first",
    "session_dag_of",
]

#: Candidate pieces, in the order they fill the candidate set.
PIECES: tuple[str, ...] = ("floor", "session", "walk", "graph")


#: Where the session DAG comes from (:attr:`~signet_rl.traversal.config.TraversalConfig.session_source`).
SESSION_SOURCES: tuple[str, ...] = ("tags", "graph", "auto")


def session_dag_of(graph: KnowledgeGraph, arrays: GraphArrays, source: str = "tags") -> SessionDAG:
    """The session DAG the walk steps through: from the memories' ``session_<n>`` tags (``tags``), from
    the extractor's session entities, their turns and ``next_session`` edges (``graph``;
    :func:`~signet_rl.datasets.extract.session_dag`), or the graph's when it has session entities and the
    tags' otherwise (``auto``). On an extracted LoCoMo conversation both give the same DAG; the graph's
    also serves a store whose memories carry no session tags.

    Raises:
        ValueError: an unknown source (naming the known ones).
    """
    if source not in SESSION_SOURCES:
        raise ValueError(f"unknown session_source {source!r}; known: {', '.join(SESSION_SOURCES)}")
    if source == "tags":
        return SessionDAG.from_graph(graph, arrays)
    dag = session_dag(graph)
    if source == "auto" and not dag.sessions:
        return SessionDAG.from_graph(graph, arrays)
    return SessionDAG.from_sessions(graph, [dag.turns[s] for s in dag.sessions], arrays)


@dataclass
class Pool:
    """One query's candidates from the hybrid entry, in piece order, with what scorers may know of them.

    Attributes:
        paths: the candidates (floor first, in the flat ranking).
        info: per path id, the :attr:`~signet_rl.scorers.base.ScoringContext.path_info` record.
        sizes: candidates per piece (``floor``, ``session``, ``walk``, ``graph``), their ``chars`` and the
            ``considered`` count before the bounds.
        hit_entities: entity ids the floor's hits mention (entity-walk sources besides the entries).
    """

    paths: list[Path] = field(default_factory=list)
    info: dict[str, dict[str, float]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    hit_entities: list[str] = field(default_factory=list)


class HybridEntry:
    """The hybrid entry over one graph (see the module docstring).

    Args:
        graph: the graph.
        arrays: its array view.
        builder: its :class:`MemoryBuilder` (candidate text lengths).
        encoder: the encoder of memory similarity (memories are encoded once, through the disk cache).
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        arrays: GraphArrays,
        builder: MemoryBuilder,
        encoder: Encoder,
        session_source: str = "tags",
    ) -> None:
        self.graph = graph
        self.arrays = arrays
        self.builder = builder
        self.dag = session_dag_of(graph, arrays, session_source)
        self.memory_index = {str(m): i for i, m in enumerate(arrays.memory_ids)}
        self.attr_index = {str(t): i for i, t in enumerate(arrays.attribute_ids)}
        text = graph.memories.set_index("id")["content"].reindex(arrays.memory_ids).fillna("").astype(str)
        self.memory_len = text.str.len().to_numpy(dtype=np.int64)
        self.encoder = encoder
        self._texts = text.tolist()
        self._vectors: npt.NDArray[np.float32] | None = None
        self._chars: dict[Path, int] = {}  # candidate text lengths (see chars)

    @property
    def vectors(self) -> npt.NDArray[np.float32]:
        """Memory embeddings in ``arrays`` memory order (encoded on first use)."""
        if self._vectors is None:
            if self._texts:
                self._vectors = np.asarray(CachedEncoder(self.encoder).encode(self._texts), dtype=np.float32)
            else:
                self._vectors = np.zeros((0, self.encoder.dim), dtype=np.float32)
        return self._vectors

    #: Most candidate text lengths :meth:`chars` keeps (then it starts afresh).
    CHARS_CACHE = 200_000

    def chars(self, path: Path) -> int:
        """The length of ``path``'s constructed text, which depends on the path alone (the graph is fixed),
        so each distinct candidate is constructed once for the bounds however many queries meet it."""
        n = self._chars.get(path)
        if n is None:
            if len(self._chars) >= self.CHARS_CACHE:
                self._chars.clear()
            n = self._chars[path] = self.builder.construct(path).chars
        return n

    # -- pieces --------------------------------------------------------------------------------------

    def floor(self, units: list[Unit], cfg: TraversalConfig, budget: int) -> list[tuple[Path, Unit, int]]:
        """The flat units as length-0 paths (memories) or own-fact paths (attributes), in flat's order,
        ``(path, unit, row)`` with ``row`` the memory row (-1 for an attribute), within the floor bounds."""
        a = self.arrays
        out: list[tuple[Path, Unit, int]] = []
        used = 0
        limit = cfg.floor_budget_factor * budget
        # what flat itself injects at this budget is always on the floor (so the slate built floor-first
        # makes the same choices flat does); more of its ranking follows while the floor bounds allow
        injected = {id(u) for u in fit_budget(list(units), budget)}
        for u in units:
            must = id(u) in injected
            if not must and len(out) >= cfg.max_floor_paths:
                continue
            if len(u.items) != 1:
                continue  # a constraints section or a merged unit: not one row
            item = str(u.items[0])
            if item in self.memory_index:
                path, row = Path((Hop.memory(item),), strategy="floor"), self.memory_index[item]
            elif item in self.attr_index:
                t = self.attr_index[item]
                asp, ent = int(a.attr_aspect[t]), int(a.attr_entity[t])
                if asp < 0 or ent < 0:
                    continue
                hops = (
                    Hop.entity(str(a.entity_ids[ent])),
                    Hop.aspect(str(a.aspect_ids[asp])),
                    Hop.attribute(item),
                )
                path, row = Path(hops, strategy="floor"), -1
            else:
                continue
            if not must and used + u.chars > limit:
                continue  # as the budget rule does: a later, shorter unit may still fit
            used += u.chars
            out.append((path, u, row))
        return out

    def session_steps(
        self,
        anchors: list[int],
        taken: set[int],
        qv: np.ndarray | None,
        cfg: TraversalConfig,
        t: float | None,
    ) -> list[tuple[Path, int, float]]:
        """Session-DAG steps from ``anchors`` (memory rows) to memories not ``taken``, most similar to the
        query first: ``(path, memory row, similarity)``."""
        steps = self.dag.steps(anchors[: cfg.session_anchors], window=cfg.session_window, t=t)
        steps = [(m, kind, anchor) for m, kind, anchor in steps if m not in taken]
        if not steps:
            return []
        rows = np.asarray([m for m, _, _ in steps], dtype=np.int64)
        sims = self._sims(rows, qv)
        # the nearest steps first at equal similarity (turn before session before next/previous)
        order = np.argsort(-sims, kind="stable")
        ids = self.arrays.memory_ids
        out = []
        for j in order.tolist():
            m, kind, anchor = steps[j]
            path = Path((Hop.memory(str(ids[anchor])), Hop.memory(str(ids[m]))), strategy=kind)
            out.append((path, m, float(sims[j])))
        return out

    def entity_walks(
        self,
        sources: list[str],
        taken: set[int],
        qv: np.ndarray | None,
        cfg: TraversalConfig,
        t: float | None,
        conf_ok: npt.NDArray[np.bool_],
    ) -> list[tuple[Path, int, float]]:
        """Co-mention and one-dependency-hop walks from ``sources`` (entity ids) to memories not ``taken``,
        most similar to the query first: ``(path, memory row, similarity)``."""
        a = self.arrays
        visible = self.dag.visible(t)
        found: list[tuple[tuple[Hop, ...], int, float]] = []
        src = [a.entity_index[e] for e in dict.fromkeys(sources) if e in a.entity_index]
        k = cfg.walk_memories_per_entity
        blocked = np.zeros(len(a.memory_ids), dtype=bool)  # the taken rows, once per query (not an isin
        blocked[np.fromiter(taken, np.int64, len(taken))] = True  # per walked entity)

        def best(e: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
            mems = a.memories_of(e)
            mems = mems[visible[mems] & ~blocked[mems]]
            if not len(mems):
                return mems, np.zeros(0)
            sims = self._sims(mems, qv)
            top = np.argsort(-sims, kind="stable")[:k]
            return mems[top], sims[top]

        for e in src:
            head = Hop.entity(str(a.entity_ids[e]))
            mems, sims = best(e)
            for m, s in zip(mems.tolist(), sims.tolist(), strict=True):
                found.append(((head, Hop.memory(str(a.memory_ids[m]))), m, s))
            if not len(a.edge_ids):
                continue
            slots, _ = a.frontier_slots(np.asarray([e], dtype=np.int64))
            ok = conf_ok[slots]
            if t is not None:
                ok &= ~(a.edge_created[a.dep_edge[slots]] > t)
            for s_ in slots[ok][: cfg.max_branching].tolist():
                f = int(a.dep_neighbor[s_])
                mems, sims = best(f)
                dep = Hop.dependency(str(a.edge_ids[a.dep_edge[s_]]), int(a.dep_direction[s_]))
                for m, s in zip(mems[:1].tolist(), sims[:1].tolist(), strict=True):
                    hops = (head, dep, Hop.entity(str(a.entity_ids[f])), Hop.memory(str(a.memory_ids[m])))
                    found.append((hops, m, s))
        found.sort(key=lambda x: -x[2])
        out, seen = [], set()
        for hops, m, s in found:
            if m in seen:
                continue
            seen.add(m)
            strategy = "dependency" if len(hops) > 2 else "mention"
            out.append((Path(hops, strategy=strategy), m, s))
        return out

    #: Turns either side of a candidate whose flat scores :meth:`flat_context` sums (context smoothing).
    CONTEXT_WINDOW = 2

    def flat_ranking(self, flat_units: list[Unit]) -> dict[int, tuple[int, float]]:
        """Flat's whole ranking of one query by memory row: ``row -> (rank, fused score / the top score)``
        (a memory's first unit; units that are not one memory are skipped)."""
        top = max((float(u.score) for u in flat_units[:1]), default=0.0)
        scale = 1.0 / top if top > 0 else 1.0
        out: dict[int, tuple[int, float]] = {}
        for rank, u in enumerate(flat_units):
            if len(u.items) == 1:
                row = self.memory_index.get(str(u.items[0]))
                if row is not None and row not in out:
                    out[row] = (rank, float(u.score) * scale)
        return out

    def flat_context(self, row: int, flat_rows: dict[int, tuple[int, float]]) -> dict[str, float]:
        """What flat's whole ranking says about memory ``row`` and its neighbouring turns, read at serve time
        (never ground truth): ``flat_any`` its own fused score over flat's top score (0 when flat does not
        rank it: beyond the floor, flat's scores still order session and walk units), ``flat_any_rank_inv``
        ``1 / (1 + its rank)``, and over the turns up to :data:`CONTEXT_WINDOW` places either side in the same
        session, ``neigh_flat_max`` / ``neigh_flat_sum`` of their relative scores (context smoothing: an
        answer is often the turn next to a hit). All 0 for ``row < 0`` (an attribute unit)."""
        out = dict.fromkeys(("flat_any", "flat_any_rank_inv", "neigh_flat_max", "neigh_flat_sum"), 0.0)
        if row < 0:
            return out
        rank, score = flat_rows.get(row, (-1, 0.0))
        if rank >= 0:
            out["flat_any"], out["flat_any_rank_inv"] = score, 1.0 / (1.0 + rank)
        dag = self.dag
        pos, sess = int(dag.rank[row]), int(dag.session[row])
        for d in range(-self.CONTEXT_WINDOW, self.CONTEXT_WINDOW + 1):
            if d == 0 or not 0 <= pos + d < len(dag.order):
                continue
            other = int(dag.order[pos + d])
            if int(dag.session[other]) != sess:
                continue
            s = flat_rows.get(other, (-1, 0.0))[1]
            out["neigh_flat_max"] = max(out["neigh_flat_max"], s)
            out["neigh_flat_sum"] += s
        return out

    def _sims(self, rows: npt.NDArray[np.int64], qv: np.ndarray | None) -> npt.NDArray[np.float64]:
        if qv is None or not len(rows):
            return np.zeros(len(rows))
        return (self.vectors[rows] @ np.asarray(qv, dtype=np.float32)).astype(np.float64)

    # -- the candidate set ---------------------------------------------------------------------------

    def pool(
        self,
        query: Query,
        cfg: TraversalConfig,
        budget: int,
        flat_units: list[Unit],
        entries: list[str],
        qv: np.ndarray | None,
        t: float | None,
        conf_ok: npt.NDArray[np.bool_],
        graph_paths: list[Path],
        desire: list[tuple[Path, int]] | None = None,
    ) -> Pool:
        """The bounded candidate set of ``query`` (see the module docstring).

        ``desire``: worn shortcuts to offer as candidates, ``(path, memory row)`` best first (learned online
        from ratings: :class:`~signet_rl.learning.desire_edges.OnlineDesire`); they fill the slots right
        after the floor (a memory already on the floor stays a floor unit) and take theirs from the last
        session and walk units, within the same ``max_paths`` and character bounds. The caller caps their
        number. ``None`` or empty: the pool is exactly the one without them."""
        a = self.arrays
        out = Pool()
        floor = self.floor(flat_units, cfg, budget) if cfg.floor else []
        anchors = [row for _, _, row in floor if row >= 0]
        if not cfg.floor and (cfg.session or cfg.entity_walks):
            # without the floor as candidates, flat's hits still anchor the session steps and walks
            anchors = [self.memory_index[str(u.items[0])] for u in flat_units[: cfg.max_floor_paths]
                       if len(u.items) == 1 and str(u.items[0]) in self.memory_index]  # fmt: skip
        taken: set[int] = set(anchors)
        hit_entities: list[str] = []
        for row in anchors:
            hit_entities += [str(a.entity_ids[e]) for e in a.entities_of(row).tolist()]
        for path, _, row in floor:
            if row < 0:
                hit_entities.append(path.start)
        out.hit_entities = list(dict.fromkeys(hit_entities))
        entry_set = set(entries)

        def overlap(path: Path, rows: list[int]) -> float:
            ents = set(path.entities)
            for r in rows:
                ents.update(str(a.entity_ids[e]) for e in a.entities_of(r).tolist())
            return float(len(ents & entry_set))

        pieces: dict[str, list[tuple[Path, int, float, int]]] = {p: [] for p in PIECES}
        flat_scores: dict[str, tuple[float, float, float]] = {}
        in_flat_slate: dict[str, bool] = {}
        flat_rows = self.flat_ranking(flat_units)
        flat_slate = {id(u) for u in fit_budget(list(flat_units), budget)}  # what flat itself injects
        for rank, (path, unit, row) in enumerate(floor):
            v = float(unit.meta.get("vector", 0.0) or 0.0)
            k = float(unit.meta.get("keyword", 0.0) or 0.0)
            pieces["floor"].append((path, row, float(unit.score), rank))
            flat_scores[path.id] = (v, k, float(unit.score))
            in_flat_slate[path.id] = id(unit) in flat_slate
        if cfg.session and anchors:
            for path, m, s in self.session_steps(anchors, taken, qv, cfg, t):
                pieces["session"].append((path, m, s, -1))
        session_taken = taken | {m for _, m, _, _ in pieces["session"][: cfg.session_paths]}
        if cfg.entity_walks:
            sources = [*entries, *out.hit_entities]
            for path, m, s in self.entity_walks(sources, session_taken, qv, cfg, t, conf_ok):
                pieces["walk"].append((path, m, s, -1))
        if cfg.graph_walk:
            pieces["graph"] = [(p, -1, 0.0, -1) for p in graph_paths]
        caps = {"floor": cfg.max_floor_paths, "session": cfg.session_paths, "walk": cfg.walk_paths,
                "graph": cfg.max_paths}  # fmt: skip
        order: tuple[str, ...] = PIECES
        if desire:
            pieces["desire"] = [(p, m, 0.0, -1) for p, m in desire]
            caps["desire"] = len(desire)
            order = ("floor", "desire", *PIECES[1:])
        chosen: list[tuple[str, tuple[Path, int, float, int]]] = []
        for name in order:
            chosen += [(name, c) for c in pieces[name][: caps[name]]]
        for name in order:  # slots a piece left unused go to the others' overflow, in piece order
            chosen += [(name, c) for c in pieces[name][caps[name] :]]
        char_cap = cfg.candidate_chars_factor * budget
        used = 0
        seen_paths: set[Path] = set()
        seen_rows: set[int] = set()
        sizes = dict.fromkeys(order, 0)
        for name, (path, row, _score, rank) in chosen:
            if len(out.paths) >= cfg.max_paths:
                break
            if path in seen_paths or (row >= 0 and row in seen_rows):
                continue
            chars = self.chars(path)
            if used + chars > char_cap:
                continue
            used += chars
            seen_paths.add(path)
            if row >= 0:
                seen_rows.add(row)
            out.paths.append(path)
            sizes[name] += 1
            rows = [row] if row >= 0 else []
            v, k, f = flat_scores.get(path.id, (0.0, 0.0, 0.0))
            dist = int(self.dag.distance(rows, anchors)[0]) if rows and anchors else -1
            near = self.flat_context(row, flat_rows)
            out.info[path.id] = {
                **near,
                "chars": float(chars),
                "flat_vector": v,
                "flat_keyword": k,
                "flat_fused": f,
                "floor_rank": float(rank),
                "flat_slate": float(in_flat_slate.get(path.id, False)),
                "session_distance": float(dist),
                "memory_sim": float(self._sims(np.asarray(rows, dtype=np.int64), qv).max()) if rows else 0.0,
                "query_overlap": overlap(path, rows),
            }
        out.sizes = {**sizes, "chars": used, "considered": sum(len(v) for v in pieces.values())}
        return out


def density_order(scores: np.ndarray, chars: list[int]) -> np.ndarray:
    """Scores that order candidates by ``score / chars`` (the value per character of budget), the
    positive-scored ones first, then the rest in score order: rank values in ``(0, n]``, best highest.

        >>> density_order(np.array([0.5, 0.3, -1.0, 0.2]), [500, 100, 10, 100]).tolist()
        [2.0, 4.0, 1.0, 3.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    n = len(s)
    key = np.where(s > 0, s / np.maximum(np.asarray(chars, dtype=np.float64), 1.0), -np.inf)
    order = np.lexsort((-s, -key))  # by density, then (the non-positive ones) by score
    out = np.empty(n, dtype=np.float64)
    out[order] = n - np.arange(n, dtype=np.float64)
    return out


def floor_head(
    paths: list[Path], info: dict[str, dict[str, float]], chars: list[int], budget: int, share: float
) -> npt.NDArray[np.bool_]:
    """Which candidates are ``best_flat``'s head under a budget split: the floor units that fit ``share ×
    budget`` characters, taken in flat's order (a unit that would overflow is skipped, as the budget rule
    skips it). ``[len(paths)]``."""
    ranks = np.asarray([info.get(p.id, {}).get("floor_rank", -1.0) for p in paths], dtype=np.float64)
    head = np.zeros(len(paths), dtype=bool)
    room = share * budget
    used = 0
    for i in np.flatnonzero(ranks >= 0)[np.argsort(ranks[ranks >= 0], kind="stable")].tolist():
        if used + chars[i] <= room:
            used += chars[i]
            head[i] = True
    return head


def floor_part(unit: Unit, info: dict[str, dict[str, float]], head: set[str]) -> dict[str, str]:
    """Which part of ``best_flat``'s floor an injected desire unit came from, as ``{"floor_part": ...}``
    (empty for a unit off the floor: a session step, a walk, the constraints section): ``head`` — the floor
    units ``floor_keep`` injects in flat's order (path ids in ``head``); ``flat`` — a unit flat itself
    injects at the budget that the scorer placed; ``deep`` — a unit of flat's ranking beyond its own slate,
    so only the scorer's re-ranking injects it. Serve-time bookkeeping for the evaluation's
    ``floor_rest_share`` and ``floor_deep_share`` (how much of a learned slate is flat's floor re-ranked)."""
    pid = unit.meta.get("path_id")
    rec = info.get(str(pid), {}) if pid is not None else {}
    if rec.get("floor_rank", -1.0) < 0:
        return {}
    if pid in head:
        return {"floor_part": "head"}
    return {"floor_part": "flat" if rec.get("flat_slate", 0.0) > 0 else "deep"}


def floor_share_first(
    scores: np.ndarray,
    paths: list[Path],
    info: dict[str, dict[str, float]],
    chars: list[int],
    budget: int,
    share: float,
    head: npt.NDArray[np.bool_] | None = None,
) -> np.ndarray:
    """:func:`floor_first` with the budget split between the floor and the walks
    (:attr:`~signet_rl.traversal.config.TraversalConfig.floor_share`): the floor units that fit
    ``share × budget`` characters, taken in flat's order (a unit that would overflow is skipped, as the
    budget rule skips it), go first in that order (scores in ``(1, 2]``); every other candidate — the rest
    of the floor, session steps and walks alike — follows in the scorer's order (scores in ``[0, 1)``), so
    a walked or session unit the scorer rates above flat's later hits takes their place. ``share >= 1`` is
    :func:`floor_first` exactly. ``head``: :func:`floor_head` of the same arguments, when the caller
    already has it (it is not computed twice)."""
    if share >= 1.0:
        return floor_first(scores, paths, info)
    n = len(paths)
    ranks = np.asarray([info.get(p.id, {}).get("floor_rank", -1.0) for p in paths], dtype=np.float64)
    out = np.zeros(n, dtype=np.float64)
    guaranteed = floor_head(paths, info, chars, budget, share) if head is None else head
    ng = max(int(guaranteed.sum()), 1)
    out[guaranteed] = 2.0 - ranks[guaranteed] / (ng + 1.0)
    rest = np.flatnonzero(~guaranteed)
    if len(rest):
        order = rest[np.argsort(-np.asarray(scores, dtype=np.float64)[rest], kind="stable")]
        out[order] = 1.0 - (np.arange(len(order)) + 1.0) / (len(order) + 1.0)
    return out
