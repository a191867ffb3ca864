"""Knowledge-graph path reasoning on the MINERVA benchmarks: one filtered-ranking evaluator
(:mod:`signet_rl.kg.ranking`) that ranks every model, and KG-embedding anchors
(:mod:`signet_rl.kg.kge`, imported on demand: it pulls in torch_geometric).
"""

from __future__ import annotations

from signet_rl.kg.ranking import KGIndex, QueryBatch, evaluate_scores, filtered_ranks, ranking_metrics

__all__ = ["KGIndex", "QueryBatch", "evaluate_scores", "filtered_ranks", "ranking_metrics"]
