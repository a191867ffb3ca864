"""The pipeline's own stage timer (signet_rl.core.timing): what benchmarks read instead of copying stages."""

from __future__ import annotations

from signet_rl.core.timing import DESIRE_STAGES, StageTimer, stage
from signet_rl.datasets.synthetic import generate
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import flat_variant

HYBRID = {"floor": True, "session": True, "entity_walks": True, "graph_walk": True}


def test_a_timed_retrieve_records_every_stage_and_its_candidates():
    ds = generate("tiny", seed=0)
    flat = flat_variant("flat_signet_uncapped", cache=False)
    desire = DesirePathRetriever("prior", config=HYBRID, flat=flat)
    desire.index(ds)
    queries = ds.split("test")[:5]
    untimed = [desire.retrieve(q, 2000) for q in queries]
    timer = StageTimer()
    desire.timer = timer
    for q, before in zip(queries, untimed, strict=True):
        timer.clear()
        units = desire.retrieve(q, 2000)
        assert units == before  # timing changes nothing
        assert set(timer.wall) == set(timer.cpu) == set(DESIRE_STAGES)
        assert all(v >= 0 for v in (*timer.wall.values(), *timer.cpu.values()))
        cands = desire.candidates(q, 2000)
        assert cands is not None and timer.counts["candidates"] == len(cands.walk.paths)


def test_no_timer_measures_nothing():
    timer = StageTimer()
    with stage(None, "scoring"):
        pass
    with stage(timer, "scoring"), stage(timer, "traversal"):
        pass
    with stage(timer, "scoring"):
        pass
    assert sorted(timer.wall) == ["scoring", "traversal"]
    timer.clear()
    assert timer.wall == timer.cpu == timer.counts == {}


def test_the_parallel_floor_gives_the_same_units_and_counts_its_threads_cpu():
    """The served path runs the floor's flat retrieval on a helper thread beside entry search and the walk
    (and, meanwhile, the scorer's work on the entries alone: PPR's rank, ``prefetch``): the same candidates,
    scores and units as one thread, and the helper's CPU lands in the timer (its ``entry_and_flat_hits``
    stage and ``other_cpu``), which the calling thread's CPU time misses."""
    ds = generate("tiny", seed=0)
    flat = flat_variant("flat_signet_uncapped", cache=False)
    desire = DesirePathRetriever("ppr", config=HYBRID, flat=flat)
    desire.index(ds)
    queries = ds.split("test")[:12]

    def run() -> list:
        out = []
        for q in queries:
            cands = desire.candidates(q, 2000)
            paths = [] if cands is None else cands.walk.paths
            flat = None if cands is None else cands.flat_units
            if cands is not None and cands.entries:  # the rank is in the context before scoring: prefetched
                assert any(k.startswith("ppr:") for k in cands.context.cache) == desire.parallel_floor
            scores = [] if cands is None else desire.scorer.score(q, paths, cands.context).tolist()
            out.append(([p.id for p in paths], flat, scores, desire.retrieve(q, 2000)))
        return out

    one_thread = run()
    desire.parallel_floor = True
    timer = StageTimer()
    desire.timer = timer
    assert run() == one_thread
    assert sum(bool(units) for *_, units in one_thread) >= 6
    assert desire._floor_thread is not None
    assert timer.other_cpu > 0 and timer.cpu["entry_and_flat_hits"] >= timer.other_cpu
    timer.add_cpu("scoring", 0.5)
    assert timer.cpu["scoring"] >= 0.5
    timer.clear()
    assert timer.other_cpu == 0.0
