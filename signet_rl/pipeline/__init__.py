"""The query flow, composed: entry search -> traversal -> scoring -> construction (see ``docs/design.md``).

:class:`~signet_rl.pipeline.desire.DesirePathRetriever` sits above retrieval (search, indexes, the flat
baselines, intent, the gate), traversal (walks, paths, construction) and the scorers, and is what the
learning loop, the environments and the evaluation harness drive.
"""

from signet_rl.pipeline.desire import Candidates, DesirePathRetriever, EdgeWeightFn

__all__ = ["Candidates", "DesirePathRetriever", "EdgeWeightFn"]
