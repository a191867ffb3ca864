"""The candidate ceiling resolves a path's items the way the evaluator does."""

from __future__ import annotations

import numpy as np

from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.evaluation.oracle import OracleScorer
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import Aspect, Attribute, Entity, KnowledgeGraph, Memory
from signet_rl.scorers.base import ScoringContext
from signet_rl.traversal.path import Hop, Path


def _dataset() -> Dataset:
    graph = KnowledgeGraph.from_records(
        memories=[Memory(id="m1", content="turn one"), Memory(id="m2", content="turn two")],
        entities=[Entity(id="e", name="caroline", entity_type="person")],
        aspects=[Aspect(id="obs", entity_id="e", name="observations")],
        attributes=[
            Attribute(id="t1", aspect_id="obs", memory_id="m1", content="went to a support group"),
            Attribute(id="t2", aspect_id="obs", memory_id="m2", content="likes painting sunsets at the lake"),
            Attribute(id="t3", aspect_id="obs", memory_id="m2", content="paints"),
        ],
    )
    q = Query(id="q", text="what did caroline do?", graph_id="g", split="test")
    truth = GroundTruth([Truth(query_id="q", needed=("m2",), needed_kind="memory")])
    return Dataset(name="hand", graphs={"g": graph}, queries=[q], truth=truth)


def test_oracle_counts_evidence_memories_and_prefers_the_shorter_unit():
    ds = _dataset()
    graph = ds.graphs["g"]
    ctx = ScoringContext(graph, GraphArrays.from_graph(graph), ["e"])
    paths = [Path.of(Hop.entity("e"), Hop.aspect("obs"), Hop.attribute(t)) for t in ("t1", "t2", "t3")]
    scores = OracleScorer(ds).score(ds.queries[0], paths, ctx)
    # t2 and t3 both come from the evidence turn m2; t3's text is shorter, so it ranks first.
    assert np.argsort(-scores).tolist() == [2, 1, 0]
    assert scores[0] < 0 < scores[2] < 1
    # Matching raw ids against memory-kind truth finds nothing: why the dataset is needed.
    assert OracleScorer(ds.truth).score(ds.queries[0], paths, ctx).tolist() == [0.0, 0.0, 0.0]
