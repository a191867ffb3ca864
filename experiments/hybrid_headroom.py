"""Where the hybrid entry's headroom over ``best_flat`` lies, on VALIDATION queries only (issue 24 §3).

Analysis, like the candidate ceiling: it reads ground truth (the evaluator's resolver and the needed items)
to label every candidate of the hybrid pool, and never trains or serves anything. For each validation
question (the seeded subset ``experiments/hybrid_learned_validation.py`` evaluates), it builds the pool the
learned scorers rank (``python -m signet_rl.train``'s traversal: floor, session steps, entity walks) and
records, per candidate, whether it holds a needed item that ``best_flat``'s injected slate misses, next to
serve-time features a scorer may read (flat's scores and ranks, the piece, the session step's anchor and
offset, the flat scores of the turn's neighbours, query similarity, overlap, length). It prints:

1. the needed items ``best_flat`` misses, by the piece that holds them (floor ranks, session step kind,
   walks) — the re-ranking headroom per piece;
2. the hit rate (candidate holds a needed item) per floor rank and per session offset;
3. per feature, within each piece, the AUC separating candidates that hold a missed needed item from
   the rest.

    python experiments/hybrid_headroom.py dataset=locomo encoder=minilm task.max_val_queries=120 \
        --out /tmp/real24_headroom.parquet
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from signet_rl.core.types import fit_budget
from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import select_queries
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.rating.items import ItemResolver
from signet_rl.retrieval.flat import best_flat
from signet_rl.tracking import project_root
from signet_rl.train import traversal_config


def auc(score: np.ndarray, label: np.ndarray) -> float:
    """Probability that a positive outranks a negative (ties count half); nan without both classes."""
    pos, neg = score[label], score[~label]
    if not len(pos) or not len(neg):
        return float("nan")
    ranks = pd.Series(np.concatenate([pos, neg])).rank().to_numpy()
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def main(argv: list[str]) -> pd.DataFrame:
    out_path = None
    if "--out" in argv:
        i = argv.index("--out")
        out_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    with initialize_config_dir(config_dir=str(project_root() / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=argv)
    traversal = traversal_config(cfg)
    options = cfg.dataset.get("options")
    options = OmegaConf.to_container(options, resolve=True) if options is not None else None
    ds = load_dataset(cfg.dataset.spec, root=cfg.dataset.get("data_root"), options=options)  # type: ignore[arg-type]
    split = cfg.dataset.learning_split
    ds = ds.learning_split(
        k=int(split.k), fold=int(split.fold), seed=int(split.seed), group=split.get("group")
    )
    budget = int(cfg.task.budget_chars)
    queries = select_queries(ds, "validation", cfg.task.max_val_queries, int(cfg.seed))
    flat = best_flat(str(cfg.dataset.spec))
    retr = DesirePathRetriever("prior", config=traversal, encoder=str(cfg.encoder), flat=flat)
    retr.index(ds)
    resolver = ItemResolver(ds)
    rows = []
    t0 = time.perf_counter()
    for qi, q in enumerate(queries):
        needed = set(ds.truth[q.id].needed)
        if not needed:
            continue
        cands = retr.candidates(q, budget)
        if cands is None:
            continue
        builder = retr.builder(q.graph_id)
        state = retr._state(q.graph_id)
        dag = state.hybrid.dag
        mem_index = state.hybrid.memory_index
        flat_units = cands.flat_units or []
        injected = fit_budget(list(flat_units), budget)
        flat_items: set[str] = set()
        for u in injected:
            flat_items |= set(resolver.unit_items(q, u)) & needed
        # flat's full ranking by memory row (rank, fused score)
        flat_rank: dict[int, tuple[int, float]] = {}
        for r, u in enumerate(flat_units):
            if len(u.items) == 1 and str(u.items[0]) in mem_index:
                flat_rank.setdefault(mem_index[str(u.items[0])], (r, float(u.score)))
        top_fused = max((s for _, s in flat_rank.values()), default=1.0) or 1.0
        info = cands.context.path_info
        for p in cands.walk.paths:
            unit = builder.construct(p)
            items = set(resolver.unit_items(q, unit)) & needed
            rec = info.get(p.id, {})
            mems = [mem_index.get(str(m), -1) for m in p.memories]
            row = mems[-1] if mems else -1
            anchor = (
                mems[0] if len(mems) == 2 and p.strategy in ("turn", "session", "next", "previous") else -1
            )
            pos = int(dag.rank[row]) if row >= 0 else -1
            offset = int(dag.rank[row] - dag.rank[anchor]) if anchor >= 0 and row >= 0 else 0
            neigh = [flat_rank.get(int(dag.order[pos + d]), (999, 0.0))[1] / top_fused
                     for d in (-2, -1, 1, 2) if row >= 0 and 0 <= pos + d < len(dag.order)]  # fmt: skip
            fr = flat_rank.get(row, (999, 0.0))
            rows.append(
                {
                    "query": q.id,
                    "piece": "floor"
                    if p.strategy == "floor"
                    else ("walk" if p.strategy in ("mention", "dependency") else "session"),
                    "kind": p.strategy,
                    "floor_rank": rec.get("floor_rank", -1.0),
                    "flat_rank_full": fr[0],
                    "flat_fused_full": fr[1] / top_fused,
                    "flat_vector": rec.get("flat_vector", 0.0),
                    "flat_keyword": rec.get("flat_keyword", 0.0),
                    "flat_fused": rec.get("flat_fused", 0.0),
                    "memory_sim": rec.get("memory_sim", 0.0),
                    "query_overlap": rec.get("query_overlap", 0.0),
                    "session_distance": rec.get("session_distance", -1.0),
                    "anchor_rank": flat_rank.get(anchor, (999, 0.0))[0] if anchor >= 0 else -1,
                    "offset": offset,
                    "neigh_max": max(neigh, default=0.0),
                    "neigh_sum": float(sum(neigh)),
                    "neigh_next": (
                        flat_rank.get(int(dag.order[pos - 1]), (999, 0.0))[1] / top_fused
                        if row >= 0 and pos >= 1
                        else 0.0
                    ),  # the turn before holds a flat hit
                    "chars": unit.chars,
                    "hit": bool(items),
                    "new_hit": bool(items - flat_items),
                    "items": sorted(items),
                    "n_needed": len(needed),
                }
            )
        if qi % 20 == 0:
            print(f"{qi}/{len(queries)} {time.perf_counter() - t0:.0f}s", flush=True)
    df = pd.DataFrame(rows)
    if out_path:
        df.assign(items=df["items"].map("|".join)).to_parquet(out_path)
    report(df)
    simulate(df.assign(items=df["items"].map(set)))
    return df


def report(df: pd.DataFrame) -> None:
    """Print the three summaries of the module docstring."""
    print(f"{df['query'].nunique()} questions, {len(df)} candidates; pieces:",
          df.groupby("piece").size().to_dict())  # fmt: skip
    # 1. missed needed items by the first piece that holds them
    missed = df[df["new_hit"]].explode("items")
    first = missed.sort_values("floor_rank", ascending=False).drop_duplicates(["query", "items"])
    print("missed needed items held, by piece/kind:", first.groupby(["piece", "kind"]).size().to_dict())
    fl = first[first["piece"] == "floor"]
    bands = pd.cut(fl["floor_rank"], [-1, 9, 14, 19, 29, 99])
    print("  on the floor, by rank band:", bands.value_counts().sort_index().to_dict())
    # 2. hit rates
    f = df[df["piece"] == "floor"]
    print(
        "floor new-hit rate by rank:",
        f.groupby(pd.cut(f["floor_rank"], [-1, 4, 9, 14, 19, 24, 29]))["new_hit"].mean().round(3).to_dict(),
    )
    print(
        "floor hit rate by rank:",
        f.groupby(pd.cut(f["floor_rank"], [-1, 4, 9, 14, 19, 24, 29]))["hit"].mean().round(3).to_dict(),
    )
    s = df[df["piece"] == "session"]
    by_offset = s.groupby(s["offset"].clip(-4, 4))["new_hit"].agg(["mean", "size"]).round(3)
    print("session new-hit rate by offset:", by_offset.to_dict("index"))
    print("session new-hit rate by kind:", s.groupby("kind")["new_hit"].agg(["mean", "size"]).round(3)
          .to_dict("index"))  # fmt: skip
    print("walk new-hit rate:", df[df["piece"] == "walk"]["new_hit"].agg(["mean", "size"]).round(3).to_dict())
    # 3. AUC of each feature within each piece (label: holds a needed item flat's slate misses)
    feats = ["floor_rank", "flat_rank_full", "flat_fused_full", "flat_vector", "flat_keyword", "flat_fused",
             "memory_sim", "query_overlap", "session_distance", "anchor_rank", "offset", "neigh_max",
             "neigh_sum", "neigh_next", "chars"]  # fmt: skip
    groups = [("floor>=10", f[f["floor_rank"] >= 10]), ("session", s), ("walk", df[df["piece"] == "walk"]),
              ("non-floor", df[df["piece"] != "floor"]), ("all", df)]  # fmt: skip
    for piece, g in groups:
        lab = g["new_hit"].to_numpy(dtype=bool)
        aucs = {c: round(auc(g[c].to_numpy(dtype=float), lab), 3) for c in feats}
        print(f"AUC new_hit within {piece} (n={len(g)}, pos={int(lab.sum())}):", aucs)


#: The serve-time features :func:`simulate` fits on (the analysis frame's names for them).
SIM_FEATURES = {
    "flat's floor": ["floor_inv", "t_floor", "t_session", "t_walk", "memory_sim", "query_overlap",
                     "flat_fused"],
    "+ length": ["log_chars"],
    "+ flat's whole ranking and the neighbours' flat scores": ["neigh_sum", "neigh_max", "flat_fused_full",
                                                             "flat_full_inv"],
}  # fmt: skip


def injected_recall(df: pd.DataFrame, score: np.ndarray, keep: float = 0.0, budget: int = 2000) -> np.ndarray:
    """Per question, the needed recall of the slate that takes candidates by ``score`` (best first, a unit
    that would overflow skipped), after flat's head that fits ``keep × budget`` (in flat's order)."""
    out = []
    for _, g in df.assign(s=score).groupby("query", sort=False):
        s = g["s"].to_numpy(dtype=float).copy()
        used = 0
        for i in np.argsort(np.where(g["floor_rank"] >= 0, g["floor_rank"], np.inf), kind="stable"):
            if g["floor_rank"].iloc[i] < 0 or used + g["chars"].iloc[i] > keep * budget:
                continue
            used += g["chars"].iloc[i]
            s[i] = 1e9 - g["floor_rank"].iloc[i]
        used, got = 0, set()
        for i in np.argsort(-s, kind="stable"):
            if used + g["chars"].iloc[i] <= budget:
                used += g["chars"].iloc[i]
                got |= g["items"].iloc[i]
        out.append(len(got) / g["n_needed"].iloc[0])
    return np.asarray(out)


def simulate(df: pd.DataFrame, folds: int = 5) -> None:
    """What a pointwise learner with these features could do at best: a logistic model of "holds a needed
    item" fitted on the analysis labels themselves (every candidate labelled, noiseless), cross-validated by
    question, its order injected by score and by score per character, with and without flat's head kept
    (half the budget). An optimistic reference for the learned scorers, which see three to ten noisy
    ratings per question instead; nothing here is used by them."""
    from sklearn.linear_model import LogisticRegression

    df = df.copy()
    df["log_chars"] = np.log1p(df["chars"])
    df["floor_inv"] = np.where(df["floor_rank"] >= 0, 1 / (1 + df["floor_rank"]), 0.0)
    for k in ("floor", "session", "walk"):
        df[f"t_{k}"] = (df["piece"] == k).astype(float)
    df["flat_full_inv"] = np.where(df["flat_rank_full"] < 999, 1 / (1 + df["flat_rank_full"]), 0.0)
    base = injected_recall(df, np.where(df["floor_rank"] >= 0, 1 / (1 + df["floor_rank"]), -1.0))
    print(f"flat's order: {base.mean():.3f}")
    qs = df["query"].unique()
    fold = dict(zip(qs, np.random.default_rng(0).integers(0, folds, len(qs)), strict=True))
    k_of = df["query"].map(fold).to_numpy()
    cols: list[str] = []
    for name, more in SIM_FEATURES.items():
        cols = cols + more
        pred = np.zeros(len(df))
        for k in range(folds):
            tr = k_of != k
            model = LogisticRegression(C=1.0, max_iter=2000).fit(df.loc[tr, cols], df.loc[tr, "hit"])
            pred[~tr] = model.predict_proba(df.loc[~tr, cols])[:, 1]
        for keep in (0.0, 0.5):
            by_score = injected_recall(df, pred, keep) - base
            per_char = injected_recall(df, pred / df["chars"].to_numpy(), keep) - base
            print(f"{name}, head kept {keep:g}: - best_flat by score {by_score.mean():+.3f}, "
                  f"by score per character {per_char.mean():+.3f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
