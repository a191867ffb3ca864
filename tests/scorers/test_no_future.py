"""No scorer or index sees the future (issue 23, part 4).

One hand-built timeline, where rows written after the query time (edges, an entity, memories, facts, a
stored community partition computed over everything) would change each component's answer. Every test
asserts that the component's answer at the query time on the whole timeline equals its answer on the graph
with the future rows deleted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
    Memory,
    Mention,
)
from signet_rl.graph.timeslice import TimeSlices
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.entry import EntrySearch
from signet_rl.retrieval.flat import UNCAPPED, flat_variant
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.features import PathFeaturizer
from signet_rl.scorers.gnn import GNNPathScorer
from signet_rl.scorers.prior import PPRScorer, PriorScorer
from signet_rl.traversal.config import TraversalConfig
from signet_rl.traversal.walk import Traverser
from tests.conftest import day

#: The query is asked at noon on day 3; everything created on day 5 lies in its future.
AT = day(3) + pd.Timedelta(hours=12)
PAST, FUTURE = day(1), day(5)
NAMES = ["signet api", "postgres db", "ops team", "billing service", "redis cache", "audit log"]


def _timeline(keep_future: bool) -> KnowledgeGraph:
    """Six entities (the last created in the future); past edges form a path, future ones add a hub and
    shortcuts; memories, facts and a stored community partition likewise."""

    def when(future: bool) -> pd.Timestamp:
        return FUTURE if future else PAST

    ents = [(f"e{i}", n, i == 5) for i, n in enumerate(NAMES)]
    deps = [("d0", "e0", "e1", False), ("d1", "e1", "e2", False), ("d2", "e2", "e3", False),
            ("d3", "e3", "e4", False),
            ("d4", "e0", "e5", True), ("d5", "e0", "e3", True), ("d6", "e1", "e4", True),
            ("d7", "e0", "e4", True),
            ("d8", "e2", "e4", True)]  # fmt: skip
    mems = [("m0", "signet api calls postgres db for billing", ("e0", "e1"), False),
            ("m1", "ops team owns the postgres db", ("e1", "e2"), False),
            ("m2", "billing service and redis cache", ("e3", "e4"), False),
            ("m3", "signet api postgres billing billing audit log redis", ("e0", "e5", "e4"), True),
            ("m4", "postgres postgres postgres db migration", ("e1", "e3"), True)]  # fmt: skip
    keep = lambda future: keep_future or not future  # noqa: E731
    entities = [Entity(id=i, name=n, created_at=when(f)) for i, n, f in ents if keep(f)]
    aspects = [Aspect(id=f"a{i[1:]}", entity_id=i, name="notes", weight=0.5, created_at=when(f))
               for i, _, f in ents if keep(f)]  # fmt: skip
    attributes = [Attribute(id=f"t{i[1:]}", content=f"{n} runs in oregon", aspect_id=f"a{i[1:]}",
                            importance=0.6, created_at=when(f)) for i, n, f in ents if keep(f)]  # fmt: skip
    attributes += [Attribute(id="t-late", content="postgres db moved to ohio", aspect_id="a1", importance=0.9,
                             created_at=FUTURE)] if keep_future else []  # fmt: skip
    dependencies = [Dependency(id=d, source_entity_id=s, target_entity_id=t, dependency_type="uses",
                               strength=0.8, confidence=0.9, reason="multi-memory", created_at=when(f))
                    for d, s, t, f in deps if keep(f)]  # fmt: skip
    memories = [Memory(id=m, content=c, importance=0.8, created_at=when(f)) for m, c, _, f in mems if keep(f)]
    mentions = [Mention(memory_id=m, entity_id=e, created_at=when(f)) for m, _, es, f in mems if keep(f)
                for e in es]  # fmt: skip
    # A partition detected over the whole timeline (as a store export holds it): never read at a finite time.
    communities = [Community(id="c-hub", size=3), Community(id="c-rest", size=3)]
    members = [CommunityMember(community_id="c-hub" if e in ("e0", "e4", "e5") else "c-rest", entity_id=e)
               for e, _, f in ents if keep(f)]  # fmt: skip
    return KnowledgeGraph.from_records(
        entities=entities, aspects=aspects, attributes=attributes, dependencies=dependencies,
        memories=memories, mentions=mentions, communities=communities, community_members=members,
    )  # fmt: skip


@pytest.fixture(scope="module")
def graphs() -> tuple[KnowledgeGraph, KnowledgeGraph]:
    return _timeline(True), _timeline(False)


def _query(text: str = "what does signet api use for billing?") -> Query:
    return Query(id="q", text=text, graph_id="g", split="test", timestamp=AT)


def _dataset(graph: KnowledgeGraph) -> Dataset:
    truth = GroundTruth([Truth("q", ("t1",), "attribute", intent="what", category="hop1")])
    return Dataset(name="hand:timeline", graphs={"g": graph}, queries=[_query()], truth=truth)


def _walk_and_context(graph: KnowledgeGraph) -> tuple[GraphArrays, list, ScoringContext]:
    arrays = GraphArrays.from_graph(graph)
    walk = Traverser(arrays, graph, TraversalConfig()).walk(["e0"], "what", AT)
    ctx = ScoringContext(graph, arrays, ["e0"], AT.timestamp())
    return arrays, list(walk.paths), ctx


def test_the_future_rows_would_change_every_answer(graphs):
    full, past = graphs
    a_full, a_past = GraphArrays.from_graph(full), GraphArrays.from_graph(past)
    # whole-timeline degrees and stored communities differ from the past graph's
    assert a_full.degree()[:5].tolist() != a_past.degree().tolist()
    assert a_full.num_dependencies == 9 and a_past.num_dependencies == 4
    share = 1 - TimeSlices(a_full).edge_mask(AT).mean()
    assert share == pytest.approx(5 / 9)


def test_time_slices_match_the_graph_without_future_rows(graphs):
    full, past = graphs
    s_full, s_past = TimeSlices(GraphArrays.from_graph(full)), TimeSlices(GraphArrays.from_graph(past))
    assert s_full.degree(AT)[:5].tolist() == s_past.degree(AT).tolist() == [1, 2, 2, 2, 1]
    assert s_full.degree(AT)[5] == 0
    assert s_full.key(AT) == 4 and s_full.key(None) is None and s_full.edge_mask(None).all()
    # communities: a daily snapshot of the rows that existed, never the stored whole-timeline partition
    comm_full, comm_past = s_full.community(AT), s_past.community(AT)
    assert comm_full[:5].tolist() == comm_past.tolist() and comm_full[5] == -1
    assert s_full.community_labels(AT) == s_past.community_labels(AT)
    assert (comm_past >= 0).all()


def test_prior_scores_only_rows_that_existed(graphs):
    full, past = graphs
    (_, pf, cf), (_, pp, cp) = _walk_and_context(full), _walk_and_context(past)
    assert [p.serialise() for p in pf] == [p.serialise() for p in pp]
    np.testing.assert_allclose(PriorScorer().score(_query(), pf, cf), PriorScorer().score(_query(), pp, cp))


def test_ppr_runs_on_the_edges_that_existed(graphs):
    full, past = graphs
    (af, pf, cf), (_, pp, cp) = _walk_and_context(full), _walk_and_context(past)
    got, want = PPRScorer().score(_query(), pf, cf), PPRScorer().score(_query(), pp, cp)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    # and the future would have changed it: the whole-timeline graph ranks differently
    whole = ScoringContext(full, af, ["e0"], None)
    assert not np.allclose(PPRScorer().score(_query(), pf, whole), want)


def test_path_features_count_degrees_and_communities_of_their_time(graphs):
    full, past = graphs
    (af, pf, cf), (ap, pp, cp) = _walk_and_context(full), _walk_and_context(past)
    f_full = PathFeaturizer(full, af).features(pf, cf)
    f_past = PathFeaturizer(past, ap).features(pp, cp)
    np.testing.assert_allclose(f_full, f_past, rtol=1e-6)
    col = PathFeaturizer(full, af).names.index("end_log_degree")
    untimed = PathFeaturizer(full, af).features(pf, ScoringContext(full, af, ["e0"], None))
    assert not np.allclose(untimed[:, col], f_past[:, col])


def test_gnn_node_states_see_only_the_past(graphs):
    full, past = graphs
    (af, pf, cf), (_, pp, cp) = _walk_and_context(full), _walk_and_context(past)
    # heads started at random (not zero_residual), so that the untrained output reads the node states
    small = {"hidden": 16, "layers": 2, "n_heads": 2, "seed": 0, "zero_residual": False}
    got = GNNPathScorer(**small).score(_query(), pf, cf)
    want = GNNPathScorer(**small).score(_query(), pp, cp)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # training on the same feedback moves both alike (subgraphs are time-sliced too)
    from signet_rl.scorers.base import Feedback

    outs = []
    for graph_paths, ctx in ((pf, cf), (pp, cp)):
        s = GNNPathScorer(**small)
        s.update([Feedback(_query(), graph_paths, ctx, [0, 1], [1.0, -1.0], [1.0, 1.0], [False, False])])
        outs.append(s.score(_query(), graph_paths, ctx))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-5)
    # the whole-timeline graph would have given other states
    untimed = GNNPathScorer(**small).score(_query(), pf, ScoringContext(full, af, ["e0"], None))
    assert not np.allclose(untimed, want, rtol=1e-5, atol=1e-6)


def test_entry_search_scores_only_rows_that_existed(graphs):
    full, past = graphs
    got, want = [], []
    for graph, out in ((full, got), (past, want)):
        search = EntrySearch(encoder="hashing")
        search.index(graph)
        out.extend(search.search("postgres billing signet api", k=5, timestamp=AT))
    assert [e for e, _ in got] == [e for e, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-6)


@pytest.mark.parametrize("variant", ["flat_signet", "flat_bm25", "flat_vector", "flat_hybrid_bm25s"])
def test_flat_indexes_score_only_rows_that_existed(graphs, variant):
    full, past = graphs
    out = []
    for graph in (full, past):
        flat = flat_variant(variant, encoder="hashing", **UNCAPPED, gate=None, min_score=0.0)
        flat.index(_dataset(graph))
        out.append([(k, round(s, 6)) for k, s, _ in flat.scores(_query("postgres billing"))])
    assert out[0] == out[1]


@pytest.mark.parametrize("scorer", ["prior", "ppr", "gnn"])
def test_the_desire_pipeline_answers_as_on_the_past_graph(graphs, scorer):
    full, past = graphs
    out = []
    for graph in (full, past):
        s = GNNPathScorer(hidden=16, layers=2, n_heads=2, seed=0) if scorer == "gnn" else scorer
        r = DesirePathRetriever(s, encoder="hashing")
        r.index(_dataset(graph))
        out.append([(u.text, u.items, round(u.score, 6)) for u in r.retrieve(_query(), 2000)])
    assert out[0] == out[1] and out[0]
