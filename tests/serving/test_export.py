"""python -m signet_rl.export: the artifact, its refusals, ONNX/torch parity, and evaluate policy=."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from signet_rl.export import ExportError, export_run
from signet_rl.serving import PolicyError, load_policy

ROOT = Path(__file__).resolve().parents[2]


def torch_policy(run: Path, retriever):
    """The trained torch scorer as the run's final evaluation used it: weights, edge statistics, and the
    edge-feature snapshot of each graph the retriever indexed."""
    from signet_rl.learning.reinforcement import EdgeStats
    from signet_rl.scorers.gnn import GNNPathScorer

    state = pickle.loads((run / "checkpoint.pkl").read_bytes())
    scorer = GNNPathScorer.load(run / "artifacts" / "policy")
    for gid, stats in state["stats"].items():
        if gid not in retriever._states:
            continue
        st = retriever._state(gid)
        scorer.attach_edge_stats(st.arrays, EdgeStats.from_state_dict(stats))
        if gid in state["scorer_graphs"]:
            scorer.load_graph_state_dict(st.graph, st.arrays, state["scorer_graphs"][gid])
    return scorer


def parity(run: Path, artifact: Path, spec: str, max_queries: int) -> tuple[int, float, int]:
    """Score the candidate sets of test queries of ``spec`` with ONNX and torch; (queries, worst absolute
    difference, largest candidate set)."""
    from signet_rl.datasets.registry import load_dataset

    policy = load_policy(artifact)
    ds = load_dataset(spec)
    ret = policy.retriever()
    ret.index(ds)
    scorer = torch_policy(run, ret)
    n, worst, biggest = 0, 0.0, 0
    for q in ds.split("test")[:max_queries]:
        cands = ret.candidates(q)
        if cands is None or not cands.walk.paths:
            continue
        paths = cands.walk.paths
        want = scorer.score(q, paths, cands.context)
        got = policy.score(q, paths, cands.context)
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4, err_msg=q.id)
        n, worst, biggest = n + 1, max(worst, float(np.abs(got - want).max())), max(biggest, len(paths))
    return n, worst, biggest


def test_gnn_artifact_holds_onnx_manifest_and_edge_stats(gnn_run, gnn_artifact):
    m = json.loads((gnn_artifact / "manifest.json").read_text())
    assert m["format"] == "signet_rl.policy/1"
    assert m["scorer"]["name"] == "gnn" and m["scorer"]["kind"] == "gnn_onnx"
    layers = m["scorer"]["config"]["layers"]
    assert sorted(m["scorer"]["files"]) == sorted(
        ["node_in.onnx", "edge_vec.onnx", "hops.onnx", "head.onnx", "gnn_edge_features.parquet"]
        + [f"conv_{i}.onnx" for i in range(layers)])  # fmt: skip
    assert m["encoder"] == {"name": "hashing", "dim": 384, "retrieval": "hashing"}
    assert m["feature_schema"]["path_features"][:2] and len(m["feature_schema"]["query_features"]) == 384 + 5 + 4
    assert m["traversal"]["max_paths"] == 50 and m["traversal"]["max_depth"] == 2
    assert m["training"]["dataset"] == "synthetic:tiny:0"
    (gid, fp), = m["training"]["graphs"].items()
    assert fp["entities"] > 0 and len(fp["sha256"]) == 64
    assert {"test/learned/needed_recall", "baseline_flat/needed_recall"} <= set(m["metrics"])
    assert set(m["versions"]) >= {"torch", "onnx", "onnxruntime", "numpy", "python"}
    stats = pd.read_parquet(gnn_artifact / "edge_stats.parquet")
    state = pickle.loads((gnn_run / "checkpoint.pkl").read_bytes())["stats"][gid]
    assert len(stats) == fp["dependencies"] == len(state["walks"])
    assert stats["walks"].tolist() == state["walks"].tolist()
    assert stats["w_what_0"].to_numpy() == pytest.approx(state["weights"][:, 0, 0])


def test_onnx_scores_equal_torch_on_test_candidates(gnn_run, gnn_artifact):
    n, worst, biggest = parity(gnn_run, gnn_artifact, "synthetic:tiny:0", 40)
    assert n >= 8 and worst < 1e-5 and biggest > 1


@pytest.mark.slow
def test_onnx_scores_equal_torch_on_1000_synthetic_test_queries(gnn_run, gnn_artifact):
    """The parity the issue asks for: candidate sets of 1,000 test queries of the synthetic benchmark
    (sizes 1 to max_paths), on a graph the policy was not trained on."""
    n, worst, biggest = parity(gnn_run, gnn_artifact, "synthetic:medium:0", 1000)
    print(f"parity: {n} queries, worst |onnx - torch| = {worst:.2e}, largest candidate set {biggest}")
    assert n >= 900 and worst < 1e-5 and biggest == 50


def test_serving_imports_no_torch(gnn_artifact):
    code = textwrap.dedent(f"""
        import sys
        from signet_rl.datasets.registry import load_dataset
        from signet_rl.serving import load_policy
        policy = load_policy({str(gnn_artifact)!r})
        ds = load_dataset("synthetic:tiny:0")
        ret = policy.retriever()
        ret.index(ds)
        q = next(q for q in ds.split("test") if ret.candidates(q) is not None)
        c = ret.candidates(q)
        s = policy.score(q, c.walk.paths, c.context)
        assert len(s) == len(c.walk.paths) > 0
        print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_run_without_its_checkpoint_is_refused(gnn_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(gnn_run, run)
    (run / "checkpoint.pkl").unlink()
    with pytest.raises(ExportError) as err:
        export_run(run, tmp_path / "out")
    assert str(err.value) == (
        f"cannot export {run}: missing {run / 'checkpoint.pkl'} (a finished bandit training run writes them; "
        "rerun python -m signet_rl.train to the end first)"
    )
    (run / "artifacts" / "policy").unlink()
    shutil.copy(gnn_run / "checkpoint.pkl", run / "checkpoint.pkl")
    with pytest.raises(ExportError, match=r"missing .*artifacts/policy \(the saved GNN policy\)$"):
        export_run(run, tmp_path / "out")


def test_a_checkpoint_without_stats_is_refused(gnn_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(gnn_run, run)
    state = pickle.loads((run / "checkpoint.pkl").read_bytes())
    del state["traversal"]
    (run / "checkpoint.pkl").write_bytes(pickle.dumps(state))
    with pytest.raises(ExportError) as err:
        export_run(run, tmp_path / "out")
    assert str(err.value) == f"cannot export {run}: {run / 'checkpoint.pkl'} has no 'traversal'"


def test_load_policy_names_a_missing_file(gnn_artifact, tmp_path):
    copy = tmp_path / "art"
    shutil.copytree(gnn_artifact, copy)
    (copy / "head.onnx").unlink()
    with pytest.raises(PolicyError) as err:
        load_policy(copy)
    assert str(err.value) == f"{copy}: missing head.onnx (listed in manifest.json)"
    with pytest.raises(PolicyError, match="is not a policy artifact: no manifest.json"):
        load_policy(tmp_path)


def test_evaluate_policy_reproduces_the_runs_learned_row(gnn_run, gnn_artifact):
    """``python -m signet_rl.evaluate policy=<artifact>`` gives the torch policy's per-query figures."""
    from hydra import compose, initialize_config_dir

    from signet_rl.evaluate import evaluate_from_config

    task = json.loads((gnn_artifact / "manifest.json").read_text())["training"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("evaluate", overrides=[
            f"policy={gnn_artifact}", "dataset.spec=synthetic:tiny:0", f"max_queries={task['max_test_queries']}",
            "bootstrap=10", "mlflow.enabled=false", "ceiling=false", "~retrievers.desire_prior",
            "~retrievers.desire_ppr", "~retrievers.desire_random", "~retrievers.flat_signet_uncapped",
            "~own_caps.flat_signet", "baseline=null"])  # fmt: skip
    metrics = evaluate_from_config(cfg)
    rows = pd.read_csv(gnn_run / "artifacts" / "per_query.csv")
    learned = rows[rows["retriever"] == "learned"]
    for metric in ("needed_recall", "precision", "f1", "mrr"):
        assert metrics[f"retrieval/learned/{metric}"] == pytest.approx(learned[metric].mean(), abs=1e-12), metric
