"""The constellation: a graph's entities, its Leiden communities and the desire paths a run wore into it.

Entities are nodes coloured by Leiden community (:func:`~signet_rl.graph.communities.detect_communities`)
and sized by degree (or by Signet's ``mentions`` counter); principles (``entity_type == "principle"``) are
stars. Dependency edges are drawn with width and brightness from the learned desire-path weight of the
run's edge statistics (:class:`~signet_rl.learning.reinforcement.EdgeStats`, saved in the run folder's
checkpoint): hot paths bright and thick, untouched ones dim, faded ones (weakened below their start)
dimmest. Without a run (a dataset spec or a store) every edge is untouched.

A graph with more than ``max_nodes`` entities (``synthetic:xl`` has 43,520) is drawn as **super-nodes**, one
per community sized by its members and joined by bundles of the dependencies between them, with the
endpoints of the ``hot`` most reinforced edges drawn as entities beside their community, so the desire
paths stay visible at any size.

Two renderings of one :class:`Constellation`: a static PNG (:func:`draw_png`, matplotlib) and an interactive
HTML page (:func:`draw_html`, pyvis/vis-network with the positions fixed and the library inlined, so it
opens offline and stays responsive with a few thousand nodes). ``python -m signet_rl.viz constellation``
is the command line.
"""

from __future__ import annotations

import html
import json
import os
import pickle
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import igraph as ig
import numpy as np
import numpy.typing as npt
import pandas as pd

from signet_rl.core.run_folder import MARKER
from signet_rl.datasets.base import Dataset
from signet_rl.datasets.registry import load_dataset
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.communities import Communities, community_edges, detect_communities
from signet_rl.graph.model import EntityType, KnowledgeGraph
from signet_rl.learning.reinforcement import EdgeStats
from signet_rl.traversal.path import Path as GraphPath

__all__ = [
    "MAX_NODES",
    "Constellation",
    "RunView",
    "build_constellation",
    "desire_weights",
    "draw_html",
    "draw_png",
    "open_source",
    "overlay_emergence",
    "strongest_paths",
]

#: Above this many entities a graph is drawn as community super-nodes.
MAX_NODES = 3000
#: Reinforced edges drawn entity to entity in super-node mode.
HOT_EDGES = 150
BACKGROUND = "#0b1020"
_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#1f77b4",
    "#17becf",
    "#bcbd22",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#c5b0d5",
)
CHECKPOINT = "checkpoint.pkl"  # the bandit trainer's checkpoint (signet_rl.learning.trainer.CHECKPOINT)
FEEDBACK = "feedback.parquet"


# ----------------------------------------------------------------------------------------------------
# Sources


@dataclass
class RunView:
    """What the pictures read: a dataset and, for a training run, its edge statistics and feedback log.

    Attributes:
        dataset: the run's dataset (or the one the spec names).
        stats: graph id -> the run's learned edge statistics; empty for a plain dataset or store.
        feedback: the run's feedback log (one row per rated interaction), or None.
        source: what was opened (a folder or a spec), for titles.
        step: the training step the statistics were saved at (0 without a run).
    """

    dataset: Dataset
    stats: dict[str, EdgeStats] = field(default_factory=dict)
    feedback: pd.DataFrame | None = None
    source: str = ""
    step: int = 0
    emergence: dict[str, Any] = field(default_factory=dict)

    def graph_id(self, requested: str | None = None) -> str:
        """``requested`` when given (checked), else the graph the run walked most (else the first graph)."""
        graphs = list(self.dataset.graphs)
        if requested is not None:
            if requested not in self.dataset.graphs:
                shown = ", ".join(graphs[:8]) + (" ..." if len(graphs) > 8 else "")
                raise ValueError(f"graph {requested!r} is not in {self.dataset.name}; it has {shown}")
            return requested
        if self.stats:
            return max(graphs, key=lambda g: int(self.stats[g].walks.sum()) if g in self.stats else -1)
        return graphs[0]


def _run_dataset(folder: Path) -> Dataset:
    """The dataset a run folder was trained on, from the fingerprint in its run marker."""
    record = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    fp: dict[str, Any] = record.get("fingerprint", {})
    spec = fp.get("dataset.spec") or fp.get("dataset")  # the entry point's key, or the trainer's own
    if not spec:
        raise ValueError(f"run marker {folder / MARKER} names no dataset; is {folder} a bandit run?")
    prefix = "dataset.options."
    options: dict[str, Any] = {}
    for key, value in fp.items():
        if key.startswith(prefix):
            node = options
            *parents, leaf = key[len(prefix) :].split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = value
    return load_dataset(str(spec), options=options or None)


def open_source(source: str | os.PathLike[str]) -> RunView:
    """Open a run folder, a Signet store (``.db``) or a dataset spec (``synthetic:small``) for drawing.

    Raises:
        ValueError: a folder that is not a run folder, or a run folder without a checkpoint (it has not
            trained yet), naming it and the way out; a bad spec raises the registry's error.
    """
    text = str(source)
    path = Path(text)
    if path.is_dir():
        if not (path / MARKER).exists():
            raise ValueError(
                f"{path} is not a signet_rl run folder (no {MARKER}); pass a run folder "
                "(runs/bandit/...), a dataset spec (synthetic:small) or a Signet store (.db)"
            )
        ckpt = path / CHECKPOINT
        if not ckpt.exists():
            raise ValueError(
                f"run folder {path} has no {CHECKPOINT} yet: nothing was learned there; train it first "
                "or draw the dataset spec instead"
            )
        dataset = _run_dataset(path)
        with open(ckpt, "rb") as fh:
            state = pickle.load(fh)  # the trainer's own checkpoint
        stats = {str(g): EdgeStats.from_state_dict(s) for g, s in state.get("stats", {}).items()}
        feedback = pd.read_parquet(path / FEEDBACK) if (path / FEEDBACK).exists() else None
        return RunView(dataset, stats, feedback, source=path.name, step=int(state.get("step", 0)),
                       emergence=_run_emergence(path / "artifacts"))
    if text.endswith(".db") and path.is_file():
        text = f"signet:{path}"
    return RunView(load_dataset(text), source=text)


# ----------------------------------------------------------------------------------------------------
# The picture's data


@dataclass
class Constellation:
    """A laid-out picture of one graph (see the module docstring).

    Attributes:
        nodes: one row per drawn node: ``key`` (entity id, or ``community:<n>``), ``label``, ``kind``
            (``entity``, ``principle`` or ``community``), ``community``, ``size`` (marker area, points²),
            ``x``, ``y``, ``color``, ``degree``, ``members`` (1 for an entity), ``title`` (hover text).
        edges: one row per drawn edge, coldest first (drawing order): ``source``, ``target`` (node keys),
            ``kind`` (``desire``: a dependency with its learned weight; ``bundle``: the dependencies
            between two super-nodes), ``edge_id``, ``weight`` (mean desire-path weight, 1 = untouched),
            ``walks``, ``heat`` in [0, 1], ``width`` (points) and ``alpha``.
        mode: ``entities`` or ``communities`` (super-nodes).
        communities: the Leiden partition of the whole graph.
        title: a one-line description.
    """

    nodes: pd.DataFrame
    edges: pd.DataFrame
    mode: str
    communities: Communities
    title: str
    graph_id: str = "main"
    meta: dict[str, Any] = field(default_factory=dict)

    def hottest(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` drawn desire edges with the greatest width (ties: greater weight first)."""
        desire = self.edges[self.edges["kind"] == "desire"]
        return desire.sort_values(["width", "weight"], ascending=False, kind="stable").head(k)


def desire_weights(
    arrays: GraphArrays, stats: EdgeStats | None, intent: str | None = None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Each dependency's learned desire-path weight and how many rated paths walked it.

    The statistics keep one weight per (intent, time-of-day bucket) cell; a path reinforces one cell, so a
    mean over the cells would hide a route worn for one intent. The weight drawn is the edge's strongest
    cell when any is above 1 (reinforced), else its weakest (1 when untouched, below 1 when faded); with
    ``intent``, over that intent's cells only.

    Returns:
        ``(weight, walks)``, shapes ``[E]``; ones and zeros without statistics.

    Raises:
        ValueError: statistics for another graph (a different edge count).
    """
    n = arrays.num_dependencies
    if stats is None:
        return np.ones(n), np.zeros(n, dtype=np.int64)
    if stats.num_edges != n:
        raise ValueError(
            f"edge statistics cover {stats.num_edges} edges but the graph has {n} dependencies; "
            "the run was trained on another version of this dataset"
        )
    cells = stats.weights.astype(np.float64)
    if intent is not None:
        if intent not in stats.intents:
            raise ValueError(f"intent {intent!r} has no statistics; the run has {', '.join(stats.intents)}")
        cells = cells[:, [stats.intents.index(intent)]]
    cells = cells.reshape(n, -1)
    high, low = cells.max(axis=1, initial=1.0), cells.min(axis=1, initial=1.0)
    return np.where(high > 1.0, high, low), stats.walks.astype(np.int64)


def _heat(weight: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Map weights to [0, 1], strictly increasing in the weight: untouched (1.0) is 0.25, the run's most
    reinforced edge 1, its most faded 0 (log scale on each side): the hottest paths of any run are bright."""
    lw = np.log(np.clip(weight, 1e-9, None))
    up = max(float(lw.max()), 1e-6) if len(lw) else 1.0
    down = max(float(-lw.min()), 1e-6) if len(lw) else 1.0
    hot = 0.25 + 0.75 * np.clip(lw / up, 0, 1)
    cold = 0.25 * (1 - np.clip(-lw / down, 0, 1))
    return np.where(lw >= 0, hot, cold)


def _normalise(xy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Centre ``xy`` and scale it into the unit disk."""
    if len(xy) == 0:
        return xy
    xy = xy - xy.mean(axis=0)
    r = np.sqrt((xy**2).sum(axis=1)).max()
    return xy / r if r > 0 else xy


def _fr(
    n: int,
    u: npt.NDArray[np.int64],
    v: npt.NDArray[np.int64],
    w: npt.NDArray[np.float64],
    rng: np.random.Generator,
) -> npt.NDArray[np.float64]:
    """A seeded Fruchterman-Reingold layout of ``n`` vertices (igraph), normalised to the unit disk."""
    if n == 1:
        return np.zeros((1, 2))
    g = ig.Graph(n=n, edges=np.column_stack([u, v]).tolist(), directed=False)
    start = rng.uniform(-1, 1, size=(n, 2)).tolist()
    weights = np.log1p(w).tolist() if len(w) else None
    state = random.getstate()  # igraph draws from Python's generator: seed it, then put it back
    random.seed(int(rng.integers(2**31)))
    try:
        layout = g.layout_fruchterman_reingold(weights=weights, seed=start, niter=300 if n < 2000 else 150)
    finally:
        random.setstate(state)
    xy = np.asarray(layout.coords, dtype=np.float64)
    xy = xy - np.median(xy, axis=0)
    norm = np.sqrt((xy**2).sum(axis=1))
    cap = float(np.quantile(norm, 0.9)) * 1.15 if n > 4 else 0.0
    if cap > 0:  # unconnected vertices drift far out in FR: pull them to the rim
        xy *= (np.minimum(norm, cap) / np.maximum(norm, 1e-12))[:, None]
    return _normalise(xy)


def _separate(
    centre: npt.NDArray[np.float64], radius: npt.NDArray[np.float64], rounds: int = 200, gap: float = 1.15
) -> npt.NDArray[np.float64]:
    """Push overlapping discs apart (and pull the picture together) until no two overlap."""
    c = centre.copy()
    for _ in range(rounds):
        d = c[:, None, :] - c[None, :, :]
        dist = np.sqrt((d**2).sum(-1)) + np.eye(len(c))
        need = (radius[:, None] + radius[None, :]) * gap
        over = np.clip(need - dist, 0, None)
        np.fill_diagonal(over, 0)
        if not over.any():
            break
        push = (d / dist[..., None] * over[..., None] / 2).sum(axis=1)
        c += push
    return c


def _layout(
    n: int,
    membership: npt.NDArray[np.int64],
    u: npt.NDArray[np.int64],
    v: npt.NDArray[np.int64],
    w: npt.NDArray[np.float64],
    seed: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Two-level layout: community discs placed by a layout of the community graph (area ∝ members, no
    overlaps), each community's members by a layout of its own subgraph inside its disc.

    Returns:
        ``(xy [N, 2], centres [C, 2], radii [C])``.
    """
    rng = np.random.default_rng(seed)
    k = int(membership.max()) + 1 if n else 0
    sizes = np.bincount(membership, minlength=k).astype(np.float64)
    cu, cv = membership[u], membership[v]
    between = cu != cv
    key = np.minimum(cu, cv)[between] * k + np.maximum(cu, cv)[between]
    uniq, inv = np.unique(key, return_inverse=True)
    cw = np.bincount(inv, weights=w[between], minlength=len(uniq)).astype(np.float64)
    centres = _fr(k, uniq // k, uniq % k, cw, rng) * np.sqrt(k) if k else np.zeros((0, 2))
    radius = 0.5 * np.sqrt(sizes / max(sizes.max(), 1.0)) if k else np.zeros(0)
    radius = np.maximum(radius, 0.06)
    centres = _separate(centres, radius)
    xy = np.zeros((n, 2))
    order = np.argsort(membership, kind="stable")
    bounds = np.searchsorted(membership[order], np.arange(k + 1))
    inside = ~between
    iu, iv, iw = u[inside], v[inside], w[inside]
    local = np.full(n, -1, dtype=np.int64)
    for c in range(k):
        members = order[bounds[c] : bounds[c + 1]]
        local[members] = np.arange(len(members))
        sel = membership[iu] == c
        sub = _fr(len(members), local[iu[sel]], local[iv[sel]], iw[sel], rng)
        xy[members] = centres[c] + sub * radius[c] * 0.92
    return xy, centres, radius


def _colour(community: npt.NDArray[np.int64]) -> list[str]:
    return [_PALETTE[int(c) % len(_PALETTE)] for c in community]


def build_constellation(
    graph: KnowledgeGraph,
    stats: EdgeStats | None = None,
    *,
    max_nodes: int = MAX_NODES,
    hot: int = HOT_EDGES,
    size_by: str = "degree",
    intent: str | None = None,
    seed: int = 0,
    communities: Communities | None = None,
    title: str = "",
    graph_id: str = "main",
) -> Constellation:
    """Lay out ``graph`` with its communities and desire-path weights (see the module docstring).

    Args:
        graph: the knowledge graph.
        stats: the run's edge statistics for this graph (None: every edge untouched).
        max_nodes: above this many entities, draw community super-nodes.
        hot: in super-node mode, the reinforced edges drawn entity to entity.
        size_by: ``degree`` (dependencies per entity) or ``mentions`` (Signet's mention counter).
        intent: desire weights of one intent (None: averaged over intents and time buckets).
        seed: seeds Leiden and the layout; same seed, same picture.
        communities: a partition already detected for ``graph``.

    Raises:
        ValueError: a bad ``size_by``, ``max_nodes`` or ``hot``; statistics of another graph.
    """
    if size_by not in ("degree", "mentions"):
        raise ValueError(f"size_by={size_by!r}; use 'degree' or 'mentions'")
    if max_nodes < 1 or hot < 0:
        raise ValueError(f"max_nodes={max_nodes} must be >= 1 and hot={hot} >= 0")
    arrays = GraphArrays.from_graph(graph)
    found = communities if communities is not None else detect_communities(graph, seed=seed)
    membership = np.asarray(found.membership, dtype=np.int64)
    n = arrays.num_entities
    weight, walks = desire_weights(arrays, stats, intent)
    floor, ceiling = (stats.floor, stats.ceiling) if stats is not None else (0.2, 3.0)
    heat = _heat(weight)
    src, dst = arrays.edge_source.astype(np.int64), arrays.edge_target.astype(np.int64)
    degree = np.bincount(np.concatenate([src, dst]), minlength=n).astype(np.float64)
    value = degree if size_by == "degree" else arrays.entity_mentions.astype(np.float64)
    types = np.asarray(arrays.entity_type_vocab, dtype=object)[arrays.entity_type] if n else np.zeros(0)
    names = graph.entities["name"].fillna("").astype(str).to_numpy()
    u, v, w = community_edges(arrays)
    xy, centres, radius = _layout(n, membership, u, v, w, seed)
    labels = found.labels
    reinforced = int((walks > 0).sum())
    base = title or f"{graph_id}: {n:,} entities, {arrays.num_dependencies:,} dependencies"
    walk_note = f"{reinforced:,} edges walked" if stats is not None else "no run: edges untouched"
    info = f"{found.num_communities} Leiden communities (modularity {found.modularity:.2f}); {walk_note}"

    def entity_nodes(idx: npt.NDArray[np.int64], scale: float) -> pd.DataFrame:
        vmax = max(float(value.max()), 1.0) if n else 1.0
        kinds = np.where(types[idx] == EntityType.PRINCIPLE, "principle", "entity")
        return pd.DataFrame(
            {
                "key": arrays.entity_ids[idx].astype(str),
                "label": names[idx],
                "kind": kinds,
                "community": membership[idx],
                "size": scale * (4 + 60 * np.sqrt(value[idx] / vmax)),
                "x": xy[idx, 0],
                "y": xy[idx, 1],
                "color": _colour(membership[idx]),
                "degree": degree[idx],
                "members": 1,
                "title": [
                    f"{names[i]} ({types[i]})\ncommunity {membership[i]}: {labels[membership[i]]}\n"
                    f"degree {int(degree[i])}, mentions {int(arrays.entity_mentions[i])}"
                    for i in idx
                ],
            }
        )

    def desire_edges(sel: npt.NDArray[np.int64], key_of: Any) -> pd.DataFrame:
        h = heat[sel]
        return pd.DataFrame(
            {
                "source": key_of(src[sel]),
                "target": key_of(dst[sel]),
                "kind": "desire",
                "edge_id": arrays.edge_ids[sel].astype(str),
                "weight": weight[sel],
                "walks": walks[sel],
                "heat": h,
                "width": 0.25 + 3.75 * h**2,
                "alpha": 0.06 + 0.94 * h**1.5,
            }
        )

    if n <= max_nodes:
        nodes = entity_nodes(np.arange(n), 1.0 if n < 800 else 0.5)
        edges = desire_edges(np.arange(arrays.num_dependencies), lambda i: arrays.entity_ids[i].astype(str))
        mode = "entities"
    else:
        k = found.num_communities
        sizes = np.asarray(found.sizes, dtype=np.float64)
        comm = pd.DataFrame(
            {
                "key": [f"community:{c}" for c in range(k)],
                "label": list(labels),
                "kind": "community",
                "community": np.arange(k),
                "size": 30 + 900 * np.sqrt(sizes / sizes.max()),
                "x": centres[:, 0],
                "y": centres[:, 1],
                "color": _colour(np.arange(k)),
                "degree": 0.0,
                "members": sizes.astype(np.int64),
                "title": [
                    f"community {c}: {labels[c]}\n{int(sizes[c]):,} entities, cohesion "
                    f"{found.cohesion[c]:.2f}"
                    for c in range(k)
                ],
            }
        )
        cs, cd = membership[src], membership[dst]
        cross = cs != cd
        key = np.minimum(cs, cd)[cross] * k + np.maximum(cs, cd)[cross]
        uniq, count = np.unique(key, return_counts=True)
        if len(uniq) > 4 * k:  # a hairball otherwise: keep each community's strongest bundles
            keep = count >= np.quantile(count, 1 - 4 * k / len(uniq))
            uniq, count = uniq[keep], count[keep]
        scale = np.log1p(count) / np.log1p(max(int(count.max()), 1)) if len(count) else count
        bundles = pd.DataFrame(
            {
                "source": [f"community:{a}" for a in uniq // k],
                "target": [f"community:{b}" for b in uniq % k],
                "kind": "bundle",
                "edge_id": [f"{c} dependencies" for c in count],
                "weight": np.nan,
                "walks": 0,
                "heat": 0.0,
                "width": 0.3 + 2.5 * scale,
                "alpha": 0.05 + 0.2 * scale,
            }
        )
        walked = np.flatnonzero(weight > 1.0)
        top = walked[np.argsort(-weight[walked], kind="stable")[:hot]]
        ends = np.unique(np.concatenate([src[top], dst[top]]))
        # hot entities sit on their community's disc, spread on a ring around the centre
        rng = np.random.default_rng(seed)
        angle = rng.uniform(0, 2 * np.pi, len(ends))
        cm = membership[ends]
        xy[ends] = centres[cm] + (0.35 + 0.6 * rng.uniform(size=len(ends)))[:, None] * radius[cm][
            :, None
        ] * np.column_stack([np.cos(angle), np.sin(angle)])
        hot_nodes = entity_nodes(ends, 1.0)
        nodes = pd.concat([comm, hot_nodes], ignore_index=True)
        edges = pd.concat(
            [bundles, desire_edges(top, lambda i: arrays.entity_ids[i].astype(str))], ignore_index=True
        )
        mode = "communities"
        info += f"; drawn as {k} community super-nodes and the {len(top)} hottest desire edges"
    edges = edges.sort_values(["kind", "heat"], ascending=[True, True], kind="stable").reset_index(drop=True)
    return Constellation(
        nodes,
        edges,
        mode,
        found,
        f"{base}\n{info}",
        graph_id=graph_id,
        meta={"floor": floor, "ceiling": ceiling, "has_stats": stats is not None},
    )


# ----------------------------------------------------------------------------------------------------
# Desire paths as a table


def strongest_paths(
    view: RunView, graph_id: str | None = None, top: int = 10, faded: bool = False, queries_per_edge: int = 3
) -> pd.DataFrame:
    """The ``top`` strongest desire edges of a run (weight above 1; ``faded=True``: the walked edges that
    lost the most weight, below 1), with the queries whose positively rated paths wore them (``faded``:
    whose negatively rated paths walked them).

    Returns:
        Columns ``edge_id, source, relation, target, weight, walks, queries`` (a list of query texts).
    """
    gid = view.graph_id(graph_id)
    graph = view.dataset.graphs[gid]
    arrays = GraphArrays.from_graph(graph)
    weight, walks = desire_weights(arrays, view.stats.get(gid))
    walked = np.flatnonzero((walks > 0) & ((weight < 1.0) if faded else (weight > 1.0)))
    order = walked[np.argsort(weight[walked] if faded else -weight[walked], kind="stable")][:top]
    names = graph.entities["name"].fillna("").astype(str).to_numpy()
    relation = np.asarray(arrays.dep_type_vocab, dtype=object)[arrays.edge_type]
    wore: dict[str, list[str]] = {str(arrays.edge_ids[e]): [] for e in order}
    if view.feedback is not None and len(view.feedback):
        texts = {q.id: q.text for q in view.dataset.queries}
        for rec in view.feedback.itertuples(index=False):
            ctx = json.loads(rec.context) if isinstance(rec.context, str) else dict(rec.context)
            if ctx.get("graph_id") != gid:
                continue
            for pos, rating in zip(rec.shown, rec.ratings, strict=False):
                if rating is None or np.isnan(rating) or (rating >= 0 if faded else rating <= 0):
                    continue
                for dep in GraphPath.parse(str(rec.candidates[int(pos)])).dependencies:
                    seen = wore.get(dep)
                    text = texts.get(rec.query_id, rec.query_id)
                    if seen is not None and text not in seen and len(seen) < queries_per_edge:
                        seen.append(text)
    return pd.DataFrame(
        {
            "edge_id": arrays.edge_ids[order].astype(str),
            "source": names[arrays.edge_source[order]],
            "relation": relation[order],
            "target": names[arrays.edge_target[order]],
            "weight": weight[order].round(3),
            "walks": walks[order],
            "queries": [wore[str(arrays.edge_ids[e])] for e in order],
        }
    )


# ----------------------------------------------------------------------------------------------------
# Drawing


def _edge_rgba(heat: npt.NDArray[np.float64], alpha: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Cold edges slate blue, hot ones amber to white, with the given alpha."""
    cold = np.array([0.45, 0.55, 0.75])
    warm = np.array([1.0, 0.72, 0.25])
    white = np.array([1.0, 0.97, 0.85])
    h = heat[:, None]
    rgb = np.where(h < 0.5, cold + (warm - cold) * (h / 0.5), warm + (white - warm) * ((h - 0.5) / 0.5))
    return np.column_stack([rgb, alpha])


def draw_png(
    con: Constellation,
    path: str | os.PathLike[str],
    *,
    size: float = 12.0,
    dpi: int = 120,
    labels: int = 12,
    ax: Any = None,
) -> Path | None:
    """Draw ``con`` with matplotlib: nodes by community colour, principles as stars, desire edges by heat,
    the largest communities labelled and the hottest edges' endpoints named; a legend explains the rest.

    Writes ``path`` (PNG) unless ``ax`` is given (then it draws into that axes and returns None).
    """
    import matplotlib

    if ax is None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    own = ax is None
    if own:
        xy = con.nodes[["x", "y"]].to_numpy()
        w, h = (np.ptp(xy, axis=0) + 1e-9) if len(xy) else (1.0, 1.0)
        fig, ax = plt.subplots(figsize=(size, size * float(np.clip(h / w, 0.45, 1.3)) + 1.2))
    fig = ax.figure
    fig.patch.set_facecolor(BACKGROUND)
    ax.set_facecolor(BACKGROUND)
    pos = con.nodes.set_index("key")[["x", "y"]]
    e = con.edges[~con.edges["kind"].isin(["bridge", "principle"])]
    special = con.edges[con.edges["kind"].isin(["bridge", "principle"])]
    if len(special):
        ax.add_collection(
            LineCollection(
                list(np.stack([pos.loc[special["source"]].to_numpy(), pos.loc[special["target"]].to_numpy()],
                              axis=1)),
                linewidths=special["width"].to_numpy(),
                colors=[BRIDGE_RGBA if k == "bridge" else PRINCIPLE_RGBA for k in special["kind"]],
                linestyles="dashed", zorder=1.5,
            )
        )
    if len(e):
        a = pos.loc[e["source"]].to_numpy()
        b = pos.loc[e["target"]].to_numpy()
        rgba = _edge_rgba(e["heat"].to_numpy(), e["alpha"].to_numpy())
        bundle = (e["kind"] == "bundle").to_numpy()
        rgba[bundle, :3] = [0.6, 0.65, 0.8]
        ax.add_collection(
            LineCollection(
                list(np.stack([a, b], axis=1)),
                linewidths=e["width"].to_numpy(),
                colors=rgba,
                zorder=1,
                capstyle="round",
            )
        )
    for kind, marker, z in (("community", "o", 2), ("entity", "o", 3), ("principle", "*", 4)):
        nd = con.nodes[con.nodes["kind"] == kind]
        if len(nd):
            ax.scatter(
                nd["x"],
                nd["y"],
                s=nd["size"] * (2.2 if kind == "principle" else 1.0),
                c=nd["color"],
                marker=marker,
                linewidths=0.6 if kind != "entity" else 0.2,
                edgecolors="white" if kind != "entity" else BACKGROUND,
                alpha=0.75 if kind == "community" else 0.95,
                zorder=z,
            )
    if "health" in con.nodes:
        ring = con.nodes[con.nodes["health"].isin(list(HEALTH_RING))]
        if len(ring):
            ax.scatter(ring["x"], ring["y"], s=ring["size"] * 2.0, facecolors="none",
                       edgecolors=[HEALTH_RING[h] for h in ring["health"]], linewidths=1.2, zorder=5)
    # labels: the largest communities at their centre, the endpoints of the hottest edges by name
    text_kw = {"fontsize": 8, "ha": "center", "va": "center", "zorder": 6}
    nodes = con.nodes
    if con.mode == "communities":
        big = nodes[nodes["kind"] == "community"].nlargest(labels, "members")
        for r in big.itertuples():
            ax.text(r.x, r.y, f"{r.label}\n{r.members:,}", color="white", **text_kw)
    else:
        ent = nodes[nodes["kind"] != "community"]
        centre = ent.groupby("community")[["x", "y"]].mean()
        top = ent["community"].value_counts().head(labels).index
        lab = dict(zip(range(len(con.communities.labels)), con.communities.labels, strict=False))
        for c in top:
            ax.text(
                centre.loc[c, "x"],
                ent[ent.community == c]["y"].max() + 0.04,
                lab.get(int(c), ""),
                color=_PALETTE[int(c) % len(_PALETTE)],
                fontweight="bold",
                **text_kw,
            )
    hot = con.hottest(5)
    hot = hot[hot["weight"] > 1.0]
    named = nodes.set_index("key")
    for key in pd.unique(hot[["source", "target"]].to_numpy().ravel()):
        r = named.loc[key]
        ax.annotate(
            str(r["label"]),
            (r["x"], r["y"]),
            xytext=(4, 4),
            textcoords="offset points",
            color="#fff3c4",
            fontsize=8,
            zorder=7,
        )
    handles = [
        Line2D([], [], color=_edge_rgba(np.array([1.0]), np.array([1.0]))[0], lw=4, label="hot desire path"),
        Line2D([], [], color=_edge_rgba(np.array([0.25]), np.array([0.3]))[0], lw=1, label="untouched edge"),
        Line2D([], [], color=_edge_rgba(np.array([0.02]), np.array([0.1]))[0], lw=0.5, label="faded edge"),
        Line2D([], [], marker="o", ls="", color="#bbbbbb", label="entity (colour: community)"),
        Line2D([], [], marker="*", ls="", color="#bbbbbb", markersize=12, label="principle"),
    ]
    if con.mode == "communities":
        handles.insert(
            3,
            Line2D(
                [],
                [],
                marker="o",
                ls="",
                color="#bbbbbb",
                markersize=14,
                alpha=0.7,
                label="community (size: members)",
            ),
        )
    leg = ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=len(handles),
        fontsize=8,
        facecolor=BACKGROUND,
        edgecolor="#445",
        labelcolor="white",
        framealpha=0.8,
    )
    leg.set_zorder(10)
    ax.set_title(con.title, color="white", fontsize=10, loc="left")
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.margins(0.03)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    if not own:
        return None
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=dpi, facecolor=BACKGROUND)
    plt.close(fig)
    return out


def _hex_rgba(rgba: Sequence[float]) -> str:
    r, g, b, a = rgba
    return f"rgba({int(r * 255)},{int(g * 255)},{int(b * 255)},{a:.3f})"


def draw_html(con: Constellation, path: str | os.PathLike[str], *, extent: float = 1400.0) -> Path:
    """Write ``con`` as an interactive vis-network page (pyvis): positions fixed (no physics, so a few
    thousand nodes stay responsive), the library inlined (opens offline), hover text on every node and
    edge (name, type, community; weight and walks), principles as stars, super-nodes labelled."""
    from pyvis.network import Network

    net = Network(
        height="900px",
        width="100%",
        bgcolor=BACKGROUND,
        font_color="#e8e8f0",
        cdn_resources="in_line",
        directed=False,
    )
    xy = con.nodes[["x", "y"]].to_numpy()
    span = float(np.abs(xy).max()) if len(xy) else 1.0
    scale = extent / (span or 1.0)
    # nodes and edges go in as vis-network dicts: pyvis's add_node/add_edge search every earlier one
    # (quadratic at a few thousand) and drop parallel edges, which would hide a desire path
    for r in con.nodes.itertuples():
        node = {
            "id": r.key,
            "label": r.label if r.kind in ("community", "principle") else "",
            "title": r.title,
            "x": float(r.x * scale),
            "y": float(-r.y * scale),
            "color": r.color,
            "physics": False,
            "size": float(np.sqrt(r.size) * (1.6 if r.kind == "community" else 1.0)),
            "shape": {"principle": "star"}.get(r.kind, "dot"),
        }
        ring = HEALTH_RING.get(str(getattr(r, "health", "") or ""))
        if ring:  # issue 29's health: a coloured border
            node["color"] = {"background": r.color, "border": ring}
            node["borderWidth"] = 3
        net.nodes.append(node)
        net.node_ids.append(r.key)
        net.node_map[r.key] = node
    rgba = _edge_rgba(con.edges["heat"].to_numpy(), con.edges["alpha"].to_numpy())
    for i, r in enumerate(con.edges.itertuples()):
        colour = {"desire": _hex_rgba(rgba[i]), "bridge": _hex_rgba(BRIDGE_RGBA),
                  "principle": _hex_rgba(PRINCIPLE_RGBA)}.get(r.kind, "rgba(150,165,205,0.15)")
        title = (
            f"{r.edge_id}" if r.kind != "desire" else f"{r.edge_id}: weight {r.weight:.3f}, walked {r.walks}x"
        )
        net.edges.append(
            {
                "from": r.source,
                "to": r.target,
                "id": f"{r.kind}:{i}:{r.edge_id}",
                "width": float(r.width),
                "color": colour,
                "title": title,
                "physics": False,
            }
        )
    net.set_options(
        json.dumps(
            {
                "physics": {"enabled": False},
                "interaction": {"hover": True, "tooltipDelay": 80, "hideEdgesOnDrag": len(con.edges) > 3000},
                "edges": {"smooth": False},
                "nodes": {"font": {"color": "#e8e8f0", "size": 14}},
            }
        )
    )
    out = Path(path)
    page = net.generate_html(name=out.name, notebook=False)
    heading = html.escape(con.title).replace("\n", "<br>")
    page = page.replace(
        "<body>",
        f'<body style="background:{BACKGROUND};color:#e8e8f0;font-family:sans-serif">'
        f'<div style="padding:6px 12px;font-size:14px">{heading}</div>',
        1,
    )
    out.write_text(page, encoding="utf-8")
    return out


def html_edges(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The edges a page written by :func:`draw_html` draws (what vis-network reads), for checks."""
    text = Path(path).read_text(encoding="utf-8")
    start = text.index("edges = new vis.DataSet(") + len("edges = new vis.DataSet(")
    end = text.index(");", start)
    return list(json.loads(text[start:end]))


def render(con: Constellation, outputs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Write ``con`` to each of ``outputs`` by suffix (``.png`` or ``.html``).

    Raises:
        ValueError: another suffix, naming the file.
    """
    for out in outputs:
        if Path(out).suffix.lower() not in (".png", ".html"):
            raise ValueError(f"--out {out}: the constellation is written as .png or .html")
    written = []
    for out in outputs:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        if Path(out).suffix.lower() == ".png":
            draw_png(con, out)
            written.append(Path(out))
        else:
            written.append(draw_html(con, out))
    return written


def constellation_of(view: RunView, graph_id: str | None = None, **kwargs: Any) -> Constellation:
    """:func:`build_constellation` of one graph of an opened source, titled by it, with the run's
    emergence outcome (health, bridges, principles) overlaid when it has one."""
    gid = view.graph_id(graph_id)
    graph = view.dataset.graphs[gid]
    what = f", run {view.source} after {view.step} interactions" if view.stats else ""
    title = f"{view.dataset.name} [{gid}]{what}: {graph.num_entities:,} entities"
    con = build_constellation(graph, view.stats.get(gid), title=title, graph_id=gid, **kwargs)
    single = next(iter(view.emergence.values()), None)
    em = view.emergence.get(gid) if len(view.dataset.graphs) > 1 else single
    return overlay_emergence(con, em) if em else con


# ----------------------------------------------------------------------------------------------------
# Issue 29's emergence outcome on the picture

#: Ring colour of an entity by health status (healthy and unseen entities get none).
HEALTH_RING = {"sick": "#ff4d4d", "unused": "#8a8aa0", "under-mapped": "#ffb020"}
BRIDGE_RGBA = (0.3, 0.86, 1.0, 0.95)
PRINCIPLE_RGBA = (1.0, 0.84, 0.0, 0.55)


def _run_emergence(art: Path) -> dict[str, dict[str, Any]]:
    """graph id -> the run's emergence outcome (``read_outcome`` plus ``statuses``), from ``artifacts/``."""
    from signet_rl.emergence.components import entity_statuses, read_outcome

    out = {}
    folders = {"main": art} if (art / "emergence").is_dir() else {
        p.name: p for p in sorted((art / "by_graph").glob("*")) if (p / "emergence").is_dir()}
    for gid, folder in folders.items():
        out[gid] = {**read_outcome(folder), "statuses": entity_statuses(folder)}
    return out


def overlay_emergence(con: Constellation, outcome: dict[str, Any]) -> Constellation:
    """``con`` with a run's emergence outcome drawn on it: each drawn entity's health (``health`` column,
    a coloured ring for sick, unused and under-mapped, the status in its hover text), promoted bridges as
    edges of kind ``bridge`` (dashed), and principles as stars (kind ``principle``) at the centre of the
    entities they were found in, joined to them by edges of kind ``principle``. The title counts them."""
    nodes = con.nodes.copy()
    statuses: dict[str, str] = outcome.get("statuses", {})
    nodes["health"] = [statuses.get(k, "") for k in nodes["key"]]
    nodes["title"] = [t + (f"\nhealth: {h}" if h else "") for t, h in zip(nodes["title"], nodes["health"],
                                                                             strict=True)]
    drawn = set(nodes.loc[nodes["kind"] != "community", "key"])
    pos = nodes.set_index("key")[["x", "y"]]
    extra_edges: list[dict[str, Any]] = []
    for b in outcome.get("bridges", {}).get("promoted", []):
        if b["entity_a"] in drawn and b["entity_b"] in drawn:
            extra_edges.append({"source": b["entity_a"], "target": b["entity_b"], "kind": "bridge",
                                "edge_id": f"bridge {b['id']} (+{b['positive']}/-{b['negative']})"})
    stars = []
    for p in outcome.get("principles", []):
        ents = [e for e in p["entity_ids"] if e in drawn]
        if not ents or p["id"] in drawn:
            continue
        xy = pos.loc[ents].to_numpy().mean(axis=0)
        stars.append({"key": p["id"], "label": p["text"][:40], "kind": "principle", "community": -1,
                      "size": 60.0, "x": xy[0], "y": xy[1], "color": "#ffd700", "degree": float(len(ents)),
                      "members": 1, "health": "",
                      "title": f"principle ({p['status']}): {p['text']}\nfound in {len(p['entity_ids'])} "
                               f"entities, {len(p['evidence'])} pieces of evidence"})
        extra_edges += [{"source": p["id"], "target": e, "kind": "principle", "edge_id": f"{p['id']} -> {e}"}
                        for e in ents]
    if stars:
        nodes = pd.concat([nodes, pd.DataFrame(stars)], ignore_index=True)
    edges = con.edges
    if extra_edges:
        extra = pd.DataFrame(extra_edges).assign(weight=np.nan, walks=0, heat=0.0, width=1.4, alpha=0.9)
        edges = pd.concat([edges, extra], ignore_index=True)
    health = outcome.get("health", {})
    parts = []
    if health:
        parts.append("health " + ", ".join(f"{k} {v:,}" for k, v in health.items()))
    if "bridges" in outcome:
        parts.append(f"{outcome['bridges']['by_status']['promoted']} bridges promoted")
    if "principles" in outcome:
        parts.append(f"{len(outcome['principles'])} principles")
    title = con.title + (f"\nemergence: {'; '.join(parts)}" if parts else "")
    meta = {**con.meta, "emergence": {"health": health, "bridges": len([e for e in extra_edges
                                                                        if e["kind"] == "bridge"]),
                                      "principles": len(stars)}}
    return Constellation(nodes, edges, con.mode, con.communities, title, graph_id=con.graph_id, meta=meta)
