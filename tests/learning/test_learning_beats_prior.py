"""Learning from ratings overturns a wrong prior: the bandit loop, end to end, on a world built so that what
the graph believes (importance) points away from what the user needs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from signet_rl.datasets import load_dataset
from signet_rl.evaluation.harness import evaluate
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.scorers import make_scorer

TRAVERSAL = {"max_depth": 2, "max_branching": 4, "max_paths": 50, "min_confidence": 0.5}


@pytest.fixture(scope="module")
def wrong_prior():
    """synthetic:tiny:0 with the importance of every fact some query needs set to 0.02 and of every other
    fact to 1.0: the prior (confidence × strength × aspect weight × importance × recency) now ranks the
    needed facts last. The learner never sees this rule, only ratings of what it shows."""
    ds = load_dataset("synthetic:tiny:0")
    needed = {item for truth in ds.truth.values() for item in truth.needed}
    for graph in ds.graphs.values():
        graph.attributes["importance"] = np.where(graph.attributes["id"].isin(needed), 0.02, 1.0)
    return ds


def test_the_trained_gnn_beats_the_prior_where_the_prior_is_wrong(wrong_prior):
    torch.set_num_threads(1)
    config = BanditConfig(
        epochs=1, eval_every=0, checkpoint_every=0, slate_size=3, explorer_per_session=0, reinforcement=False
    )
    # a small fast learner, every setting given (steps_per_update 1: the default before issue 25 §3 tuned it
    # to 4 for medium v2; with 4 steps this world gives 0.458 against the prior's 0.311)
    scorer = make_scorer("gnn", hidden=8, n_heads=2, lr=0.02, steps_per_update=1, base_scores=True, seed=0)
    trainer = BanditTrainer(wrong_prior, scorer, config, traversal=TRAVERSAL, seed=0, progress=False)
    trainer.run()
    assert scorer.updates > 20
    res = evaluate(
        wrong_prior,
        {
            "learned": trainer.frozen("learned"),
            "prior": DesirePathRetriever("prior", config=TRAVERSAL),
            "random": DesirePathRetriever("random", config=TRAVERSAL),
        },
        split="validation", budget_chars=2000, n_boot=1,
    )  # fmt: skip
    ndcg = res.rows[res.rows["n_needed"] > 0].groupby("retriever")["ndcg@10"].mean()
    assert ndcg["prior"] < ndcg["random"]  # the world is one where the prior is wrong
    assert ndcg["learned"] > ndcg["prior"] + 0.15
    assert ndcg["learned"] > ndcg["random"]


def test_the_gnn_beats_its_untrained_self_which_ranks_as_desire_fused(wrong_prior):
    """The default GNN's heads start at zero (``zero_residual``): untrained, it ranks exactly as
    ``desire_fused`` (PPR here), query by query; what it learns from two passes of ratings lifts it above
    that."""
    torch.set_num_threads(1)
    config = BanditConfig(
        epochs=2, eval_every=0, checkpoint_every=0, slate_size=3, explorer_per_session=0, reinforcement=False
    )
    kw = {"hidden": 8, "n_heads": 2, "lr": 0.02, "steps_per_update": 1, "seed": 0}  # a fast learner
    untrained = DesirePathRetriever(make_scorer("gnn", **kw), config=TRAVERSAL)
    scorer = make_scorer("gnn", **kw)
    trainer = BanditTrainer(wrong_prior, scorer, config, traversal=TRAVERSAL, seed=0, progress=False)
    trainer.run()
    res = evaluate(
        wrong_prior,
        {"learned": trainer.frozen("learned"), "untrained": untrained,
         "fused": DesirePathRetriever("fused", config=TRAVERSAL)},
        split="validation", budget_chars=2000, n_boot=1,
    )  # fmt: skip
    rows = res.rows[res.rows["n_needed"] > 0].pivot(index="query_id", columns="retriever", values="ndcg@10")
    np.testing.assert_allclose(rows["untrained"], rows["fused"])  # query by query
    assert rows["learned"].mean() > rows["untrained"].mean() + 0.08  # 0.588 against 0.464 when written
