"""The evaluation harness: every retriever, the same queries, the same budget, item-level metrics.

:func:`evaluate` runs one or more retrievers over one split of a dataset and scores each query with the
metrics of :mod:`signet_rl.evaluation.metrics` on the items of :mod:`signet_rl.rating.items`:

* **One budget for all.** Every retriever's units are cut with :func:`~signet_rl.core.types.fit_budget`
  to the same character budget (Signet counts 4 characters per token; the default is Signet's
  session-start budget of 2,000 characters), and every injected character counts: provenance, headers,
  the constraints section. In a budgeted comparison the budget is the only cap the harness applies.
  ``budget_chars=None`` runs without a budget (each retriever's own caps only, e.g. Signet's 5 results within
  500 characters): report that as a separate variant, never beside budgeted rows as if it were paired.
* **Items, never units.** Precision, noise and misleading count items (and the tokens spent on them: each
  unit's characters are shared equally among the items it holds), so one dense constructed memory holding ten
  facts is ten items.
* **Ranks.** Rank-based metrics (nDCG@k, MRR, recall@k) read the injected units in rank order, each expanded
  to its items; ``k`` counts items.
* **Paired.** Every retriever answers the same queries, so :meth:`EvaluationResult.compare` gives a paired
  bootstrap interval of the difference.
* **Timing.** Each retriever is ``index``-ed once before any query is timed; latency is the wall time of one
  ``retrieve`` call.

:func:`recall_at_k_budget` and :func:`recall_at_k_units` count evidence recall@k the two ways the literature
does: within a budget of ``k`` average memories' characters (``k`` dialog turns for LoCoMo, ``k`` passages
for MuSiQue), or over exactly ``k`` units (what published figures like DRAGON's on LoCoMo count).

    >>> result = evaluate(dataset, {"flat": flat_variant("flat_signet_uncapped")})  # doctest: +SKIP
    >>> print(result.table())  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from signet_rl.core.checks import check_range
from signet_rl.core.types import CHARS_PER_TOKEN, DEFAULT_BUDGET_CHARS, Query, Unit, fit_budget
from signet_rl.datasets.base import Dataset
from signet_rl.evaluation import metrics as M
from signet_rl.rating.items import ItemResolver, classify
from signet_rl.retrieval.base import Retriever

__all__ = [
    "EvaluationResult",
    "dataset_hash",
    "evaluate",
    "mean_memory_chars",
    "recall_at_k_budget",
    "recall_at_k_units",
    "recall_summary",
    "render_markdown",
    "render_text",
    "select_queries",
    "shard_positions",
]

#: Metrics reported with a bootstrap interval (``@k`` ones are expanded per ``k``).
HEADLINE: tuple[str, ...] = ("needed_recall", "precision", "f1", "ndcg@k", "mrr", "recall@k")
#: Per-query counts averaged in the summaries.
COUNTS: tuple[str, ...] = (
    "units", "chars", "tokens", "items", "needed_items", "noise_items", "misleading_items",
    "needed_tokens", "noise_tokens", "misleading_tokens",
)  # fmt: skip
NO_BUDGET = "none"


# ----------------------------------------------------------------------------------------------------
# Inputs


def _check_budget(budget_chars: int | None) -> int | None:
    if budget_chars is None:
        return None
    if isinstance(budget_chars, bool) or not isinstance(budget_chars, int | np.integer):
        raise ValueError(f"budget_chars must be a positive integer or None, got {budget_chars!r}")
    if budget_chars <= 0:
        raise ValueError(f"token budget must be positive, got budget_chars={budget_chars}")
    return int(budget_chars)


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    out = tuple(ks)
    if not out or any(isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in out):
        raise ValueError(f"ks must be positive integers, got {list(out)!r}")
    return tuple(int(k) for k in out)


def _named(retrievers: Mapping[str, Retriever] | Sequence[Retriever]) -> dict[str, Retriever]:
    pairs = (
        list(retrievers.items())
        if isinstance(retrievers, Mapping)
        else [(getattr(r, "name", type(r).__name__), r) for r in retrievers]
    )
    if not pairs:
        raise ValueError("no retrievers to evaluate")
    out: dict[str, Retriever] = {}
    for name, r in pairs:
        if not isinstance(r, Retriever):
            raise TypeError(f"retriever {name!r} ({type(r).__name__}) has no name/index/retrieve")
        if name in out:
            raise ValueError(f"two retrievers are named {name!r}; give them distinct names")
        out[str(name)] = r
    return out


def select_queries(
    dataset: Dataset, split: str = "test", max_queries: int | None = None, seed: int = 0
) -> list[Query]:
    """The queries of ``split``; with ``max_queries``, a seeded random subset kept in time order.

    Raises:
        ValueError: an unknown split, a split with no queries, or ``max_queries`` below 1.
    """
    queries = dataset.split(split)  # type: ignore[arg-type]
    if not queries:
        raise ValueError(f"split {split!r} of dataset {dataset.name!r} has no queries")
    if max_queries is not None:
        check_range("max_queries", max_queries, 1, integer=True, optional=True)
        if max_queries < len(queries):
            keep = np.sort(np.random.default_rng(seed).choice(len(queries), size=max_queries, replace=False))
            queries = [queries[i] for i in keep]
    return queries


def mean_memory_chars(dataset: Dataset) -> float:
    """Mean length in characters of the dataset's (not deleted) memories, over every graph."""
    lengths = [
        g.memories.loc[~g.memories["is_deleted"], "content"].str.len().to_numpy(dtype=np.float64)
        for g in dataset.graphs.values()
    ]
    flat = np.concatenate(lengths) if lengths else np.empty(0)
    if not len(flat):
        raise ValueError(f"dataset {dataset.name!r} has no memories to size a k-memory budget with")
    return float(flat.mean())


def dataset_hash(dataset: Dataset) -> str:
    """A short content hash of a dataset: every graph table, the queries and their ground truth."""
    h = hashlib.sha256(dataset.name.encode())
    for gid in sorted(dataset.graphs):
        h.update(gid.encode())
        for table, frame in sorted(dataset.graphs[gid].tables().items()):
            h.update(f"{table}:{len(frame)}:{','.join(frame.columns)}".encode())
            if len(frame):
                h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    for q in dataset.queries:
        h.update(repr((q.id, q.text, q.graph_id, q.split, str(q.timestamp))).encode())
        h.update(repr(dataset.truth[q.id]).encode())
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------------------------------
# Scoring one query


def _score(
    resolver: ItemResolver, query: Query, units: Sequence[Unit], ks: tuple[int, ...]
) -> dict[str, Any]:
    truth = resolver.dataset.truth[query.id]
    per_unit = [resolver.unit_items(query, u) for u in units]
    ranking = M.dedupe(i for items in per_unit for i in items)
    split = classify(ranking, truth)
    needed = truth.needed
    chars = sum(u.chars for u in units)
    spent = {"needed": 0.0, "misleading": 0.0, "noise": 0.0}
    for unit, items in zip(units, per_unit, strict=True):
        if not items:  # a unit holding no ids is all noise
            spent["noise"] += unit.chars
            continue
        share = unit.chars / len(items)
        for item in items:
            which = (
                "needed" if item in split.needed else "misleading" if item in split.misleading else "noise"
            )
            spent[which] += share
    row: dict[str, Any] = {
        "n_needed": len(set(needed)),
        "needed_recall": M.needed_recall(ranking, needed),
        "precision": M.precision(ranking, needed),
        "f1": M.f1(ranking, needed),
        "mrr": M.mrr(ranking, needed),
    }
    for k in ks:
        row[f"ndcg@{k}"] = M.ndcg_at_k(ranking, needed, k)
    for k in ks:
        row[f"recall@{k}"] = M.recall_at_k(ranking, needed, k)
    row.update(
        units=len(units),
        chars=chars,
        tokens=chars / CHARS_PER_TOKEN,
        items=len(ranking),
        needed_items=len(split.needed),
        noise_items=len(split.noise),
        misleading_items=len(split.misleading),
        needed_tokens=spent["needed"] / CHARS_PER_TOKEN,
        noise_tokens=spent["noise"] / CHARS_PER_TOKEN,
        misleading_tokens=spent["misleading"] / CHARS_PER_TOKEN,
        zero_injection=M.zero_injection(len(units)),
    )
    row.update(_desire_stats(units, chars))
    return row


#: Path kinds (``Unit.meta["source"]`` of a desire unit) that are not flat's floor.
WALKED_SOURCES: frozenset[str] = frozenset({"session", "walk"})


def _desire_stats(units: Sequence[Unit], chars: int) -> dict[str, float]:
    """``walk_share``: the share of the injected characters that came from walk or session units (so a
    desire row cannot quietly become flat); ``pool``: the candidates the hybrid entry offered the scorer;
    ``floor_rest_share``: the share that came from flat's floor outside the head ``floor_keep`` keeps (floor
    units the scorer placed); ``floor_deep_share``: the share from floor units flat itself does not inject at
    the budget (its ranking beyond its own slate; ``Unit.meta["floor_part"]``, see
    :func:`signet_rl.pipeline.hybrid.floor_part`). NaN for a retriever whose units are not desire paths (no
    ``path_id`` in their meta)."""
    desire = [u for u in units if "path_id" in u.meta]
    if not desire:
        return dict.fromkeys(("walk_share", "pool", "floor_rest_share", "floor_deep_share"), math.nan)
    walked = sum(u.chars for u in desire if u.meta.get("source") in WALKED_SOURCES)
    rest = sum(u.chars for u in desire if u.meta.get("floor_part") in ("flat", "deep"))
    deep = sum(u.chars for u in desire if u.meta.get("floor_part") == "deep")
    pool = next((u.meta["pool"] for u in desire if isinstance(u.meta.get("pool"), Mapping)), None)
    size = float(sum(v for k, v in pool.items() if k not in ("chars", "considered"))) if pool else math.nan
    per_char = 1.0 / chars if chars else 0.0
    return {"walk_share": walked * per_char, "pool": size, "floor_rest_share": rest * per_char,
            "floor_deep_share": deep * per_char}  # fmt: skip


def _retrieve(name: str, retriever: Retriever, query: Query, hint: int | None) -> tuple[list[Unit], float]:
    t0 = time.perf_counter()
    units = retriever.retrieve(query, hint)
    seconds = time.perf_counter() - t0
    units = list(units)
    for u in units:
        if not isinstance(u, Unit):
            raise TypeError(
                f"retriever {name!r} returned a {type(u).__name__} for query {query.id!r}, not a Unit"
            )
    return units, seconds


def _index_all(dataset: Dataset, named: Mapping[str, Retriever], progress: bool = False) -> dict[str, float]:
    from tqdm.auto import tqdm

    seconds = {}
    for name, r in tqdm(named.items(), desc="index", unit="retriever", disable=not progress, leave=False):
        t0 = time.perf_counter()
        r.index(dataset)
        seconds[name] = time.perf_counter() - t0
    return seconds


# ----------------------------------------------------------------------------------------------------
# Results


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def render_text(frame: pd.DataFrame) -> str:
    """A fixed-width text table of ``frame`` (index included when named)."""
    df = frame.reset_index() if any(n is not None for n in frame.index.names) else frame
    cells = [[str(c) for c in df.columns]] + [[_fmt(v) for v in row] for row in df.itertuples(index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(df.columns))]
    lines = [
        "  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (index included when named), floats to ``digits``."""
    df = frame.reset_index() if any(n is not None for n in frame.index.names) else frame
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(df.columns))) + "|"
    body = [
        "| " + " | ".join(_fmt(v, digits).replace("|", "\\|") for v in row) + " |"
        for row in df.itertuples(index=False)
    ]
    return "\n".join([head, rule, *body]) + "\n"


@dataclass
class EvaluationResult:
    """Per-query rows and their aggregates for one evaluation.

    Attributes:
        rows: one row per (query, retriever): ``query_id, retriever, budget, intent, category, n_needed``,
            the metrics (``needed_recall, precision, f1, mrr, ndcg@k, recall@k``; ``nan`` where undefined),
            the counts (``units, chars, tokens, items, needed_items, noise_items, misleading_items`` and the
            tokens spent on each), ``zero_injection`` and ``latency_s``.
        dataset: the dataset's name (its spec).
        dataset_hash: :func:`dataset_hash` of the dataset.
        split: the split evaluated.
        ks: the cut-offs of the ``@k`` metrics.
        budgets: retriever -> the character budget it ran under (``None``: its own caps only).
        index_seconds: retriever -> time its ``index`` took.
        n_boot, alpha, seed: the bootstrap settings of every interval.
    """

    rows: pd.DataFrame
    dataset: str
    dataset_hash: str
    split: str
    ks: tuple[int, ...]
    budgets: dict[str, int | None]
    index_seconds: dict[str, float] = field(default_factory=dict)
    n_boot: int = 1000
    alpha: float = 0.05
    seed: int = 0

    @property
    def retrievers(self) -> list[str]:
        return list(self.budgets)

    @property
    def num_queries(self) -> int:
        return int(self.rows["query_id"].nunique())

    def headline_metrics(self) -> list[str]:
        """The metric columns reported with a bootstrap interval."""
        out = []
        for m in HEADLINE:
            out += [m.replace("@k", f"@{k}") for k in self.ks] if m.endswith("@k") else [m]
        return out

    def _group_summary(self, frame: pd.DataFrame) -> dict[str, Any]:
        out: dict[str, Any] = {"queries": len(frame)}
        real = frame["intent"] != "none"
        for m in self.headline_metrics():
            values = frame[m].to_numpy(dtype=np.float64)
            finite = values[np.isfinite(values)]
            out[m] = float(finite.mean()) if len(finite) else math.nan
            low, high = (
                M.bootstrap_ci(finite, self.n_boot, self.alpha, self.seed) if len(finite) else (math.nan,) * 2
            )
            out[f"{m}_low"], out[f"{m}_high"] = low, high
        for c in COUNTS:
            out[c] = float(frame[c].mean())
        nonq = frame.loc[~real, "zero_injection"]
        out["zero_injection_accuracy"] = float(nonq.mean()) if len(nonq) else math.nan
        out["silenced_real"] = float(frame.loc[real, "zero_injection"].mean()) if real.any() else math.nan
        for c in ("walk_share", "pool"):
            values = frame[c].to_numpy(dtype=np.float64) if c in frame else np.zeros(0)
            values = values[np.isfinite(values)]
            out[c] = float(values.mean()) if len(values) else math.nan
        out["latency_p50_ms"] = float(np.percentile(frame["latency_s"], 50) * 1000)
        out["latency_p95_ms"] = float(np.percentile(frame["latency_s"], 95) * 1000)
        return out

    def summary(self, by: str | None = None) -> pd.DataFrame:
        """Aggregates per retriever (and per value of ``by``: ``"intent"`` or ``"category"``).

        Columns: each headline metric's mean with ``<metric>_low``/``<metric>_high`` bootstrap bounds, the
        mean counts, ``zero_injection_accuracy`` (share of ``intent == "none"`` queries with nothing
        injected), ``silenced_real`` (share of real queries with nothing injected), latency p50/p95 in ms.
        """
        keys = ["retriever"] + ([by] if by else [])
        if by is not None and by not in ("intent", "category"):
            raise ValueError(f"summary by {by!r}: expected 'intent', 'category' or None")
        records = []
        frame = self.rows.assign(**{by: self.rows[by].fillna("-")}) if by else self.rows
        for key, group in frame.groupby(keys, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            records.append({**dict(zip(keys, key, strict=True)), **self._group_summary(group)})
        out = pd.DataFrame.from_records(records)
        out.insert(1, "budget", out["retriever"].map(lambda r: _budget_label(self.budgets[r])))
        order = {r: i for i, r in enumerate(self.retrievers)}
        out = out.sort_values(keys, key=lambda s: s.map(order) if s.name == "retriever" else s, kind="stable")
        return out.set_index(keys)

    def per_intent(self) -> pd.DataFrame:
        """:meth:`summary` by intent."""
        return self.summary("intent")

    def per_category(self) -> pd.DataFrame:
        """:meth:`summary` by the dataset's category."""
        return self.summary("category")

    def metrics(self) -> dict[str, dict[str, float]]:
        """Retriever -> flat dict of its overall aggregates (means, bounds, rates, latencies)."""
        summ = self.summary()
        out = {}
        for name, row in summ.iterrows():
            d = {
                k: float(v)
                for k, v in row.items()
                if k != "budget" and isinstance(v, int | float | np.number)
            }
            d["index_seconds"] = float(self.index_seconds.get(str(name), math.nan))
            out[str(name)] = d
        return out

    def default_baseline(self) -> str | None:
        """The first flat-baseline variant (a name starting with ``flat``) run under the shared budget, else
        the first flat one, else ``None``."""
        flats = [r for r in self.retrievers if r.startswith("flat")]
        budgeted = [r for r in flats if self.budgets[r] is not None]
        pick = budgeted or flats
        return pick[0] if pick else None

    def flat_metrics(self, baseline: str | None = None) -> dict[str, float]:
        """Every aggregate as one flat dict with prefixed names, the ones logged to MLflow.

        * ``retrieval/<retriever>/<metric>`` for every retriever (overall means, ``_low``/``_high`` bounds,
          counts, ``zero_injection_accuracy``, latencies, ``index_seconds``);
        * ``retrieval/<retriever>/intent/<intent>/<metric>`` for the headline metrics per intent (per
          ``category`` for datasets without intents, such as LoCoMo);
        * ``baseline_flat/<metric>`` (and ``baseline_flat/intent/...``): the same for the ``baseline``
          retriever (default :meth:`default_baseline`);
        * ``retrieval/<retriever>/vs_baseline/<metric>`` with ``_low``/``_high``: the paired difference to the
          baseline on the headline metrics, for retrievers run under the baseline's budget.

        Metric names use ``_at_`` for ``@`` (``ndcg_at_10``), as MLflow allows no ``@``; values that are
        undefined (``nan``) are left out.

        Raises:
            ValueError: ``baseline`` is not one of the retrievers.
        """
        if baseline is not None and baseline not in self.budgets:
            raise ValueError(
                f"baseline {baseline!r} is not among the evaluated retrievers {self.retrievers}; "
                "name one of them, or null to pick the first flat variant"
            )
        base = baseline or self.default_baseline()
        out: dict[str, float] = {}

        def put(key: str, value: float) -> None:
            if value is not None and math.isfinite(value):
                out[key.replace("@", "_at_")] = float(value)

        overall = self.metrics()
        by = next((c for c in ("intent", "category") if self.rows[c].notna().any()), None)
        groups = self.summary(by) if by else None
        heads = self.headline_metrics()
        for name in self.retrievers:
            prefixes = [f"retrieval/{name}"] + (["baseline_flat"] if name == base else [])
            for prefix in prefixes:
                for metric, value in overall[name].items():
                    put(f"{prefix}/{metric}", value)
                if groups is not None:
                    for (_, group), row in groups.loc[[name]].iterrows():
                        for metric in [*heads, "zero_injection_accuracy"]:
                            put(f"{prefix}/{by}/{group}/{metric}", row[metric])
            if base is not None and name != base and self.budgets[name] == self.budgets[base]:
                for metric in heads:
                    diff, low, high = self.compare(name, base, metric)
                    put(f"retrieval/{name}/vs_baseline/{metric}", diff)
                    put(f"retrieval/{name}/vs_baseline/{metric}_low", low)
                    put(f"retrieval/{name}/vs_baseline/{metric}_high", high)
        return out

    def compare(self, a: str, b: str, metric: str = "f1") -> tuple[float, float, float]:
        """Mean paired difference ``a - b`` on ``metric`` over the queries both answered, with its paired
        bootstrap interval: ``(diff, low, high)``."""
        for name in (a, b):
            if name not in self.budgets:
                raise KeyError(f"no retriever {name!r} in this result; have {self.retrievers}")
        if metric not in self.rows.columns:
            raise KeyError(f"no metric {metric!r}; have {list(self.rows.columns)}")
        wide = self.rows.pivot(index="query_id", columns="retriever", values=metric)[[a, b]]
        diff = (wide[a] - wide[b]).to_numpy(dtype=np.float64)
        finite = diff[np.isfinite(diff)]
        low, high = M.paired_bootstrap_ci(wide[a], wide[b], self.n_boot, self.alpha, self.seed)
        return (float(finite.mean()) if len(finite) else math.nan), low, high

    def _display(self, summ: pd.DataFrame) -> pd.DataFrame:
        """Compact columns for printing: headline metrics as ``mean [low, high]``."""
        k = max(self.ks)
        show = ["needed_recall", "precision", "f1", f"ndcg@{k}", "mrr", f"recall@{k}"]
        out = pd.DataFrame(index=summ.index)
        out["budget"] = summ["budget"]
        out["n"] = summ["queries"]
        for m in show:
            out[m] = [
                f"{_fmt(v)} [{_fmt(lo, 2)}, {_fmt(hi, 2)}]" if not math.isnan(v) else "-"
                for v, lo, hi in zip(summ[m], summ[f"{m}_low"], summ[f"{m}_high"], strict=True)
            ]
        out["tokens"] = [_fmt(v, 1) for v in summ["tokens"]]
        out["items"] = [_fmt(v, 1) for v in summ["items"]]
        out["noise"] = [_fmt(v, 2) for v in summ["noise_items"]]
        out["mislead"] = [_fmt(v, 2) for v in summ["misleading_items"]]
        out["walk_share"] = [_fmt(v) for v in summ["walk_share"]]
        out["pool"] = [_fmt(v, 1) for v in summ["pool"]]
        out["zero_inj_acc"] = [_fmt(v) for v in summ["zero_injection_accuracy"]]
        out["p50_ms"] = [_fmt(v, 2) for v in summ["latency_p50_ms"]]
        out["p95_ms"] = [_fmt(v, 2) for v in summ["latency_p95_ms"]]
        return out

    def table(self, by: str | None = None) -> str:
        """The comparison as a text table (headline metrics with their bootstrap intervals)."""
        head = (
            f"{self.dataset} [{self.split}] {self.num_queries} queries, "
            f"{int((1 - self.alpha) * 100)}% bootstrap CI over queries (n_boot={self.n_boot})"
        )
        return head + "\n" + render_text(self._display(self.summary(by)))

    def intent_tables(self) -> dict[str, str]:
        """The per-intent summary as ``{"csv": ..., "md": ...}`` (every column in the CSV, the compact
        display in Markdown)."""
        summ = self.per_intent()
        return {"csv": summ.to_csv(), "md": render_markdown(self._display(summ))}

    @classmethod
    def concat(cls, results: Sequence[EvaluationResult]) -> EvaluationResult:
        """One result from several over the same dataset and split (a budgeted comparison and an own-caps
        variant, say). Retriever names must be distinct."""
        if not results:
            raise ValueError("nothing to concatenate")
        first = results[0]
        budgets: dict[str, int | None] = {}
        for r in results:
            if (r.dataset_hash, r.split, r.ks) != (first.dataset_hash, first.split, first.ks):
                raise ValueError("results differ in dataset, split or ks; they cannot be concatenated")
            for name, b in r.budgets.items():
                if name in budgets:
                    raise ValueError(f"retriever {name!r} appears in two results")
                budgets[name] = b
        return cls(
            rows=pd.concat([r.rows for r in results], ignore_index=True),
            dataset=first.dataset, dataset_hash=first.dataset_hash, split=first.split, ks=first.ks,
            budgets=budgets, index_seconds={k: v for r in results for k, v in r.index_seconds.items()},
            n_boot=first.n_boot, alpha=first.alpha, seed=first.seed,
        )  # fmt: skip

    @classmethod
    def merge_shards(cls, shards: Sequence[EvaluationResult]) -> EvaluationResult:
        """One result from the parts of a sharded evaluation (``evaluate(..., shard=(i, n))`` for ``i`` in
        order): rows in the single-process order (retriever by retriever, queries in shard order), so every
        bootstrap interval and table equals the unsharded one; index times are the slowest shard's."""
        if not shards:
            raise ValueError("no shards to merge")
        first = shards[0]
        for part in shards:
            same = (part.dataset_hash, part.split, part.ks, part.budgets)
            if same != (first.dataset_hash, first.split, first.ks, first.budgets):
                raise ValueError("shards differ in dataset, split, ks or retrievers; they cannot be merged")
        order = {name: i for i, name in enumerate(first.budgets)}
        frames = [part.rows.assign(_shard=i) for i, part in enumerate(shards) if len(part.rows)]
        rows = pd.concat(frames, ignore_index=True)
        rows["_pos"] = rows.groupby(["_shard", "retriever"], sort=False).cumcount()
        rows["_ret"] = rows["retriever"].map(order)
        rows = rows.sort_values(["_ret", "_shard", "_pos"], kind="stable")
        rows = rows.drop(columns=["_shard", "_pos", "_ret"])
        seconds = {k: max(p.index_seconds.get(k, 0.0) for p in shards) for k in first.index_seconds}
        return cls(
            rows=rows.reset_index(drop=True), dataset=first.dataset, dataset_hash=first.dataset_hash,
            split=first.split, ks=first.ks, budgets=dict(first.budgets), index_seconds=seconds,
            n_boot=first.n_boot, alpha=first.alpha, seed=first.seed,
        )  # fmt: skip


def shard_positions(n_queries: int, index: int, shards: int) -> range:
    """The positions of shard ``index`` of ``shards`` contiguous, near-equal slices of ``n_queries``
    queries."""
    if not (isinstance(shards, int) and shards >= 1 and isinstance(index, int) and 0 <= index < shards):
        raise ValueError(f"shard ({index}, {shards}) is not one of {shards} shards; give 0 <= index < shards")
    size, extra = divmod(n_queries, shards)
    start = index * size + min(index, extra)
    return range(start, start + size + (index < extra))


def _budget_label(budget: int | None) -> str:
    return NO_BUDGET if budget is None else str(budget)


# ----------------------------------------------------------------------------------------------------
# Entry points


def evaluate(
    dataset: Dataset,
    retrievers: Mapping[str, Retriever] | Sequence[Retriever],
    split: str = "test",
    budget_chars: int | None = DEFAULT_BUDGET_CHARS,
    ks: Sequence[int] = (5, 10),
    max_queries: int | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    alpha: float = 0.05,
    shard: tuple[int, int] | None = None,
    progress: bool = False,
) -> EvaluationResult:
    """Evaluate ``retrievers`` on the queries of one split under one character budget.

    Args:
        dataset: the dataset (its ground truth is read here, never by the retrievers).
        retrievers: name -> retriever, or retrievers named by their ``name``.
        split: ``train``, ``validation`` or ``test``.
        budget_chars: the character budget every retriever is cut to (4 characters per token); ``None``
            for no budget (each retriever's own caps only: a separate variant).
        ks: cut-offs (in items) of nDCG@k and recall@k.
        max_queries: evaluate a seeded random subset of this many queries.
        seed: seeds the subset and the bootstrap.
        n_boot: bootstrap resamples per interval.
        alpha: 1 - confidence level of the intervals.
        shard: ``(i, n)``: only the ``i``-th of ``n`` contiguous slices of the selected queries (one worker's
            part of a sharded evaluation; :meth:`EvaluationResult.merge_shards` joins the parts back into the
            single-process result).
        progress: progress bars (stderr) over the index builds and the queries answered.

    Raises:
        ValueError: a budget of 0 or below, an empty or unknown split, bad ``ks`` or ``max_queries``, a shard
            outside ``0 <= i < n``.
        TypeError: something that is not a retriever, or a retriever returning something that is not a Unit.
    """
    budget = _check_budget(budget_chars)
    kk = _check_ks(ks)
    named = _named(retrievers)
    queries = select_queries(dataset, split, max_queries, seed)
    if shard is not None:
        queries = [queries[i] for i in shard_positions(len(queries), *shard)]
    resolver = ItemResolver(dataset)
    index_seconds = _index_all(dataset, named, progress)
    records = []
    from tqdm.auto import tqdm

    bar = tqdm(total=len(named) * len(queries), desc=f"evaluate {split}", unit="q", disable=not progress,
               leave=False)  # fmt: skip
    for name, retriever in named.items():
        for q in queries:
            bar.update(1)
            units, seconds = _retrieve(name, retriever, q, budget)
            injected = fit_budget(units, budget)
            truth = dataset.truth[q.id]
            records.append(
                {
                    "query_id": q.id, "retriever": name, "budget": _budget_label(budget),
                    "intent": truth.intent, "category": truth.category,
                    **_score(resolver, q, injected, kk), "latency_s": seconds,
                }
            )  # fmt: skip
    bar.close()
    return EvaluationResult(
        rows=pd.DataFrame.from_records(records),
        dataset=dataset.name,
        dataset_hash=dataset_hash(dataset),
        split=split,
        ks=kk,
        budgets={name: budget for name in named},
        index_seconds=index_seconds,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
    )


def _first_k_items(
    resolver: ItemResolver, query: Query, units: Sequence[Unit], k: int
) -> tuple[list[Unit], list[str]]:
    """The first ``k`` items ``units`` inject, in rank order, and the units that inject them.

    For truth that counts memories (LoCoMo turns, MuSiQue passages) only passages or turns count toward
    ``k`` — rows the units inject whole, or turns an injected observation is evidence of — never units, and
    never a cut passage (``"<id>#part"``), a summary or an entity; otherwise every item counts.
    """
    memory_kind = resolver.kind(query) == "memory"
    memories = resolver.memory_ids(query.graph_id) if memory_kind else None
    ranking: list[str] = []
    seen: set[str] = set()
    got: list[Unit] = []
    for unit in units:
        if len(ranking) >= k:
            break
        got.append(unit)
        for item in resolver.unit_items(query, unit):
            if item in seen or (memories is not None and item not in memories):
                continue
            seen.add(item)
            ranking.append(item)
            if len(ranking) >= k:
                break
    return got, ranking


def _recall_at_k(
    dataset: Dataset,
    retrievers: Mapping[str, Retriever] | Sequence[Retriever],
    ks: Sequence[int],
    split: str,
    max_queries: int | None,
    seed: int,
    count: Literal["budget", "units"],
    index: bool,
) -> pd.DataFrame:
    kk = _check_ks(ks)
    named = _named(retrievers)
    queries = select_queries(dataset, split, max_queries, seed)
    resolver = ItemResolver(dataset)
    unit_chars = mean_memory_chars(dataset) if count == "budget" else math.nan
    budgets = {k: max(1, round(k * unit_chars)) if count == "budget" else None for k in kk}
    hint = max(b for b in budgets.values() if b is not None) if count == "budget" else None
    if index:
        _index_all(dataset, named)
    records = []
    for name, retriever in named.items():
        for q in queries:
            truth = dataset.truth[q.id]
            units, _ = _retrieve(name, retriever, q, hint)
            for k in kk:
                if count == "budget":
                    got = fit_budget(units, budgets[k])
                    ranking = resolver.ranking(q, got)
                else:
                    got, ranking = _first_k_items(resolver, q, units, k)
                records.append(
                    {
                        "query_id": q.id, "retriever": name, "intent": truth.intent,
                        "category": truth.category, "count": count, "k": k, "budget_chars": budgets[k],
                        "recall": M.needed_recall(ranking, truth.needed), "units": len(got),
                        "chars": sum(u.chars for u in got),
                    }
                )  # fmt: skip
    return pd.DataFrame.from_records(records)


def recall_at_k_budget(
    dataset: Dataset,
    retrievers: Mapping[str, Retriever] | Sequence[Retriever],
    ks: Sequence[int] = (5, 10, 25, 50),
    split: str = "test",
    max_queries: int | None = None,
    seed: int = 0,
    index: bool = True,
) -> pd.DataFrame:
    """Evidence recall@k within a budget of ``k`` average memories: what each retriever injects within
    ``round(k * mean_memory_chars(dataset))`` characters (``k`` dialog turns for LoCoMo, ``k`` passages for
    MuSiQue), counted in items (a unit counts an evidence turn only if it injects the turn or an observation
    citing it). The same budget applies to every retriever, so these comparisons are paired.

    Returns:
        One row per (query, retriever, k): ``query_id, retriever, intent, category, count, k, budget_chars,
        recall, units, chars``. Summarise with :func:`recall_summary`.
    """
    return _recall_at_k(dataset, retrievers, ks, split, max_queries, seed, "budget", index)


def recall_at_k_units(
    dataset: Dataset,
    retrievers: Mapping[str, Retriever] | Sequence[Retriever],
    ks: Sequence[int] = (5, 10, 25, 50),
    split: str = "test",
    max_queries: int | None = None,
    seed: int = 0,
    index: bool = True,
) -> pd.DataFrame:
    """Evidence recall@k over the first ``k`` passages or turns injected, whatever their length: the count
    published figures use (DRAGON's R@k over LoCoMo turns). Passages and turns are counted, never units: a
    constructed memory carrying three passages whole fills three of the ``k``, a passage it cuts fills none
    (:mod:`signet_rl.rating.items`); for other truth kinds the first ``k`` items count. Not budget-paired: a
    retriever with longer items injects more. Same columns as :func:`recall_at_k_budget` (``budget_chars``
    is empty; ``units`` is how many leading units the ``k`` items took)."""
    return _recall_at_k(dataset, retrievers, ks, split, max_queries, seed, "units", index)


def recall_summary(
    frame: pd.DataFrame, by: str | None = None, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> pd.DataFrame:
    """Mean recall per retriever and ``k`` (and ``by``, e.g. ``"category"``) with bootstrap bounds."""
    keys = ["retriever"] + ([by] if by else []) + ["k"]
    records = []
    for key, group in frame.groupby(keys, sort=False):
        values = group["recall"].to_numpy(dtype=np.float64)
        finite = values[np.isfinite(values)]
        if not len(finite):  # non-queries need nothing: recall is undefined for them
            continue
        low, high = M.bootstrap_ci(finite, n_boot, alpha, seed)
        records.append(
            {**dict(zip(keys, key, strict=True)), "queries": len(finite),
             "recall": float(finite.mean()), "low": low, "high": high}
        )  # fmt: skip
    return pd.DataFrame.from_records(records).set_index(keys)


def validation_callback(
    dataset: Dataset, budget_chars: int = DEFAULT_BUDGET_CHARS, max_queries: int | None = None, seed: int = 0
) -> Callable[[Retriever], dict[str, float]]:
    """The learning loop's evaluation, as the callback the entry point hands to the trainer.

    The returned function evaluates a (frozen) retriever on ``dataset``'s validation split, under the
    budget, and returns what goes on the learning curve: ``val/needed_recall``, ``val/precision``,
    ``val/f1``, ``val/ndcg@10`` over the queries that need something, ``val/zero_injection`` over those
    that need nothing, and ``val/needed_recall/<intent>``.
    """

    def validate(retriever: Retriever) -> dict[str, float]:
        res = evaluate(
            dataset,
            {"learned": retriever},
            split="validation",
            budget_chars=budget_chars,
            max_queries=max_queries,
            seed=seed,
            n_boot=1,
        )
        rows = res.rows[res.rows["retriever"] == "learned"]
        answered = rows[rows["n_needed"] > 0]
        out = {f"val/{m}": float(answered[m].mean()) for m in ("needed_recall", "precision", "f1", "ndcg@10")}
        silent = rows[rows["n_needed"] == 0]
        if len(silent):
            out["val/zero_injection"] = float(silent["zero_injection"].mean())
        for intent, g in answered.groupby("intent"):
            out[f"val/needed_recall/{intent}"] = float(g["needed_recall"].mean())
        return out

    return validate
