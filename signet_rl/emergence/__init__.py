"""Emergent behaviours of the memory graph, each off by default (:mod:`~signet_rl.emergence.config`).

- :mod:`~signet_rl.emergence.cold`: the lossless cold tier of an offline store copy, and rediscovery;
- :mod:`~signet_rl.emergence.health`: entity and community health from path feedback; the pruning plan;
- :mod:`~signet_rl.emergence.bridges`: cross-entity bridges found at ingest, promoted or faded by ratings;
- :mod:`~signet_rl.emergence.principles`: principles discovered across communities; confirm/reject/correct;
- :mod:`~signet_rl.emergence.staleness`: the staleness signal and the explorer share it sets;
- :mod:`~signet_rl.emergence.prewarm`: temporal pre-warm at session start, and Signet's own candidates.

Submodules are imported where used (the package import loads nothing heavy).
"""
