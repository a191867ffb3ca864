"""Knowledge-graph path reasoning on the MINERVA benchmarks, as a library (no Hydra, no MLflow):

* :mod:`signet_rl.kg.ranking`: the one filtered-ranking evaluator that ranks every model;
* :mod:`signet_rl.kg.kge`: KG-embedding anchors (imported on demand: it pulls in torch_geometric);
* :mod:`signet_rl.kg.walk_task`: a KG dataset as integers and the walker's padded action space;
* :mod:`signet_rl.kg.policy`: the walking policy, rollouts, beam search and REINFORCE;
* :mod:`signet_rl.kg.config`: the trainer's typed configuration;
* :mod:`signet_rl.kg.trainer`: the trainer (set up, train, select on validation, test, checkpoints);
* :mod:`signet_rl.kg.rerank`: a finished run's walker ranked again on its own graph.

``python -m signet_rl.train task=kg`` reaches them through :mod:`signet_rl.tasks.kg`.
"""

from __future__ import annotations

from signet_rl.kg.ranking import KGIndex, QueryBatch, evaluate_scores, filtered_ranks, ranking_metrics

__all__ = ["KGIndex", "QueryBatch", "evaluate_scores", "filtered_ranks", "ranking_metrics"]
