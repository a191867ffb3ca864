"""Synthetic benchmark v4: v1–v3 are unchanged by it; a value's statements share no word stem, no community
and no dependency; the decoys are written, in the control graph too."""

from __future__ import annotations

import itertools
import re

import pytest

from signet_rl.datasets import vocab as V
from signet_rl.datasets.registry import load_dataset
from signet_rl.datasets.synthetic import generate
from signet_rl.datasets.synthetic_v4 import make_config_v4
from signet_rl.evaluation.harness import dataset_hash
from signet_rl.text.terms import STOP_WORDS


@pytest.fixture(scope="module")
def v4():
    return generate("small", seed=0, version=4)


@pytest.fixture(scope="module")
def control():
    return generate("small", seed=0, version=4, principles=0)


def stems4(text: str) -> set[str]:
    """Content-word stems, cut at four letters (stricter than the value detector's five)."""
    return {w[:4] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3 and w not in STOP_WORDS}


def test_v1_to_v3_are_unchanged_by_version_4():
    # dataset_hash and config hash of small seed 0 per version, taken on the commit before v4 (c5dcfd3)
    for version, data_hash, cfg_hash in ((1, "935bc245cf1f1b8b", "30f1d1ce03919f3a"),
                                         (2, "d4f4d52f1ee5b337", "e506675624cc66b7"),
                                         (3, "d9e961b5535a9e39", "98dafd43b7f2fc50")):
        d = generate("small", seed=0, version=version)
        assert (dataset_hash(d), d.meta["config_hash"]) == (data_hash, cfg_hash)
    assert dataset_hash(generate("small", seed=7, version=3, drift=True)) == "fde806e809d3639a"


def test_version_4_is_asked_for_by_option_and_is_its_own(v4):
    d = load_dataset("synthetic:small:0", options={"version": 4})
    assert d.meta["generator_version"] == 4 and d.meta["config"]["generator_version"] == 4
    assert dataset_hash(d) == dataset_hash(v4) == "5784074081319454"
    assert dataset_hash(generate("small", seed=0, version=4)) == dataset_hash(v4)  # deterministic
    assert dataset_hash(generate("small", seed=1, version=4)) != dataset_hash(v4)


def test_bad_v4_knobs_are_named():
    with pytest.raises(ValueError, match=r"synthetic config: decoy_statements=2 must be in \[3, 6\] "
                                         r"\(a decoy spans at least 3 communities, as a principle does\)"):
        make_config_v4("tiny", decoy_statements=2)
    with pytest.raises(ValueError, match=r"synthetic config: topic_decoys=7 must be an integer in \[0, 6\]"):
        make_config_v4("tiny", topic_decoys=7)
    with pytest.raises(ValueError, match=r"synthetic config: principle_entities=9 must be in \[3, 8\]"):
        make_config_v4("tiny", principle_entities=9)
    with pytest.raises(ValueError, match=r"unknown synthetic v4 config keys \['nope'\]"):
        make_config_v4("tiny", nope=1)


def test_no_two_paraphrases_of_a_value_share_a_word_stem():
    for name, bank in V.PRINCIPLES_V4.items():
        assert len(bank) == 8
        for a, b in itertools.combinations(bank, 2):
            assert not stems4(a) & stems4(b), (name, a, b)


def _owner(ds):
    aspect_owner = ds.graph.aspects.set_index("id")["entity_id"]
    return ds.graph.attributes.set_index("id")["aspect_id"].map(aspect_owner)


def _linked(ds, ents) -> bool:
    deps = ds.graph.dependencies
    return bool((deps["source_entity_id"].isin(ents) & deps["target_entity_id"].isin(ents)).any())


def test_principles_are_paraphrases_in_unlinked_communities(v4):
    att = v4.truth.labels["attributes"]
    text = v4.graph.attributes.set_index("id")["content"]
    ents = v4.truth.labels["entities"].set_index("entity_id")
    owner = _owner(v4)
    planted = att[att["principle"].map(lambda x: isinstance(x, str))]
    assert planted.groupby("principle").size().to_dict() == {p: 4 for p in V.PRINCIPLES_V4}
    for name, grp in planted.groupby("principle"):
        texts = [text[a] for a in grp["attribute_id"]]
        assert set(texts) <= set(V.PRINCIPLES_V4[name]) and len(set(texts)) == 4
        for a, b in itertools.combinations(texts, 2):
            assert not stems4(a) & stems4(b)
        holders = owner[grp["attribute_id"]].to_numpy()
        assert ents.loc[holders, "community"].nunique() == 4 and not ents.loc[holders, "noise"].any()
        assert not _linked(v4, set(holders))  # no dependency between any two of them
    # a seed draws its own wordings: seed 1's statements of some value differ from seed 0's
    other = generate("small", seed=1, version=4)
    lab1 = other.truth.labels["attributes"]
    t1 = other.graph.attributes.set_index("id")["content"]
    draws0 = {n: {text[a] for a in g["attribute_id"]} for n, g in planted.groupby("principle")}
    draws1 = {n: {t1[a] for a in g["attribute_id"]}
              for n, g in lab1[lab1["principle"].map(lambda x: isinstance(x, str))].groupby("principle")}
    assert draws0 != draws1


def test_the_control_plants_no_principle_but_keeps_every_decoy(v4, control):
    for ds in (v4, control):
        att = ds.truth.labels["attributes"]
        text = ds.graph.attributes.set_index("id")["content"]
        ents = ds.truth.labels["entities"].set_index("entity_id")
        owner = _owner(ds)
        decoys = att[att["category"].isin(["topic_decoy", "near_miss"])]
        assert decoys.groupby("category")["decoy"].nunique().to_dict() == {"near_miss": 5, "topic_decoy": 6}
        assert len(decoys) == 44  # 4 statements per topic (6) and per near-missed value (5)
        for (cat, name), grp in decoys.groupby(["category", "decoy"]):
            texts = [text[a] for a in grp["attribute_id"]]
            bank = (V.TOPIC_DECOYS_V4 if cat == "topic_decoy" else V.NEAR_MISS_V4)[name]
            assert set(texts) <= set(bank) and len(set(texts)) == 4
            if cat == "topic_decoy":  # one topic word in every statement, in 4 unlinked communities
                assert all(name.rstrip("s") in t for t in texts), texts
            holders = owner[grp["attribute_id"]].to_numpy()
            assert ents.loc[holders, "community"].nunique() == 4 and not _linked(ds, set(holders))
    assert not control.truth.labels["attributes"]["principle"].map(lambda x: isinstance(x, str)).any()


def test_principle_statements_are_needed_as_in_v3(v4):
    att = v4.truth.labels["attributes"]
    planted = set(att.loc[att["principle"].map(lambda x: isinstance(x, str)), "attribute_id"])
    decoys = set(att.loc[att["category"].isin(["topic_decoy", "near_miss"]), "attribute_id"])
    needed = {a for q in v4.queries for a in v4.truth[q.id].needed}
    assert needed & planted  # some query needs a principle's statement (fact class "principle")
    assert not needed & decoys  # a decoy is never needed (like v2's near-duplicates)
