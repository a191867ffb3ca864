"""The hybrid entry: flat's hits are the floor, session-DAG steps and entity walks add to them in bounds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query, fit_budget
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.graph.model import Entity, KnowledgeGraph, Memory, Mention
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import flat_variant
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.construct import MemoryBuilder
from signet_rl.traversal.path import Path
from signet_rl.traversal.session import SessionDAG

T0 = pd.Timestamp("2024-03-01", tz="UTC")
TEXTS = {
    1: ["Ann: I flew to Paris for a conference", "Bob: Paris in spring is lovely", "Ann: the talks were long",
        "Bob: did you see the Louvre"],
    2: ["Ann: I adopted a dog named Rex", "Bob: what breed is Rex", "Ann: a beagle, very loud",
        "Bob: beagles love to run"],
    3: ["Ann: Rex and I went hiking", "Bob: where did you hike", "Ann: near Paris, in Fontainebleau",
        "Bob: that forest is great for climbing"],
}  # fmt: skip


def conversation(deleted: Sequence[str] = ()) -> Dataset:
    """Three sessions of four turns; every turn mentions its speaker, names mention Paris or Rex."""
    mems, ments = [], []
    ents = [Entity(id="person:ann", name="Ann", entity_type="person", created_at=T0),
            Entity(id="person:bob", name="Bob", entity_type="person", created_at=T0),
            Entity(id="name:paris", name="Paris", entity_type="extracted", created_at=T0),
            Entity(id="name:rex", name="Rex", entity_type="extracted", created_at=T0)]  # fmt: skip
    for s, turns in TEXTS.items():
        for i, text in enumerate(turns):
            mid = f"c:D{s}:{i + 1}"
            when = T0 + pd.Timedelta(days=7 * s, seconds=i)
            mems.append(Memory(id=mid, content=text, tags=f"session_{s}", created_at=when,
                               is_deleted=mid in deleted))  # fmt: skip
            ments.append(Mention(memory_id=mid, entity_id=f"person:{text.split(':')[0].lower()}"))
            for name in ("Paris", "Rex"):
                if name in text:
                    ments.append(Mention(memory_id=mid, entity_id=f"name:{name.lower()}"))
    graph = KnowledgeGraph.from_records(entities=ents, memories=mems, mentions=ments)
    when = T0 + pd.Timedelta(days=60)
    queries = [Query(id="q1", text="Where did Ann go hiking with Rex?", graph_id="c", split="test",
                     timestamp=when),
               Query(id="q2", text="What did Ann do in Paris?", graph_id="c", split="test", timestamp=when)]
    truth = GroundTruth([Truth("q1", ("c:D3:3",), "memory"), Truth("q2", ("c:D1:1",), "memory")])
    return Dataset(name="hand:conversation", graphs={"c": graph}, queries=queries, truth=truth)


def flat():
    return flat_variant("flat_minmax", encoder="hashing", cache=False, alpha=0.5)


HYBRID = {"floor": True, "session": True, "entity_walks": True, "graph_walk": False}


# -- the session DAG -----------------------------------------------------------------------------------


def test_session_steps_are_typed_and_in_order():
    ds = conversation()
    dag = SessionDAG.from_graph(ds.graphs["c"])
    ids = dag.memory_ids
    anchor = int(np.flatnonzero(ids == "c:D2:2")[0])
    steps = [(str(ids[m]), kind, str(ids[a])) for m, kind, a in dag.steps([anchor], window=1)]
    assert steps == [
        ("c:D2:1", "turn", "c:D2:2"), ("c:D2:3", "turn", "c:D2:2"),
        ("c:D2:4", "session", "c:D2:2"),
        ("c:D3:1", "next", "c:D2:2"), ("c:D3:2", "next", "c:D2:2"), ("c:D3:3", "next", "c:D2:2"),
        ("c:D3:4", "next", "c:D2:2"),
        ("c:D1:1", "previous", "c:D2:2"), ("c:D1:2", "previous", "c:D2:2"), ("c:D1:3", "previous", "c:D2:2"),
        ("c:D1:4", "previous", "c:D2:2"),
    ]  # fmt: skip
    # only what the query may see: nothing written after t, nothing deleted
    t = (T0 + pd.Timedelta(days=14, seconds=2)).timestamp()
    ds2 = conversation(deleted=["c:D1:2"])
    dag2 = SessionDAG.from_graph(ds2.graphs["c"])
    got = [str(dag2.memory_ids[m]) for m, _, _ in dag2.steps([anchor], window=1, t=t)]
    assert got == ["c:D2:1", "c:D2:3", "c:D1:1", "c:D1:3", "c:D1:4"]
    assert dag.distance([0, 5, 11], [anchor]).tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match=r"unknown session step kinds \['later'\]"):
        dag.steps([anchor], kinds=["later"])


def test_session_steps_are_candidates_with_their_anchor():
    ds = conversation()
    desire = DesirePathRetriever("prior", config={"floor": True, "session": True}, flat=flat())
    desire.index(ds)
    cands = desire.candidates(ds.queries[0], 100)  # the floor holds 150 characters: 4 of 12 turns
    kinds = {p.kind for p in cands.walk.paths}
    assert kinds == {"floor", "session"}
    floor = [p for p in cands.walk.paths if p.kind == "floor"]
    for p in cands.walk.paths:
        if p.kind == "session":
            assert len(p.memories) == 2 and p.strategy in ("turn", "session", "next", "previous")
            assert p.memories[0] in {f.memories[0] for f in floor}
            info = cands.context.path_info[p.id]
            assert info["floor_rank"] == -1 and info["session_distance"] in (0.0, 1.0, 2.0)
    # a session unit injects the step's turn, whole, and not its anchor
    builder = MemoryBuilder(ds.graphs["c"])
    step = next(p for p in cands.walk.paths if p.kind == "session")
    unit = builder.construct(step)
    assert unit.items == (step.memories[1],) and unit.meta["source"] == "session"
    assert unit.text == ds.graphs["c"].memories.set_index("id").loc[step.memories[1], "content"]


def test_every_candidate_carries_flats_whole_ranking_and_its_neighbours_scores():
    """Serve-time records beyond the floor (issue 24 §3): flat's relative score and rank of the injected
    memory anywhere in its ranking, the sum/max of its same-session neighbours' relative scores (two turns
    either side), and the unit's length; computed here by hand from flat's own ranking."""
    ds = conversation()
    desire = DesirePathRetriever("prior", config={"floor": True, "session": True, "entity_walks": True,
                                                  "graph_walk": False}, flat=flat())  # fmt: skip
    desire.index(ds)
    q = ds.queries[0]
    cands = desire.candidates(q, 100)
    ranking = desire.flat.retrieve(q, None)
    top = ranking[0].score
    rel = {u.items[0]: (r, u.score / top) for r, u in reversed(list(enumerate(ranking)))}
    order = [f"c:D{s}:{i}" for s in (1, 2, 3) for i in (1, 2, 3, 4)]
    off_floor = 0
    for p in cands.walk.paths:
        info, mem = cands.context.path_info[p.id], p.memories[-1]
        rank, score = rel.get(mem, (-1, 0.0))
        assert info["flat_any"] == pytest.approx(score)
        assert info["flat_any_rank_inv"] == pytest.approx(1 / (1 + rank) if rank >= 0 else 0.0)
        i = order.index(mem)
        near = [rel.get(m, (-1, 0.0))[1] for m in order[max(i - 2, 0) : i + 3]
                if m != mem and m.split(":")[1] == mem.split(":")[1]]  # fmt: skip
        assert info["neigh_flat_sum"] == pytest.approx(sum(near))
        assert info["neigh_flat_max"] == pytest.approx(max(near))
        content = ds.graphs["c"].memories.set_index("id").loc[mem, "content"]
        assert info["chars"] == len(content)
        off_floor += p.kind != "floor" and info["flat_any"] > 0
    assert off_floor > 0  # flat ranks memories beyond the floor: session and walk units get its scores
    from signet_rl.scorers.features import PathFeaturizer

    state = desire._state("c")
    pf = PathFeaturizer(state.graph, state.arrays, "hashing")
    x = pf.features(cands.walk.paths, cands.context)
    col = {n: i for i, n in enumerate(pf.names)}
    for i, p in enumerate(cands.walk.paths):
        info = cands.context.path_info[p.id]
        for name in ("flat_any", "flat_any_rank_inv", "neigh_flat_max", "neigh_flat_sum"):
            assert x[i, col[name]] == pytest.approx(info[name], rel=1e-6)
        assert x[i, col["log_chars"]] == pytest.approx(np.log1p(info["chars"]), rel=1e-6)


# -- the floor -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [60, 120, 400])
def test_non_learned_desire_injects_flat_top_turns_first(budget):
    ds = conversation()
    f = flat()
    desire = DesirePathRetriever("prior", config=HYBRID, flat=f)
    desire.index(ds)
    for q in ds.queries:
        want = [u.items for u in fit_budget(f.retrieve(q, None), budget)]
        got = desire.retrieve(q, budget)
        assert want, "flat finds something for every hand query"
        assert [u.items for u in got[: len(want)]] == want
        assert all(u.meta["source"] == "floor" for u in got[: len(want)])
        assert sum(u.chars for u in got) <= budget


def test_a_floor_turn_is_skipped_only_when_a_higher_scored_unit_carries_it():
    ds = conversation()
    desire = DesirePathRetriever("prior", config={"floor": True, "session": True}, flat=flat())
    desire.index(ds)
    q = ds.queries[0]
    cands = desire.candidates(q, 100)
    floor = [p for p in cands.walk.paths if p.kind == "floor"]
    top, second = floor[0].memories[0], floor[1].memories[0]
    # a session step that reaches flat's second turn, scored above the whole floor (as a learned scorer may)
    carrier = Path.parse(f"M:{top}>M:{second}", strategy="turn")
    ranked = [(carrier, 5.0)] + [(p, 2.0 - 0.01 * i) for i, p in enumerate(floor)]
    units = desire.slate(q, cands, ranked, 10_000)
    rest = [(p.memories[0],) for p in floor if p.memories[0] != second]
    assert [u.items for u in units] == [(second,), *rest]
    assert units[0].meta["source"] == "session" and units[1].meta["source"] == "floor"
    # scored below the floor, the same step adds nothing: the floor turn is injected as itself
    ranked = [(p, 2.0 - 0.01 * i) for i, p in enumerate(floor)] + [(carrier, 0.5)]
    units = desire.slate(q, cands, ranked, 10_000)
    assert [u.items for u in units] == [(p.memories[0],) for p in floor]
    assert {u.meta["source"] for u in units} == {"floor"}


def test_floor_first_with_the_hybrid_entry_off_changes_nothing():
    ds = conversation()
    plain = DesirePathRetriever("prior")
    plain.index(ds)
    assert plain.flat is None and plain.candidates(ds.queries[0]).pool is None


# -- bounds and switches -------------------------------------------------------------------------------


@pytest.mark.parametrize("max_paths,factor", [(5, 10.0), (50, 0.5), (8, 1.0)])
def test_candidates_keep_the_bounds(max_paths, factor):
    ds = conversation()
    cfg = {**HYBRID, "graph_walk": True, "max_paths": max_paths, "candidate_chars_factor": factor}
    desire = DesirePathRetriever("prior", config=cfg, flat=flat())
    desire.index(ds)
    builder = desire.builder("c")
    budget = 100
    for q in ds.queries:
        cands = desire.candidates(q, budget)
        paths = cands.walk.paths
        assert 0 < len(paths) <= max_paths
        chars = sum(builder.construct(p).chars for p in paths)
        assert chars <= factor * budget
        sizes = cands.pool.sizes
        assert sum(sizes[k] for k in ("floor", "session", "walk", "graph")) == len(paths)
        assert sizes["chars"] == chars and sizes["considered"] >= len(paths)
        units = desire.retrieve(q, budget)
        assert units and all(u.meta["pool"] == sizes for u in units)


def test_ablation_switches_choose_the_pieces():
    ds = conversation()
    kinds = {}
    for name, cfg in {
        "floor": {"floor": True, "graph_walk": False},
        "session": {"floor": True, "session": True, "graph_walk": False},
        "walks": {"floor": True, "entity_walks": True, "graph_walk": False},
    }.items():
        desire = DesirePathRetriever("prior", config=cfg, flat=flat())
        desire.index(ds)
        kinds[name] = {p.kind for q in ds.queries for p in desire.candidates(q, 100).walk.paths}
    assert kinds == {"floor": {"floor"}, "session": {"floor", "session"}, "walks": {"floor", "walk"}}
    desire = DesirePathRetriever("prior", config={"floor": True, "entity_walks": True}, flat=flat())
    desire.index(ds)
    walks = [p for p in desire.candidates(ds.queries[0], 100).walk.paths if p.kind == "walk"]
    assert walks and all(p.strategy == "mention" and p.hops[-1].kind.value == "M" for p in walks)
    assert {p.start for p in walks} <= {"person:ann", "person:bob", "name:paris", "name:rex"}


def test_an_entity_walk_takes_one_dependency_hop_to_a_memory_only_the_neighbour_mentions():
    """E:<entry> > D+:<dependency, forward> > E:<neighbour> > M:<memory>: the floor holds flat's first
    turn alone, so only the dependency hop reaches the neighbour's turn."""
    from signet_rl.graph.model import Dependency

    ents = [Entity(id="name:rex", name="Rex", entity_type="extracted", created_at=T0),
            Entity(id="name:vet", name="Dr Okafor", entity_type="extracted", created_at=T0)]  # fmt: skip
    mems = [Memory(id="c:D1:1", content="Rex chewed the sofa again", created_at=T0),
            Memory(id="c:D1:2", content="Dr Okafor prescribed drops twice daily", created_at=T0)]  # fmt: skip
    ments = [Mention(memory_id="c:D1:1", entity_id="name:rex"),
             Mention(memory_id="c:D1:2", entity_id="name:vet")]  # fmt: skip
    deps = [Dependency(id="d1", source_entity_id="name:rex", target_entity_id="name:vet",
                       dependency_type="informs", confidence=0.9, created_at=T0)]  # fmt: skip
    graph = KnowledgeGraph.from_records(entities=ents, memories=mems, mentions=ments, dependencies=deps)
    query = Query(id="q", text="What did Rex chew?", graph_id="c", split="test", timestamp=T0)
    ds = Dataset(name="hand:dep", graphs={"c": graph}, queries=[query],
                 truth=GroundTruth([Truth("q", ("c:D1:2",), "memory")]))  # fmt: skip
    cfg = {"floor": True, "entity_walks": True, "graph_walk": False, "max_floor_paths": 1}
    desire = DesirePathRetriever("prior", config=cfg, flat=flat())
    desire.index(ds)
    paths = desire.candidates(query, 30).walk.paths  # flat injects its first turn alone at 30 characters
    assert [str(p) for p in paths if p.kind == "floor"] == ["M:c:D1:1"]
    walks = [p for p in paths if p.kind == "walk"]
    assert [(str(p), p.strategy) for p in walks] == [("E:name:rex>D+:d1>E:name:vet>M:c:D1:2", "dependency")]


def test_bad_hybrid_bounds_are_refused_with_the_way_out():
    with pytest.raises(ValueError, match=r"TraversalConfig.max_paths is 60; the hybrid entry .* at most 50"):
        TraversalConfig.from_dict({"floor": True, "max_paths": 60})
    msg = r"TraversalConfig.candidate_chars_factor must be a number in \(0, 10\], got 11"
    with pytest.raises(ValueError, match=msg):
        TraversalConfig.from_dict({"session": True, "candidate_chars_factor": 11})
    with pytest.raises(ValueError, match=r"TraversalConfig.floor must be true or false, got 'yes'"):
        TraversalConfig.from_dict({"floor": "yes"})
    assert TraversalConfig.from_dict({"max_paths": 60}).max_paths == 60  # no hybrid entry: no 50 cap


def test_scorer_features_describe_the_hybrid_candidates():
    from signet_rl.scorers.features import HYBRID_FEATURES, PathFeaturizer

    ds = conversation()
    desire = DesirePathRetriever("prior", config=HYBRID, flat=flat())
    desire.index(ds)
    q = ds.queries[0]
    cands = desire.candidates(q, 100)
    state = desire._state("c")
    pf = PathFeaturizer(state.graph, state.arrays)
    qv = state.encoder.encode([q.text])[0]
    x = pf.features(cands.walk.paths, cands.context, query_vec=qv)
    col = {n: j for j, n in enumerate(pf.names)}
    assert set(HYBRID_FEATURES) <= set(pf.names) and np.isfinite(x).all()
    floor_units = fit_budget(desire.flat.retrieve(q, None), 100)
    for i, p in enumerate(cands.walk.paths):
        row = x[i]
        kinds = [col["type_floor"], col["type_session"], col["type_walk"]]
        assert row[col[f"type_{p.kind}"]] == 1 and row[kinds].sum() == 1
        assert row[col["path_length"]] == p.length and row[col["n_memories"]] == len(p.memories)
        if p.kind == "floor":
            rank = cands.context.path_info[p.id]["floor_rank"]
            assert row[col["floor_rank_inv"]] == pytest.approx(1 / (1 + rank))
            assert row[col["session_distance"]] == 0 and row[col["starts_at_entry"]] == 0
        else:
            assert row[col["floor_rank_inv"]] == 0 and row[col["flat_fused"]] == 0
    first = cands.walk.paths[0]
    assert x[0, col["flat_fused"]] == pytest.approx(floor_units[0].score, rel=1e-6)
    assert x[0, col["flat_vector"]] == pytest.approx(floor_units[0].meta["vector"], rel=1e-5)
    assert first.memories == floor_units[0].items
    # the query names Ann and Rex (the entries): "Ann: Rex and I went hiking" mentions both
    assert set(cands.entries) == {"person:ann", "name:rex"}
    hike = next(i for i, p in enumerate(cands.walk.paths) if p.memories[-1:] == ("c:D3:1",))
    assert x[hike, col["query_overlap"]] == 2


# -- the environments ----------------------------------------------------------------------------------


def test_envs_expose_the_floor_and_session_steps_and_pass_the_checker():
    from gymnasium.utils.env_checker import check_env

    from signet_rl.envs.bandit import PathBanditEnv
    from signet_rl.envs.edgewalk import MEMORY_FEATURES, EdgeWalkEnv

    ds = conversation()
    cfg = {"floor": True, "session": True, "max_floor_paths": 4, "session_paths": 3, "max_paths": 12}
    bandit = PathBanditEnv(ds, split="test", traversal=cfg, flat="flat_minmax")
    check_env(bandit, skip_render_check=True)
    walk = EdgeWalkEnv(ds, split="test", traversal=cfg, flat="flat_minmax", path_budget=2, order="sequential")
    check_env(walk, skip_render_check=True)
    assert walk.action_space.n == walk.config.max_branching + 2 + 7
    obs, info = walk.reset(seed=0)
    mem = obs["memories"]
    assert mem.shape == (7, len(MEMORY_FEATURES))
    floor = mem[:, 0] == 1
    # at the default budget flat injects all 12 turns, so the candidates are the floor, in flat's order
    assert floor.all() and mem[0, 2] == 1.0 and np.all(np.diff(mem[:, 2]) < 0)
    k = walk.INJECT
    assert obs["action_mask"][k] == 1
    obs, _, terminated, _, info = walk.step(k)  # inject best_flat's top turn
    assert info["stopped"] and obs["action_mask"][k] == 0 and not terminated
    assert walk.stopped_paths()[-1].kind == "floor"
    _, _, terminated, _, _ = walk.step(k + 1)
    assert terminated and len(walk.stopped_ratings()) == 2


# -- the session DAG from the extractor's session entities ---------------------------------------------


def extracted_conversation() -> KnowledgeGraph:
    """The hand conversation run through the extractor (hashing names): session entities with their turns
    and ``next_session`` edges, and the ``session_<n>`` tags."""
    from signet_rl.datasets.extract import ExtractConfig, MemoryText, extract_graph

    turns = [MemoryText(f"c:D{s}:{i + 1}", text.split(": ", 1)[1], T0 + pd.Timedelta(days=7 * s, seconds=i),
                        text.split(":")[0], s)
             for s, texts in TEXTS.items() for i, text in enumerate(texts)]  # fmt: skip
    return extract_graph(turns, ExtractConfig(encoder="hashing"), cache=False)


def _steps(dag: SessionDAG, anchor: str) -> list[tuple[str, str]]:
    ids = dag.memory_ids
    row = int(np.flatnonzero(ids == anchor)[0])
    return [(str(ids[m]), kind) for m, kind, _ in dag.steps([row], window=1)]


def test_session_steps_read_the_extractors_session_entities():
    from signet_rl.graph.arrays import GraphArrays
    from signet_rl.pipeline.hybrid import session_dag_of

    graph = extracted_conversation()
    arrays = GraphArrays.from_graph(graph)
    tags = session_dag_of(graph, arrays, "tags")
    from_graph = session_dag_of(graph, arrays, "graph")
    want = [("c:D2:1", "turn"), ("c:D2:3", "turn"), ("c:D2:4", "session"), ("c:D3:1", "next"),
            ("c:D3:2", "next"), ("c:D3:3", "next"), ("c:D3:4", "next"), ("c:D1:1", "previous"),
            ("c:D1:2", "previous"), ("c:D1:3", "previous"), ("c:D1:4", "previous")]  # fmt: skip
    assert _steps(tags, "c:D2:2") == want and _steps(from_graph, "c:D2:2") == want
    assert from_graph.session.tolist() == tags.session.tolist()
    # a store whose memories carry no session tags: only the graph's session nodes give the steps
    untagged = graph.replace(memories=graph.memories.assign(tags=None))
    ua = GraphArrays.from_graph(untagged)
    assert _steps(session_dag_of(untagged, ua, "tags"), "c:D2:2") == []
    assert _steps(session_dag_of(untagged, ua, "graph"), "c:D2:2") == want
    assert _steps(session_dag_of(untagged, ua, "auto"), "c:D2:2") == want
    # without session entities, auto falls back to the tags
    plain = conversation().graphs["c"]
    pa = GraphArrays.from_graph(plain)
    assert _steps(session_dag_of(plain, pa, "auto"), "c:D2:2") == want
    assert _steps(session_dag_of(plain, pa, "graph"), "c:D2:2") == []
    with pytest.raises(ValueError, match=r"unknown session_source 'days'; known: tags, graph, auto"):
        session_dag_of(plain, pa, "days")
    with pytest.raises(ValueError, match=r"TraversalConfig.session_source must be one of tags, graph, auto, "
                                         r"got 'days'"):
        TraversalConfig(session_source="days")


# -- the budget split between the floor and the walks -------------------------------------------------


def test_floor_share_guarantees_the_floor_its_share_and_lets_walks_compete_for_the_rest():
    from signet_rl.pipeline.hybrid import floor_first, floor_share_first

    paths = [Path.parse(f"M:m{i}", strategy="floor") for i in range(4)] + [
        Path.parse("E:e>M:w1", strategy="mention"), Path.parse("E:e>M:w2", strategy="mention")]
    info = {p.id: {"floor_rank": float(i)} for i, p in enumerate(paths[:4])}
    chars = [100, 100, 100, 100, 100, 100]
    scores = np.asarray([0.1, 0.2, 0.9, 0.3, 0.8, 0.05])  # the scorer likes floor m2 and walk w1
    # share 1: the floor first throughout, exactly floor_first
    np.testing.assert_array_equal(floor_share_first(scores, paths, info, chars, 300, 1.0),
                                  floor_first(scores, paths, info))
    # share 0.5 of 300: m0 is guaranteed (100 <= 150, m1 would overflow); then m2, w1, m3, m1, w2 by score
    out = floor_share_first(scores, paths, info, chars, 300, 0.5)
    names = ["m0", "m1", "m2", "m3", "w1", "w2"]
    assert [names[i] for i in np.argsort(-out, kind="stable")] == ["m0", "m2", "w1", "m3", "m1", "w2"]
    # share 0: the scorer's order over everything
    out = floor_share_first(scores, paths, info, chars, 300, 0.0)
    assert [names[i] for i in np.argsort(-out, kind="stable")] == ["m2", "w1", "m3", "m1", "m0", "w2"]
    msg = r"TraversalConfig.floor_share must be a number in \[0, 1\], got 1.5"
    with pytest.raises(ValueError, match=msg):
        TraversalConfig(floor_share=1.5)


def test_floor_share_one_keeps_the_non_learned_ranking():
    ds = conversation()
    a = DesirePathRetriever("prior", config=HYBRID, flat=flat())
    b = DesirePathRetriever("prior", config={**HYBRID, "floor_share": 0.5}, flat=flat())
    a.index(ds)
    b.index(ds)
    q = ds.queries[0]
    top = [u.items for u in a.retrieve(q, 120)]
    got = [u.items for u in b.retrieve(q, 120)]
    assert got[0] == top[0]  # the floor's first turn keeps its place within the guaranteed share
    assert a.config.floor_share == 1.0 and a.config.session_source == "auto"


class LongestFirst:
    """Scores the candidate with the longest text 1.0 and every other 0.9 (a learned-style scorer)."""

    name = "longest_first"

    def __init__(self, builder: MemoryBuilder) -> None:
        self.builder = builder

    def prepare(self, graph, arrays) -> None:
        return None

    def score(self, query, paths, context) -> np.ndarray:
        chars = np.asarray([self.builder.construct(p).chars for p in paths])
        return np.where(chars == chars.max(), 1.0, 0.9)

    def update(self, feedback) -> None:
        return None


def test_density_injects_by_score_per_character():
    from signet_rl.pipeline.hybrid import density_order

    assert density_order(np.array([0.5, 0.3, -1.0, 0.2]), [500, 100, 10, 100]).tolist() == [2, 4, 1, 3]
    ds = conversation()
    builder = MemoryBuilder(ds.graphs["c"])
    cfg = {**HYBRID, "session_paths": 12, "walk_paths": 12}
    by_score = DesirePathRetriever(LongestFirst(builder), config=cfg, flat=flat())
    by_density = DesirePathRetriever(LongestFirst(builder), config={**cfg, "density": True}, flat=flat())
    q = ds.queries[0]
    for r in (by_score, by_density):
        r.index(ds)
    paths = by_score.candidates(q, 2000).walk.paths
    chars = {p: builder.construct(p).chars for p in paths}
    longest = max(chars.values())
    first_by_score = by_score.retrieve(q, 2000)[0]
    assert len(first_by_score.text) == longest
    # by density: 0.9 / chars beats 1.0 / longest for the shortest candidate
    shortest = min(chars, key=lambda p: (chars[p], paths.index(p)))
    assert 0.9 / chars[shortest] > 1.0 / longest
    first = by_density.retrieve(q, 2000)[0]
    assert first.items == builder.construct(shortest).items


def test_every_non_learned_scorer_ranks_the_floor_first_and_a_learned_one_ranks_everything():
    """Over the hybrid entry the non-learned rows, desire_fused included (it was left out when it was added),
    keep best_flat's floor first; a learned scorer ranks every candidate itself."""
    for name in ("prior", "ppr", "random", "fused"):
        assert DesirePathRetriever(name).floor_first is True, name
    assert DesirePathRetriever("linucb").floor_first is False
    assert DesirePathRetriever("fused", floor_first=False).floor_first is False
