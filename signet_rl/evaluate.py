"""``python -m signet_rl.evaluate``: compare retrievers on a dataset split, print the table, log to MLflow.

A thin Hydra entry point (``conf/evaluate.yaml``) around :func:`evaluate_from_config`, which takes any
config with the same keys and returns every logged metric, so a sweeper can optimise
``cfg.optimized_metric``::

    python -m signet_rl.evaluate                                   # the headline table on synthetic:small
    python -m signet_rl.evaluate dataset.spec=synthetic:medium max_queries=200
    python -m signet_rl.evaluate dataset=locomo encoder=minilm budget_chars=4000
    python -m signet_rl.evaluate mlflow.enabled=false '~retrievers.desire_random' ceiling=false
    python -m signet_rl.train task=kg dataset=kg dataset.spec=kg:kinship  # KG datasets: the KG task
    mlflow ui --backend-store-uri sqlite:///mlflow.db              # then open the run

Retrievers under ``retrievers`` share one character budget (``budget_chars``, the only cap in the
comparison); retrievers under ``own_caps`` run with no shared budget, as a separate variant. By default the
table shows ``best_flat`` (frozen per dataset family in ``conf/best_flat.yaml``; logged as
``baseline_flat/*``), ``flat_signet_uncapped``, desire paths with each non-learned scorer and the candidate
ceiling under the budget, and ``flat_signet`` under its own caps. A dataset config with a ``learning_split``
(LoCoMo, MuSiQue) is evaluated on that split's test fold (``learning_split=false``: every query).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import hydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from signet_rl import smoke
from signet_rl.core.logs import quiet_libraries
from signet_rl.datasets.registry import load_dataset, parse_spec
from signet_rl.evaluation.harness import EvaluationResult, evaluate
from signet_rl.retrieval.base import Retriever

__all__ = ["build_retrievers", "evaluate_from_config", "main"]


def build_retrievers(nodes: Mapping[str, Any] | None, section: str = "retrievers") -> dict[str, Retriever]:
    """Instantiate every ``_target_`` node of a ``{name: config}`` mapping (``null`` entries are skipped).

    Raises:
        ValueError: a node that cannot be built (an unknown variant name, a bad target), naming the
            config key and the underlying error.
        TypeError: a node that builds something that is not a retriever.
    """
    out: dict[str, Retriever] = {}
    for key, node in (nodes or {}).items():
        if node is None:
            continue
        try:
            retriever = instantiate(node)
        except Exception as exc:  # hydra wraps the target's error; keep its message
            cause = exc.__cause__ or exc
            raise ValueError(f"{section}.{key}: cannot build retriever: {cause}") from exc
        if not isinstance(retriever, Retriever):
            raise TypeError(f"{section}.{key} built a {type(retriever).__name__}, not a retriever")
        out[str(key)] = retriever
    return out


def _budget(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"budget_chars must be a positive number of characters or null, got {value!r}")
    return value


def evaluate_from_config(cfg: DictConfig) -> dict[str, float]:
    """Run the comparison ``cfg`` describes, print its table, log it (when ``cfg.mlflow.enabled``).

    Returns:
        Every logged metric (``retrieval/<retriever>/<metric>``, ``baseline_flat/<metric>``, ...); the one a
        sweeper optimises is named by ``cfg.optimized_metric``.

    Raises:
        ValueError: a budget of 0 or below, an unknown dataset or retriever name, a KG dataset (refused before
            it loads: it has no memories to retrieve; the KG task evaluates walkers on it), a split with no
            queries, no retrievers at all, or a baseline that is not among them.
    """
    t0 = time.perf_counter()
    spec = parse_spec(cfg.dataset.spec)
    if spec.kind == "kg":
        raise ValueError(
            f"dataset {str(spec)!r} is a knowledge-graph reasoning benchmark: it has no memories for "
            "evaluate's retrievers to retrieve, so every score would be 0. Train and evaluate a walker on it "
            f"with the KG task: python -m signet_rl.train task=kg dataset=kg dataset.spec={spec}"
        )
    budget = _budget(cfg.get("budget_chars"))
    ks = list(cfg.get("ks") or [5, 10])
    options = cfg.dataset.get("options")
    options = OmegaConf.to_container(options, resolve=True) if options is not None else None
    dataset = load_dataset(cfg.dataset.spec, root=cfg.dataset.get("data_root"), options=options)  # type: ignore[arg-type]
    split = cfg.dataset.get("learning_split")
    if cfg.get("learning_split", True) and split is not None:
        dataset = dataset.learning_split(
            k=int(split.k), fold=int(split.get("fold", 0)), seed=int(split.get("seed", 0)),
            group=split.get("group"),
        )  # fmt: skip
    shared = build_retrievers(cfg.get("retrievers"), "retrievers")
    own = build_retrievers(cfg.get("own_caps"), "own_caps")
    clash = sorted(set(shared) & set(own))
    if clash:
        raise ValueError(f"retrievers {clash} appear both under retrievers and own_caps")
    if not shared and not own:
        raise ValueError("no retrievers to evaluate: both retrievers and own_caps are empty")
    if cfg.get("ceiling", False) and shared:  # a reference row beside the budgeted ones
        from signet_rl.evaluation.oracle import OracleScorer
        from signet_rl.pipeline.desire import DesirePathRetriever

        node = cfg.dataset.get("traversal")
        traversal = OmegaConf.to_container(node, resolve=True) if node is not None else None
        shared["candidate_ceiling"] = DesirePathRetriever(
            OracleScorer(dataset), encoder=str(cfg.get("encoder", "hashing")), name="candidate_ceiling",
            config={str(k): v for k, v in traversal.items()} if isinstance(traversal, dict) else None,
        )  # fmt: skip
    common: dict[str, Any] = {
        "split": cfg.get("split", "test"),
        "ks": ks,
        "max_queries": cfg.get("max_queries"),
        "seed": int(cfg.get("seed", 0)),
        "n_boot": int(cfg.get("bootstrap", 1000)),
        "alpha": float(cfg.get("alpha", 0.05)),
        "progress": bool(cfg.get("progress", True)),
    }
    parts = []
    if shared:
        parts.append(evaluate(dataset, shared, budget_chars=budget, **common))
    if own:
        parts.append(evaluate(dataset, own, budget_chars=None, **common))
    result = EvaluationResult.concat(parts)
    baseline = cfg.get("baseline")
    metrics = result.flat_metrics(baseline)
    print(result.table())
    mlcfg = cfg.get("mlflow") or {}
    if mlcfg.get("enabled", False):
        from signet_rl.tracking import log_evaluation, resolve_tracking_uri

        uri = resolve_tracking_uri(mlcfg.get("tracking_uri"))
        run_id = log_evaluation(
            result, cfg, tracking_uri=uri, experiment=mlcfg.get("experiment") or "signet_rl-eval",
            baseline=baseline, run_name=mlcfg.get("run_name"),
        )  # fmt: skip
        print(f"MLflow run {run_id} in {uri} (mlflow ui --backend-store-uri {uri})")
    print(f"evaluated {result.num_queries} queries x {len(result.retrievers)} retrievers "
          f"in {time.perf_counter() - t0:.1f}s")  # fmt: skip
    return metrics


@hydra.main(config_path="../conf", config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    """Hydra entry point; returns ``cfg.optimized_metric`` for sweepers."""
    quiet_libraries(bool(cfg.get("verbose", False)))  # library chatter (bm25s, faiss, MLflow) unless verbose
    if smoke.enabled():  # SIGNET_RL_SMOKE=1: the same code path in seconds (signet_rl.smoke)
        smoke.shrink_evaluate(cfg)
    metrics = evaluate_from_config(cfg)
    name = cfg.get("optimized_metric")
    if not name:
        return None
    if name not in metrics:
        raise KeyError(f"optimized_metric {name!r} was not computed; have e.g. {sorted(metrics)[:8]}")
    return metrics[name]


if __name__ == "__main__":
    main()
