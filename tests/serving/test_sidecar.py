"""python -m signet_rl.serve sidecar: Signet's predictor protocol, spoken to a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


class Client:
    """The sidecar as a subprocess, one JSON object per line each way."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "signet_rl.serve", "sidecar", *args], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def send(self, line: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        assert out, self.proc.stderr.read() if self.proc.stderr else "no output"
        return json.loads(out)

    def call(self, rid: int, method: str, params: dict | None = None) -> dict:
        return self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}))


@pytest.fixture(scope="module")
def candidates(small_store) -> list[str]:
    """100 memories of the store, in an order the policy will not keep."""
    from signet_rl.datasets.signet import import_signet

    ids = sorted(import_signet(small_store).memories["id"].astype(str))
    assert len(ids) >= 100
    return ids[:100]


def test_sidecar_scores_trains_and_survives_bad_lines(small_store, gnn_artifact, candidates, tmp_path):
    from signet_rl.serving.sidecar import Sidecar

    ckpt = tmp_path / "predictor.ckpt"
    client = Client("--db", str(small_store), "--policy", str(gnn_artifact), "--native-dim", "768",
                    "--checkpoint", str(ckpt))  # fmt: skip
    context = [0.01] * 768
    first = client.call(1, "score", {"context_embedding": context, "candidate_ids": candidates})
    assert first["jsonrpc"] == "2.0" and first["id"] == 1
    scores = first["result"]["scores"]
    assert [s["id"] for s in scores] == candidates
    ranking = [s["id"] for s in sorted(scores, key=lambda s: -s["score"])]
    assert ranking != candidates
    # the same ranking in process
    local = Sidecar(small_store, gnn_artifact).score(candidates, context)
    assert [m for m, _ in sorted(local, key=lambda x: -x[1])] == ranking
    assert [s for _, s in local] == pytest.approx([s["score"] for s in scores], abs=1e-9)

    # malformed line, unknown method, wrong field type: error objects, and the process keeps serving
    parse = "Parse error: Expecting property name enclosed in double quotes at column 2"
    assert client.send("{not json") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": parse},
    }
    assert client.call(2, "predict") == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32601, "message": "Method not found: predict"},
    }
    wrong = "Invalid params: candidate_ids must be a list of strings"
    assert client.call(3, "score", {"context_embedding": context, "candidate_ids": "m1"}) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": wrong},
    }

    status = client.call(4, "status")["result"]
    assert status == {"trained": True, "training_pairs": 0, "model_version": 0, "last_trained": None}

    # a train with labels changes the next score
    top = ranking[:10]
    labels = [0.0] * 5 + [1.0] * 5  # the five best are marked irrelevant, the next five relevant
    trained = client.call(5, "train", {"context_embedding": context, "candidate_embeddings": [[0.0]] * 10,
                                       "labels": labels, "candidate_ids": top})["result"]  # fmt: skip
    assert trained["step"] == 1 and trained["loss"] > 0
    again = client.call(6, "score", {"context_embedding": context, "candidate_ids": candidates})["result"]
    before = {s["id"]: s["score"] for s in scores}
    after = {s["id"]: s["score"] for s in again["scores"]}
    assert max(abs(after[m] - before[m]) for m in candidates) > 1e-6
    status = client.call(7, "status")["result"]
    assert status["model_version"] == 1 and status["training_pairs"] > 0 and status["last_trained"]
    saved = client.call(8, "save_checkpoint")["result"]
    assert saved == {"saved": True, "path": str(ckpt)} and ckpt.exists()

    # EOF ends it cleanly
    assert client.proc.stdin is not None
    client.proc.stdin.close()
    assert client.proc.wait(timeout=30) == 0
    assert client.proc.stdout is not None and client.proc.stderr is not None
    assert client.proc.stdout.read() == ""
    assert "ready" in client.proc.stderr.read()
    client.proc.stdout.close()
    client.proc.stderr.close()

    # a restart from the checkpoint resumes the learned state
    resumed = Sidecar(small_store, gnn_artifact, checkpoint=ckpt)
    assert resumed.status()["model_version"] == 1
    assert not np.array_equal(resumed.stats.walks, Sidecar(small_store, gnn_artifact).stats.walks)
    assert [s for _, s in resumed.score(candidates, context)] == pytest.approx(
        [after[m] for m in candidates], abs=1e-9
    )


def test_without_a_policy_the_sidecar_serves_the_prior(small_store, candidates):
    from signet_rl.serving.sidecar import Sidecar

    side = Sidecar(small_store)
    scores = side.score(candidates, [])
    assert side.policy.name == "prior" and len(scores) == 100
    assert len({s for _, s in scores}) > 1
    res = side.respond(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "train_from_db"}))
    assert res == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {"code": -32601, "message": "Method not supported: train_from_db (send train with labels)"},
    }


def test_a_store_other_than_the_training_graph_is_logged_not_refused(
    small_store, gnn_artifact, tmp_path, caplog
):
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.graph.store import write_graph
    from signet_rl.serving.sidecar import Sidecar

    with caplog.at_level("WARNING", logger="signet_rl.serving.policy"):
        Sidecar(small_store, gnn_artifact)
    (msg,) = [r.getMessage() for r in caplog.records]
    assert msg.startswith("serving gnn on a graph (500 entities, ") and msg.endswith(
        "other than its training graphs; edges it never saw start neutral"
    )
    caplog.clear()
    # the policy's own training graph: synthetic:tiny:0 as training built it (generator v2, the default)
    tiny_ds = load_dataset("synthetic:tiny:0", options={"version": 2})
    tiny = write_graph(next(iter(tiny_ds.graphs.values())), tmp_path / "tiny.db")
    with caplog.at_level("WARNING", logger="signet_rl.serving.policy"):
        side = Sidecar(tiny, gnn_artifact)
    assert caplog.records == []
    assert side.stats.walks.sum() > 0  # the training graph's learned statistics, mapped by edge id


def test_per_store_caches_give_the_uncached_walk_and_scores(small_store, gnn_artifact, candidates):
    """What the sidecar keeps across calls (each aspect's current facts, the walk order of every CSR slot,
    the candidate lookup) gives what recomputing them per call gives, also after a train changed the
    statistics."""
    from signet_rl.serving.sidecar import Sidecar
    from signet_rl.traversal.walk import Traverser

    side = Sidecar(small_store, gnn_artifact)
    cached = side.traverser
    plain = Traverser(side.arrays, side.graph, side.config)

    def uncached(ids: list[str]) -> list[tuple[str, float]]:
        side.traverser = plain
        plain.edge_weight = side.stats.edge_weight_fn("what", side.stats.time_bucket(None))
        try:
            return side.score(ids, [])
        finally:
            side.traverser = cached

    for ids in (candidates, candidates[::-1][:40]):
        assert side.score(ids, []) == uncached(ids)
    assert cached._current_memo  # it did keep them
    slots = np.arange(len(side.arrays.dep_edge))
    before = side._edge_weight()(side.arrays, slots).copy()
    side.train(candidates[:10], [1.0] * 5 + [0.0] * 5, [], 0.5)
    fresh = side.stats.edge_weight_fn("what", side.stats.time_bucket(None))(side.arrays, slots)
    assert not np.array_equal(fresh, before)  # the train moved the walk order ...
    np.testing.assert_array_equal(side._edge_weight()(side.arrays, slots), fresh)  # ... and it is used
    assert side.score(candidates, []) == uncached(candidates)
    # per path, the candidates it constructs from, as the Python definition has it
    _, paths, _, _, per = side.paths(candidates, [])
    a = side.arrays
    for j, mid in enumerate(candidates):
        m = side.memory_index[mid]
        want = [i for i, p in enumerate(paths)
                if any(a.attr_memory[side.attr_index[t]] == m for t in p.attributes)
                or any(m in a.memories_of(a.entity_index[e]) for e in p.entities)]  # fmt: skip
        assert per[j] == want, mid
