"""Audits: every measurement that reads ground truth, apart from the harness itself.

How informative a generated benchmark's cheap signals are (:func:`signal_auc`), its query mix
(:func:`describe_mix`), whether entry search lands on the focus entities (:func:`entry_recall`), how the
intent classifier and the significance gate do against gold intents (:func:`intent_report`,
:func:`gate_report`), how well communities recover planted ones (:func:`recovery`), and the gold-labelled
texts a learned intent classifier trains on (:func:`training_examples`). They live here, with the harness,
because ground truth reaches only evaluation and the simulated rater (``docs/design.md``, "Layers"); the
entry points (``describe``, the communities CLI, the report scripts) call them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.types import Query, Split
from signet_rl.datasets.base import Dataset, Truth
from signet_rl.graph.communities import Communities, nmi_ari
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
