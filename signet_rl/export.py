"""``python -m signet_rl.export RUN_DIR --out DIR``: a trained policy as a self-contained torch-free artifact.

Reads a training run's folder (``runs/<task>/...``: ``artifacts/config.yaml``, ``checkpoint.pkl``,
``artifacts/final_metrics.json`` and, for the GNN, ``artifacts/policy``) and writes to ``DIR``:

* ``manifest.json`` — the format, the scorer (name and constructor config), the feature schema (path
  features and query features, names in order), the encoder (name, dimension), the traversal the policy was
  trained with, the training dataset and each training graph's fingerprint (a served graph that differs is
  logged, not refused), the versions of signet_rl, torch, onnx and numpy, and the run's headline metrics;
* the scorer's parameters, written by its exporter (:data:`EXPORTERS`): the GNN as ONNX models (node
  inputs, edge vectors, one model per message-passing layer, hop vectors and the pooled head with the
  residual's skip over the base scores and the intent x aspect bias; the message passing between them, the
  base scores and the aspect keys are computed in numpy on whatever graph is served, by the code training
  uses, see :mod:`signet_rl.serving.gnn`; a GNN option the export does not carry is refused, naming it),
  LinUCB's posterior as ``linucb.npz``, the prior/PPR/random scorers their
  constructor arguments only;
* ``edge_stats.parquet`` — the learned desire-path statistics per dependency edge (weights per intent and
  time bucket, walk counts, last update), keyed by graph, edge id, source, target and type.

A run missing what export needs is refused, naming the missing file or key. A new scorer gets exported by
registering a function with :func:`register_exporter`; the serving side registers its loader with
:func:`signet_rl.serving.register_loader` under the same ``kind``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from signet_rl.serving.policy import FORMAT, MANIFEST, graph_fingerprint, write_edge_stats

__all__ = ["EXPORTERS", "ExportError", "RunContents", "export_run", "main", "register_exporter"]


class ExportError(ValueError):
    """A run folder export cannot use; the message names what is missing and where."""


class RunContents:
    """What a training run folder holds, read once (config, checkpoint state, metrics)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir)
        if not self.path.is_dir():
            raise ExportError(f"run folder {str(self.path)!r} does not exist")
        art = self.path / "artifacts"
        config = art / "config.yaml"
        checkpoint = self.path / "checkpoint.pkl"
        metrics = art / "final_metrics.json"
        missing = [str(p) for p in (config, checkpoint, metrics) if not p.exists()]
        if missing:
            raise ExportError(
                f"cannot export {self.path}: missing {', '.join(missing)} (a finished bandit training run "
                "writes them; rerun python -m signet_rl.train to the end first)"
            )
        import yaml

        self.config: dict[str, Any] = yaml.safe_load(config.read_text())
        with open(checkpoint, "rb") as fh:
            self.state: dict[str, Any] = pickle.load(fh)  # our own checkpoint file
        self.metrics: dict[str, float] = json.loads(metrics.read_text())
        for key in ("scorer", "dataset", "encoder"):
            if key not in self.config:
                raise ExportError(f"cannot export {self.path}: {config} has no {key!r}")
        for key in ("stats", "traversal", "scorer_name", "dataset"):
            if key not in self.state:
                raise ExportError(f"cannot export {self.path}: {checkpoint} has no {key!r}")
        self.scorer_config = {str(k): v for k, v in self.config["scorer"].items()}
        self.scorer_name = str(self.scorer_config.pop("name"))
        self.policy_file = art / "policy"


#: Exporters by scorer name: ``fn(run, out_dir, dataset) -> manifest fields`` (``kind`` and whatever the
#: serving loader of that kind reads).
EXPORTERS: dict[str, Callable[[RunContents, Path, Any], dict[str, Any]]] = {}


def register_exporter(
    name: str,
) -> Callable[
    [Callable[[RunContents, Path, Any], dict[str, Any]]], Callable[[RunContents, Path, Any], dict[str, Any]]
]:
    """Register the exporter of the scorer registered as ``name``."""

    def wrap(
        fn: Callable[[RunContents, Path, Any], dict[str, Any]],
    ) -> Callable[[RunContents, Path, Any], dict[str, Any]]:
        EXPORTERS[name] = fn
        return fn

    return wrap


@register_exporter("prior")
@register_exporter("ppr")
@register_exporter("random")
def _export_fixed(run: RunContents, out: Path, dataset: Any) -> dict[str, Any]:
    """Non-learned scorers: their constructor arguments are the whole policy."""
    return {"kind": "fixed"}


@register_exporter("linucb")
def _export_linucb(run: RunContents, out: Path, dataset: Any) -> dict[str, Any]:
    """LinUCB's posterior (``A^-1``, ``b``) to ``linucb.npz``; served greedily (``alpha`` as trained is kept
    in the config, the served scorer scores with the mean) and updatable online."""
    state = run.state.get("scorer")
    if not isinstance(state, Mapping) or "A_inv" not in state or "b" not in state:
        raise ExportError(
            f"cannot export {run.path}: checkpoint.pkl has no LinUCB posterior ('scorer' state)"
        )
    np.savez(out / "linucb.npz", A_inv=np.asarray(state["A_inv"]), b=np.asarray(state["b"]),
             updates=np.asarray(int(state.get("updates", 0))))  # fmt: skip
    fields: dict[str, Any] = {"kind": "linucb", "files": ["linucb.npz"]}
    if isinstance(state.get("config"), Mapping):
        # the trained scorer's own constructor arguments, in place of the run's Hydra block: over the hybrid
        # entry the top-level floor_prior (not the scorer block's 0) added the floor column the posterior has
        fields["config"] = dict(state["config"])
    return fields


@register_exporter("gnn")
def _export_gnn(run: RunContents, out: Path, dataset: Any) -> dict[str, Any]:
    """The GNN as five kinds of ONNX models (see :func:`export_gnn_onnx`), plus its per-graph edge-feature
    snapshot (the desire columns it scored with) in ``gnn_edge_features.parquet``."""
    from signet_rl.scorers.gnn import GNNPathScorer

    if not run.policy_file.exists():
        raise ExportError(f"cannot export {run.path}: missing {run.policy_file} (the saved GNN policy)")
    scorer = GNNPathScorer.load(run.policy_file)
    unsupported = unsupported_gnn_options(scorer.config)
    if unsupported:
        raise ExportError(
            f"cannot export {run.path}: its GNN uses {', '.join(unsupported)}, which the ONNX export does "
            "not carry (train without it, or export a LinUCB, prior or PPR run)"
        )
    files = export_gnn_onnx(scorer, out)
    import pandas as pd

    frames = []
    for gid, blob in (run.state.get("scorer_graphs") or {}).items():
        numeric = np.asarray(blob["edge_numeric"].numpy() if hasattr(blob["edge_numeric"], "numpy")
                             else blob["edge_numeric"], dtype=np.float32)  # fmt: skip
        from signet_rl.graph.arrays import GraphArrays

        arrays = GraphArrays.from_graph(dataset.graphs[gid])
        frame = pd.DataFrame(numeric, columns=[f"f{j}" for j in range(numeric.shape[1])])
        frame.insert(0, "edge_id", [str(e) for e in arrays.edge_ids])
        frame.insert(0, "graph_id", str(gid))
        frames.append(frame)
    if frames:
        pd.concat(frames, ignore_index=True).to_parquet(out / "gnn_edge_features.parquet", index=False)
        files.append("gnn_edge_features.parquet")
    # the saved scorer's full constructor config (what the served net was built with, hand_feature_count
    # included), in place of the run's Hydra block
    return {"kind": "gnn_onnx", "files": files, "config": dict(scorer.config),
            "layers": int(scorer.config["layers"]), "hidden": int(scorer.config["hidden"]),
            "n_heads": int(scorer.config["n_heads"])}  # fmt: skip


#: The GNN constructor options the ONNX export carries (every other one must keep the value that
#: reproduces a scorer without it, ``signet_rl.scorers.gnn.ADDED_ARGUMENTS``).
EXPORTED_GNN_OPTIONS = frozenset({
    "hidden", "layers", "n_heads", "uncertainty", "lr", "weight_decay", "steps_per_update",
    "importance_weighted", "max_importance_weight", "edge_features", "communities", "time_features",
    "hand_features", "base_scores", "base_scale", "prior_half_life_days", "lr_decay_updates",
    "refresh_edge_stats", "aspect_buckets",
    "hand_feature_count", "name_dim", "type_buckets", "edge_type_buckets", "community_buckets", "encoder",
    "seed", "query_text", "aspect_intent", "zero_residual", "loss",
})  # fmt: skip


def unsupported_gnn_options(config: Mapping[str, Any]) -> list[str]:
    """``option=value`` of every GNN option the export does not carry that is set (an option added to the GNN
    after this exporter, with a value other than the one that reproduces a GNN without it)."""
    from signet_rl.scorers.gnn import ADDED_ARGUMENTS

    missing = object()
    return [
        f"{k}={v!r}" for k, v in config.items()
        if k not in EXPORTED_GNN_OPTIONS and ADDED_ARGUMENTS.get(k, missing) != v
    ]  # fmt: skip


def export_gnn_onnx(scorer: Any, out: Path) -> list[str]:
    """Write the GNN's network as ONNX models in ``out`` (torch's dynamo exporter, onnxscript):

    ``node_in.onnx`` (type code, name sketch, community code, log degree -> layer-0 node state),
    ``edge_vec.onnx`` (type, numeric columns, direction -> edge vector), ``conv_<l>.onnx`` (node state and
    the mean of its incoming messages -> next node state), ``hops.onnx`` (per-kind hop contents and positions
    -> hop vectors), ``head.onnx`` (padded hop vectors, mask, query features, hand features, the standardised
    base scores of the residual and the intent x aspect key of the bias -> one output per head). Gathering
    messages and scattering their mean runs in numpy between them; the base scores (prior, PPR, flat) and
    the aspect keys are computed at serve time in numpy (:mod:`signet_rl.scorers.gnn_inputs`).
    """
    import torch
    from torch import nn

    net = scorer.net.eval()
    h = net.hidden

    class NodeIn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, type_code: Any, name_vec: Any, comm_code: Any, log_degree: Any) -> Any:
            parts = [net.type_emb(type_code), net.name_proj(name_vec)]
            if net.comm_emb is not None:
                parts.append(net.comm_emb(comm_code))
            parts.append(log_degree)
            return torch.relu(net.node_in(torch.cat(parts, dim=1)))

    class EdgeVec(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, types: Any, numeric: Any, direction: Any) -> Any:
            base = net.edge_base(types, numeric)
            out = net.edge_dir_emb((direction > 0).long())
            return (
                out + base if isinstance(base, torch.Tensor) else out + 0.0 * numeric.sum() + 0 * types.sum()
            )

    class Conv(nn.Module):
        def __init__(self, layer: int) -> None:
            super().__init__()
            self.net, self.conv, self.norm = net, net.convs[layer], net.norms[layer]

        def forward(self, x: Any, aggr: Any) -> Any:
            return self.norm(x + self.conv.nn(aggr + (1 + self.conv.eps) * x))

    class Hops(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, ent_vec: Any, ent_pos: Any, dep_vec: Any, dep_pos: Any, asp_x: Any, asp_pos: Any,
                    att_x: Any, att_pos: Any) -> Any:  # fmt: skip
            def add(vec: Any, kind: int, pos: Any) -> Any:
                return vec + net.hop_kind.weight[kind] + net.hop_pos(pos.clamp(max=31))

            return (add(ent_vec, 0, ent_pos), add(dep_vec, 1, dep_pos), add(net.aspect_in(asp_x), 2, asp_pos),
                    add(net.attr_in(att_x), 3, att_pos))  # fmt: skip

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, hops: Any, mask: Any, query: Any, hand: Any, base: Any, aspect_key: Any) -> Any:
            hops = net.hop_norm(hops) * mask.unsqueeze(-1)
            out = net.head(hops, mask, query, hand if net.hand_dim else None, base if net.base_dim else None)
            if net.aspect_bias is not None:
                out = out + net.aspect_bias(aspect_key)
            return out

    files: list[str] = []
    n, m, length = 5, 7, 4
    text_dim = scorer.query_featurizer.embedding_dim
    query_dim = net.query_in[0].in_features
    edge_dim = net.edge_num.in_features

    def longs(k: int, hi: int) -> Any:
        return torch.arange(k) % hi

    def save(module: nn.Module, name: str, args: tuple[Any, ...], names: list[str], outs: list[str],
             dims: dict[str, dict[int, str]]) -> None:  # fmt: skip
        path = out / f"{name}.onnx"
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's advice on dynamic_axes naming, torchvision
            torch.onnx.export(
                module.eval(), args, str(path), input_names=names, output_names=outs, dynamic_axes=dims,
                opset_version=18, dynamo=True, external_data=False, verbose=False,
            )  # fmt: skip
        files.append(path.name)

    save(NodeIn(), "node_in",
         (longs(n, 8), torch.randn(n, 64), longs(n, 8), torch.rand(n, 1)),
         ["type_code", "name_vec", "comm_code", "log_degree"], ["x"],
         {k: {0: "n"} for k in ("type_code", "name_vec", "comm_code", "log_degree", "x")})  # fmt: skip
    save(EdgeVec(), "edge_vec",
         (longs(m, 5), torch.rand(m, edge_dim), torch.sign(torch.randn(m))),
         ["types", "numeric", "direction"], ["e"],
         {k: {0: "m"} for k in ("types", "numeric", "direction", "e")})  # fmt: skip
    for layer in range(len(net.convs)):
        save(Conv(layer), f"conv_{layer}", (torch.randn(n, h), torch.randn(n, h)), ["x", "aggr"], ["y"],
             {k: {0: "n"} for k in ("x", "aggr", "y")})  # fmt: skip
    hop_names = ["ent_vec", "ent_pos", "dep_vec", "dep_pos", "asp_x", "asp_pos", "att_x", "att_pos"]
    save(Hops(), "hops",
         (torch.randn(n, h), longs(n, 4), torch.randn(m, h), longs(m, 4), torch.randn(3, text_dim + 1),
          longs(3, 4), torch.randn(6, text_dim + 4), longs(6, 4)),
         hop_names, ["ent", "dep", "asp", "att"],
         {**{k: {0: f"r_{k.split('_')[0]}"} for k in hop_names},
          **{k: {0: f"r_{k}"} for k in ("ent", "dep", "asp", "att")}})  # fmt: skip
    mask = torch.ones(n, length, dtype=torch.bool)
    mask[0, 2:] = False
    keys = net.aspect_bias.num_embeddings if net.aspect_bias is not None else 1
    save(Head(), "head",
         (torch.randn(n, length, h), mask, torch.randn(n, query_dim), torch.randn(n, max(net.hand_dim, 1)),
          torch.randn(n, max(net.base_dim, 1)), longs(n, keys)),
         ["hops", "mask", "query", "hand", "base", "aspect_key"], ["out"],
         {"hops": {0: "n", 1: "L"}, "mask": {0: "n", 1: "L"}, "query": {0: "n"}, "hand": {0: "n"},
          "base": {0: "n"}, "aspect_key": {0: "n"}, "out": {0: "n"}})  # fmt: skip
    return files


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for pkg in ("signet-rl", "torch", "onnx", "onnxruntime", "numpy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "unknown"
    out["python"] = sys.version.split()[0]
    return out


def export_run(run_dir: str | Path, out: str | Path) -> Path:
    """Export the run in ``run_dir`` to the artifact folder ``out`` (created; files in it are replaced).

    Raises:
        ExportError: a run folder without what export needs (naming it), or a scorer with no exporter.
    """
    run = RunContents(run_dir)
    exporter = EXPORTERS.get(run.scorer_name)
    if exporter is None:
        raise ExportError(
            f"cannot export {run.path}: scorer {run.scorer_name!r} has no exporter; known: "
            f"{', '.join(sorted(EXPORTERS))} (register one with signet_rl.export.register_exporter)"
        )
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.graph.arrays import GraphArrays
    from signet_rl.scorers.features import INTENTS, PATH_FEATURES, TIME_FEATURES, QueryFeaturizer

    ds = run.config["dataset"]
    dataset = load_dataset(ds["spec"], root=ds.get("data_root"), options=ds.get("options"))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    scorer_fields = exporter(run, out, dataset)
    encoder_name = str(run.scorer_config.get("encoder", run.config["encoder"]))
    qf = QueryFeaturizer(encoder_name)
    graphs = {}
    arrays_of = {}
    for gid, graph in dataset.graphs.items():
        arrays_of[gid] = GraphArrays.from_graph(graph)
        graphs[str(gid)] = graph_fingerprint(arrays_of[gid])
    from signet_rl.learning.reinforcement import EdgeStats

    stats = {g: EdgeStats.from_state_dict(s) for g, s in run.state["stats"].items()}
    write_edge_stats(
        out / "edge_stats.parquet", {g: (dataset.graphs[g], arrays_of[g], s) for g, s in stats.items()}
    )
    headline = {
        k: v
        for k, v in run.metrics.items()
        if k.startswith("test/learned/") or k.startswith("baseline_flat/")
    }
    task = run.config.get("task") or {}
    manifest = {
        "format": FORMAT,
        "scorer": {"name": run.scorer_name, "config": run.scorer_config, **scorer_fields},
        "feature_schema": {
            "path_features": list(PATH_FEATURES),
            "query_features": [f"embedding_{i}" for i in range(qf.embedding_dim)]
            + [f"intent_{i}" for i in INTENTS]
            + list(TIME_FEATURES),
        },
        "encoder": {
            "name": encoder_name,
            "dim": int(qf.embedding_dim),
            "retrieval": str(run.config["encoder"]),
        },
        "traversal": run.state["traversal"],
        "reinforcement": bool(task.get("reinforcement", True)),
        "training": {
            "dataset": str(ds["spec"]),
            "dataset_name": run.state["dataset"],
            "graphs": graphs,
            "run_dir": str(run.path),
            "steps": int(run.state.get("step", 0)),
            "seed": int(run.state.get("seed", 0)),
            "budget_chars": int(task.get("budget_chars", 2000)),
            "max_test_queries": task.get("max_test_queries"),
        },
        "metrics": headline,
        "versions": _versions(),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m signet_rl.export", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", help="a training run's folder (runs/<task>/...)")
    parser.add_argument("--out", required=True, help="the artifact folder to write")
    args = parser.parse_args(argv)
    try:
        out = export_run(args.run_dir, args.out)
    except ExportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    manifest = json.loads((out / MANIFEST).read_text())
    print(f"exported {manifest['scorer']['name']} policy ({manifest['scorer']['kind']}) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
