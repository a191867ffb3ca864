"""The online comparison end to end: a simulated user (the simulated rater over a synthetic store's ground
truth) asks the service, rates what it shows, and `serve report` recovers the desire policy's value."""

from __future__ import annotations

import numpy as np
import pytest

from signet_rl.datasets.registry import load_dataset
from signet_rl.rating.items import ItemResolver
from signet_rl.rating.rater import SimulatedRater
from signet_rl.serving.app import FeedbackBody, RecallBody, ResultFeedback, Service, report


@pytest.mark.slow
def test_simulated_user_win_rate_and_snips_against_on_policy(served, tmp_path):
    from signet_rl.graph.store import write_graph

    ds = load_dataset("synthetic:small:0")
    store = write_graph(ds.graph, tmp_path / "small.db")
    svc = Service(store, served["artifact"], tmp_path / "state.sqlite", k=5, seed=0)
    resolver = ItemResolver(ds)
    rater = SimulatedRater(ds.truth, noise_rate=0.0, rating_prob=1.0, seed=0)
    queries = list(ds.queries)  # every query (the policy was trained on another graph), each asked twice

    def rating(q, ids, text) -> float:
        return float(rater.true_rating(q.id, resolver.items(q, ids, text)))

    on_policy = []
    for q in queries:  # the desire policy alone: its top 5 constructed memories, rated
        units = [
            u
            for u in svc.desire.retrieve(
                q.__class__(id=q.id, text=q.text, graph_id="main", split="test"), svc.budget_chars
            )
            if u.kind == "constructed"
        ][:5]
        on_policy.append(sum(rating(q, u.items, u.text) for u in units))
    for i, q in enumerate(queries + queries):  # the mixed slates the service shows, rated by the same user
        shown = svc.recall(RecallBody(query=q.text, sessionKey=f"s{i}"))["results"]
        votes = {
            r["result_id"]: ResultFeedback(
                rating=rating(q, r["path"]["attributes"] + r["path"]["memory_ids"], r["content"]),
                idempotencyKey=f"{i}:{r['result_id']}",
            )
            for r in shown
        }
        svc.feedback(FeedbackBody(sessionKey=f"s{i}", results=votes), None)
    svc.state.close()
    got = report(tmp_path / "state.sqlite")
    truth = float(np.mean(on_policy + on_policy))
    print(
        {"win_rate": got["win_rate"], "ci95": got["ci95"], "snips": got["ope"]["snips"], "on_policy": truth}
    )
    assert got["ci95"][0] > 0.5
    assert abs(got["ope"]["snips"]["value"] - truth) <= 0.05
