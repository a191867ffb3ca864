"""What is in a dataset: counts by type, reason, intent and split, malformed rows, and for the synthetic
benchmark its config hash, query mix and how informative the cheap signals are on their own."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from signet_rl.core.types import SPLITS
from signet_rl.datasets.base import Dataset

__all__ = ["density", "describe", "emergence_lines", "emergence_of", "format_description"]


def _count(values: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in values.value_counts(dropna=False).sort_index().items()}


def _merge(counters: list[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for c in counters:
        total.update(c)
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def describe(dataset: Dataset, signals: bool = True) -> dict[str, Any]:
    """Counts for every graph of ``dataset`` (summed over graphs), its queries and its load report.

    Args:
        signals: also compute the cheap-signal AUCs of a generated benchmark (a few seconds at ``xl``).
    """
    gs = list(dataset.graphs.values())
    attrs = [g.attributes for g in gs]
    deps = [g.dependencies for g in gs]
    out: dict[str, Any] = {
        "name": dataset.name,
        "graphs": len(gs),
        "entities": sum(g.num_entities for g in gs),
        "entities_by_type": _merge([_count(g.entities["entity_type"]) for g in gs]),
        "aspects": sum(len(g.aspects) for g in gs),
        "attributes": sum(len(a) for a in attrs),
        "attributes_by_kind": _merge([_count(a["kind"]) for a in attrs]),
        "attributes_by_status": _merge([_count(a["status"]) for a in attrs]),
        "constraints": sum(int((a["kind"] == "constraint").sum()) for a in attrs),
        "superseded_attributes": sum(int((a["status"] == "superseded").sum()) for a in attrs),
        "unclassified_attributes": sum(int(a["aspect_id"].isna().sum()) for a in attrs),
        "dependencies": sum(len(d) for d in deps),
        "dependencies_by_type": _merge([_count(d["dependency_type"]) for d in deps]),
        "dependencies_by_reason": _merge([_count(d["reason"]) for d in deps]),
        "memories": sum(g.num_memories for g in gs),
        "deleted_memories": sum(int(g.memories["is_deleted"].sum()) for g in gs),
        "mentions": sum(len(g.mentions) for g in gs),
        "cold_tier": sum(len(g.memories_cold) for g in gs),
        "communities": sum(len(g.communities) for g in gs),
    }
    em = emergence_of(gs)
    if em:
        out["emergence"] = em
    truth = dataset.truth
    rows = [(q.split, truth[q.id].intent or "-", truth[q.id].category or "-") for q in dataset.queries]
    qdf = pd.DataFrame(rows, columns=["split", "intent", "category"])
    out["queries"] = len(qdf)
    out["queries_by_split"] = {s: int((qdf["split"] == s).sum()) for s in SPLITS}
    out["queries_by_intent_and_split"] = (
        {intent: {s: int((grp["split"] == s).sum()) for s in SPLITS} for intent, grp in qdf.groupby("intent")}
        if len(qdf)
        else {}
    )
    if len(qdf) and (qdf["category"] != "-").any():
        out["queries_by_category"] = _count(qdf["category"])
    out["malformed"] = dataset.report.to_dict()
    counts = dataset.meta.get("counts", {})
    if "test_triples_in_graph" in counts:  # a KG folder: split triples its walking graph holds
        out["split_triples_in_graph"] = {
            s: {"triples": counts[f"{s}_triples_in_graph"], "inverse": counts[f"{s}_inverse_in_graph"]}
            for s in ("validation", "test") if f"{s}_triples_in_graph" in counts}
    out["density"] = density(dataset, reachability=signals)
    if dataset.meta.get("generator") == "synthetic":
        from signet_rl.evaluation.audit import describe_mix, signal_auc

        out["config_hash"] = dataset.meta["config_hash"]
        out["config"] = dataset.meta["config"]
        out["generator_version"] = int(dataset.meta["config"].get("generator_version", 1))
        out["query_mix"] = dict(describe_mix(dataset))
        if signals:
            from signet_rl.evaluation.audit import benchmark_audit

            auc = signal_auc(dataset)
            out["signal_auc"] = auc
            out["too_easy_signals"] = [
                k for k, v in auc.items() if k != "spurious_edge_confidence" and v >= 0.9
            ]
            out["audit"] = benchmark_audit(dataset)
    return out


def emergence_of(graphs: list[Any]) -> dict[str, Any]:
    """Issue 29's marks in the graphs themselves: principles (records under ``meta["principles"]``, by
    status, and each one's text and entity count) and promoted bridge edges (dependency ids
    ``dep-bridge-…``, by reason). Empty when there are none. A run's health, pruning plan and bridge
    candidates live in its run folder (``python -m signet_rl.datasets describe --run FOLDER``)."""
    records = [r for g in graphs for r in g.meta.get("principles", {}).values()]
    bridges = pd.concat([g.dependencies.loc[g.dependencies["id"].astype(str).str.startswith("dep-bridge-"),
                                            "reason"] for g in graphs]) if graphs else pd.Series(dtype=str)
    out: dict[str, Any] = {}
    if records:
        out["principles_by_status"] = dict(sorted(Counter(r["status"] for r in records).items()))
        out["principles"] = [{"id": r["id"], "status": r["status"], "text": r["text"],
                              "entities": len(r["entity_ids"]), "evidence": len(r["evidence"])}
                             for r in sorted(records, key=lambda r: r["id"])]
    if len(bridges):
        out["promoted_bridges_by_reason"] = _count(bridges)
    return out


def emergence_lines(em: dict[str, Any], limit: int = 10) -> list[str]:
    """The text of an ``emergence`` block: principles, bridges and (from a run folder) health."""
    lines = ["emergence (issue 29):"]
    if "health" in em:
        lines.append("  entity health:    " + "  ".join(f"{k} {v:,}" for k, v in em["health"].items()))
    if "communities" in em:
        lines.append("  community health: " + ("  ".join(f"{k} {v:,}" for k, v in em["communities"].items())
                                                 or "none (no communities)"))
    if "pruning" in em:
        p = em["pruning"]
        lines.append(f"  pruning plan (feedback until {p['until']}): {len(p['unused']):,} unused, "
                     f"{len(p['sick']):,} sick, {len(p['kept']):,} kept (pinned or principle)")
    if "bridges" in em:
        b = em["bridges"]["by_status"]
        lines.append(f"  bridges: {b['candidate']:,} candidates, {b['promoted']:,} promoted, "
                     f"{b['faded']:,} faded")
    if "promoted_bridges_by_reason" in em:
        lines.append("  promoted bridge edges by reason: " + "  ".join(
            f"{k} {v:,}" for k, v in em["promoted_bridges_by_reason"].items()))
    if "exploration" in em:  # a service's explorer slots (signet_rl.serving.exploration)
        x = em["exploration"]
        line = (f"  explorer slots: {'regulated by staleness' if x['regulated'] else 'base quota'}, "
                f"{x['sessions_decided']:,} sessions decided")
        cur = x.get("current")
        if cur:
            stale = "" if cur.get("staleness") is None else f", staleness {cur['staleness']:.2f}"
            line += f"; latest {cur['session_key']!r}: {cur['slots']} slots, {cur['used']} used{stale}"
        lines.append(line)
    if em.get("reindexed"):
        lines.append(f"  live re-indexes (principle verbs, bridge moves): {em['reindexed']:,}")
    principles = em.get("principles") or []
    if principles:
        by = Counter(p["status"] for p in principles)
        lines.append("  principles: " + "  ".join(f"{k} {v:,}" for k, v in sorted(by.items())))
        for p in principles[:limit]:
            n_ent = p["entities"] if isinstance(p.get("entities"), int) else len(p.get("entity_ids", []))
            n_ev = p["evidence"] if isinstance(p.get("evidence"), int) else len(p.get("evidence", []))
            lines.append(f"    {p['id']} [{p['status']}] {p['text'][:60]!r}: {n_ent} entities, "
                         f"{n_ev} evidence")
        if len(principles) > limit:
            lines.append(f"    ... {len(principles) - limit} more")
    return lines


def density(dataset: Dataset, reachability: bool = True) -> dict[str, Any]:
    """How connected the graphs are: entities (and those that are not session nodes), dependencies per
    entity, the extractor used (its encoder and any fallback) and, when ``reachability`` and the queries
    need memories, the reachability ceiling (:func:`~signet_rl.evaluation.audit.reachability_ceiling`)."""
    gs = list(dataset.graphs.values())
    n_ent = sum(g.num_entities for g in gs)
    n_dep = sum(len(g.dependencies) for g in gs)
    sessions = sum(int((g.entities["entity_type"] == "session").sum()) for g in gs)
    out: dict[str, Any] = {
        "entities": n_ent,
        "entities_without_sessions": n_ent - sessions,
        "dependencies": n_dep,
        "dependencies_per_entity": round(n_dep / n_ent, 3) if n_ent else 0.0,
        "mentions_per_memory": round(
            sum(len(g.mentions) for g in gs) / max(1, sum(g.num_memories for g in gs)), 3),
    }
    extract = next((g.meta["extract"] for g in gs if g.meta.get("extract")), None)
    if extract:
        out["extractor"] = {k: extract.get(k) for k in ("extractor", "model", "encoder", "encoder_fallback",
                                                         "merge_threshold")}
    if reachability and dataset.queries:
        from signet_rl.evaluation.audit import reachability_ceiling

        ceiling = reachability_ceiling(dataset)
        if ceiling:
            out["reachability"] = ceiling
    return out


def _density_lines(d: dict[str, Any]) -> list[str]:
    lines = [
        f"density: {d['entities']:,} entities ({d['entities_without_sessions']:,} without session nodes), "
        f"{d['dependencies_per_entity']:.2f} dependencies per entity, "
        f"{d['mentions_per_memory']:.2f} mentions per memory"
    ]
    if "extractor" in d:
        x = d["extractor"]
        lines.append(f"  extractor v{x['extractor']} ({x['model']}), name encoder {x['encoder']}, merge "
                     f"threshold {x['merge_threshold']}")
        if x.get("encoder_fallback"):
            lines.append(f"  encoder fallback: {x['encoder_fallback']}")
    if "reachability" in d:
        r = d["reachability"]
        lines.append(
            f"  reachability ceiling (evidence within 2 hops of entry search's top {r['k']} non-hub "
            f"entities, {r['queries']:,} queries): {r['ceiling']:.3f} (micro {r['ceiling_micro']:.3f}; "
            f"hop 1 {r['hop1']:.3f}; 2 hops reach {r['reach_share']:.3f} of memories)"
        )
    return lines


def _block(title: str, counts: dict[str, int], limit: int = 15) -> list[str]:
    lines = [f"{title}:"]
    items = list(counts.items())
    for k, v in items[:limit]:
        lines.append(f"  {k:<32} {v:>10,}")
    if len(items) > limit:
        rest = sum(v for _, v in items[limit:])
        lines.append(f"  ... {len(items) - limit} more types{'':<16} {rest:>10,}")
    return lines


def format_description(d: dict[str, Any]) -> str:
    """The text ``python -m signet_rl.datasets describe`` prints."""
    lines = [f"dataset {d['name']}" + (f"  ({d['graphs']} graphs)" if d["graphs"] > 1 else "")]
    if "config_hash" in d:
        lines.append(f"generator synthetic v{d.get('generator_version', 1)}, config hash {d['config_hash']}")
    for key in (
        "entities",
        "aspects",
        "attributes",
        "constraints",
        "superseded_attributes",
        "unclassified_attributes",
        "dependencies",
        "memories",
        "deleted_memories",
        "mentions",
        "cold_tier",
        "communities",
        "queries",
    ):
        lines.append(f"{key.replace('_', ' '):<34} {d[key]:>10,}")
    if "density" in d:
        lines += _density_lines(d["density"])
    lines += _block("entities by type", d["entities_by_type"])
    lines += _block("attributes by status", d["attributes_by_status"])
    lines += _block("dependencies by type", d["dependencies_by_type"])
    lines += _block("dependencies by reason", d["dependencies_by_reason"])
    lines.append("queries by split:  " + "  ".join(f"{k} {v:,}" for k, v in d["queries_by_split"].items()))
    if set(d["queries_by_intent_and_split"]) - {"-"}:
        lines.append(f"queries by intent: {'':<16}" + "".join(f"{s:>12}" for s in SPLITS))
        for intent, per in d["queries_by_intent_and_split"].items():
            lines.append(f"  {intent:<32}" + "".join(f"{per[s]:>12,}" for s in SPLITS))
    if "queries_by_category" in d:
        lines += _block("queries by category", d["queries_by_category"])
    if "query_mix" in d:
        lines.append("query mix (intent/category: queries, mean needed, share flat-solvable):")
        for k, v in d["query_mix"].items():
            flat = "-" if v["flat_solvable"] is None else f"{v['flat_solvable']:.2f}"
            lines.append(f"  {k:<32} {v['queries']:>6,} {v['mean_needed']:>6.2f} {flat:>6}")
    if d.get("emergence"):
        lines += emergence_lines(d["emergence"])
    if "signal_auc" in d:
        lines.append("AUC of cheap signals alone (0.5 = no signal; near 1 = benchmark too easy):")
        for k, v in d["signal_auc"].items():
            lines.append(f"  {k:<32} {v:>10.3f}")
        if d["too_easy_signals"]:
            lines.append(f"  WARNING: {', '.join(d['too_easy_signals'])} alone nearly solve the task")
    if "audit" in d:
        lines += _audit_lines(d["audit"])
    for split, leak in d.get("split_triples_in_graph", {}).items():
        warn = "  WARNING: a walker can read these answers off the graph" if split == "test" and (
            leak["triples"] or leak["inverse"]) else ""
        lines.append(f"{split} triples in the walking graph: {leak['triples']:,} "
                     f"(+{leak['inverse']:,} as inverse edges){warn}")
    m = d["malformed"]
    lines.append(f"malformed rows: {m['malformed_total']:,}")
    for problem, n in m["malformed_by_problem"].items():
        lines.append(f"  {problem:<60} {n:>6,}")
    for ex in m["malformed_examples"][:5]:
        lines.append(f"  e.g. {ex['file']} {ex['row']}: {ex['problem']} ({ex['action']})")
    return "\n".join(lines)


def _audit_lines(a: dict[str, Any]) -> list[str]:
    """The benchmark audit (``evaluation.audit.benchmark_audit``) as text."""
    lines = [
        f"benchmark audit (seed {a['seed']}; classifiers trained on seed {a['classifier_train_seed']}; "
        "AUCs: 0.5 = no signal, bounds in brackets):"
    ]
    for title, key in (("is this item needed", "needed_auc"), ("is this edge spurious", "spurious_auc")):
        lines.append(f"  {title}: AUC of each signal alone [max(auc, 1 - auc) <= 0.80]")
        for k, v in a[key].items():
            lines.append(f"    {k:<32} {v:>8.3f}")
    lines.append(f"  {'needed: gradient boosting on all':<36} {a['needed_classifier_auc']:>8.3f}  [<= 0.85]")
    lines.append(
        f"  {'spurious: gradient boosting on all':<36} {a['spurious_classifier_auc']:>8.3f}  [<= 0.85]"
    )
    lines.append(f"  {'walk-rule agreement':<36} {a['walk_agreement']:>8.3f}  [< 0.6]")
    if "unnamed_share" in a:
        lines.append(f"  {'queries not naming their entity':<36} {a['unnamed_share']:>8.3f}  [>= 0.4]")
    if "room_to_learn" in a:
        r = a["room_to_learn"]
        lines.append(
            f"  room to learn (nDCG@10 at 400 chars, gold entries): hidden {r['hidden_ndcg@10']:.3f} vs ppr "
            f"{r['ppr_ndcg@10']:.3f}, gain {r['gain_ndcg@10']:.3f}  [>= 0.10]"
        )
    if "drift" in a:
        r = a["drift"]
        lines.append(
            f"  drift (recall at 400 chars): a policy fixed before it {r['fixed_before']:.3f} before, "
            f"{r['fixed_after']:.3f} after; informed {r['informed_after']:.3f} after: loss {r['loss']:.3f}"
            "  [>= 0.10]"
        )
    lines.append("  bounds missed: " + ("; ".join(a["failed"]) if a["failed"] else "none"))
    return lines
