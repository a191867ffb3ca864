from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query
from signet_rl.graph.arrays import GraphArrays
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
)
from signet_rl.retrieval.intent import IntentClassifier
from signet_rl.scorers.base import ScoringContext
from signet_rl.scorers.features import (
    INTENTS,
    PATH_FEATURES,
    PRIOR_FEATURE_HALF_LIFE_DAYS,
    PathFeaturizer,
    QueryFeaturizer,
    intent_one_hot,
    time_features,
)
from signet_rl.scorers.prior import PriorScorer
from signet_rl.text.encoders import make_encoder
from signet_rl.traversal.path import Hop, Path

T0 = pd.Timestamp("2026-01-01T00:00:00Z")
DAY = 86400.0


def _dep(id, s, t, conf, strength, type="uses"):
    return Dependency(
        id=id,
        source_entity_id=s,
        target_entity_id=t,
        dependency_type=type,
        confidence=conf,
        strength=strength,
    )


@pytest.fixture(scope="module")
def graph():
    """hub -> a, hub -> b, and hub -> m <- d (walked backwards to d), with aspects and facts."""
    return KnowledgeGraph.from_records(
        entities=[
            Entity(id="hub", name="atlas project", entity_type="project"),
            Entity(id="a", name="billing service", entity_type="system"),
            Entity(id="b", name="auth gateway", entity_type="system"),
            Entity(id="m", name="message queue", entity_type="tool"),
            Entity(id="d", name="ledger db", entity_type="tool"),
        ],
        dependencies=[
            _dep("ha", "hub", "a", 1.0, 0.9),
            _dep("hb", "hub", "b", 0.9, 0.8),
            _dep("hm", "hub", "m", 0.6, 0.6),
            _dep("dm", "d", "m", 0.5, 0.5, "informs"),
        ],
        aspects=[
            Aspect(id="asp-a", entity_id="a", name="pricing", weight=0.9),
            Aspect(id="asp-b", entity_id="b", name="tokens", weight=0.8),
            Aspect(id="asp-d", entity_id="d", name="schema", weight=0.2),
        ],
        attributes=[
            Attribute(id="ta1", aspect_id="asp-a", content="plans cost ten dollars", importance=0.9,
                      created_at=T0),
            Attribute(id="tb1", aspect_id="asp-b", content="tokens live one hour", importance=0.8,
                      created_at=T0, status="superseded", superseded_by="tb2"),
            Attribute(id="tb2", aspect_id="asp-b", content="tokens live two hours", importance=0.8,
                      created_at=T0 + pd.Timedelta(days=5)),
            Attribute(id="td1", aspect_id="asp-d", content="ledger rows are append only", importance=0.2,
                      created_at=T0),
            Attribute(id="td2", aspect_id="asp-d", content="never delete ledger rows", importance=0.4,
                      kind="constraint", created_at=T0 - pd.Timedelta(days=1)),
        ],
        communities=[Community(id="k0", size=3), Community(id="k1", size=2)],
        community_members=[
            CommunityMember(community_id="k0", entity_id=e) for e in ("hub", "a", "b")
        ] + [CommunityMember(community_id="k1", entity_id=e) for e in ("m", "d")],
    )  # fmt: skip


@pytest.fixture(scope="module")
def arrays(graph):
    return GraphArrays.from_graph(graph)


ROUTE_A = Path.of(
    Hop.entity("hub"), Hop.dependency("ha"), Hop.entity("a"), Hop.aspect("asp-a"), Hop.attribute("ta1")
)
ROUTE_B = Path.of(
    Hop.entity("hub"), Hop.dependency("hb"), Hop.entity("b"), Hop.aspect("asp-b"), Hop.attribute("tb1")
)
ROUTE_D = Path.of(
    Hop.entity("hub"), Hop.dependency("hm"), Hop.entity("m"), Hop.dependency("dm", -1), Hop.entity("d"),
    Hop.aspect("asp-d"), Hop.attribute("td1"), Hop.attribute("td2"),
    strategy="relate", explorer=True,
)  # fmt: skip
BARE = Path.of(Hop.entity("a"))


class FakeStats:
    """Edge statistics that are simple functions of the edge row."""

    def features(self, edge_idx):
        e = np.asarray(edge_idx, dtype=np.float64)
        return np.stack([e, 2 * e, 3 * e], axis=1)

    def weight(self, edge_idx):
        return 0.1 * np.asarray(edge_idx, dtype=np.float64)


def _ctx(graph, arrays, days=9.0, entries=("hub",)):
    return ScoringContext(graph, arrays, entries, T0.timestamp() + days * DAY)


def test_time_features_known_values():
    monday_six = time_features(pd.Timestamp("2026-01-05T06:00Z"))
    assert monday_six == pytest.approx([1.0, 0.0, 0.0, 1.0], abs=1e-6)
    # epoch seconds and a naive timestamp (taken as UTC) agree with the aware one
    ts = pd.Timestamp("2026-01-08T18:30Z")  # a Thursday
    assert np.allclose(time_features(ts.timestamp()), time_features(ts.tz_localize(None)))
    h, w = 2 * math.pi * 18.5 / 24, 2 * math.pi * 3 / 7
    assert time_features(ts) == pytest.approx([math.sin(h), math.cos(h), math.sin(w), math.cos(w)], abs=1e-6)
    assert time_features(None).tolist() == [0.0] * 4 and time_features(float("nan")).tolist() == [0.0] * 4
    assert time_features(ts).dtype == np.float32


class AlwaysAction(IntentClassifier):
    def predict_proba(self, texts):
        out = np.zeros((len(texts), len(INTENTS)), dtype=np.float32)
        out[:, INTENTS.index("action")] = 1.0
        return out


def test_query_featurizer_layout():
    qf = QueryFeaturizer()
    q = Query(id="q", text="what does the billing service use?", graph_id="g", split="test", timestamp=T0)
    x = qf.features(q)
    assert qf.dim == 384 + 5 + 4 == x.shape[0] and x.dtype == np.float32
    assert np.allclose(x[:384], make_encoder("hashing").encode([q.text])[0])
    assert qf.intent(q) == "what" and x[384:389].tolist() == intent_one_hot("what").tolist()
    assert np.allclose(x[389:], time_features(T0))
    # the classifier (never ground truth) decides the intent; an explicit intent overrides it
    assert QueryFeaturizer(classifier=AlwaysAction()).features(q)[384 + INTENTS.index("action")] == 1.0
    assert qf.features(q, intent="relate")[384 + INTENTS.index("relate")] == 1.0
    assert qf.intent(Query(id="e", text="  ", graph_id="g", split="test")) == "none"
    with pytest.raises(ValueError, match="unknown intent 'chat'; expected one of: what, relate"):
        intent_one_hot("chat")


def test_path_features_names_and_shape(graph, arrays):
    pf = PathFeaturizer(graph, arrays)
    assert pf.names == PATH_FEATURES and pf.dim == len(PATH_FEATURES) == 46
    x = pf.features([ROUTE_A, ROUTE_B, ROUTE_D, BARE], _ctx(graph, arrays))
    assert x.shape == (4, pf.dim) and x.dtype == np.float32
    assert pf.features([], _ctx(graph, arrays)).shape == (0, pf.dim)


def test_path_features_known_values(graph, arrays):
    enc = make_encoder("hashing")
    pf = PathFeaturizer(graph, arrays, encoder=enc, edge_stats=FakeStats())
    ctx = _ctx(graph, arrays, days=9.0)
    qv = enc.encode(["ledger db"])[0]
    x = pf.features([ROUTE_A, ROUTE_B, ROUTE_D, BARE], ctx, query_vec=qv, intent="relate")
    f = {name: x[:, j] for j, name in enumerate(pf.names)}
    d = 2  # ROUTE_D
    assert f["n_dependencies"].tolist() == [1, 1, 2, 0]
    assert f["n_attributes"].tolist() == [1, 1, 2, 0]
    assert f["has_aspect"].tolist() == [1, 1, 1, 0]
    assert f["cs_product"] == pytest.approx([0.9, 0.72, 0.36 * 0.25, 1.0])
    assert f["cs_min"] == pytest.approx([0.9, 0.72, 0.25, 1.0])
    assert f["aspect_weight"] == pytest.approx([0.9, 0.8, 0.2, 1.0])
    assert f["importance_mean"] == pytest.approx([0.9, 0.8, 0.3, 1.0])
    # newest attribute of ROUTE_D is td1 (T0): 9 days old
    assert f["log_age_days"] == pytest.approx([math.log(10), math.log(10), math.log(10), 0.0])
    # the feature keeps the 90-day half-life it was defined with (PRIOR_FEATURE_HALF_LIFE_DAYS)
    prior = PriorScorer(half_life_days=PRIOR_FEATURE_HALF_LIFE_DAYS).score(
        Query(id="q", text="", graph_id="g", split="test"), [ROUTE_A, ROUTE_D], ctx
    )
    assert f["prior"][[0, d]] == pytest.approx(prior, rel=1e-5)
    assert f["starts_at_entry"].tolist() == [1, 1, 1, 0]
    assert f["end_log_degree"] == pytest.approx([math.log(2), math.log(2), math.log(2), math.log(2)])
    assert f["same_community"].tolist() == [1, 1, 0, 1]
    assert f["backward_fraction"] == pytest.approx([0, 0, 0.5, 0])
    assert f["constraint_fraction"] == pytest.approx([0, 0, 0.5, 0])
    assert f["stale_fraction"] == pytest.approx([0, 1, 0, 0])  # tb2 (day 5) superseded tb1 by day 9
    # similarities: the query is the end entity's name of ROUTE_D
    vec = enc.encode(["plans cost ten dollars", "ledger rows are append only", "never delete ledger rows"])
    assert f["end_name_sim"][d] == pytest.approx(1.0, abs=1e-5)
    assert f["attr_sim_max"][0] == pytest.approx(float(vec[0] @ qv), abs=1e-5)
    assert f["attr_sim_max"][d] == pytest.approx(max(vec[1] @ qv, vec[2] @ qv), abs=1e-5)
    assert f["attr_sim_mean"][d] == pytest.approx((vec[1] @ qv + vec[2] @ qv) / 2, abs=1e-5)
    assert f["attr_sim_max"][3] == 0 and f["attr_sim_mean"][3] == 0
    # desire statistics: mean over the path's edge rows (hm = 2, dm = 3); zero without edges
    assert [f[f"desire_stat_{i}"][d] for i in range(3)] == pytest.approx([2.5, 5.0, 7.5])
    assert f["desire_stat_0"][0] == pytest.approx(0.0) and f["desire_stat_2"][1] == pytest.approx(3.0)
    assert f["desire_weight_mean"][d] == pytest.approx(0.25) and f["desire_weight_mean"][3] == 0
    assert f["explorer"].tolist() == [0, 0, 1, 0]
    assert f["strategy_relate"].tolist() == [0, 0, 1, 0] and f["strategy_what"].sum() == 0
    assert f["strategy_matches_intent"].tolist() == [0, 0, 1, 0]


def test_path_features_without_time_or_query(graph, arrays):
    pf = PathFeaturizer(graph, arrays)
    ctx = ScoringContext(graph, arrays, ("hub",), None)
    x = pf.features([ROUTE_B, ROUTE_D], ctx)
    f = {name: x[:, j] for j, name in enumerate(pf.names)}
    assert f["log_age_days"].tolist() == [0, 0] and f["stale_fraction"].tolist() == [0, 0]
    assert f["attr_sim_max"].tolist() == [0, 0] and f["end_name_sim"].tolist() == [0, 0]
    assert f["desire_stat_0"].tolist() == [0, 0]
    # before tb2 existed, tb1 was current
    early = pf.features([ROUTE_B], _ctx(graph, arrays, days=1.0))
    assert early[0, pf.names.index("stale_fraction")] == 0


def test_text_vectors_follow_array_order(graph, arrays):
    pf = PathFeaturizer(graph, arrays)
    enc = make_encoder("hashing")
    assert np.allclose(
        pf.entity_vectors(), enc.encode(graph.entities.set_index("id")["name"][arrays.entity_ids])
    )
    contents = graph.attributes.set_index("id")["content"][arrays.attribute_ids]
    assert np.allclose(pf.attribute_vectors([3, 0]), enc.encode(contents.iloc[[3, 0]]))  # encoded on demand
    assert np.allclose(pf.attribute_vectors(), enc.encode(contents))
    assert pf.attribute_vectors().shape == (5, 384) and pf.aspect_vectors([2]).shape == (1, 384)


def test_index_lists_every_hop_with_its_path_and_position(graph, arrays):
    b = PathFeaturizer(graph, arrays).index([BARE, ROUTE_D])
    ent = arrays.entity_index
    assert b.start.tolist() == [ent["a"], ent["hub"]] and b.end.tolist() == [ent["a"], ent["d"]]
    assert b.ent.tolist() == [ent[e] for e in ("a", "hub", "m", "d")]
    assert b.ent_owner.tolist() == [0, 1, 1, 1] and b.ent_pos.tolist() == [0, 0, 2, 4]
    assert b.dep.tolist() == [2, 3] and b.dep_pos.tolist() == [1, 3] and b.dep_dir.tolist() == [1, -1]
    assert b.asp.tolist() == [-1, 2] and b.asp_pos.tolist() == [-1, 5]
    assert b.att_owner.tolist() == [1, 1] and b.att_pos.tolist() == [6, 7] and b.length.tolist() == [1, 8]


def test_unknown_ids_are_named(graph, arrays):
    pf = PathFeaturizer(graph, arrays)
    bad = Path.of(Hop.entity("hub"), Hop.dependency("zz"), Hop.entity("a"))
    with pytest.raises(KeyError, match="id 'zz' is not in this graph"):
        pf.features([ROUTE_A, bad], _ctx(graph, arrays))
