"""MLflow tracking: the one library module that imports MLflow.

:func:`log_evaluation` records one evaluation as one MLflow run:

* **params**: the flattened, resolved config (``retrievers.flat_vector.name``, ``budget_chars``, ...) plus
  ``dataset_hash``, ``num_queries`` and ``ks``;
* **metrics**: :meth:`~signet_rl.evaluation.harness.EvaluationResult.flat_metrics` —
  ``retrieval/<retriever>/<metric>`` for every retriever, ``baseline_flat/<metric>`` for the flat baseline;
* **artifacts**: the per-intent table (``per_intent.csv`` and ``per_intent.md``), the per-category and
  overall summaries, every per-query row (``per_query.csv``), the comparison as text (``table.txt``) and the
  resolved config (``config.yaml``);
* **tags**: ``dataset``, ``split``, ``dataset_hash``, ``git_commit`` (``git rev-parse HEAD``, else
  ``unknown``).

Tracking is local by default and needs no server: ``sqlite:///<project root>/mlflow.db``, an absolute path
anchored where the command was started (Hydra's original working directory when inside Hydra), whatever
Hydra's run directory is. Artifacts go beside the database, under ``<project root>/mlruns``. Open them with::

    mlflow ui --backend-store-uri sqlite:///mlflow.db
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH
from omegaconf import DictConfig, OmegaConf

from signet_rl.evaluation.harness import EvaluationResult, render_markdown

__all__ = [
    "DEFAULT_EXPERIMENT",
    "SweepCallback",
    "SweepJob",
    "TrainingRun",
    "default_tracking_uri",
    "flatten_config",
    "git_commit",
    "log_evaluation",
    "log_sweep_summary",
    "parallel_coordinates_png",
    "project_root",
    "resolve_tracking_uri",
    "sweep_job",
    "sweep_summary",
]

DEFAULT_EXPERIMENT = "signet_rl-eval"
DB_NAME = "mlflow.db"
_BAD_NAME_CHARS = re.compile(r"[^/\w.\- :]")


def project_root() -> Path:
    """Where the command was started: Hydra's original working directory inside a Hydra app, else the
    current directory."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.utils import get_original_cwd

        if HydraConfig.initialized():
            return Path(get_original_cwd()).resolve()
    except ImportError:  # pragma: no cover - hydra is a dependency
        pass
    return Path.cwd().resolve()


def default_tracking_uri(root: str | Path | None = None) -> str:
    """``sqlite:///<root>/mlflow.db`` with an absolute path (``root`` defaults to :func:`project_root`)."""
    base = Path(root).resolve() if root is not None else project_root()
    return f"sqlite:///{base / DB_NAME}"


def resolve_tracking_uri(uri: str | None, root: str | Path | None = None) -> str:
    """The tracking URI to use: the default for ``None``/empty; a relative ``sqlite:///`` path or a bare
    path to a ``.db`` file anchored at ``root`` (default :func:`project_root`); anything else as given."""
    base = Path(root).resolve() if root is not None else project_root()
    if uri is None or not str(uri).strip():
        return default_tracking_uri(base)
    uri = str(uri).strip()
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///") :])
        return f"sqlite:///{path if path.is_absolute() else (base / path).resolve()}"
    if "://" not in uri:
        path = Path(uri).expanduser()
        path = path if path.is_absolute() else (base / path).resolve()
        return f"sqlite:///{path / DB_NAME if path.suffix != '.db' else path}"
    return uri


def git_commit(root: str | Path | None = None) -> str:
    """``git rev-parse HEAD`` in ``root`` (default :func:`project_root`), or ``"unknown"``."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=str(root or project_root()),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else "unknown"


def _plain(cfg: DictConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    if cfg is None:
        return {}
    if isinstance(cfg, DictConfig):
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)  # type: ignore[return-value]
    return dict(cfg)


def flatten_config(cfg: DictConfig | Mapping[str, Any] | None, sep: str = ".") -> dict[str, str]:
    """The config as ``{"a.b.c": "value"}`` strings (lists are written whole, e.g. ``"[5, 10]"``)."""
    out: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, Mapping):
            if not node and prefix:
                out[prefix] = "{}"
            for k, v in node.items():
                walk(f"{prefix}{sep}{k}" if prefix else str(k), v)
        else:
            out[prefix] = "null" if node is None else str(node)

    walk("", _plain(cfg))
    return out


def _name(key: str) -> str:
    return _BAD_NAME_CHARS.sub("_", key)[:250]


@contextmanager
def _quiet_backend() -> Iterator[None]:
    """Silence deprecation warnings MLflow's own backend raises (SQLAlchemy 2.1 deprecates loader options
    MLflow's sqlite store uses); they are MLflow's to fix and say nothing about this run."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", category=DeprecationWarning, module=r"(mlflow|sqlalchemy|alembic)(\.|$)"
        )
        warnings.filterwarnings(
            "ignore", category=DeprecationWarning, message=r".*loader strategy is deprecated"
        )
        yield


def _artifact_location(uri: str) -> str | None:
    if uri.startswith("sqlite:///"):
        return (Path(uri[len("sqlite:///") :]).parent / "mlruns").as_uri()
    return None


def _experiment_id(client: MlflowClient, name: str, uri: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        if exp.lifecycle_stage == "deleted":
            client.restore_experiment(exp.experiment_id)
        return str(exp.experiment_id)
    return str(client.create_experiment(name, artifact_location=_artifact_location(uri)))


def _write_artifacts(result: EvaluationResult, cfg: DictConfig | Mapping[str, Any] | None, out: Path) -> None:
    tables = result.intent_tables()
    (out / "per_intent.csv").write_text(tables["csv"])
    (out / "per_intent.md").write_text(tables["md"])
    per_category = result.per_category()
    (out / "per_category.csv").write_text(per_category.to_csv())
    (out / "per_category.md").write_text(render_markdown(result._display(per_category)))
    summary = result.summary()
    (out / "summary.csv").write_text(summary.to_csv())
    (out / "summary.md").write_text(render_markdown(result._display(summary)))
    (out / "table.txt").write_text(result.table() + "\n")
    result.rows.to_csv(out / "per_query.csv", index=False)
    if isinstance(cfg, DictConfig):
        text = OmegaConf.to_yaml(cfg, resolve=True)
    else:
        text = yaml.safe_dump(_plain(cfg), sort_keys=False)
    (out / "config.yaml").write_text(text)


def log_evaluation(
    result: EvaluationResult,
    cfg: DictConfig | Mapping[str, Any] | None,
    tracking_uri: str | None = None,
    experiment: str = DEFAULT_EXPERIMENT,
    baseline: str | None = None,
    run_name: str | None = None,
) -> str:
    """Log one evaluation as one MLflow run (see the module docstring) and return its run id.

    Args:
        result: what :func:`~signet_rl.evaluation.harness.evaluate` returned.
        cfg: the config the evaluation ran with (logged flattened as params and whole as ``config.yaml``).
        tracking_uri: see :func:`resolve_tracking_uri`; ``None`` is the project's ``mlflow.db``.
        experiment: the MLflow experiment name (created when missing).
        baseline: the retriever logged as ``baseline_flat/...`` (default: the first flat variant).
        run_name: the run's display name (default ``<dataset>-<split>``).
    """
    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    metrics = result.flat_metrics(baseline)
    with _quiet_backend():
        return _log(result, cfg, uri, experiment, baseline, run_name, metrics)


def _log(
    result: EvaluationResult,
    cfg: DictConfig | Mapping[str, Any] | None,
    uri: str,
    experiment: str,
    baseline: str | None,
    run_name: str | None,
    metrics: Mapping[str, float],
) -> str:
    client = MlflowClient(tracking_uri=uri)
    exp_id = _experiment_id(client, experiment, uri)
    commit = git_commit()
    tags = {
        "dataset": result.dataset,
        "split": result.split,
        "dataset_hash": result.dataset_hash,
        "git_commit": commit,
        "retrievers": ",".join(result.retrievers),
        "baseline": baseline or result.default_baseline() or "",
    }
    if commit != "unknown":
        tags["mlflow.source.git.commit"] = commit
    run = client.create_run(exp_id, tags=tags, run_name=run_name or f"{result.dataset}-{result.split}")
    run_id = run.info.run_id
    try:
        params = flatten_config(cfg)
        params.update(
            dataset_hash=result.dataset_hash,
            num_queries=str(result.num_queries),
            ks=str(list(result.ks)),
            budgets=str({k: v for k, v in result.budgets.items()}),
        )
        now = int(time.time() * 1000)
        client.log_batch(
            run_id,
            metrics=[Metric(_name(k), v, now, 0) for k, v in metrics.items() if math.isfinite(v)],
            params=[Param(_name(k), str(v)[:MAX_PARAM_VAL_LENGTH]) for k, v in params.items()],
        )
        with tempfile.TemporaryDirectory(prefix="signet_rl-eval-") as tmp:
            _write_artifacts(result, cfg, Path(tmp))
            client.log_artifacts(run_id, tmp)
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
    return str(run_id)


class TrainingRun:
    """One training run in MLflow: params once, metrics over interactions, artifacts at the end.

    A resumed run continues the same MLflow run (pass the ``run_id`` a checkpoint kept). Runs of one Hydra
    multirun are grouped under a parent run named after the sweep (tag ``sweep``), one child per job
    (``python -m signet_rl.train`` names each by the overrides it sweeps, :func:`sweep_job`);
    :class:`SweepCallback` ends the parent when the sweep ends and marks a failed job's run FAILED.

    Args:
        cfg: the config (logged flattened as params).
        experiment: the MLflow experiment (created when missing).
        tracking_uri: see :func:`resolve_tracking_uri`.
        run_name: the run's display name.
        run_id: an existing run to continue (resume), or None for a new one.
        sweep: the sweep directory of a multirun (groups the jobs), or None.
        tags: extra tags.
    """

    def __init__(
        self,
        cfg: DictConfig | Mapping[str, Any] | None,
        experiment: str = "signet_rl-train",
        tracking_uri: str | None = None,
        run_name: str | None = None,
        run_id: str | None = None,
        sweep: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        self.uri = resolve_tracking_uri(tracking_uri)
        if self.uri.startswith("sqlite:///"):
            Path(self.uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
        with _quiet_backend():
            self.client = MlflowClient(tracking_uri=self.uri)
            exp_id = _experiment_id(self.client, experiment, self.uri)
            if run_id is not None:
                self.run_id = run_id
                self.client.update_run(run_id, status="RUNNING")
                output_dir = _hydra_output_dir()
                if output_dir is not None:
                    self.client.set_tag(run_id, "hydra_output_dir", output_dir)
                return
            all_tags = {"git_commit": git_commit(), **(tags or {})}
            output_dir = _hydra_output_dir()
            if output_dir is not None:  # lets SweepCallback find the run of a job that failed
                all_tags["hydra_output_dir"] = output_dir
            if sweep:
                all_tags["sweep"] = sweep
                all_tags["mlflow.parentRunId"] = self._parent(exp_id, sweep)
                job = sweep_job()
                if job is not None:  # the sweep summary's columns (SweepCallback)
                    all_tags["sweep_overrides"] = json.dumps(list(job.overrides))
            run = self.client.create_run(exp_id, tags=all_tags, run_name=run_name)
            self.run_id = str(run.info.run_id)
            params = flatten_config(cfg)
            items = [Param(_name(k), str(v)[:MAX_PARAM_VAL_LENGTH]) for k, v in params.items()]
            for i in range(0, len(items), 100):
                self.client.log_batch(self.run_id, params=items[i : i + 100])

    def _parent(self, exp_id: str, sweep: str) -> str:
        parent = _sweep_parent(self.client, exp_id, sweep)
        assert parent is not None  # created when missing
        return parent

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Log finite metrics at ``step`` (interactions so far)."""
        self.log_history([(step, metrics)])

    def log_history(self, points: Iterable[tuple[int, Mapping[str, float]]]) -> None:
        """Log metric histories in one go: one ``(step, {name: value})`` per point (a validation curve by
        batch, say); non-finite values are left out."""
        now = int(time.time() * 1000)
        rows = [
            Metric(_name(k), float(v), now, int(step))
            for step, metrics in points
            for k, v in metrics.items()
            if isinstance(v, int | float) and math.isfinite(v)
        ]
        with _quiet_backend():
            for i in range(0, len(rows), 500):
                self.client.log_batch(self.run_id, metrics=rows[i : i + 500])

    def log_artifacts(self, folder: str | Path) -> None:
        with _quiet_backend():
            self.client.log_artifacts(self.run_id, str(folder))

    def finish(self, status: str = "FINISHED") -> None:
        with _quiet_backend():
            self.client.set_terminated(self.run_id, status)


def _sweep_parent(client: MlflowClient, exp_id: str, sweep: str, create: bool = True) -> str | None:
    """The id of the parent run grouping the jobs of the sweep in folder ``sweep`` (created when missing
    and ``create``)."""
    found = client.search_runs([exp_id], filter_string=f"tags.sweep_parent = '{sweep}'", max_results=1)
    if found:
        return str(found[0].info.run_id)
    if not create:
        return None
    tags = {"sweep_parent": sweep, "sweep": sweep}
    return str(client.create_run(exp_id, tags=tags, run_name=f"sweep {Path(sweep).name}").info.run_id)


def _hydra_output_dir() -> str | None:
    """The running Hydra job's output folder (unique per job), or None outside Hydra."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return str(HydraConfig.get().runtime.output_dir)
    except ValueError:  # not under @hydra.main
        return None


@dataclass(frozen=True)
class SweepJob:
    """One job of a Hydra multirun: the sweep folder, the job number, the job's name (its values of the
    swept overrides, e.g. ``traversal.max_branching=2 traversal.max_depth=3``) and those overrides."""

    dir: str
    num: int
    name: str
    overrides: tuple[str, ...] = ()


def sweep_job() -> SweepJob | None:
    """The running multirun job (see :class:`SweepJob`), or None outside a multirun.

    The name holds the job's overrides of the keys the sweep varies (read from the sweep's
    ``multirun.yaml``, which Hydra writes before launching, and from the sweeper's ``params``), else all its
    overrides but the ones excluded from ``hydra.job.override_dirname``, else ``job <num>``."""
    try:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
    except ValueError:  # not under @hydra.main
        return None
    if str(hc.mode) != "RunMode.MULTIRUN":
        return None
    overrides = [str(o) for o in hc.overrides.task]
    swept = _swept_keys(Path(str(hc.sweep.dir)) / "multirun.yaml")
    searched = OmegaConf.select(cast(DictConfig, hc), "sweeper.params", default=None)
    swept |= {str(k).lstrip("+~") for k in (searched or {})}  # a sweeper's own search space
    exclude = {str(k) for k in hc.job.config.override_dirname.exclude_keys}
    chosen = [o for o in overrides if _key(o) in swept] or [o for o in overrides if _key(o) not in exclude]
    name = " ".join(o.replace("\\", "") for o in chosen) or f"job {hc.job.num}"
    return SweepJob(dir=str(hc.sweep.dir), num=int(hc.job.num), name=name, overrides=tuple(chosen))


def _key(override: str) -> str:
    """The key an override sets (``+a.b=1`` -> ``a.b``)."""
    return override.split("=", 1)[0].lstrip("+~")


def _swept_keys(spec: Path) -> set[str]:
    """The keys a multirun sweeps (``a=1,2``, ``range(...)``, ...), from the ``multirun.yaml`` Hydra writes in
    the sweep folder; empty when it cannot be read."""
    if not spec.exists():
        return set()
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    swept = set()
    for line in OmegaConf.load(spec).hydra.overrides.task:
        try:
            (override,) = parser.parse_overrides([str(line)])
        except Exception:  # an override this parser cannot read is not a swept one
            continue
        if override.is_sweep_override():
            swept.add(override.key_or_group)
    return swept


class SweepCallback(Callback):
    """The MLflow runs of a ``python -m signet_rl.train`` job or sweep (``hydra.callbacks`` in
    ``conf/train.yaml``), whatever the sweeper and launcher: a multirun opens its parent run before any job
    starts (so parallel jobs share one); a job that raised leaves its run and its sweep's parent run FAILED
    (not RUNNING forever); a multirun that ends with every job done logs the sweep summary to its parent
    (:func:`log_sweep_summary`) and marks it FINISHED. A multirun started again in the same sweep folder (a
    resumed Optuna sweep) reopens that parent and marks the runs its killed jobs left RUNNING as KILLED."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        found = _client_of(config)
        if found is None:
            return
        client, exp_id = found
        sweep = str(config.hydra.sweep.dir)
        with _quiet_backend():
            existing = _sweep_parent(client, exp_id, sweep, create=False)
            parent = _sweep_parent(client, exp_id, sweep)
            assert parent is not None
            if existing is None:
                return
            client.update_run(parent, status="RUNNING")
            stale = client.search_runs(
                [exp_id], filter_string=f"tags.sweep = '{sweep}' and attributes.status = 'RUNNING'"
            )
            for run in stale:
                if run.info.run_id != parent:
                    client.set_terminated(run.info.run_id, "KILLED")

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if job_return.status != JobStatus.FAILED:
            return
        found = _client_of(config)
        if found is None:
            return
        client, exp_id = found
        with _quiet_backend():
            out_dir = str(config.hydra.runtime.output_dir)
            running = client.search_runs(
                [exp_id],
                filter_string=f"tags.hydra_output_dir = '{out_dir}' and attributes.status = 'RUNNING'",
            )
            for run in running:
                client.set_terminated(run.info.run_id, "FAILED")
            if str(config.hydra.mode) == "RunMode.MULTIRUN":
                parent = _sweep_parent(client, exp_id, str(config.hydra.sweep.dir))
                assert parent is not None
                client.set_terminated(parent, "FAILED")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        found = _client_of(config)
        if found is None:
            return
        client, exp_id = found
        with _quiet_backend():
            parent = _sweep_parent(client, exp_id, str(config.hydra.sweep.dir), create=False)
            if parent is not None and client.get_run(parent).info.status == "RUNNING":
                log_sweep_summary(client, exp_id, parent, _sweep_metric(config))
                client.set_terminated(parent, "FINISHED")


def _client_of(config: DictConfig) -> tuple[MlflowClient, str] | None:
    """The MLflow client and experiment id a Hydra config's ``mlflow`` block names; None when disabled."""
    ml = config.get("mlflow") or {}
    if not ml.get("enabled", False):
        return None
    cwd = OmegaConf.select(config, "hydra.runtime.cwd", default=None)
    uri = resolve_tracking_uri(ml.get("tracking_uri"), root=cwd or None)
    with _quiet_backend():
        client = MlflowClient(tracking_uri=uri)
        return client, _experiment_id(client, str(ml.get("experiment") or "signet_rl-train"), uri)


#: What a sweep summary ranks jobs by when the config names no ``optimized_metric``: the first of these a
#: job logged (the bandit task's, then the KG task's default).
DEFAULT_SWEEP_METRICS = ("val/needed_recall", "val/kg_walk/mrr")


def _sweep_metric(config: DictConfig) -> str | None:
    name = config.get("optimized_metric")
    return str(name) if name else None


def sweep_summary(client: MlflowClient, exp_id: str, parent: str, metric: str | None = None) -> Any:
    """One row per finished job of the sweep under run ``parent``: the job's swept overrides (tag
    ``sweep_overrides``) as columns, then ``metric`` (default: the first of :data:`DEFAULT_SWEEP_METRICS`
    the jobs logged), best first (ties by run name); its name is in ``frame.attrs["metric"]``."""
    import pandas as pd

    runs = client.search_runs(
        [exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent}' and attributes.status = 'FINISHED'"
    )
    if metric is None:
        metric = next((m for m in DEFAULT_SWEEP_METRICS if any(_name(m) in r.data.metrics for r in runs)),
                      DEFAULT_SWEEP_METRICS[0])  # fmt: skip
    rows = []
    for run in runs:
        row: dict[str, Any] = {"run": run.info.run_name}
        for override in json.loads(run.data.tags.get("sweep_overrides", "[]")):
            key, _, value = str(override).partition("=")
            row[key.lstrip("+~")] = _parse_value(value)
        row[metric] = run.data.metrics.get(_name(metric), math.nan)  # MLflow's name for it
        rows.append(row)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame = frame.sort_values([metric, "run"], ascending=[False, True], kind="stable")  # ties by name
        frame = frame.reset_index(drop=True)
    frame.attrs["metric"] = metric
    return frame


def _parse_value(text: str) -> Any:
    """An override's value as a number when it is one, else the text."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text.strip("'\"")


def parallel_coordinates_png(frame: Any, path: str | Path, title: str = "") -> Path:
    """A parallel-coordinates plot of a :func:`sweep_summary`: one vertical axis per swept key (numbers
    scaled to their range, a log scale when they span more than 20x; other values evenly spaced) and a last
    one for the metric, one line per job coloured by the metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metric = str(frame.attrs["metric"])
    keys = [c for c in frame.columns if c not in ("run", metric)] + [metric]
    scaled, ticks = [], []
    for key in keys:
        col = frame[key]
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in col)
        if numeric:
            x = col.to_numpy(dtype=np.float64)
            finite = x[np.isfinite(x)]
            lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
            log = key != metric and lo > 0 and hi / lo > 20
            if log:
                x, lo, hi = np.log10(x), math.log10(lo), math.log10(hi)
            span = hi - lo or 1.0
            scaled.append((x - lo) / span)
            label = (lambda v: f"{10**v:.3g}") if log else (lambda v: f"{v:.3g}")
            ticks.append([(0.0, label(lo)), (1.0, label(hi))] if hi > lo else [(0.0, label(lo))])
        else:
            levels = sorted({str(v) for v in col})
            pos = {v: (i / (len(levels) - 1) if len(levels) > 1 else 0.5) for i, v in enumerate(levels)}
            scaled.append(np.array([pos[str(v)] for v in col]))
            ticks.append([(p, v) for v, p in pos.items()])
    values = frame[metric].to_numpy(dtype=np.float64)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.8 * len(keys)), 4.2))
    cmap = plt.get_cmap("viridis")
    finite = values[np.isfinite(values)]
    vlo, vhi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    for i in np.argsort(np.nan_to_num(values, nan=-np.inf), kind="stable"):  # the best drawn last, on top
        shade = (values[i] - vlo) / ((vhi - vlo) or 1.0) if np.isfinite(values[i]) else 0.0
        ax.plot(range(len(keys)), [s[i] for s in scaled], color=cmap(shade), alpha=0.8, lw=1.6, marker="o")
    for j, axis_ticks in enumerate(ticks):
        ax.axvline(j, color="0.6", lw=0.8)
        for p, text in axis_ticks:
            ax.annotate(text, (j, p), xytext=(4, 0), textcoords="offset points", fontsize=8, va="center")
    ax.set_xticks(range(len(keys)), keys, rotation=15, fontsize=8)
    ax.set_yticks([])
    ax.set_ylim(-0.05, 1.05)
    mappable = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(vlo, vhi))
    fig.colorbar(mappable, ax=ax, label=metric)
    ax.set_title(title or f"{len(frame)} jobs: swept values against {metric}", fontsize=10)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def log_sweep_summary(client: MlflowClient, exp_id: str, parent: str, metric: str | None = None) -> None:
    """Log :func:`sweep_summary` (``sweep_summary.csv`` and ``.md``) and its parallel-coordinates plot
    (``sweep_parallel_coordinates.png``) to the sweep's parent run, with the best value as the parent's
    metric ``best/<metric>``. A sweep without finished jobs logs nothing."""
    frame = sweep_summary(client, exp_id, parent, metric)
    if not len(frame):
        return
    name = str(frame.attrs["metric"])
    with tempfile.TemporaryDirectory(prefix="signet_rl-sweep-") as tmp:
        out = Path(tmp)
        frame.to_csv(out / "sweep_summary.csv", index=False)
        (out / "sweep_summary.md").write_text(render_markdown(frame.set_index("run"), digits=4))
        parallel_coordinates_png(frame, out / "sweep_parallel_coordinates.png")
        client.log_artifacts(parent, tmp)
    best = float(frame[name].iloc[0])
    if math.isfinite(best):
        client.log_metric(parent, _name(f"best/{name}"), best)
