"""A policy and a checkpoint saved before the package moves of issue 22 still load and give the same numbers.

The fixtures in tests/fixtures/premove/ were written by ``make_fixtures.py`` beside them (and a
``python -m signet_rl.train dataset.spec=synthetic:tiny:0 task.epochs=1 ... +scorer.hidden=8
+scorer.n_heads=2`` run) while the desire-path retriever still lived in ``signet_rl.retrieval.desire`` and
``Query`` in ``signet_rl.datasets.base``.

They also predate the GNN arguments of issue 25 (``base_scores``, ``aspect_buckets``, ``lr_decay_updates``,
``refresh_edge_stats``, ``base_scale``): a saved policy missing them loads with the values that reproduce it
(``signet_rl.scorers.gnn.ADDED_ARGUMENTS``), and resuming the old checkpoint needs a scorer built with those
values too (the defaults changed; the checkpoint's network has the old shape).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from signet_rl.datasets import load_dataset
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.scorers import make_scorer
from signet_rl.scorers.gnn import ADDED_ARGUMENTS, GNNPathScorer

FIXTURES = Path(__file__).parent / "fixtures" / "premove"
TRAVERSAL = {"max_branching": 4, "max_paths": 50, "max_depth": 2, "min_confidence": 0.5}


@pytest.fixture(scope="module")
def tiny():
    return load_dataset("synthetic:tiny:0")


def test_a_policy_saved_before_the_move_scores_and_retrieves_the_same(tiny):
    expected = json.loads((FIXTURES / "expected.json").read_text())
    retriever = DesirePathRetriever(
        GNNPathScorer.load(FIXTURES / "policy"), config=TRAVERSAL, encoder="hashing"
    )
    retriever.index(tiny)
    queries = {q.id: q for q in tiny.queries}
    assert len(expected) == 5
    for qid, want in expected.items():
        cands = retriever.candidates(queries[qid])
        assert cands is not None
        scores = np.asarray(
            retriever.scorer.score(queries[qid], cands.walk.paths, cands.context), dtype=float
        )
        np.testing.assert_allclose(scores, want["scores"], atol=1e-5)
        assert [u.text for u in retriever.retrieve(queries[qid], 2000)] == want["units"]


def test_a_checkpoint_written_before_the_move_resumes(tiny, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES, run)
    config = BanditConfig(epochs=1, eval_every=1000, checkpoint_every=12)
    trainer = BanditTrainer(
        # the checkpoint was written with steps_per_update 1, the default before the equal-tuning sweep
        tiny, make_scorer("gnn", hidden=8, n_heads=2, lr=0.003, steps_per_update=1, **ADDED_ARGUMENTS),
        config,
        traversal=TRAVERSAL, seed=0, run_dir=run,
        progress=False,
    )  # fmt: skip
    assert trainer.resume() is True
    assert trainer.step == 12 and len(trainer.log) == 8  # 12 interactions, 8 of them with candidates
    assert trainer.quota is not None and trainer.history
