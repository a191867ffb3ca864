"""Synthetic benchmark v3: v2 is unchanged by it, and the planted items have the documented properties."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from signet_rl.datasets.registry import load_dataset
from signet_rl.datasets.synthetic import generate, tokens
from signet_rl.datasets.synthetic_v3 import make_config_v3
from signet_rl.evaluation.harness import dataset_hash


@pytest.fixture(scope="module")
def v3():
    return generate("small", seed=0, version=3)


def test_v2_is_unchanged_by_version_3():
    # Figures of generate(..., version=2) taken on the commit before v3 existed (204186f).
    for preset, seed, extra, cfg_hash, data_hash, counts in (
        ("tiny", 0, {}, "942eb9362d4dfb5e", "799335cdf63a3243", (663, 82, 77, 156)),
        ("small", 0, {}, "e506675624cc66b7", "d4f4d52f1ee5b337", (5623, 779, 569, 1384)),
        ("small", 7, {"drift": True}, "b8856832dee32e41", "194eaaad375a4a67", (5815, 899, 761, 1613)),
    ):
        d = generate(preset, seed=seed, version=2, **extra)
        g = d.graph
        assert d.meta["config_hash"] == cfg_hash and d.meta["generator_version"] == 2
        assert (len(g.attributes), len(g.dependencies), len(g.memories), len(g.mentions)) == counts
        assert dataset_hash(d) == data_hash


def test_version_3_is_asked_for_by_option_and_is_its_own(v3):
    d = load_dataset("synthetic:small:0", options={"version": 3})
    assert d.meta["generator_version"] == 3 and d.meta["config"]["generator_version"] == 3
    assert dataset_hash(d) == dataset_hash(v3) == "d9e961b5535a9e39"
    assert d.meta["config_hash"] != generate("small", seed=0, version=2).meta["config_hash"]


def test_bad_v3_knobs_are_named():
    with pytest.raises(ValueError, match=r"synthetic config: bridge_recurrence=1.5 must be >= 2 \(a bridge "
                                         r"that comes up once is v2's\)"):
        make_config_v3("tiny", bridge_recurrence=1.5)
    with pytest.raises(ValueError, match=r"synthetic config: bridge_span=0.0 must be in \(0, 1\]"):
        make_config_v3("tiny", bridge_span=0.0)
    with pytest.raises(ValueError, match=r"unknown synthetic v3 config keys \['nope'\]"):
        make_config_v3("tiny", nope=1)


def test_noise_entities_are_passing_mentions(v3):
    g = v3.graph
    noise = set(v3.truth.labels["entities"].query("noise")["entity_id"])
    assert len(noise) == 25  # 5% of 500
    m = g.mentions
    assert m[m["entity_id"].isin(noise)].groupby("entity_id")["memory_id"].nunique().to_dict() == {
        e: 1 for e in noise}  # written once, never mentioned again
    own = set(m.loc[m["entity_id"].isin(noise), "memory_id"])
    assert len(own) == 25 and set(m.loc[m["memory_id"].isin(own), "entity_id"]) == noise  # alone
    deps = g.dependencies
    assert not (deps["source_entity_id"].isin(noise) | deps["target_entity_id"].isin(noise)).any()
    owner = g.attribute_entity_ids()
    noise_atts = g.attributes[owner.isin(noise).to_numpy()]
    assert len(noise_atts) == 218 and set(noise_atts["status"]) == {"active"}  # never updated
    assert set(noise_atts["memory_id"]) == own
    # still ordinary text: each noise memory reads like any other ("Noted about X: ...")
    content = g.memories.set_index("id")["content"]
    names = g.entities.set_index("id")["name"]
    for e in noise:
        (mid,) = set(m.loc[m["entity_id"] == e, "memory_id"])
        assert names[e] in content[mid]
    # never needed, never asked about (as in v2)
    focus = v3.truth.labels["queries"]
    assert not (set(focus["x"].dropna()) | set(focus["y"].dropna())) & noise
    assert not {a for q in v3.queries for a in v3.truth[q.id].needed} & set(noise_atts["id"])


#: A word form of each value that each of its statements carries.
VALUE_STEMS = {"privacy": "priva", "simplicity": "simpl", "reproducibility": "reproduc", "rest": "rest",
               "writing": "writ"}


def test_principles_are_one_value_in_paraphrased_statements(v3):
    att = v3.truth.labels["attributes"]
    text = v3.graph.attributes.set_index("id")["content"]
    planted = att[att["principle"].map(lambda x: isinstance(x, str))]
    assert planted.groupby("principle").size().to_dict() == {p: 4 for p in VALUE_STEMS}
    ents = v3.truth.labels["entities"].set_index("entity_id")
    aspect_owner = v3.graph.aspects.set_index("id")["entity_id"]
    owner = v3.graph.attributes.set_index("id")["aspect_id"].map(aspect_owner)
    for name, grp in planted.groupby("principle"):
        texts = [text[a] for a in grp["attribute_id"]]
        assert all(VALUE_STEMS[name] in t for t in texts), texts  # the value is recognisable in each
        assert len(set(texts)) == 4  # no copies
        for i in range(4):
            for j in range(i + 1, 4):
                a, b = tokens(texts[i]), tokens(texts[j])
                assert len(a & b) / len(a | b) < 0.4, (texts[i], texts[j])  # no shared template
        # stated in unrelated contexts
        assert ents.loc[owner[grp["attribute_id"]].to_numpy(), "community"].nunique() == 4


def test_every_bridge_is_needed_by_several_queries(v3):
    att = v3.truth.labels["attributes"]
    bridges = att[att["category"] == "bridge"]
    need = Counter(a for q in v3.queries for a in v3.truth[q.id].needed)
    train = Counter(a for q in v3.split("train") for a in v3.truth[q.id].needed)
    per = bridges.groupby("bridge_group")["attribute_id"].apply(
        lambda ids: (max(need[a] for a in ids), max(train[a] for a in ids)))
    assert per.tolist() == [(3, 3), (5, 5), (7, 0), (3, 0), (3, 0), (3, 0), (2, 0), (6, 4), (3, 3), (5, 1)]
    assert sum(v3.truth[q.id].category == "bridge" for q in v3.queries) == 40  # both copies needed each time
    for q in v3.queries:
        t = v3.truth[q.id]
        if t.category == "bridge":
            assert len(t.needed) == 2 and set(t.needed) <= set(bridges["attribute_id"])


def test_the_drift_turns_the_fact_class_needs_round_too():
    d = generate("tiny", seed=1, version=3, drift=True)
    h = d.truth.labels["hidden"].pivot_table(index=["intent", "key"], columns="period", values="value")
    cls = h[h.index.get_level_values("key").str.startswith("class:")]
    np.testing.assert_allclose(cls["post"].to_numpy(), -cls["pre"].to_numpy())
    kept = generate("tiny", seed=1, version=3, drift=True, drift_classes=False).truth.labels["hidden"]
    h2 = kept.pivot_table(index=["intent", "key"], columns="period", values="value")
    cls2 = h2[h2.index.get_level_values("key").str.startswith("class:")]
    np.testing.assert_allclose(cls2["post"].to_numpy(), cls2["pre"].to_numpy())


def test_after_the_drift_attention_follows_the_change():
    def questions_about_drifted_domains(**extra):
        d = generate("small", seed=0, version=3, drift=True, **extra)
        focus = d.truth.labels["queries"]
        domain = d.truth.labels["entities"].set_index("entity_id")["domain"]
        focus = focus[focus["x"].notna()]
        drifted = focus["x"].map(domain).isin(d.meta["drift_domains"])
        assert d.meta["drift_domains"] == ["infrastructure", "research", "personal"]
        period = focus["after_drift"]
        return {after: (int(drifted[period == after].sum()), int((period == after).sum()))
                for after in (False, True)}

    assert questions_about_drifted_domains() == {False: (92, 149), True: (138, 170)}  # 81% after, 62% before
    assert questions_about_drifted_domains(attention_shift=0.0) == {False: (73, 121), True: (106, 216)}
