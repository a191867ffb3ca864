"""Audits: every measurement that reads ground truth, apart from the harness itself.

How informative a generated benchmark's cheap signals are (:func:`signal_auc`), its query mix
(:func:`describe_mix`), whether entry search lands on the focus entities (:func:`entry_recall`), how much
evidence lies within 2 hops of where it lands (:func:`reachability_ceiling`), how the
intent classifier and the significance gate do against gold intents (:func:`intent_report`,
:func:`gate_report`), how well communities recover planted ones (:func:`recovery`), and the gold-labelled
texts a learned intent classifier trains on (:func:`training_examples`). They live here, with the harness,
because ground truth reaches only evaluation and the simulated rater (``docs/design.md``, "Layers"); the
entry points (``describe``, the communities CLI, the report scripts) call them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.types import Query, Split
from signet_rl.datasets.base import Dataset, Truth
from signet_rl.graph.communities import Communities, nmi_ari
from signet_rl.graph.confidence import LADDER
from signet_rl.retrieval.entry import EntrySearch
from signet_rl.retrieval.gate import SignificanceGate
from signet_rl.retrieval.intent import INTENTS, PARAPHRASES, IntentClassifier

_INTENT_INDEX = {name: i for i, name in enumerate(INTENTS)}


def _auc(score: np.ndarray, label: np.ndarray) -> float:
    """ROC AUC by the rank-sum formula, ties averaged; NaN when one class is missing."""
    pos = int(label.sum())
    neg = len(label) - pos
    if pos == 0 or neg == 0:
        return float("nan")
    ranks = pd.Series(score).rank(method="average").to_numpy()
    return float((ranks[label].sum() - pos * (pos + 1) / 2) / (pos * neg))


def signal_auc(dataset: Dataset, max_queries: int = 500, seed: int = 0) -> dict[str, float]:
    """AUC of cheap signals for predicting whether an item is needed, pooled over queries.

    Candidates are what a one-hop walk from the query's focus entity can reach at the query time:
    ``attribute_importance`` and ``recency`` rank the visible attributes of the focus entity and its
    neighbours; ``dependency_confidence`` and ``confidence_x_strength`` rank the edges incident to the
    focus entity (positive when the edge leads to an entity holding a needed attribute).
    ``spurious_edge_confidence`` is the AUC of confidence for telling true edges from spurious ones
    (synthetic only). An AUC near 1 on its own would make the benchmark too easy.
    """
    labels = dataset.truth.labels
    if "queries" not in labels:
        raise ValueError(f"{dataset.name}: signal AUCs need the synthetic benchmark's focus labels")
    g = dataset.graph
    att = g.attributes
    att_entity = g.attribute_entity_ids().to_numpy()
    att_t = att["created_at"].astype("int64").to_numpy() / 1e3
    att_imp = att["importance"].to_numpy()
    dep = g.dependencies
    dep_t = dep["created_at"].astype("int64").to_numpy() / 1e3
    by_entity = pd.Series(np.arange(len(att))).groupby(att_entity).apply(np.asarray).to_dict()
    src, tgt = dep["source_entity_id"].to_numpy(), dep["target_entity_id"].to_numpy()
    inc = pd.concat([pd.Series(np.arange(len(dep)), index=src), pd.Series(np.arange(len(dep)), index=tgt)])
    inc_by = inc.groupby(level=0).apply(lambda s: s.to_numpy()).to_dict()
    att_pos = {a: i for i, a in enumerate(att["id"].tolist())}
    focus = labels["queries"].set_index("query_id")
    rng = np.random.default_rng(seed)
    qs = [q for q in dataset.queries if dataset.truth[q.id].needed]
    if len(qs) > max_queries:
        qs = [qs[i] for i in sorted(rng.choice(len(qs), max_queries, replace=False).tolist())]
    imp_s, rec_s, att_l, conf_s, cs_s, edge_l = [], [], [], [], [], []
    for q in qs:
        x = focus.at[q.id, "x"]
        t = q.timestamp.timestamp()  # type: ignore[union-attr]
        needed = {att_pos[a] for a in dataset.truth[q.id].needed}
        needed_ent = {att_entity[a] for a in needed}
        edges = [e for e in inc_by.get(x, []) if dep_t[e] <= t]
        ents = {x} | {tgt[e] if src[e] == x else src[e] for e in edges}
        cands = np.concatenate([by_entity.get(e, np.array([], dtype=np.int64)) for e in ents])
        cands = cands[att_t[cands] <= t]
        imp_s.append(att_imp[cands])
        rec_s.append(att_t[cands] - t)
        att_l.append(np.isin(cands, list(needed)))
        for e in edges:
            other = tgt[e] if src[e] == x else src[e]
            conf_s.append(dep["confidence"].iat[e])
            cs_s.append(dep["confidence"].iat[e] * dep["strength"].iat[e])
            edge_l.append(other in needed_ent)
    spur = labels["dependencies"]["spurious"].to_numpy()
    out = {
        "attribute_importance": _auc(np.concatenate(imp_s), np.concatenate(att_l)),
        "recency": _auc(np.concatenate(rec_s), np.concatenate(att_l)),
        "dependency_confidence": _auc(np.asarray(conf_s), np.asarray(edge_l, dtype=bool)),
        "confidence_x_strength": _auc(np.asarray(cs_s), np.asarray(edge_l, dtype=bool)),
        "spurious_edge_confidence": _auc(dep["confidence"].to_numpy(), ~spur),
    }
    return {k: round(v, 4) for k, v in out.items()}


def describe_mix(dataset: Dataset) -> Mapping[str, Any]:
    """Per intent and category: query counts and the share whose needed facts flat retrieval can see."""
    rows = [dataset.truth[q.id] for q in dataset.queries]
    df = pd.DataFrame(
        {
            "intent": [t.intent for t in rows],
            "category": [t.category for t in rows],
            "flat": [t.flat_solvable for t in rows],
            "needed": [len(t.needed) for t in rows],
        }
    )
    out: dict[str, Any] = {}
    for (intent, cat), grp in df.groupby(["intent", "category"]):
        flat = grp["flat"].dropna()
        out[f"{intent}/{cat}"] = {
            "queries": len(grp),
            "mean_needed": round(float(grp["needed"].mean()), 2),
            "flat_solvable": round(float(flat.mean()), 3) if len(flat) else None,
        }
    return out


def entry_recall(
    search: EntrySearch, dataset: Dataset, split: Split = "test", ks: Sequence[int] = (1, 3, 5, 10)
) -> pd.DataFrame:
    """Entry-entity recall@k per intent: is a queried entity in the top ``k``?

    The queried entities are the focus entities ``x`` (and ``y`` for *relate*) of
    ``dataset.truth.labels["queries"]``; a *relate* query counts as a hit when either is in the top ``k``
    (``recall@k``) and, in ``both@k``, when both are. Queries without a focus entity (``none``) are left
    out. ``search`` is (re)indexed on each graph the split's queries ask; ground truth is read here only.

    Returns:
        One row per intent plus ``overall``: ``queries``, ``recall@k`` for every k, and ``both@k`` (NaN
        for intents without a second entity).

    Raises:
        ValueError: the dataset has no focus-entity labels, or a ``k`` < 1.
    """
    if "queries" not in dataset.truth.labels:
        raise ValueError(f"{dataset.name} has no focus-entity labels (truth.labels['queries'])")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must be positive integers, got {ks}")
    focus = dataset.truth.labels["queries"].set_index("query_id")
    rows = []
    by_graph: dict[str, list[Any]] = {}
    for q in dataset.split(split):
        by_graph.setdefault(q.graph_id, []).append(q)
    for graph_id, queries in by_graph.items():
        search.index(dataset.graphs[graph_id])
        for q in queries:
            x, y = focus.at[q.id, "x"], focus.at[q.id, "y"]
            gold = [str(e) for e in (x, y) if isinstance(e, str) and e]
            if not gold:
                continue
            got = [e for e, _ in search.search(q.text, k=ks[-1], timestamp=q.timestamp)]
            row: dict[str, Any] = {"intent": dataset.truth[q.id].intent}
            for k in ks:
                top = set(got[:k])
                row[f"recall@{k}"] = float(any(g in top for g in gold))
                row[f"both@{k}"] = float(all(g in top for g in gold)) if len(gold) == 2 else np.nan
            rows.append(row)
    cols = [f"recall@{k}" for k in ks] + [f"both@{k}" for k in ks]
    if not rows:
        return pd.DataFrame(columns=["queries", *cols], index=pd.Index([], name="intent"))
    frame = pd.DataFrame(rows)
    per = frame.groupby("intent")[cols].mean()
    per.insert(0, "queries", frame.groupby("intent").size())
    overall = frame[cols].mean().to_frame().T
    overall.insert(0, "queries", len(frame))
    overall.index = pd.Index(["overall"], name="intent")
    return pd.concat([per, overall])


def reachability_ceiling(
    dataset: Dataset, k: int = 5, max_queries: int | None = None, search: EntrySearch | None = None,
    hub_share: float = 0.1,
) -> dict[str, Any]:
    """The share of evidence memories within 2 hops of the entities entry search lands on.

    For each query whose truth needs memories (LoCoMo turns, MuSiQue passages), entry search
    (:class:`~signet_rl.retrieval.entry.EntrySearch`, default legs, hashing encoder) gives its top ``k``
    entities at the query's time. Hop 1 reaches the memories that mention an entry entity; hop 2 those that
    mention a dependency neighbour of one (either direction, any type: ``next_session`` included). A needed
    memory is *reachable* when it lies within those hops. This bounds what any walk from the entry can put
    in its candidate set -- a walk that does not start where the evidence is cannot find it.

    **Hubs are no route**: an entity mentioned by more than ``hub_share`` (10 %) of its graph's memories (a
    LoCoMo speaker is mentioned by half the turns) is skipped as an entry (the next entity takes its place)
    and as a hop; otherwise every conversation is "reachable" in one hop from its speakers and the ceiling
    says nothing (it reads 1.000 on the old LoCoMo graph).

    Returns:
        ``ceiling`` (mean per query of the share of its needed memories reachable), ``ceiling_micro``
        (reachable / needed over all queries), ``hop1`` (the same share within hop 1 alone), ``reach_share``
        (mean share of the graph's memories within 2 hops: a ceiling of 1.0 that reaches everything says
        little), ``queries`` and ``k``; an empty dict when no query needs memories.

    Raises:
        ValueError: ``k`` < 1.
    """
    from scipy import sparse

    if k < 1:
        raise ValueError(f"reachability_ceiling: k must be >= 1, got {k}")
    search = search or EntrySearch()
    by_graph: dict[str, list[Query]] = {}
    for q in dataset.queries:
        t = dataset.truth[q.id]
        if t.needed_kind == "memory" and t.needed:
            by_graph.setdefault(q.graph_id, []).append(q)
    if max_queries is not None:
        kept = sorted((q for qs in by_graph.values() for q in qs), key=lambda q: q.id)[:max_queries]
        by_graph = {}
        for q in kept:
            by_graph.setdefault(q.graph_id, []).append(q)
    shares, hop1, reach = [], [], []
    hit_total = need_total = 0
    for graph_id, queries in sorted(by_graph.items()):
        g = dataset.graphs[graph_id]
        ent = pd.Index(g.entities["id"])
        mem = pd.Index(g.memories["id"])
        mi = mem.get_indexer(g.mentions["memory_id"])
        ei = ent.get_indexer(g.mentions["entity_id"])
        ok = (mi >= 0) & (ei >= 0)
        mentions = sparse.csr_matrix((np.ones(int(ok.sum())), (mi[ok], ei[ok])), shape=(len(mem), len(ent)))
        per_entity = np.asarray(mentions.sum(axis=0)).ravel()
        hub = per_entity > hub_share * max(1, len(mem))
        mentions = mentions @ sparse.diags((~hub).astype(np.float64))
        si = ent.get_indexer(g.dependencies["source_entity_id"])
        ti = ent.get_indexer(g.dependencies["target_entity_id"])
        okd = (si >= 0) & (ti >= 0)
        adj = sparse.csr_matrix((np.ones(int(okd.sum())), (si[okd], ti[okd])), shape=(len(ent), len(ent)))
        adj = ((adj + adj.T) > 0).astype(np.float64)
        search.index(g)
        for q in queries:
            got = [e for e, _ in search.search(q.text, k=k + int(hub.sum()), timestamp=q.timestamp)]
            idx = ent.get_indexer(got)
            idx = idx[idx >= 0]
            idx = idx[~hub[idx]][:k]
            e0 = np.zeros(len(ent))
            e0[idx] = 1.0
            near = (mentions @ e0) > 0
            e1 = ((e0 + adj @ e0) > 0) & ~hub
            far = (mentions @ e1.astype(np.float64)) > 0
            needed = [m for m in dataset.truth[q.id].needed if m in mem]
            if not needed:
                continue
            pos = mem.get_indexer(needed)
            hits = int(far[pos].sum())
            shares.append(hits / len(needed))
            hop1.append(float(near[pos].mean()))
            reach.append(float(far.mean()))
            hit_total += hits
            need_total += len(needed)
    if not shares:
        return {}
    return {"ceiling": round(float(np.mean(shares)), 4),
            "ceiling_micro": round(hit_total / need_total, 4),
            "hop1": round(float(np.mean(hop1)), 4), "reach_share": round(float(np.mean(reach)), 4),
            "queries": len(shares), "k": k, "hub_share": hub_share}


def training_examples(
    dataset: Dataset, split: Split = "train", paraphrases: int = 0, seed: int = 0
) -> tuple[list[str], list[str]]:
    """Texts and gold intents of one split of a generated dataset, for training a classifier.

    The gold intents are training labels here (never features of a retriever). With ``paraphrases > 0``,
    that many texts per intent are added from :data:`PARAPHRASES`, filled with entity and aspect names
    drawn from the dataset's graph (its content, not its ground truth).

    Raises:
        ValueError: a query without a gold intent.
    """
    queries = dataset.split(split)
    texts = [q.text for q in queries]
    labels = [dataset.truth[q.id].intent for q in queries]
    missing = [q.id for q, lab in zip(queries, labels, strict=True) if lab is None]
    if missing:
        raise ValueError(f"{dataset.name}: query {missing[0]!r} has no gold intent")
    out_labels: list[str] = [str(lab) for lab in labels]
    if paraphrases > 0:
        rng = np.random.default_rng(seed)
        names = [n for g in dataset.graphs.values() for n in g.entities["name"].astype(str).tolist()]
        aspects = [
            a.replace("_", " ")
            for g in dataset.graphs.values()
            for a in g.aspects["name"].astype(str).tolist()
        ] or ["status"]
        for intent, templates in PARAPHRASES.items():
            for _ in range(paraphrases):
                tpl = templates[int(rng.integers(len(templates)))]
                x, y = (names[int(i)] for i in rng.integers(len(names), size=2)) if names else ("it", "that")
                texts.append(tpl.format(x=x, y=y, aspect=aspects[int(rng.integers(len(aspects)))]))
                out_labels.append(intent)
    return texts, out_labels


def intent_report(
    classifier: IntentClassifier, texts: Sequence[str], labels: Sequence[str]
) -> dict[str, Any]:
    """Accuracy overall and per class of ``classifier`` on ``texts`` with gold ``labels``.

    Returns:
        ``{"n", "accuracy", "macro_f1", "per_class": {intent: {"precision", "recall", "f1",
        "support"}}, "labels": INTENTS, "confusion": [[...]]}``; ``confusion[i][j]`` counts texts of gold
        intent ``i`` predicted as ``j``. Precision of a class never predicted, recall of a class with no
        support, and F1 when both are 0 are reported as 0.0.

    Raises:
        ValueError: mismatched lengths, or a label outside :data:`INTENTS`.
    """
    if len(texts) != len(labels):
        raise ValueError(f"intent_report: {len(texts)} texts but {len(labels)} labels")
    bad = sorted({lab for lab in labels if lab not in _INTENT_INDEX})
    if bad:
        raise ValueError(f"unknown intent labels {bad}; expected one of {INTENTS}")
    pred = classifier.predict(list(texts))
    k = len(INTENTS)
    conf = np.zeros((k, k), dtype=np.int64)
    if len(texts):
        np.add.at(conf, ([_INTENT_INDEX[g] for g in labels], [_INTENT_INDEX[p] for p in pred]), 1)
    tp = np.diag(conf).astype(np.float64)
    predicted, support = conf.sum(axis=0), conf.sum(axis=1)
    precision = np.divide(tp, predicted, out=np.zeros(k), where=predicted > 0)
    recall = np.divide(tp, support, out=np.zeros(k), where=support > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros(k), where=denom > 0)
    per_class = {
        name: {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, name in enumerate(INTENTS)
    }
    present = support > 0
    return {
        "n": len(texts),
        "accuracy": float(tp.sum() / len(texts)) if len(texts) else 0.0,
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "per_class": per_class,
        "labels": list(INTENTS),
        "confusion": conf.tolist(),
    }


def gate_report(
    gate: SignificanceGate, queries: Sequence[Query], truth: Mapping[str, Truth]
) -> dict[str, Any]:
    """How the gate does on ``queries`` with gold intents from ``truth``.

    Returns:
        ``nonqueries`` and ``queries`` (counts), ``nonquery_silenced`` (share of gold-``none`` prompts that
        get nothing injected), ``query_silenced`` (share of real queries wrongly silenced) and
        ``accuracy`` (share of all prompts the gate decides right). Shares of an empty group are NaN.

    Raises:
        ValueError: a query whose truth has no gold intent.
    """
    intents = [truth[q.id].intent for q in queries]
    missing = [q.id for q, i in zip(queries, intents, strict=True) if i is None]
    if missing:
        raise ValueError(f"query {missing[0]!r} has no gold intent; the gate report needs one")
    silenced = ~np.asarray(gate.significant([q.text for q in queries]), dtype=bool)
    is_none = np.asarray([i == "none" for i in intents], dtype=bool)

    def share(mask: np.ndarray) -> float:
        return float(silenced[mask].mean()) if mask.any() else float("nan")

    right = np.where(is_none, silenced, ~silenced)
    return {
        "nonqueries": int(is_none.sum()),
        "queries": int((~is_none).sum()),
        "nonquery_silenced": share(is_none),
        "query_silenced": share(~is_none),
        "accuracy": float(right.mean()) if len(right) else float("nan"),
    }


def recovery(dataset: Dataset, communities: Communities) -> dict[str, float]:
    """How well communities recover the synthetic benchmark's planted ones: ``{"nmi", "ari"}``.

    Reads the planted labels (``dataset.truth.labels["entities"]``: ``entity_id``, ``community``) for
    scoring only; entities without a planted label are left out.

    Raises:
        ValueError: the dataset has no planted community labels.
    """
    labels = dataset.truth.labels.get("entities") if dataset.truth.labels else None
    if labels is None or "community" not in labels:
        raise ValueError(f"{dataset.name} has no planted community labels (only the synthetic benchmark)")
    planted = pd.Series(labels["community"].to_numpy(), index=labels["entity_id"].to_numpy())
    found = pd.Series(communities.membership, index=communities.entity_ids)
    common = found.index.intersection(planted.index)
    return nmi_ari(planted.loc[common].to_numpy(), found.loc[common].to_numpy())


# ----------------------------------------------------------------------------------------------------
# Synthetic benchmark v2: is anything but the latent need readable? (docs/design.md §6, issue 23)

#: Oriented AUC bounds the v2 audit holds a benchmark to (each cheap signal, the classifier on all).
SIGNAL_AUC_MAX = 0.80
CLASSIFIER_AUC_MAX = 0.85
WALK_AGREEMENT_MAX = 0.6
ROOM_TO_LEARN_MIN = 0.10


def oriented(auc: float) -> float:
    """``max(auc, 1 - auc)``: a signal ranking the wrong way round is as informative as the right way."""
    return auc if not np.isfinite(auc) else max(auc, 1.0 - auc)


class _Tables:
    """Array views of one graph that the v2 audits share (store ids -> rows, per-row signals)."""

    def __init__(self, dataset: Dataset) -> None:
        from signet_rl.graph.arrays import GraphArrays

        g = dataset.graph
        self.graph, self.arrays = g, GraphArrays.from_graph(g)
        att, asp, dep, mem = g.attributes, g.aspects, g.dependencies, g.memories
        self.att_pos = {a: i for i, a in enumerate(att["id"].tolist())}
        ent_ids = g.entities["id"].tolist()
        self.ent_pos = {e: i for i, e in enumerate(ent_ids)}
        asp_pos = {a: i for i, a in enumerate(asp["id"].tolist())}
        self.att_asp = att["aspect_id"].map(asp_pos).to_numpy()
        self.asp_ent = asp["entity_id"].map(self.ent_pos).to_numpy()
        self.att_ent = self.asp_ent[self.att_asp]
        self.asp_name = asp["name"].astype(str).to_numpy()
        self.asp_weight = asp["weight"].to_numpy(dtype=np.float64)
        # The walk's own order of an entity's aspects: by weight, descending.
        rank = asp.assign(_e=self.asp_ent).groupby("_e")["weight"].rank(ascending=False, method="first")
        self.asp_rank = rank.to_numpy()
        self.att_t = att["created_at"].astype("int64").to_numpy() / 1e3
        succ = att["superseded_by"].map(self.att_pos)
        has = succ.notna().to_numpy()
        self.succ_t = np.full(len(att), np.inf)
        self.succ_t[has] = self.att_t[succ[has].astype(int).to_numpy()]
        self.has_pred = np.zeros(len(att), dtype=bool)
        self.has_pred[succ[has].astype(int).to_numpy()] = True
        self.att_imp = att["importance"].to_numpy(dtype=np.float64)
        self.att_conf = att["confidence"].to_numpy(dtype=np.float64)
        self.att_constraint = (att["kind"] == "constraint").to_numpy()
        self.att_len = att["content"].astype(str).str.len().to_numpy()
        self.att_deleted = (att["status"] == "deleted").to_numpy()
        self.att_text = (att["content"].astype(str) + " " + pd.Series(self.asp_name[self.att_asp])).tolist()
        n_att = len(att)
        self.att_id_rank = att["id"].rank(method="first").to_numpy() / n_att
        self.att_row = np.arange(n_att) / n_att
        self.asp_id_rank = asp["id"].rank(method="first").to_numpy()[self.att_asp] / max(1, len(asp))
        per_asp = np.bincount(self.att_asp, minlength=len(asp))
        self.att_aspect_size = per_asp[self.att_asp]
        mem_pos = {m: i for i, m in enumerate(mem["id"].tolist())}
        att_mem = att["memory_id"].map(mem_pos)
        self.att_mem = att_mem.fillna(-1).astype(int).to_numpy()
        men = g.mentions
        mem_of = men["memory_id"].map(mem_pos).to_numpy()
        ent_of = men["entity_id"].map(self.ent_pos).to_numpy()
        self.mem_mentions = np.bincount(mem_of, minlength=len(mem))
        self.mem_imp = mem["importance"].to_numpy(dtype=np.float64)
        self.ent_mentions = np.bincount(ent_of, minlength=len(ent_ids))
        pairs = pd.DataFrame({"m": mem_of, "e": ent_of}).drop_duplicates()
        co = pairs.merge(pairs, on="m")
        co = co[co["e_x"] != co["e_y"]]
        self.comention = co.groupby(["e_x", "e_y"]).size().to_dict()
        self.dep_src = dep["source_entity_id"].map(self.ent_pos).to_numpy()
        self.dep_tgt = dep["target_entity_id"].map(self.ent_pos).to_numpy()
        self.dep_t = dep["created_at"].astype("int64").to_numpy() / 1e3
        self.dep_conf = dep["confidence"].to_numpy(dtype=np.float64)
        self.degree = np.bincount(np.concatenate([self.dep_src, self.dep_tgt]), minlength=len(ent_ids))
        inc = pd.concat(
            [
                pd.Series(np.arange(len(dep)), index=self.dep_src),
                pd.Series(np.arange(len(dep)), index=self.dep_tgt),
            ]
        )
        self.inc = {int(k): v.to_numpy() for k, v in inc.groupby(level=0)}
        order = np.argsort(self.att_ent, kind="stable")
        bounds = np.searchsorted(self.att_ent[order], np.arange(len(ent_ids) + 1))
        self.ent_atts = [order[bounds[i] : bounds[i + 1]] for i in range(len(ent_ids))]
        self.tokens: dict[int, set[str]] = {}

    def words(self, a: int) -> set[str]:
        if a not in self.tokens:
            self.tokens[a] = set(_WORDS.findall(self.att_text[a].lower()))
        return self.tokens[a]


_WORDS = re.compile(r"[a-z0-9]{3,}")

ITEM_SIGNALS: tuple[str, ...] = (
    "importance", "recency", "aspect_weight", "aspect_rank", "confidence", "constraint", "content_length",
    "hop", "edge_confidence", "owner_degree", "owner_mentions", "memory_importance", "memory_mentions",
    "has_earlier_version", "aspect_size", "lexical_overlap", "id_order", "row_order", "aspect_id_order",
    "walk_rank", "walk_first_path",
)  # fmt: skip
EDGE_SIGNALS: tuple[str, ...] = (
    "confidence", "strength", "reason_prior", "aspect_id_null", "created", "comentions", "common_neighbours",
    "source_degree", "target_degree", "same_type", "type_code", "id_order", "row_order",
)  # fmt: skip


def _walks(dataset: Dataset, tables: _Tables, queries: Sequence[Query]) -> dict[str, list[list[str]]]:
    """Per query: the attribute ids of each path of the non-learned walk from the gold focus entities with
    the gold intent, in the walk's own order (its deterministic first choice first)."""
    from signet_rl.traversal.config import TraversalConfig
    from signet_rl.traversal.walk import Traverser

    focus = dataset.truth.labels["queries"].set_index("query_id")
    trav = Traverser(tables.arrays, tables.graph, TraversalConfig(max_depth=2))
    out = {}
    for q in queries:
        entries = [e for e in (focus.at[q.id, "x"], focus.at[q.id, "y"]) if isinstance(e, str)]
        walk = trav.walk(entries, str(dataset.truth[q.id].intent), q.timestamp)
        out[q.id] = [list(p.attributes) for p in walk.paths]
    return out


def _audit_queries(dataset: Dataset, max_queries: int, seed: int) -> list[Query]:
    qs = [q for q in dataset.queries if dataset.truth[q.id].needed]
    if len(qs) > max_queries:
        rng = np.random.default_rng(seed)
        qs = [qs[i] for i in sorted(rng.choice(len(qs), max_queries, replace=False).tolist())]
    return qs


def item_signals(dataset: Dataset, max_queries: int = 400, seed: int = 0) -> pd.DataFrame:
    """One row per (query, candidate attribute) with every cheap signal and structural pattern, and
    ``needed`` (the label).

    Candidates are the attributes current at the query time (created by then, not superseded by then) of
    the gold focus entities and of every entity one dependency away (any edge visible then). Signals are
    :data:`ITEM_SIGNALS`: stored fields, time, graph structure, lexical overlap with the query, the store's
    id and row order, and the non-learned walk's order (``walk_rank``: the index of the first walk path
    holding the attribute; ``walk_first_path``: whether the walk's first path holds it).

    Raises:
        ValueError: a dataset without focus labels (only the synthetic benchmark has them).
    """
    if "queries" not in dataset.truth.labels:
        raise ValueError(f"{dataset.name}: item signals need the synthetic benchmark's focus labels")
    tb = _Tables(dataset)
    focus = dataset.truth.labels["queries"].set_index("query_id")
    qs = _audit_queries(dataset, max_queries, seed)
    walks = _walks(dataset, tb, qs)
    frames = []
    for q in qs:
        t = q.timestamp.timestamp()  # type: ignore[union-attr]
        gold = [tb.ent_pos[e] for e in (focus.at[q.id, "x"], focus.at[q.id, "y"]) if isinstance(e, str)]
        hop = {e: (0, 1.0) for e in gold}
        for x in gold:
            for d in tb.inc.get(x, np.zeros(0, dtype=int)).tolist():
                if tb.dep_t[d] > t:
                    continue
                o = int(tb.dep_tgt[d] if tb.dep_src[d] == x else tb.dep_src[d])
                if o not in hop or (hop[o][0] == 1 and tb.dep_conf[d] > hop[o][1]):
                    hop[o] = (1, float(tb.dep_conf[d])) if o not in gold else hop[o]
        ents = list(hop)
        cands = np.concatenate([tb.ent_atts[e] for e in ents]) if ents else np.zeros(0, dtype=int)
        cands = cands[(tb.att_t[cands] <= t) & (tb.succ_t[cands] > t) & ~tb.att_deleted[cands]]
        if not len(cands):
            continue
        needed = {tb.att_pos[a] for a in dataset.truth[q.id].needed}
        rank: dict[int, int] = {}
        for i, attrs in enumerate(walks[q.id]):
            for a in attrs:
                rank.setdefault(tb.att_pos[a], i)
        first = {tb.att_pos[a] for a in (walks[q.id][0] if walks[q.id] else [])}
        qw = set(_WORDS.findall(q.text.lower()))
        owner = tb.att_ent[cands]
        frames.append(
            pd.DataFrame(
                {
                    "query_id": q.id,
                    "importance": tb.att_imp[cands],
                    "recency": tb.att_t[cands] - t,
                    "aspect_weight": tb.asp_weight[tb.att_asp[cands]],
                    "aspect_rank": tb.asp_rank[tb.att_asp[cands]],
                    "confidence": tb.att_conf[cands],
                    "constraint": tb.att_constraint[cands].astype(float),
                    "content_length": tb.att_len[cands],
                    "hop": [hop[e][0] for e in owner.tolist()],
                    "edge_confidence": [hop[e][1] for e in owner.tolist()],
                    "owner_degree": tb.degree[owner],
                    "owner_mentions": tb.ent_mentions[owner],
                    "memory_importance": np.where(
                        tb.att_mem[cands] >= 0, tb.mem_imp[tb.att_mem[cands]], np.nan
                    ),
                    "memory_mentions": np.where(
                        tb.att_mem[cands] >= 0, tb.mem_mentions[tb.att_mem[cands]], 0
                    ),
                    "has_earlier_version": tb.has_pred[cands].astype(float),
                    "aspect_size": tb.att_aspect_size[cands],
                    "lexical_overlap": [len(qw & tb.words(a)) for a in cands.tolist()],
                    "id_order": tb.att_id_rank[cands],
                    "row_order": tb.att_row[cands],
                    "aspect_id_order": tb.asp_id_rank[cands],
                    "walk_rank": [rank.get(a, 10_000) for a in cands.tolist()],
                    "walk_first_path": [float(a in first) for a in cands.tolist()],
                    "needed": [a in needed for a in cands.tolist()],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def edge_signals(dataset: Dataset) -> pd.DataFrame:
    """One row per dependency with every cheap signal of :data:`EDGE_SIGNALS` and ``spurious`` (the label)."""
    labels = dataset.truth.labels.get("dependencies")
    if labels is None or "spurious" not in labels:
        raise ValueError(f"{dataset.name}: edge signals need planted spurious-edge labels")
    tb = _Tables(dataset)
    dep = tb.graph.dependencies
    spur = labels.set_index("dependency_id")["spurious"].reindex(dep["id"]).to_numpy(dtype=bool)
    nbrs: list[set[int]] = [set() for _ in range(len(tb.degree))]
    for s, t in zip(tb.dep_src.tolist(), tb.dep_tgt.tolist(), strict=True):
        nbrs[s].add(t)
        nbrs[t].add(s)
    prior = {r.value: r.prior for r in LADDER}
    etype = tb.graph.entities["entity_type"].to_numpy()
    n = len(dep)
    return pd.DataFrame(
        {
            "confidence": tb.dep_conf,
            "strength": dep["strength"].to_numpy(dtype=np.float64),
            "reason_prior": dep["reason"].map(prior).to_numpy(dtype=np.float64),
            "aspect_id_null": dep["aspect_id"].isna().to_numpy(dtype=float),
            "created": tb.dep_t,
            "comentions": [tb.comention.get((s, t), 0) for s, t in zip(tb.dep_src, tb.dep_tgt, strict=True)],
            "common_neighbours": [
                len(nbrs[s] & nbrs[t]) for s, t in zip(tb.dep_src.tolist(), tb.dep_tgt.tolist(), strict=True)
            ],
            "source_degree": tb.degree[tb.dep_src],
            "target_degree": tb.degree[tb.dep_tgt],
            "same_type": (etype[tb.dep_src] == etype[tb.dep_tgt]).astype(float),
            "type_code": dep["dependency_type"].astype("category").cat.codes.to_numpy(),
            "id_order": dep["id"].rank(method="first").to_numpy() / n,
            "row_order": np.arange(n) / n,
            "spurious": spur,
        }
    )


def _signal_aucs(frame: pd.DataFrame, names: Sequence[str], label: str) -> dict[str, float]:
    y = frame[label].to_numpy(dtype=bool)
    return {k: round(_auc(frame[k].to_numpy(dtype=np.float64), y), 4) for k in names}


def _classifier_auc(train: pd.DataFrame, test: pd.DataFrame, names: Sequence[str], label: str) -> float:
    from sklearn.ensemble import HistGradientBoostingClassifier

    clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=0)
    clf.fit(train[list(names)].to_numpy(dtype=np.float64), train[label].to_numpy(dtype=bool))
    p = clf.predict_proba(test[list(names)].to_numpy(dtype=np.float64))[:, 1]
    return round(_auc(p, test[label].to_numpy(dtype=bool)), 4)


def walk_agreement(dataset: Dataset, max_queries: int = 400, seed: int = 0) -> float:
    """The share of needed items that the non-learned walk's deterministic first choice picks, with the
    gold focus entities and the gold intent given: needed attributes on the walk's first path, over all
    needed attributes, pooled over queries (v1 writes its truth with the walk's rules; v2 must not)."""
    tb = _Tables(dataset)
    qs = _audit_queries(dataset, max_queries, seed)
    walks = _walks(dataset, tb, qs)
    hit = total = 0
    for q in qs:
        needed = set(dataset.truth[q.id].needed)
        first = set(walks[q.id][0]) if walks[q.id] else set()
        hit += len(needed & first)
        total += len(needed)
    return round(hit / total, 4) if total else float("nan")


class HiddenScorer:
    """A path scorer told the v2 benchmark's hidden component (evaluation only: it reads the labels).

    A path scores the mean, over its attributes, of ``H[intent, aspect name] + K[intent, fact class]``
    (``labels["hidden"]``; the intent is the path's walk strategy, i.e. the predicted one), minus the hop
    penalty per dependency hop; a path without attributes scores below every path with some. A *changed*
    query needs only facts that replaced an earlier version (the graph says which), so on a *changed* path
    every other fact counts 10 lower. ``period``
    fixes the table (``pre`` or ``post`` the drift); by default each query gets the one of its time.
    """

    name = "hidden"

    def __init__(self, dataset: Dataset, period: str | None = None) -> None:
        hidden = dataset.truth.labels.get("hidden")
        if hidden is None:
            raise ValueError(f"{dataset.name} has no hidden component (only synthetic v2 has one)")
        self.period = period
        self.table = {(r.period, r.intent, r.key): float(r.value) for r in hidden.itertuples()}
        self.has_post = (hidden["period"] == "post").any()
        drift_day = dataset.meta.get("drift_at_day")
        t0 = pd.Timestamp(dataset.meta["config"]["start"]).timestamp()
        self.drift_t = np.inf if drift_day is None else t0 + float(drift_day) * 86400.0
        self.hop_penalty = float(dataset.meta["config"]["hop_penalty"])
        cats = dataset.truth.labels["attributes"].set_index("attribute_id")["category"]
        att = dataset.graph.attributes.set_index("id")
        asp = dataset.graph.aspects.set_index("id")["name"]
        cls = np.where(
            cats.reindex(att.index).to_numpy() == "principle",
            "principle",
            np.where(
                cats.reindex(att.index).isin(["link", "spurious_statement"]).to_numpy(),
                "statement",
                np.where(att["kind"].to_numpy() == "constraint", "constraint", "attribute"),
            ),
        )
        succ = att["superseded_by"].dropna()
        #: Attributes that replaced an earlier version: a *changed* query needs only these.
        self.changed = set(succ.astype(str).tolist())
        self.keys = {
            a: (f"aspect:{n}", f"class:{c}")
            for a, n, c in zip(att.index, att["aspect_id"].map(asp).astype(str), cls, strict=True)
        }

    def prepare(self, graph: Any, arrays: Any) -> None:
        return None

    def score(self, query: Query, paths: Sequence[Any], context: Any) -> np.ndarray:
        t = query.timestamp.timestamp() if query.timestamp is not None else 0.0
        period = self.period or ("post" if self.has_post and t >= self.drift_t else "pre")
        out = np.empty(len(paths), dtype=np.float64)
        for i, p in enumerate(paths):
            vals = [
                self.table.get((period, p.strategy, ka), 0.0)
                + self.table.get((period, p.strategy, kc), 0.0)
                - (10.0 if p.strategy == "changed" and a not in self.changed else 0.0)
                for a, (ka, kc) in ((a, self.keys[a]) for a in p.attributes)
            ]
            out[i] = (np.mean(vals) if vals else -100.0) - self.hop_penalty * len(p.dependencies)
        return out

    def update(self, feedback: Any) -> None:
        return None


def _gold_retriever_class() -> type:
    """The desire-path retriever with the gold focus entities and gold intent in place of entry search and
    the intent classifier (evaluation only): what is left to a scorer is ranking the walk's candidates."""
    from signet_rl.pipeline.desire import Candidates, DesirePathRetriever

    class GoldEntryRetriever(DesirePathRetriever):
        def __init__(self, dataset: Dataset, scorer: Any) -> None:
            super().__init__(scorer, config={"max_depth": 2})
            self.truth = dataset.truth
            self.focus = dataset.truth.labels["queries"].set_index("query_id")

        def candidates(self, query: Query) -> Candidates | None:
            intent = str(self.truth[query.id].intent)
            entries = [
                e for e in (self.focus.at[query.id, "x"], self.focus.at[query.id, "y"]) if isinstance(e, str)
            ]
            if intent == "none" or not entries:
                return None
            state = self._state(query.graph_id)
            ctx = self.context(query, entries)
            walk = state.traverser.walk(entries, intent, query.timestamp, relevance=ctx.relevance)
            return Candidates(intent, entries, walk, ctx)

    return GoldEntryRetriever


def _question_rows(
    dataset: Dataset,
    retrievers: Mapping[str, Any],
    splits: Sequence[str],
    budget_chars: int,
    max_queries: int | None,
) -> pd.DataFrame:
    """The harness's per-query rows (nDCG@10, 10 bootstrap draws) of ``retrievers`` over ``splits``,
    questions only (intent ``none`` dropped)."""
    from signet_rl.evaluation.harness import evaluate

    rows = pd.concat(
        [
            evaluate(
                dataset,
                retrievers,
                split=s,
                budget_chars=budget_chars,
                ks=(10,),
                max_queries=max_queries,
                n_boot=10,
            ).rows
            for s in splits
        ]
    )
    return rows[rows["intent"] != "none"]


def room_to_learn(
    dataset: Dataset,
    budget_chars: int = 400,
    splits: Sequence[str] = ("train", "validation", "test"),
    max_queries: int | None = 300,
) -> dict[str, float]:
    """nDCG@10 and needed-recall at ``budget_chars`` of the desire-path retriever with PPR and with the
    :class:`HiddenScorer`, both given the gold focus entities and gold intent (same walk, same budget, so
    only the scorer differs): how much a scorer that learned the hidden component could gain over PPR.
    Pooled over ``splits`` (the hidden component is the same in every split), at most ``max_queries`` each."""
    gold = _gold_retriever_class()
    retrievers = {"ppr": gold(dataset, "ppr"), "hidden": gold(dataset, HiddenScorer(dataset))}
    rows = _question_rows(dataset, retrievers, splits, budget_chars, max_queries)
    m = rows.groupby("retriever")[["ndcg@10", "needed_recall"]].mean()
    return {
        "ppr_ndcg@10": round(float(m.at["ppr", "ndcg@10"]), 4),
        "hidden_ndcg@10": round(float(m.at["hidden", "ndcg@10"]), 4),
        "gain_ndcg@10": round(float(m.at["hidden", "ndcg@10"] - m.at["ppr", "ndcg@10"]), 4),
        "ppr_recall": round(float(m.at["ppr", "needed_recall"]), 4),
        "hidden_recall": round(float(m.at["hidden", "needed_recall"]), 4),
        "queries": int(rows["query_id"].nunique()),
    }


def drift_loss(dataset: Dataset, budget_chars: int = 400, max_queries: int | None = None) -> dict[str, float]:
    """What a policy fixed before the drift loses: needed-recall at ``budget_chars`` of the
    :class:`HiddenScorer` frozen at the pre-drift table (``fixed``; gold focus and intent, as in
    :func:`room_to_learn`) and of the one that knows the post-drift table (``informed``).

    ``loss`` is ``informed_after - fixed_after``: on the same post-drift queries, same walk and budget,
    what holding on to the pre-drift needs costs. ``drop`` is ``fixed_before - fixed_after``, the fixed
    policy's fall from its own pre-drift recall (later queries are also harder, so it overstates the drift's
    share; ``loss`` does not).

    Raises:
        ValueError: a dataset without a drift (``drift=True`` of synthetic v2).
    """
    if dataset.meta.get("drift_at_day") is None:
        raise ValueError(f"{dataset.name} has no drift; generate it with version=2, drift=True")
    gold = _gold_retriever_class()
    retrievers = {
        "fixed": gold(dataset, HiddenScorer(dataset, period="pre")),
        "informed": gold(dataset, HiddenScorer(dataset)),
    }
    rows = _question_rows(dataset, retrievers, ("train", "validation", "test"), budget_chars, max_queries)
    after = dataset.truth.labels["queries"].set_index("query_id")["after_drift"]
    rows = rows.assign(after=rows["query_id"].map(after).astype(bool))
    m = rows.groupby(["retriever", "after"])["needed_recall"].mean()
    out = {
        "fixed_before": float(m[("fixed", False)]),
        "fixed_after": float(m[("fixed", True)]),
        "informed_after": float(m[("informed", True)]),
    }
    out["loss"] = out["informed_after"] - out["fixed_after"]
    out["drop"] = out["fixed_before"] - out["fixed_after"]
    return {k: round(v, 4) for k, v in out.items()}


def benchmark_audit(
    dataset: Dataset, max_queries: int = 400, train_seed: int | None = None
) -> dict[str, Any]:
    """Every v2 audit of a generated benchmark, as ``describe`` prints it.

    The classifiers (scikit-learn's ``HistGradientBoostingClassifier`` on all item signals, and on all edge
    signals) are trained on the same config generated with ``train_seed`` (default: this seed + 1) and
    tested here, so a figure is never read on the seed a classifier saw.

    Returns:
        ``needed_auc`` and ``spurious_auc`` (each signal's AUC; ``max_*`` the largest oriented one, bound
        :data:`SIGNAL_AUC_MAX`), ``needed_classifier_auc`` and ``spurious_classifier_auc`` (bound
        :data:`CLASSIFIER_AUC_MAX`), ``walk_agreement`` (bound :data:`WALK_AGREEMENT_MAX`), ``room_to_learn``
        (:func:`room_to_learn`; the gain's bound :data:`ROOM_TO_LEARN_MIN`, v2 only), ``unnamed_share`` (of
        queries with a focus entity, the share that do not name it; v2 only), ``drift`` (v2 with a drift),
        and ``failed``: the bounds this dataset misses.
    """
    from signet_rl.datasets.synthetic import generate

    meta = dataset.meta
    if meta.get("generator") != "synthetic":
        raise ValueError(f"{dataset.name}: the benchmark audit needs a generated (synthetic) dataset")
    config = dict(meta["config"])
    version = int(config.pop("generator_version"))
    preset = config.pop("preset")
    seed = int(meta["seed"])
    train_seed = seed + 1 if train_seed is None else train_seed
    if train_seed == seed:
        raise ValueError(f"train_seed={train_seed} is the audited seed; the classifiers need another one")
    train = generate(preset, seed=train_seed, version=version, **config)
    items, items_train = item_signals(dataset, max_queries), item_signals(train, max_queries)
    edges, edges_train = edge_signals(dataset), edge_signals(train)
    out: dict[str, Any] = {"generator_version": version, "seed": seed, "classifier_train_seed": train_seed}
    out["needed_auc"] = _signal_aucs(items, ITEM_SIGNALS, "needed")
    out["spurious_auc"] = _signal_aucs(edges, EDGE_SIGNALS, "spurious")
    out["max_needed_auc"] = max(oriented(v) for v in out["needed_auc"].values())
    out["max_spurious_auc"] = max(oriented(v) for v in out["spurious_auc"].values())
    out["needed_classifier_auc"] = _classifier_auc(items_train, items, ITEM_SIGNALS, "needed")
    out["spurious_classifier_auc"] = _classifier_auc(edges_train, edges, EDGE_SIGNALS, "spurious")
    out["walk_agreement"] = walk_agreement(dataset, max_queries)
    failed = [
        f"{k} {out[k]:.3f} > {bound}"
        for k, bound in (
            ("max_needed_auc", SIGNAL_AUC_MAX),
            ("max_spurious_auc", SIGNAL_AUC_MAX),
            ("needed_classifier_auc", CLASSIFIER_AUC_MAX),
            ("spurious_classifier_auc", CLASSIFIER_AUC_MAX),
        )
        if oriented(out[k]) > bound
    ]
    if out["walk_agreement"] >= WALK_AGREEMENT_MAX:
        failed.append(f"walk_agreement {out['walk_agreement']:.3f} >= {WALK_AGREEMENT_MAX}")
    if version >= 2:
        focus = dataset.truth.labels["queries"]
        ref = focus["reference"].dropna()
        out["unnamed_share"] = round(float((ref != "name").mean()), 4) if len(ref) else float("nan")
        out["room_to_learn"] = room_to_learn(dataset)
        if out["room_to_learn"]["gain_ndcg@10"] < ROOM_TO_LEARN_MIN:
            failed.append(
                f"room_to_learn gain {out['room_to_learn']['gain_ndcg@10']:.3f} < {ROOM_TO_LEARN_MIN}"
            )
        if meta.get("drift_at_day") is not None:
            out["drift"] = drift_loss(dataset)
    out["failed"] = failed
    return out
