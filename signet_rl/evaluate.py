"""``python -m signet_rl.evaluate``: compare retrievers on a dataset split, print the table, log to MLflow.

A thin Hydra entry point (``conf/evaluate.yaml``) around :func:`evaluate_from_config`, which takes any
config with the same keys and returns every logged metric, so a sweeper can optimise
``cfg.optimized_metric``::

    python -m signet_rl.evaluate                                   # the headline table on synthetic:small
    python -m signet_rl.evaluate dataset.spec=synthetic:medium max_queries=200
    python -m signet_rl.evaluate dataset=locomo encoder=minilm budget_chars=4000
    python -m signet_rl.evaluate mlflow.enabled=false '~retrievers.desire_random' ceiling=false
    python -m signet_rl.evaluate policy=artifacts/gnn                # a saved policy as the `learned` row
    python -m signet_rl.evaluate ray=true                          # queries sharded over a local Ray
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

__all__ = ["build_retrievers", "evaluate_from_config", "main", "policy_retriever"]


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


def policy_retriever(path: str, name: str = "learned") -> Retriever:
    """A saved policy as a retriever: an artifact folder (``manifest.json``) is loaded as it is, a training
    run's folder is exported to a temporary folder first (:func:`signet_rl.export.export_run`).

    Raises:
        ValueError: a folder that is neither (naming it), or a run export refuses.
    """
    import tempfile
    from pathlib import Path

    from signet_rl.serving import MANIFEST, load_policy

    folder = Path(path)
    if (folder / MANIFEST).exists():
        return load_policy(folder).retriever(name=name)
    if (folder / "checkpoint.pkl").exists():
        from signet_rl.export import export_run

        with tempfile.TemporaryDirectory(prefix="signet_rl-policy-") as tmp:
            export_run(folder, tmp)
            return load_policy(tmp).retriever(name=name)
    raise ValueError(
        f"policy={path!r} is neither a policy artifact (no {MANIFEST}) nor a training run folder (no "
        "checkpoint.pkl); export a run with python -m signet_rl.export RUN_DIR --out DIR"
    )


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
    budget = _budget(cfg.get("budget_chars"))
    common = _common(cfg)
    if cfg.get("ray", False):  # the same comparison, its queries sharded over Ray tasks
        result = _evaluate_on_ray(cfg, budget, common)
    else:
        dataset, shared, own = _prepare(cfg)
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


def _common(cfg: DictConfig) -> dict[str, Any]:
    """The :func:`~signet_rl.evaluation.harness.evaluate` arguments every part of the comparison shares."""
    return {
        "split": cfg.get("split", "test"),
        "ks": list(cfg.get("ks") or [5, 10]),
        "max_queries": cfg.get("max_queries"),
        "seed": int(cfg.get("seed", 0)),
        "n_boot": int(cfg.get("bootstrap", 1000)),
        "alpha": float(cfg.get("alpha", 0.05)),
        # progress bars in this process only (Ray's workers would interleave theirs)
        "progress": bool(cfg.get("progress", True)) and not cfg.get("ray", False),
    }


def _prepare(cfg: DictConfig) -> tuple[Any, dict[str, Retriever], dict[str, Retriever]]:
    """The dataset (its learning split's test fold when it has one) and the retrievers under ``retrievers``
    (shared budget, with the ceiling when ``ceiling``) and under ``own_caps``; every check of
    :func:`evaluate_from_config` that needs no retrieval."""
    spec = parse_spec(cfg.dataset.spec)
    if spec.kind == "kg":
        raise ValueError(
            f"dataset {str(spec)!r} is a knowledge-graph reasoning benchmark: it has no memories for "
            "evaluate's retrievers to retrieve, so every score would be 0. Train and evaluate a walker on it "
            f"with the KG task: python -m signet_rl.train task=kg dataset=kg dataset.spec={spec}"
        )
    options = cfg.dataset.get("options")
    options = OmegaConf.to_container(options, resolve=True) if options is not None else None
    dataset = load_dataset(cfg.dataset.spec, root=cfg.dataset.get("data_root"), options=options)  # type: ignore[arg-type]
    split = cfg.dataset.get("learning_split")
    if cfg.get("learning_split", True) and split is not None:
        dataset = dataset.learning_split(
            k=int(split.k), fold="all" if str(split.get("fold", 0)) == "all" else int(split.get("fold", 0)),
            seed=int(split.get("seed", 0)),
            group=split.get("group"),
        )  # fmt: skip
    shared = build_retrievers(cfg.get("retrievers"), "retrievers")
    if cfg.get("policy"):
        shared["learned"] = policy_retriever(str(cfg.policy))
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
    return dataset, shared, own


def _evaluate_shard(plain: dict[str, Any], budget: int | None, common: dict[str, Any], shard: tuple[int, int]
                    ) -> list[EvaluationResult]:  # fmt: skip
    """One Ray task: the whole comparison on one shard of the queries (the dataset and retrievers are built
    from the config in the worker; nothing but the config crosses the process boundary)."""
    cfg = OmegaConf.create(plain)
    dataset, shared, own = _prepare(cfg)
    parts = []
    if shared:
        parts.append(evaluate(dataset, shared, budget_chars=budget, shard=shard, **common))
    if own:
        parts.append(evaluate(dataset, own, budget_chars=None, shard=shard, **common))
    return parts


def _evaluate_on_ray(cfg: DictConfig, budget: int | None, common: dict[str, Any]) -> EvaluationResult:
    """``ray=true``: shard the queries over ``ray_shards`` Ray tasks (null: one per CPU Ray has), on a local
    Ray this command starts (``ray_init``: 2 CPUs, no dashboard, a small object store) or on the cluster at
    ``ray_init.address``, then merge the shards in the single-process order before any bootstrap: the table
    equals the one ``ray=false`` prints (timings apart). Needs ``pip install signet-rl[distributed]``."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "ray=true needs Ray: pip install -e '.[distributed]' (or run without ray=true)"
        ) from None
    _prepare(cfg)  # every config error here, before Ray starts
    init = OmegaConf.to_container(cfg.get("ray_init") or {}, resolve=True)
    assert isinstance(init, dict)
    started = not ray.is_initialized()
    if started:
        ray.init(**{str(k): v for k, v in init.items() if v is not None}, log_to_driver=False)
    try:
        shards = cfg.get("ray_shards") or int(ray.cluster_resources().get("CPU", 1))
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise ValueError(f"ray_shards={shards!r} must be a whole number of at least 1 (or null)")
        plain = OmegaConf.to_container(cfg, resolve=True)
        task = ray.remote(num_cpus=1)(_evaluate_shard)
        parts = ray.get([task.remote(plain, budget, common, (i, shards)) for i in range(shards)])
    finally:
        if started:
            ray.shutdown()
    per_section = zip(*parts, strict=True)  # [(shared shard 0, shared shard 1, ...), (own shard 0, ...)]
    return EvaluationResult.concat([EvaluationResult.merge_shards(list(s)) for s in per_section])


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
