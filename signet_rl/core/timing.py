"""Per-stage timing of a pipeline call, recorded by the pipeline itself.

A :class:`StageTimer` attached to a retriever (``DesirePathRetriever.timer``) or a service
(``Service.timer``) adds the wall-clock and CPU seconds of each stage the real code path runs; benchmarks
read it instead of re-running the stages themselves, so what they report cannot drift from the served path.
With no timer attached (the default) :func:`stage` is a ``nullcontext``: nothing is measured.

    >>> timer = StageTimer()
    >>> with stage(timer, "scoring"):
    ...     pass
    >>> sorted(timer.wall)
    ['scoring']
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

__all__ = ["DESIRE_STAGES", "StageTimer", "stage"]

#: The desire pipeline's stages, in order (issue 24's latency definition): the query's encoding, entry
#: search with flat's hits (intent, entry entities, the floor retriever), traversal (the graph walk and the
#: hybrid pool), scoring with all inputs (the scoring context and the scorer), construction of the slate.
DESIRE_STAGES = ("query_encoding", "entry_and_flat_hits", "traversal", "scoring", "construction")


class StageTimer:
    """Seconds per stage since the last :meth:`clear`: ``wall`` (``time.perf_counter``) and ``cpu``
    (``time.thread_time``, this thread's CPU: unlike wall time it is not inflated by other processes on a
    loaded machine). A stage entered twice adds up. ``counts`` holds sizes the pipeline reports beside
    its stages (``candidates``: the paths scored). ``other_cpu``: the CPU seconds that helper threads spent
    for the request (:meth:`add_cpu`; also in their stage's ``cpu``), which the calling thread's own CPU
    time does not include."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.counts: dict[str, float] = {}
        self.other_cpu = 0.0

    def clear(self) -> None:
        """Forget every stage and count (call before each timed request)."""
        self.wall.clear()
        self.cpu.clear()
        self.counts.clear()
        self.other_cpu = 0.0

    def add_cpu(self, name: str, seconds: float) -> None:
        """Add ``seconds`` of CPU another thread spent for stage ``name`` (to ``cpu`` and ``other_cpu``)."""
        self.cpu[name] = self.cpu.get(name, 0.0) + seconds
        self.other_cpu += seconds

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name``."""
        w, c = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - w
            self.cpu[name] = self.cpu.get(name, 0.0) + time.thread_time() - c


def stage(timer: StageTimer | None, name: str) -> AbstractContextManager[None]:
    """``timer.stage(name)``, or a no-op without a timer."""
    return nullcontext() if timer is None else timer.stage(name)
