"""Bridges, principles and pruning measured on synthetic v2, where the truth is planted (issue 29 §2–§4).

Every threshold is chosen on the validation seed (``--val-seed``, default :data:`VAL_SEEDS`): the grid
point with the best F1 (bridges, principles) or, for pruning, the most noise pruned with no needed item of
a later validation-period query pruned. The figures are then computed once, with those thresholds, on the
seed given as ``--seed`` (the code names none) and on a **control graph** of that seed where nothing is
planted (``principles=0``, ``noise_entity_rate=0``, and the bridge facts the generator always writes —
at least two — removed from the graph after generation; the generator itself is not changed).

Parts (``--part``):

* ``bridges``: :func:`~signet_rl.emergence.bridges.find_bridges` over every attribute (ingest of the
  whole graph), then a simulated explorer: for each training query (timeline order, ``--epochs`` passes)
  one candidate bridge with an end among the query's entry entities (the retriever's own entry search) is
  walked — the one whose far side is closest to the query in meaning; that attribute is shown — and the
  simulated rater rates it; the
  :class:`~signet_rl.emergence.bridges.BridgeTracker` promotes or fades. Reports candidates, promoted
  precision and recall against the planted pairs, and the ratings promotion took.
* ``principles``: :func:`~signet_rl.emergence.principles.detect_principles`; a detected principle matches a
  planted one when most of its evidence attributes are that principle's facts. Precision, recall, and the
  spurious share (detected principles matching none).
* ``pruning``: a bandit run (``linucb``, the trainer's defaults, ``--epochs``) over the training queries
  logs feedback; :func:`~signet_rl.emergence.health.plan_pruning` judges entities on that log only; the
  plan is applied through the real cold tier (a store copy, :func:`~signet_rl.emergence.cold.move_to_cold`)
  and the graph read back. Reports the share of planted noise entities pruned, the needed items of later
  (validation and test) queries pruned, test recall@10 of the ``prior`` desire-path retriever before and
  after at the same budget, and its mean traversal latency (with the load average: timings on a shared
  machine are inflated). ``--chosen-from`` takes the thresholds an earlier run chose on its validation
  seed (the xl figures reuse medium's choice: one bandit run at xl is minutes). ``--save-plans DIR`` writes
  each operating point's plan (:meth:`~signet_rl.emergence.health.PruningPlan.save`), the input of
  ``python -m signet_rl.emergence prune``.
  With ``--rediscover``, the period after training follows each pruning: a LinUCB bandit run (the same
  settings, one pass) over the validation queries in timeline order walks the pruned graph with cold
  explorers on (:class:`~signet_rl.emergence.rediscovery.ColdExplorer`, its ``reach`` and
  ``min_similarity`` chosen on the validation seed with the issue's-rule plan, which prunes needed items:
  the most needed test items brought back, ties to fewer restores); the entities its
  positive ratings restore are restored on the store copy (:func:`~signet_rl.emergence.cold.rate_cold`),
  and test recall is measured again at the same budget. Reports the pruned entities later queries need,
  the cold paths shown and rated, the entities restored (and how many of them test queries need), the
  ratings they took, and recall with and without rediscovery.

    python experiments/emergence_report.py --part bridges --seed <S> --preset medium
    python experiments/emergence_report.py --part pruning --seed <S> --preset xl

Writes ``data/emergence/<part>-<preset>-<seed>.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.datasets.base import Dataset
from signet_rl.datasets.synthetic import generate
from signet_rl.emergence.bridges import BridgeTracker, find_bridges
from signet_rl.emergence.health import HealthThresholds, plan_pruning
from signet_rl.emergence.principles import (
    detect_embedding_principles,
    detect_principles,
    detect_value_principles,
)
from signet_rl.text.encoders import make_encoder
from signet_rl.traversal.path import Path as TPath

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "emergence"
#: The validation seed every threshold is chosen on.
VAL_SEEDS = (11, 1001)
#: The synthetic generator version every dataset of a run is built with (``--version``; 2 by default, 3 is
#: the opt-in benchmark of :mod:`signet_rl.datasets.synthetic_v3`). Set once by :func:`main`.
VERSION = 2


# --------------------------------------------------------------------------------------------------
# Data


def dataset(preset: str, seed: int, control: bool) -> Dataset:
    """The dataset (generator :data:`VERSION`); the control has no principles, no noise entities and its
    bridge facts removed."""
    if not control:
        return generate(preset, seed=seed, version=VERSION)
    nothing: dict[str, Any] = {"principles": 0, "noise_entity_rate": 0.0, "bridges_per_1k": 0.0}
    if VERSION >= 3:  # v3 sizes its bridges by their queries: no bridge queries, the two bridges removed
        nothing["bridge_share"] = 0.0
    ds = generate(preset, seed=seed, version=VERSION, **nothing)
    lab = ds.truth.labels["attributes"]
    planted = set(lab.loc[lab["category"] == "bridge", "attribute_id"])
    g = ds.graph
    g = g.replace(attributes=g.attributes[~g.attributes["id"].isin(planted)].reset_index(drop=True))
    return dataclasses.replace(ds, graphs={"main": g})


def planted_bridges(ds: Dataset) -> set[frozenset[str]]:
    lab = ds.truth.labels["attributes"]
    present = set(ds.graph.attributes["id"])
    out = set()
    for _, grp in lab[lab["category"] == "bridge"].groupby("bridge_group"):
        ids = [a for a in grp["attribute_id"] if a in present]
        if len(ids) == 2:
            out.add(frozenset(ids))
    return out


# --------------------------------------------------------------------------------------------------
# Bridges


def bridge_candidates(ds: Dataset, encoder: Any, min_sim: float, min_lex: float,
                      mutual_top: int | None = None, variant_overlap: float | None = None,
                      max_copies: int | None = None) -> list[Any]:
    return find_bridges(ds.graph, None, encoder=encoder, min_similarity=min_sim, min_lexical=min_lex,
                        mutual_top=mutual_top, variant_overlap=variant_overlap, max_copies=max_copies)


#: Which queries make the simulated explorer's rated stream: the training split, or the whole timeline.
STREAMS = {"train": ("train",), "all": ("train", "validation", "test")}


def stream_queries(ds: Dataset, stream: str) -> list[Any]:
    """The queries of ``stream`` (:data:`STREAMS`) in timeline order."""
    qs = [q for split in STREAMS[stream] for q in ds.split(split)]
    return sorted(qs, key=lambda q: (q.timestamp, q.id))


def entries_by_query(ds: Dataset, stream: str = "train") -> dict[str, list[str]]:
    """Each stream query's entry entities (timeline order), from the prior desire-path retriever's entry
    search."""
    from signet_rl.pipeline.desire import DesirePathRetriever

    ret = DesirePathRetriever("prior")
    ret.index(ds)
    out = {}
    for q in stream_queries(ds, stream):
        cands = ret.candidates(q)
        out[q.id] = list(cands.entries) if cands is not None else []
    return out


def explorer_vectors(ds: Dataset, encoder: Any, qids: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Query vectors (training queries) and attribute vectors: the explorer walks to the bridge whose far
    side is closest in meaning to the query."""
    from signet_rl.emergence.similar import active_attributes, encode

    text = {q.id: q.text for split in STREAMS["all"] for q in ds.split(split)}
    qv = encode(encoder, [text[i] for i in qids])
    attrs = active_attributes(ds.graph)
    av = encode(encoder, attrs["content"].tolist())
    return dict(zip(qids, qv, strict=True)), dict(zip(attrs["id"], av, strict=True))


def simulate_bridges(ds: Dataset, cands: list[Any], entries: dict[str, list[str]], vectors: tuple[Any, Any],
                     promote_after: int, epochs: int, seed: int) -> tuple[BridgeTracker, dict[str, int]]:
    """For each training query (timeline order, ``epochs`` passes) the explorer walks one candidate bridge
    with an end among the query's entries — the one whose far side is closest to the query in meaning —
    and the simulated rater rates the far side's attribute."""
    from signet_rl.rating.rater import SimulatedRater

    qv, av = vectors
    rater = SimulatedRater(ds.truth, 0.05, 0.8, seed=seed)
    tracker = BridgeTracker(promote_after=promote_after)
    tracker.add(cands)
    by_entity: dict[str, list[tuple[str, str]]] = {}  # entity -> [(bridge id, the far side's attribute)]
    far_entity = {b.attribute_a: b.entity_a for b in cands} | {b.attribute_b: b.entity_b for b in cands}
    for b in cands:
        by_entity.setdefault(b.entity_a, []).append((b.id, b.attribute_b))
        by_entity.setdefault(b.entity_b, []).append((b.id, b.attribute_a))
    ratings: Counter[str] = Counter()
    until: dict[str, int] = {}
    g = ds.graph
    for _ in range(epochs):
        for qid, ents in entries.items():
            pool = [(bid, far) for e in ents for bid, far in by_entity.get(e, [])
                    if tracker.states[bid].status == "candidate"]
            if not pool:
                continue
            # a bridge joining two of the query's entries (nothing else connects them) goes first; then
            # the one whose far side is closest to the query in meaning
            joins = np.asarray([far_entity[far] in ents for _, far in pool], dtype=np.float64)
            sims = np.asarray([av[far] for _, far in pool]) @ qv[qid]
            bid, far = pool[int(np.argmax(2.0 * joins + sims))]
            r = rater.rate(qid, [far])
            if r is None:
                continue
            ratings[bid] += 1
            g = tracker.rate(g, bid, int(r))
            if tracker.states[bid].status == "promoted" and bid not in until:
                until[bid] = ratings[bid]
    return tracker, until


def bridge_scores(planted: set[frozenset[str]], cands: list[Any], tracker: BridgeTracker,
                  until: dict[str, int]) -> dict[str, Any]:
    pair = {b.id: frozenset((b.attribute_a, b.attribute_b)) for b in cands}
    promoted = [bid for bid, s in tracker.states.items() if s.status == "promoted"]
    hits = [bid for bid in promoted if pair[bid] in planted]
    found = {pair[b.id] for b in cands} & planted
    took = [until[b] for b in hits]
    return {
        "planted": len(planted), "candidates": len(cands), "candidate_recall": _div(len(found), len(planted)),
        "promoted": len(promoted), "promoted_true": len(hits),
        "precision": _div(len(hits), len(promoted)), "recall": _div(len(hits), len(planted)),
        "faded": sum(s.status == "faded" for s in tracker.states.values()),
        "ratings_to_promotion_median": float(np.median(took)) if took else None,
        "ratings_to_promotion_max": int(max(took)) if took else None,
    }


#: The candidate check's grid (chosen on the validation seed): cosine, keyword Jaccard, mutual rank.
BRIDGE_GRID = {"min_similarity": (0.5, 0.6, 0.7), "min_lexical": (0.0, 0.1, 0.2), "mutual_top": (1, 2)}
#: Token overlap from which a pair is the same wording with other values (fixed, not tuned).
VARIANT_OVERLAP = 0.4
#: A text held by more entities than this is a common value, never a bridge end (fixed, not tuned).
MAX_COPIES = 2


def run_bridges(args: argparse.Namespace, encoder: Any) -> dict[str, Any]:
    vals = []
    for seed in args.val_seed:
        val = dataset(args.preset, seed, control=False)
        entries = entries_by_query(val, args.stream)
        vals.append((seed, val, entries, explorer_vectors(val, encoder, list(entries)), planted_bridges(val)))
    best, table = None, []
    for s in BRIDGE_GRID["min_similarity"]:
        for lx in BRIDGE_GRID["min_lexical"]:
            for k in BRIDGE_GRID["mutual_top"]:
                cands = {seed: bridge_candidates(val, encoder, s, lx, k, VARIANT_OVERLAP, MAX_COPIES)
                         for seed, val, *_ in vals}
                for p in (1, 2, 3):
                    f1s, cand_recall, n_cands = [], [], 0
                    for seed, val, entries, vectors, planted in vals:
                        tracker, until = simulate_bridges(val, cands[seed], entries, vectors, p, args.epochs,
                                                          seed)
                        sc = bridge_scores(planted, cands[seed], tracker, until)
                        f1 = _f1(sc["precision"], sc["recall"])
                        f1s.append(f1)
                        cand_recall.append(sc["candidate_recall"] or 0.0)
                        n_cands += len(cands[seed])
                        table.append({"seed": seed, "min_similarity": s, "min_lexical": lx, "mutual_top": k,
                                      "promote_after": p, "f1": f1, **sc})
                        _log(f"validation seed {seed} sim {s} lex {lx} mutual {k} promote {p}: "
                             f"{len(cands[seed])} candidates ({sc['candidate_recall']} of planted), "
                             f"{sc['promoted_true']}/{sc['promoted']} promoted planted, F1 {f1:.3f}")
                    key = (float(np.mean(f1s)), float(np.mean(cand_recall)), -n_cands)
                    if best is None or key > best[0]:
                        best = (key, s, lx, k, p)
    assert best is not None
    _, s, lx, k, p = best
    out: dict[str, Any] = {"chosen": {"min_similarity": s, "min_lexical": lx, "mutual_top": k,
                                      "variant_overlap": VARIANT_OVERLAP, "max_copies": MAX_COPIES,
                                      "promote_after": p},
                           "validation_f1": best[0][0], "validation": table}
    if args.validation_only:
        return out
    for name, control in (("planted", False), ("control", True)):
        ds = dataset(args.preset, args.seed, control=control)
        cands = bridge_candidates(ds, encoder, s, lx, k, VARIANT_OVERLAP, MAX_COPIES)
        entries = entries_by_query(ds, args.stream)
        tracker, until = simulate_bridges(ds, cands, entries, explorer_vectors(ds, encoder, list(entries)), p,
                                          args.epochs, args.seed)
        out[name] = bridge_scores(planted_bridges(ds), cands, tracker, until)
    return out


def trained_bridges(ds: Dataset, chosen: dict[str, Any], epochs: int, seed: int,
                    encoder: Any) -> dict[str, Any]:
    """The bandit trainer (``linucb``, trainer defaults) over the training queries with the explorer slot
    aimed at the bridge candidates (:class:`~signet_rl.emergence.components.BridgeTargets`), then the
    tracker fed from the run's log (:func:`~signet_rl.emergence.components.after_training`)."""
    from signet_rl.emergence.components import BridgeTargets, after_training
    from signet_rl.emergence.config import BridgeParams, EmergenceConfig
    from signet_rl.learning.trainer import BanditConfig, BanditTrainer
    from signet_rl.scorers import PRE_SWEEP_DEFAULTS
    from signet_rl.scorers.base import make_scorer

    params = BridgeParams(**{k: v for k, v in chosen.items() if k in BridgeParams.__dataclass_fields__},
                          target_explorers=True)
    cands = bridge_candidates(ds, encoder, params.min_similarity, params.min_lexical, params.mutual_top,
                              params.variant_overlap, params.max_copies)
    linucb = make_scorer("linucb", **PRE_SWEEP_DEFAULTS["linucb"])  # not rerun since issue 25 §3
    trainer = BanditTrainer(ds, linucb, BanditConfig(epochs=epochs, eval_every=0,
                                                                    checkpoint_every=0),
                            seed=seed, progress=False)
    trainer.explorer_targets = BridgeTargets(ds.graphs, {"main": cands})
    _log(f"bandit run with bridge explorer targets: {len(trainer.train_queries)} queries x {epochs} epochs")
    trainer.run()
    records = list(trainer.log.records)
    out = after_training(EmergenceConfig(bridges=True, bridge=params), ds.graph, records, until=None,
                         encoder=encoder, bridges=cands)
    assert out.bridges is not None
    # ratings until promotion: replay the crossings the tracker was fed, counting per bridge
    crossed: Counter[str] = Counter()
    until: dict[str, int] = {}
    replay = BridgeTracker(promote_after=params.promote_after, climb_after=params.climb_after,
                           fade_after=params.fade_after)
    replay.add(cands)
    g = ds.graph
    for bid, rating in _crossed(replay, records):
        if replay.states[bid].status == "faded":
            continue
        crossed[bid] += 1
        g = replay.rate(g, bid, rating)
        if replay.states[bid].status == "promoted" and bid not in until:
            until[bid] = crossed[bid]
    sc = bridge_scores(planted_bridges(ds), cands, out.bridges, until)
    sc["explorer_slots"] = sum(sum(r.explorer) for r in records)
    sc["bridge_ratings"] = sum(crossed.values())
    sc["bridges_rated"] = len(crossed)
    planted = planted_bridges(ds)
    pair = {b.id: frozenset((b.attribute_a, b.attribute_b)) for b in cands}
    sc["planted_rated"] = sum(1 for bid in crossed if pair[bid] in planted)
    return sc


def _crossed(tracker: BridgeTracker, records: list[Any]) -> list[tuple[str, int]]:
    from signet_rl.emergence.components import bridge_ratings

    return bridge_ratings(tracker, records)


def run_bridges_trained(args: argparse.Namespace, encoder: Any) -> dict[str, Any]:
    """``--part bridges-trained``: the thresholds an earlier ``--part bridges`` run chose on the validation
    seeds (``--chosen-from``), with the explorer inside the training loop; validation seeds first."""
    if args.chosen_from is None:
        raise SystemExit("--part bridges-trained needs --chosen-from <a bridges run's JSON>")
    chosen = json.loads(Path(args.chosen_from).read_text())["chosen"]
    out: dict[str, Any] = {"chosen": chosen, "chosen_from": str(args.chosen_from)}
    for seed in args.val_seed:
        out[f"validation_{seed}"] = trained_bridges(dataset(args.preset, seed, control=False), chosen,
                                                    args.epochs, seed, encoder)
        _log(f"validation seed {seed}: {out[f'validation_{seed}']}")
    if args.validation_only:
        return out
    for name, control in (("planted", False), ("control", True)):
        out[name] = trained_bridges(dataset(args.preset, args.seed, control=control), chosen, args.epochs,
                                    args.seed, encoder)
    return out


# --------------------------------------------------------------------------------------------------
# Principles


def principle_scores(ds: Dataset, found: list[Any]) -> dict[str, Any]:
    lab = ds.truth.labels["attributes"]
    # planted principle facts only (the column is None or NaN elsewhere: never a name to match)
    of = {a: p for a, p in zip(lab["attribute_id"], lab["principle"], strict=True) if isinstance(p, str)}
    names = set(of.values())
    matched: list[str | None] = []
    for p in found:
        votes = Counter(of.get(e["attribute_id"]) for e in p.evidence)
        name, n = votes.most_common(1)[0]
        matched.append(name if name is not None and n * 2 > len(p.evidence) else None)
    good = [m for m in matched if m is not None]
    return {"planted": len(names), "detected": len(found), "matching": len(good),
            "precision": _div(len(good), len(found)), "recall": _div(len(set(good)), len(names)),
            "spurious_share": _div(len(found) - len(good), len(found))}


#: Which attributes principle detection looks at: the decision and preference ones (the default), or all.
PATTERNS = {"decision": None, "all": r"."}


#: The principle detector's grid (chosen on the validation seeds). Identical texts and slot variants are
#: never linked (``variant_overlap`` = :data:`VARIANT_OVERLAP`); communities are Leiden's when the graph has
#: none (v2 graphs have none).
PRINCIPLE_GRID = {"min_similarity": (0.3, 0.4, 0.5, 0.6, 0.7), "min_lexical": (0.0, 0.1),
                  "min_tightness": (None, 0.4, 0.5, 0.6)}
#: Over every attribute (``all``), low cosines link millions of pairs: the grid starts at 0.6 there.
ALL_MIN_SIMILARITY = 0.6


def principle_cosines(ds: Dataset, encoder: Any) -> dict[str, Any]:
    """Why a similarity detector can or cannot see the planted principles (validation seeds only): the
    planted paraphrases' mean pairwise cosine, and for each paraphrase how many attributes of the graph
    are closer to it than its nearest fellow paraphrase."""
    from signet_rl.emergence.similar import active_attributes, encode

    attrs = active_attributes(ds.graph)
    vec = encode(encoder, attrs["content"].tolist())
    lab = ds.truth.labels["attributes"]
    pos = {a: i for i, a in enumerate(attrs["id"])}
    out = {}
    for name, grp in lab[lab["principle"].map(lambda x: isinstance(x, str))].groupby("principle"):
        rows = [pos[a] for a in grp["attribute_id"] if a in pos]
        block = vec[rows] @ vec[rows].T
        pair = block[np.triu_indices(len(rows), 1)]
        closer = []
        for k, r in enumerate(rows):
            sims = vec @ vec[r]
            sims[r] = -np.inf
            best_fellow = max(block[k, m] for m in range(len(rows)) if m != k)
            closer.append(int((sims > best_fellow).sum()))
        out[name] = {"mean_cosine": round(float(pair.mean()), 3), "max_cosine": round(float(pair.max()), 3),
                     "attributes_closer_than_nearest_fellow": closer}
    return out


def run_principles(args: argparse.Namespace, encoder: Any) -> dict[str, Any]:
    vals = [(seed, dataset(args.preset, seed, control=False)) for seed in args.val_seed]
    best, table = None, []
    for which, pattern in PATTERNS.items():
        extra: dict[str, Any] = {} if pattern is None else {"pattern": pattern}
        for s in PRINCIPLE_GRID["min_similarity"]:
            if which == "all" and s < ALL_MIN_SIMILARITY:
                continue
            for lx in PRINCIPLE_GRID["min_lexical"]:
                for tight in PRINCIPLE_GRID["min_tightness"]:
                    f1s, found_n = [], []
                    for seed, val in vals:
                        found = detect_principles(val.graph, encoder=encoder, min_similarity=s,
                                                  min_lexical=lx, min_tightness=tight,
                                                  variant_overlap=VARIANT_OVERLAP, community_source="auto",
                                                  **extra)
                        sc = principle_scores(val, found)
                        f1s.append(_f1(sc["precision"], sc["recall"]))
                        found_n.append(len(found))
                        table.append({"seed": seed, "attributes": which, "min_similarity": s,
                                      "min_lexical": lx, "min_tightness": tight, "f1": f1s[-1], **sc})
                    _log(f"validation {which} sim {s} lex {lx} tight {tight}: F1 {np.mean(f1s):.3f}, "
                         f"detected {found_n}")
                    # no point recovers anything: the one that proposes least wins
                    key = (float(np.mean(f1s)), -float(np.mean(found_n)))
                    if best is None or key > best[0]:
                        best = (key, which, s, lx, tight)
    assert best is not None
    _, which, s, lx, tight = best
    extra = {} if PATTERNS[which] is None else {"pattern": PATTERNS[which]}
    out: dict[str, Any] = {"chosen": {"attributes": which, "min_similarity": s, "min_lexical": lx,
                                      "min_tightness": tight, "variant_overlap": VARIANT_OVERLAP,
                                      "community_source": "auto", "min_communities": 3},
                           "validation_f1": best[0][0], "validation": table,
                           "validation_cosines": {seed: principle_cosines(val, encoder)
                                                  for seed, val in vals}}
    if args.validation_only:
        return out
    for name, control in (("planted", False), ("control", True)):
        ds = dataset(args.preset, args.seed, control=control)
        found = detect_principles(ds.graph, encoder=encoder, min_similarity=s, min_lexical=lx,
                                  min_tightness=tight,
                                  variant_overlap=VARIANT_OVERLAP, community_source="auto", **extra)
        out[name] = principle_scores(ds, found)
        out[name]["examples"] = [p.text for p in found[:5]]
    return out


#: The value detector's grid (:func:`~signet_rl.emergence.principles.detect_value_principles`), chosen on the
#: validation seeds' planted graphs and their controls together (mean F1 over the seeds, where precision
#: counts a control's detections as false ones).
VALUE_GRID = {"stem_prefix": (4, 5, 6, None), "max_df": (8, 16, 32, 64), "min_z": (0.0, 2.0, 3.0, 4.0, 5.0)}


def _value_kwargs(prefix: Any, max_df: int, min_z: float) -> dict[str, Any]:
    return {"stem_prefix": prefix, "max_df": max_df, "min_z": min_z, "variant_overlap": VARIANT_OVERLAP,
            "community_source": "auto", "min_communities": 3}


def _grid_point(
    detect: Any, vals: list, encoder: Any, kw: dict, table: list
) -> tuple[list[float], list[int]]:
    """One validation grid point of a principle detector: per validation seed, its F1 (precision pooled with
    what it proposes on the seed's control graph) and how many it proposed (planted + control); each seed's
    row is appended to ``table``."""
    f1s, found_n = [], []
    for seed, val, ctl in vals:
        sc = principle_scores(val, detect(val.graph, encoder=encoder, **kw))
        n_ctl = len(detect(ctl.graph, encoder=encoder, **kw))
        precision = _div(sc["matching"], sc["detected"] + n_ctl)
        f1s.append(_f1(precision, sc["recall"]))
        found_n.append(sc["detected"] + n_ctl)
        table.append({"seed": seed, **kw, "control_detected": n_ctl,
                      "pooled_precision": precision, "f1": f1s[-1], **sc})
    return f1s, found_n


def run_principles_value(args: argparse.Namespace, encoder: Any) -> dict[str, Any]:
    """The value detector: the grid on the validation seeds (planted and control graphs), then the reporting
    seed and its control once."""
    vals = [(seed, dataset(args.preset, seed, control=False), dataset(args.preset, seed, control=True))
            for seed in args.val_seed]
    best, table = None, []
    for prefix in VALUE_GRID["stem_prefix"]:
        for max_df in VALUE_GRID["max_df"]:
            for min_z in VALUE_GRID["min_z"]:
                kw = _value_kwargs(prefix, max_df, min_z)
                f1s, found_n = _grid_point(detect_value_principles, vals, encoder, kw, table)
                _log(f"validation prefix {prefix} max_df {max_df} z {min_z}: F1 {np.mean(f1s):.3f}, "
                     f"detected (planted + control) {found_n}")
                # ties (a plateau of equal F1) go to the strictest test, then the fewest words dismissed as
                # vocabulary, then the longer (more conservative) stem
                key = (float(np.mean(f1s)), min_z, max_df, 99 if prefix is None else prefix)
                if best is None or key > best[0]:
                    best = (key, kw)
    assert best is not None
    kw = best[1]
    out: dict[str, Any] = {"chosen": kw, "validation_f1": best[0][0], "validation": table}
    if args.validation_only:
        return out
    for name, control in (("planted", False), ("control", True)):
        ds = dataset(args.preset, args.seed, control=control)
        found = detect_value_principles(ds.graph, encoder=encoder, **kw)
        out[name] = principle_scores(ds, found)
        out[name]["found"] = [{"text": p.text, "communities": len(p.communities),
                               "evidence": [e["content"] for e in p.evidence]} for p in found]
    return out


#: The embedding detector's grid (:func:`~signet_rl.emergence.principles.detect_embedding_principles`),
#: chosen like the value detector's: mean F1 over the validation seeds, a control's detections counted as
#: false ones; ties (every point at F1 0 included) go to the point that proposes least, then the stricter
#: similarity floor.
EMBED_GRID = {"second_order": (True, False), "share_veto": (True, False), "k": (2, 3, 5),
              "min_similarity": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)}


def _embed_kwargs(second_order: bool, share_veto: bool, k: int, min_similarity: float) -> dict[str, Any]:
    return {"second_order": second_order, "share_veto": share_veto, "k": k, "min_similarity": min_similarity,
            "mutual": True, "skip_templates": True, "variant_overlap": VARIANT_OVERLAP,
            "community_source": "auto", "min_communities": 3}


def _found(ds: Dataset, found: list[Any]) -> list[dict[str, Any]]:
    """Each detected principle's evidence with what the generator planted there (labels, for reading)."""
    lab = ds.truth.labels["attributes"].set_index("attribute_id")
    decoy = lab["decoy"] if "decoy" in lab else pd.Series(None, index=lab.index)

    def what(a: str) -> str:
        p, d, c = lab.at[a, "principle"], decoy.get(a), lab.at[a, "category"]
        return f"principle:{p}" if isinstance(p, str) else f"{c}:{d}" if isinstance(d, str) else str(c)

    return [{"text": p.text, "communities": len(p.communities),
             "evidence": [[e["content"], what(e["attribute_id"])] for e in p.evidence]} for p in found]


def run_principles_embed(args: argparse.Namespace, encoder: Any) -> dict[str, Any]:
    """The embedding detector: the grid on the validation seeds (planted and control graphs), then the
    reporting seed and its control once; with ``--chosen-from``, that run's choice instead of the grid."""
    best, table = None, []
    if args.chosen_from is not None:
        kw = json.loads(Path(args.chosen_from).read_text())["chosen"]
        out: dict[str, Any] = {"chosen": kw, "chosen_from": str(args.chosen_from)}
    else:
        vals = [(seed, dataset(args.preset, seed, control=False), dataset(args.preset, seed, control=True))
                for seed in args.val_seed]
        for so in EMBED_GRID["second_order"]:
            for veto in EMBED_GRID["share_veto"]:
                for k in EMBED_GRID["k"]:
                    for sim in EMBED_GRID["min_similarity"]:
                        kw = _embed_kwargs(so, veto, k, sim)
                        f1s, found_n = _grid_point(detect_embedding_principles, vals, encoder, kw, table)
                        _log(f"validation second_order {so} veto {veto} k {k} sim {sim}: "
                             f"F1 {np.mean(f1s):.3f}, "
                             f"detected (planted + control) {found_n}")
                        key = (float(np.mean(f1s)), -float(np.sum(found_n)), sim)
                        if best is None or key > best[0]:
                            best = (key, kw)
        assert best is not None
        kw = best[1]
        out = {"chosen": kw, "validation_f1": best[0][0], "validation": table}
        if args.validation_only:
            return out
    for name, control in (("planted", False), ("control", True)):
        ds = dataset(args.preset, args.seed, control=control)
        found = detect_embedding_principles(ds.graph, encoder=encoder, **kw)
        out[name] = principle_scores(ds, found)
        out[name]["found"] = _found(ds, found)
    return out


def run_principles_real(args: argparse.Namespace, encoder: Any) -> dict[str, Any]:
    """The value detector, with the settings an earlier ``principles-value`` run chose (``--chosen-from``), on
    a real dataset's graphs (``--dataset``, through the registry). Nothing is planted there and there is no
    truth: what it proposes is printed for reading, as a spurious-rate check outside the generator."""
    from signet_rl.datasets.registry import load_dataset

    if args.chosen_from is None:
        raise SystemExit("--part principles-real needs --chosen-from <a principles-value or "
                         "principles-embed run's JSON>")
    kw = json.loads(Path(args.chosen_from).read_text())["chosen"]
    # a principles-embed run's choice names second_order; a principles-value run's does not
    detector = detect_embedding_principles if "second_order" in kw else detect_value_principles
    ds = load_dataset(args.dataset)
    out: dict[str, Any] = {"chosen": kw, "detector": detector.__name__, "dataset": args.dataset, "graphs": {}}
    for gid, g in ds.graphs.items():
        found = detector(g, encoder=encoder, **kw)
        out["graphs"][gid] = {"attributes": int(len(g.attributes)), "entities": int(len(g.entities)),
                              "detected": len(found),
                              "found": [[e["content"] for e in p.evidence] for p in found]}
        _log(f"{gid}: {len(g.entities):,} entities, {len(g.attributes):,} attributes, {len(found)} proposed")
    return out


# --------------------------------------------------------------------------------------------------
# Pruning


def training_log(ds: Dataset, epochs: int, seed: int) -> tuple[list[Any], pd.Timestamp]:
    """The feedback a bandit run logs over the training queries, and the end of the training period."""
    from signet_rl.learning.trainer import BanditConfig, BanditTrainer
    from signet_rl.scorers import PRE_SWEEP_DEFAULTS
    from signet_rl.scorers.base import make_scorer

    linucb = make_scorer("linucb", **PRE_SWEEP_DEFAULTS["linucb"])  # not rerun since issue 25 §3
    trainer = BanditTrainer(ds, linucb, BanditConfig(epochs=epochs, eval_every=0,
                                                                    checkpoint_every=0),
                            seed=seed, progress=False)
    _log(f"bandit run over {len(ds.split('train'))} training queries x {epochs} epochs")
    trainer.run()
    until = max(q.timestamp for q in ds.split("train"))
    return list(trainer.log.records), pd.Timestamp(until)


def later_needed_entities(ds: Dataset, splits: tuple[str, ...]) -> dict[str, set[str]]:
    """Entity -> the attribute ids later queries (of ``splits``) need from it."""
    owner = dict(zip(ds.graph.attributes["id"], ds.graph.attribute_entity_ids(), strict=True))
    out: dict[str, set[str]] = {}
    for split in splits:
        for q in ds.split(split):
            for item in ds.truth[q.id].needed:
                e = owner.get(item)
                if e is not None:
                    out.setdefault(e, set()).add(item)
    return out


def prune_through_cold(ds: Dataset, entity_ids: tuple[str, ...]) -> Dataset:
    """Write the graph to a store copy, move ``entity_ids`` to its cold tier, read it back."""
    from signet_rl.emergence.cold import move_to_cold
    from signet_rl.graph.store import read_graph, write_graph

    if not entity_ids:
        return ds
    with tempfile.TemporaryDirectory(prefix="emergence-") as tmp:
        path = Path(tmp) / "copy.db"
        write_graph(ds.graph, path)
        move_to_cold(path, list(entity_ids), copy=True, reason="pruned")
        graph = read_graph(path)
    return dataclasses.replace(ds, graphs={"main": graph})


def later_period(ds: Dataset, splits: tuple[str, ...] = ("validation",)) -> Dataset:
    """The period after training as a bandit schedule: the queries of ``splits``, relabelled ``train``."""
    queries = [dataclasses.replace(q, split="train") for q in ds.queries if q.split in splits]
    return dataclasses.replace(ds, queries=queries)


def rediscover(ds: Dataset, plan_ids: tuple[str, ...], seed: int, min_similarity: float,
               reach: str = "walk", splits: tuple[str, ...] = ("validation",),
               max_misses: int | None = None, slots: int = 1) -> dict[str, Any]:
    """A LinUCB bandit run over the period after training (the queries of ``splits``) on the pruned graph,
    with cold explorers: what its explorers rediscovered (module docstring). Truth is read by the rater
    and, after the run, by the figures (``delivered``: the period's queries that need a pruned entity's
    fact, and those whose cold explorer path showed them one)."""
    from signet_rl.emergence.rediscovery import ColdExplorer, RediscoveryParams
    from signet_rl.learning.trainer import BanditConfig, BanditTrainer
    from signet_rl.scorers import PRE_SWEEP_DEFAULTS
    from signet_rl.scorers.base import make_scorer

    period = later_period(ds, splits)
    linucb = make_scorer("linucb", **PRE_SWEEP_DEFAULTS["linucb"])
    config = BanditConfig(epochs=1, eval_every=0, checkpoint_every=0, explorer_per_session=slots)
    trainer = BanditTrainer(period, linucb, config, seed=seed, progress=False)
    explorer = ColdExplorer(period.graphs, {"main": plan_ids},
                            RediscoveryParams(min_similarity=min_similarity, reach=reach,
                                              max_misses=max_misses))
    trainer.use_cold_explorer(explorer)
    _log(f"rediscovery: bandit over {len(period.split('train'))} later queries, {len(plan_ids):,} cold "
         f"entities, min_similarity {min_similarity}, reach {reach}, max_misses {max_misses}")
    trainer.run()
    restored = explorer.restored.get("main", [])
    rated = [e for e in explorer.events if e["rating"] is not None]
    took = []  # cold-path ratings an entity got up to (and with) the one that restored it
    for eid in restored:
        took.append(sum(1 for e in rated if e["entity_id"] == eid))
    owner = dict(zip(ds.graph.attributes["id"], ds.graph.attribute_entity_ids(), strict=True))
    pruned = set(plan_ids)
    needing = [q.id for q in period.split("train")
               if any(owner.get(i) in pruned for i in ds.truth[q.id].needed)]
    delivered = {e["query_id"] for e in explorer.events
                 if set(TPath.parse(e["path"]).attributes) & set(ds.truth[e["query_id"]].needed)}
    return {"restored": restored, "period_queries": len(period.split("train")),
            "queries_needing_pruned": len(needing), "delivered_by_cold_explorer": len(delivered),
            "cold_paths_shown": len(explorer.events), "cold_paths_rated": len(rated),
            "cold_paths_positive": sum(1 for e in rated if e["rating"] > 0),
            "cold_entities_reached": len({e["entity_id"] for e in explorer.events}),
            "ratings_per_restore_median": float(np.median(took)) if took else None,
            "ratings_per_restore_max": max(took) if took else None,
            "explorer_slots": sum(h.explorer_shown for h in trainer.history),
            "hot_entities": trainer.retriever._state("main").graph.entities["id"].tolist()}


def restore_through_cold(ds: Dataset, entity_ids: tuple[str, ...], restored: list[str]) -> Dataset:
    """:func:`prune_through_cold`, then the ``restored`` entities rated positive on the store copy
    (:func:`~signet_rl.emergence.cold.rate_cold`, one at a time, in the order their ratings came)."""
    from signet_rl.emergence.cold import move_to_cold, rate_cold
    from signet_rl.graph.store import read_graph, write_graph

    with tempfile.TemporaryDirectory(prefix="emergence-") as tmp:
        path = Path(tmp) / "copy.db"
        write_graph(ds.graph, path)
        move_to_cold(path, list(entity_ids), copy=True, reason="pruned")
        for eid in restored:
            rate_cold(path, eid, +1, copy=True)
        graph = read_graph(path)
    return dataclasses.replace(ds, graphs={"main": graph})


#: ``(reach, min_similarity, max_misses)`` grid of the cold explorers (chosen on the validation seed).
REDISCOVER_GRID = tuple((r, m, x) for r in ("walk", "frontier") for m in (0.0, 0.2, 0.4) for x in (1, None))


def rediscovery_figures(ds: Dataset, plan_ids: tuple[str, ...], found: dict[str, Any]) -> dict[str, Any]:
    """What the rediscovery run brought back, against what later queries need (truth read here only)."""
    test_needed = later_needed_entities(ds, ("test",))
    val_needed = later_needed_entities(ds, ("validation",))
    later = later_needed_entities(ds, ("validation", "test"))
    pruned, back = set(plan_ids), set(found["restored"])
    still = pruned - back
    return {**{k: v for k, v in found.items() if k not in ("restored", "hot_entities")},
            "restored": len(back),
            "restored_needed_later": len(back & set(later)),
            "later_items_pruned_after": sum(len(later[e]) for e in still & set(later)),
            "restored_needed_by_test": len(back & set(test_needed)),
            "restored_needed_by_validation": len(back & set(val_needed)),
            "pruned_needed_by_test": len(pruned & set(test_needed)),
            "pruned_needed_by_validation": len(pruned & set(val_needed)),
            "test_items_pruned_before": sum(len(test_needed[e]) for e in pruned & set(test_needed)),
            "test_items_pruned_after": sum(len(test_needed[e]) for e in still & set(test_needed))}


def choose_rediscovery(args: argparse.Namespace, t: HealthThresholds) -> dict[str, Any]:
    """``reach``, ``min_similarity`` and ``max_misses`` on the validation seed, and the table: the grid
    point whose cold explorers showed a pruned needed fact to the most queries of the whole later period
    (validation and test queries in timeline order, online; ties: fewer entities restored, fewer cold
    paths shown, then the grid's order)."""
    val = dataset(args.preset, args.val_seed[0], control=False)
    records, until = training_log(val, args.epochs, args.val_seed[0])
    plan = plan_pruning(val.graph, records, until=until, thresholds=t)
    best: tuple[tuple[int, int, int], dict[str, Any]] | None = None
    rows = []
    for r, m, x in REDISCOVER_GRID:
        found = rediscover(val, plan.entity_ids, args.val_seed[0], m, r, ("validation", "test"), x)
        f = rediscovery_figures(val, plan.entity_ids, found)
        point = {"reach": r, "min_similarity": m, "max_misses": x}
        rows.append({**point, **f})
        key = (f["delivered_by_cold_explorer"], -f["restored"], -f["cold_paths_shown"])
        if best is None or key > best[0]:
            best = (key, point)
    assert best is not None
    _log(f"rediscovery: chose {best[1]} on validation seed {args.val_seed[0]}")
    return {**best[1], "validation": rows}


def recall_and_latency(ds: Dataset, budget: int, max_queries: int | None, seed: int) -> dict[str, float]:
    from signet_rl.evaluation.harness import evaluate
    from signet_rl.pipeline.desire import DesirePathRetriever
    from signet_rl.scorers import PRE_SWEEP_DEFAULTS
    from signet_rl.scorers.base import make_scorer

    _log(f"test recall and latency on {len(ds.graph.entities):,} entities")
    prior = make_scorer("prior", **PRE_SWEEP_DEFAULTS["prior"])  # as reported: the 90-day prior (issue 25 §3)
    res = evaluate(ds, {"prior": DesirePathRetriever(prior)}, split="test", budget_chars=budget,
                   ks=(10,), max_queries=max_queries, seed=seed, n_boot=200)
    rows = res.rows
    return {"recall@10": float(rows["recall@10"].mean()), "latency_ms": float(rows["latency_s"].mean() * 1e3),
            "queries": int(len(rows))}


def pruning_outcome(ds: Dataset, records: list[Any], until: pd.Timestamp, t: HealthThresholds,
                    later: tuple[str, ...]) -> dict[str, Any]:
    plan = plan_pruning(ds.graph, records, until=until, thresholds=t)
    noise = set(ds.truth.labels["entities"].query("noise")["entity_id"])
    ents = ds.graph.entities
    written = set(ents.loc[ents["created_at"] <= until, "id"]) & noise  # noise that exists by then
    needed = later_needed_entities(ds, later)
    pruned = set(plan.entity_ids)
    return {"plan": plan, "pruned": len(pruned), "entities": len(ds.graph.entities), "noise": len(noise),
            "noise_pruned": _div(len(pruned & noise), len(noise)),
            "noise_written_by_training_end": len(written),
            "noise_pruned_of_written": _div(len(pruned & written), len(written)),
            "kept": dict(Counter(plan.kept.values())),
            "needed_entities_pruned": len(pruned & set(needed)),
            "needed_items_pruned": sum(len(needed[e]) for e in pruned & set(needed))}


def _co_mentioned(g: Any) -> pd.Series:
    """Per entity, how many other entities its memories mention."""
    m = g.mentions[["memory_id", "entity_id"]].drop_duplicates()
    pairs = m.merge(m, on="memory_id", suffixes=("", "_other"))
    pairs = pairs[pairs["entity_id"] != pairs["entity_id_other"]]
    return pairs.groupby("entity_id")["entity_id_other"].nunique()


#: ``(max_mentions, max_co_mentioned)`` points of the v3 pruning grid.
MENTION_GRID = ((None, None), (1, None), (None, 0), (1, 0))


def run_pruning_signals(args: argparse.Namespace) -> dict[str, Any]:
    """``--part pruning-signals`` (validation seeds only): could any structural signal a deployed system
    has tell the planted noise entities from the rest? Per group — noise, entities later (validation and
    test) queries need, entities training queries need, the others — the mean and spread of each
    entity's dependency degree, attributes, memory mentions, superseded attributes, mean attribute
    importance and confidence. Truth is read here only to form the groups."""
    out: dict[str, Any] = {}
    for seed in args.val_seed:
        ds = dataset(args.preset, seed, control=False)
        g = ds.graph
        ids = g.entities["id"].to_numpy(dtype=object)
        noise = set(ds.truth.labels["entities"].query("noise")["entity_id"])
        later = later_needed_entities(ds, ("validation", "test"))
        train = later_needed_entities(ds, ("train",))
        deps = g.dependencies
        degree = pd.concat([deps["source_entity_id"], deps["target_entity_id"]]).value_counts()
        attrs = g.attributes.assign(entity=g.attribute_entity_ids().to_numpy())
        feats = pd.DataFrame({
            "degree": degree.reindex(ids).fillna(0).to_numpy(),
            "attributes": attrs.groupby("entity").size().reindex(ids).fillna(0).to_numpy(),
            "mentions": g.mentions.groupby("entity_id").size().reindex(ids).fillna(0).to_numpy(),
            "co_mentioned": _co_mentioned(g).reindex(ids).fillna(0).to_numpy(),
            "superseded": attrs.assign(s=attrs["status"] != "active").groupby("entity")["s"].sum()
            .reindex(ids).fillna(0).to_numpy(),
            "importance": attrs.groupby("entity")["importance"].mean().reindex(ids).to_numpy(),
            "confidence": attrs.groupby("entity")["confidence"].mean().reindex(ids).to_numpy(),
        })
        feats["group"] = ["noise" if e in noise else "later_needed" if e in later else
                          "train_needed" if e in train else "other" for e in ids]
        agg = feats.groupby("group").agg(["mean", "std"]).round(3)
        out[f"validation_{seed}"] = {
            "entities": feats["group"].value_counts().to_dict(),
            "features": {f"{c}_{s}": agg[(c, s)].to_dict() for c, s in agg.columns},
        }
        _log(f"seed {seed}:\n{agg.T}")
    return out


def run_pruning(args: argparse.Namespace) -> dict[str, Any]:
    if args.chosen_from is not None:  # thresholds chosen on the validation seed by an earlier run
        earlier = json.loads(Path(args.chosen_from).read_text())
        chosen = HealthThresholds(**earlier["chosen"])
        out: dict[str, Any] = {"chosen": earlier["chosen"], "chosen_from": f"{earlier['preset']} validation "
                               f"seed {earlier['val_seed']} ({Path(args.chosen_from).name})"}
    else:
        # v3 adds the passing-mention reading (memories up to the end of training): mentioned at most once,
        # co-mentioned with no other entity, both, or neither
        mentions = ((None, None),) if VERSION == 2 else MENTION_GRID
        grid = [HealthThresholds(min_ratings=m, sick_share=sh, min_exposure=x, max_mentions=mm,
                                 max_co_mentioned=mc)
                for m in (2, 3, 5) for sh in (0.5, 0.8, 1.0) for x in (0, 1, 3, 10, 30)
                for mm, mc in mentions]
        val = dataset(args.preset, args.val_seed[0], control=False)
        records, until = training_log(val, args.epochs, args.val_seed[0])
        best, table = None, []
        for t in grid:
            o = pruning_outcome(val, records, until, t, ("validation",))
            table.append({**dataclasses.asdict(t), **{k: v for k, v in o.items() if k != "plan"}})
            key = (o["needed_items_pruned"] == 0, o["noise_pruned"], -o["needed_items_pruned"])
            if best is None or key > best[0]:
                best = (key, t)
        assert best is not None
        chosen = best[1]
        out = {"chosen": dataclasses.asdict(chosen), "validation": table}
    # Two operating points on the reporting seed: the validation choice (no needed item pruned there) and
    # the rule as it stands (every unused and sick entity, default thresholds).
    points = {"chosen": chosen, "unused_and_sick": HealthThresholds()}
    if VERSION >= 3:  # the passing-mention rule as designed (not tuned): unused, written once, alone
        points["passing_mentions"] = HealthThresholds(max_mentions=1, max_co_mentioned=0)
    if args.points:  # a subset (an xl run of every point on both graphs takes the better part of an hour)
        unknown = sorted(set(args.points) - set(points))
        if unknown:
            raise SystemExit(f"--points: unknown {unknown}; known: {', '.join(points)}")
        points = {k: v for k, v in points.items() if k in args.points}
    if args.rediscover:  # chosen on the validation seed, with one operating point's plan
        if args.rediscover_min_similarity is not None:
            out["rediscover"] = {"reach": args.rediscover_reach,
                                 "min_similarity": args.rediscover_min_similarity,
                                 "max_misses": args.rediscover_max_misses}
        else:
            with_point = {"chosen": chosen, "unused_and_sick": HealthThresholds(),
                          "passing_mentions": HealthThresholds(max_mentions=1, max_co_mentioned=0)}
            out["rediscover"] = {**choose_rediscovery(args, with_point[args.rediscover_choose_with]),
                                 "chosen_with": args.rediscover_choose_with}
        out["rediscover"]["explorer_per_session"] = args.rediscover_slots
    for name, control in (("planted", False), ("control", True)):
        if name not in args.graphs:
            continue
        _log(f"{name}: generating {args.preset} seed {args.seed}")
        ds = dataset(args.preset, args.seed, control=control)
        _log(f"{name}: training log ({args.epochs} epochs)")
        records, until = training_log(ds, args.epochs, args.seed)
        load_before = os.getloadavg()[0]
        before = recall_and_latency(ds, args.budget, args.max_test, args.seed)
        _log(f"{name}: before {before} (load {load_before:.1f})")
        out[name] = {"before": before}
        for point, t in points.items():
            o = pruning_outcome(ds, records, until, t, ("validation", "test"))
            plan = o.pop("plan")
            _log(f"{name}/{point}: pruning {len(plan.entity_ids):,} entities through the cold tier")
            after = recall_and_latency(prune_through_cold(ds, plan.entity_ids), args.budget, args.max_test,
                                       args.seed)
            out[name][point] = {**o, "unused": len(plan.unused), "sick": len(plan.sick), "after": after,
                                "load_avg_1m": os.getloadavg()[0]}
            if args.save_plans is not None:
                args.save_plans.mkdir(parents=True, exist_ok=True)
                plan.save(args.save_plans / f"plan-{args.preset}-{args.seed}-{name}-{point}.json")
            if args.rediscover and plan.entity_ids:
                red = out["rediscover"]
                found = rediscover(ds, plan.entity_ids, args.seed, red["min_similarity"], red["reach"],
                                   ("validation",), red["max_misses"], args.rediscover_slots)
                back = restore_through_cold(ds, plan.entity_ids, found["restored"])
                if back.graph.entities["id"].tolist() != found["hot_entities"]:
                    raise RuntimeError("the store copy's hot entities differ from the trainer's hot graph")
                out[name][point]["rediscovery"] = {
                    **rediscovery_figures(ds, plan.entity_ids, found),
                    "after": recall_and_latency(back, args.budget, args.max_test, args.seed)}
                # online over the whole later period (validation then test queries, timeline order):
                # the queries whose explorer slot showed them a pruned fact they need
                online = rediscover(ds, plan.entity_ids, args.seed, red["min_similarity"], red["reach"],
                                    ("validation", "test"), red["max_misses"], args.rediscover_slots)
                out[name][point]["rediscovery_online"] = rediscovery_figures(ds, plan.entity_ids, online)
            _log(f"{name}/{point}: {({k: v for k, v in out[name][point].items() if k != 'plan'})}")
        out[name]["load_avg_1m"] = [load_before, os.getloadavg()[0]]
    return out


# --------------------------------------------------------------------------------------------------


def _log(message: str) -> None:
    import sys

    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


def _f1(p: float | None, r: float | None) -> float:
    return 0.0 if not p or not r else 2 * p * r / (p + r)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part",
                    choices=("bridges", "bridges-trained", "principles", "principles-value",
                             "principles-embed", "principles-real", "pruning", "pruning-signals"),
                    required=True)
    ap.add_argument("--seed", type=int, required=True,
                    help="the reporting seed (named on the command line only)")
    ap.add_argument("--val-seed", type=int, nargs="+", default=list(VAL_SEEDS),
                    help="the validation seeds every threshold is chosen on (pruning: the first)")
    ap.add_argument("--stream", choices=tuple(STREAMS), default="train",
                    help="bridges: the simulated explorer's rated queries: the training split or the whole "
                         "timeline")
    ap.add_argument("--validation-only", action="store_true",
                    help="choose on the validation seeds, print the choice, and compute nothing on --seed")
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--version", type=int, choices=(2, 3, 4), default=2,
                    help="synthetic generator version (3: passing-mention noise, value principles, recurring "
                         "bridges; 4: values in paraphrase with decoys); a vN run's JSON is named "
                         "<part>-<preset>-<seed>-vN.json")
    ap.add_argument("--encoder", default="minilm", help="hashing or minilm (bridges, principles)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--max-test", type=int, default=None, help="test queries for recall/latency (all)")
    ap.add_argument("--out", type=Path, default=OUT, help="where the JSON goes")
    ap.add_argument("--chosen-from", default=None,
                    help="pruning, bridges-trained: take the thresholds an earlier run chose on its "
                         "validation seeds (its JSON)")
    ap.add_argument("--dataset", default="locomo", help="principles-real: the real dataset (registry name)")
    ap.add_argument("--points", nargs="+", default=None,
                    help="pruning: only these operating points (chosen, unused_and_sick, passing_mentions)")
    ap.add_argument("--graphs", nargs="+", choices=("planted", "control"), default=["planted", "control"],
                    help="pruning: which of the two graphs to run")
    ap.add_argument("--rediscover", action="store_true",
                    help="pruning: follow each pruning with a bandit run over the validation queries whose "
                         "explorers walk into cold territory, and measure recall again")
    ap.add_argument("--rediscover-min-similarity", type=float, default=None,
                    help="pruning --rediscover: take this min_similarity instead of choosing it on the "
                         "validation seed")
    ap.add_argument("--rediscover-reach", default="walk", choices=("entries", "walk", "frontier"),
                    help="pruning --rediscover with --rediscover-min-similarity: the cold explorers' reach")
    ap.add_argument("--rediscover-max-misses", type=int, default=None,
                    help="pruning --rediscover with --rediscover-min-similarity: the cold explorers' "
                         "max_misses")
    ap.add_argument("--rediscover-slots", type=int, default=1, choices=(1, 2),
                    help="pruning --rediscover: explorer slots per session in the period after training (the "
                         "trainer's default 1; 2 is the quota's bound); the choice on validation uses 1")
    ap.add_argument("--rediscover-choose-with", default="unused_and_sick",
                    choices=("chosen", "unused_and_sick", "passing_mentions"),
                    help="pruning --rediscover: the operating point whose plan on the validation seed "
                         "chooses min_similarity (the default prunes needed items, so the grid can tell "
                         "points apart)")
    ap.add_argument("--save-plans", type=Path, default=None,
                    help="pruning: write each operating point's plan (PruningPlan.save) to this folder")
    ap.add_argument("--cache", type=Path, default=ROOT / "data" / "cache" / "embeddings",
                    help="the embedding cache folder")
    args = ap.parse_args(argv)
    if args.seed in args.val_seed:
        ap.error(f"--seed {args.seed} is the validation seed; report on another")
    global VERSION
    VERSION = args.version
    t0 = time.time()
    if args.part == "pruning":
        out = run_pruning(args)
    elif args.part == "pruning-signals":
        out = run_pruning_signals(args)
    else:
        encoder = make_encoder(args.encoder, cache_dir=args.cache)
        run = {"bridges": run_bridges, "bridges-trained": run_bridges_trained, "principles": run_principles,
               "principles-value": run_principles_value, "principles-embed": run_principles_embed,
               "principles-real": run_principles_real}
        out = run[args.part](args, encoder)
    out.update(part=args.part, preset=args.preset, seed=args.seed, val_seed=args.val_seed, stream=args.stream,
               encoder=args.encoder, epochs=args.epochs, version=args.version,
               seconds=round(time.time() - t0, 1))
    args.out.mkdir(parents=True, exist_ok=True)
    tag = "" if args.version == 2 else f"-v{args.version}"
    path = args.out / f"{args.part}-{args.preset}-{args.seed}{tag}.json"
    if args.part == "principles-real":  # no preset, no generator: the dataset names it
        path = args.out / f"{args.part}-{args.dataset.replace(':', '_')}.json"
    path.write_text(json.dumps(out, indent=1, default=str))
    print(json.dumps({k: v for k, v in out.items() if k != "validation"}, indent=1, default=str))
    return out


if __name__ == "__main__":
    main()
