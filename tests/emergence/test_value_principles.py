"""The value detector: one value said in different words in 3 communities is a principle; in 1 it is not;
a stem shared because the attributes name one entity, a template filled in at several entities, or a word
in too many attributes is not."""

from __future__ import annotations

import pytest

from signet_rl.emergence.principles import add_principles, confirm, detect_value_principles, stems
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

#: one value (patience) said three ways, at one entity of each project
VALUE = {"billing": "waits a day before answering angry mail: patience pays",
         "garden": "lets seedlings grow at their own pace, patience with soil",
         "novel": "rewrites chapters with patience until they read right"}
#: filler: every entity says other things, in words no other attribute shares
FILLER = {
    "billing": ["invoices go out monthly", "stripe webhooks retry thrice", "ledger rows never mutate"],
    "billing-db": ["postgres fifteen hosts ledgers", "vacuum runs nightly", "replica lags seconds"],
    "billing-ui": ["react dashboard shows totals", "dark theme default", "tooltips explain fees"],
    "garden": ["tomatoes along south fence", "compost heap behind shed", "hose leaks slightly"],
    "garden-tools": ["rake hangs inside shed", "spade blade rusted", "wheelbarrow tyre flat"],
    "garden-beds": ["raised beds cedar planks", "mulch keeps weeds down", "carrots sown april"],
    "novel": ["heroine leaves town", "villain owns lighthouse", "ending stays ambiguous"],
    "novel-plot": ["twist lands midway", "flashback explains scar", "storm wrecks harbour"],
    "novel-draft": ["draft sits near ninety thousand words", "editor wants tighter prologue",
                    "cover shows gulls"],
}
PROJECTS = ("billing", "garden", "novel")


def graph(communities: str = "three", extra: dict[str, str] | None = None) -> KnowledgeGraph:
    """Nine entities in three projects (each project's entities linked in a chain); ``communities`` puts
    each project in its own community (``three``) or all in one (``one``); ``extra`` adds one attribute
    per named entity."""
    texts = {e: list(ts) for e, ts in FILLER.items()}
    for e, t in VALUE.items():
        texts[e].append(t)
    for e, t in (extra or {}).items():
        texts[e].append(t)
    def comm(e: str) -> str:
        return f"c-{e.split('-')[0]}" if communities == "three" else "c-all"
    rows = [(e, k, t) for e, ts in texts.items() for k, t in enumerate(ts)]
    return KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e.replace("-", " ")) for e in texts],
        memories=[Memory(id=f"m-{e}-{k}", content=t) for e, k, t in rows],
        aspects=[Aspect(id=f"a-{e}", entity_id=e, name="notes") for e in texts],
        attributes=[Attribute(id=f"t-{e}-{k}", aspect_id=f"a-{e}", memory_id=f"m-{e}-{k}", content=t)
                    for e, k, t in rows],
        dependencies=[Dependency(id=f"d-{e}-{s}", source_entity_id=e, target_entity_id=f"{e}-{s}",
                                 dependency_type="uses")
                      for e, parts in (("billing", ("db", "ui")), ("garden", ("tools", "beds")),
                                       ("novel", ("plot", "draft"))) for s in parts],
        communities=[Community(id=c) for c in sorted({comm(e) for e in texts})],
        community_members=[CommunityMember(community_id=comm(e), entity_id=e) for e in texts])


def test_stems_are_truncated_content_words() -> None:
    assert stems("Patiently rewrites the chapters, patient", 5) == {"patie", "rewri", "chapt"}
    assert stems("Patiently rewrites the chapters", None) == {"patiently", "rewrites", "chapters"}
    with pytest.raises(ValueError, match=r"stem_prefix must be an integer >= 3 or None, got 2"):
        detect_value_principles(graph(), stem_prefix=2)


def test_one_value_in_three_communities_is_a_principle() -> None:
    (p,) = detect_value_principles(graph())
    assert p.communities == ("c-billing", "c-garden", "c-novel")
    assert set(p.entity_ids) == set(PROJECTS)
    assert sorted(e["content"] for e in p.evidence) == sorted(VALUE.values())
    assert p.text in VALUE.values() and p.status == "proposed"
    assert detect_value_principles(graph(), min_communities=4) == []


def test_the_same_value_inside_one_community_is_not() -> None:
    assert detect_value_principles(graph("one")) == []
    assert detect_value_principles(graph("one"), min_communities=2) == []


def test_a_group_no_more_coherent_than_chance_fails_the_significance_test() -> None:
    assert len(detect_value_principles(graph(), min_z=3.0)) == 1
    assert detect_value_principles(graph(), min_z=1e6) == []


def test_attributes_that_name_one_entity_share_no_value() -> None:
    """Three projects that each depend on the same tool share its name, not a value."""
    needs = {"billing-ui": "cannot ship without vacuum", "garden-beds": "vacuum before planting",
             "novel-draft": "vacuum the study first"}  # 'vacuum' also names nothing yet: found
    assert len(detect_value_principles(graph(extra=needs))) == 2
    named = graph(extra={"billing-ui": "cannot ship without the kettle service",
                         "garden-beds": "kettle service waters the beds",
                         "novel-draft": "kettle service saves each chapter"})
    named = named.replace(entities=named.entities.assign(
        name=[n if e != "novel" else "kettle service" for e, n in
              zip(named.entities["id"], named.entities["name"], strict=True)]))
    assert [sorted(p.entity_ids) for p in detect_value_principles(named)] == [sorted(PROJECTS)]
    assert len(detect_value_principles(named, skip_names=False)) == 2


def test_a_template_filled_in_at_three_entities_is_not_a_principle() -> None:
    slots = {"billing-ui": "demo slot every second friday", "garden-beds": "demo slot every second monday",
             "novel-draft": "demo slot every second tuesday"}

    def found(**kw: float) -> list[list[str]]:
        return [sorted(e["content"] for e in p.evidence)
                for p in detect_value_principles(graph(extra=slots), min_z=2.0, **kw)]

    assert found() == [sorted(VALUE.values())]
    # without the slot-variant check (no overlap is >= 1.1) the template is "found" too
    assert sorted(slots.values()) in found(variant_overlap=1.1)


def test_a_slot_value_shared_by_filled_in_templates_is_not_a_value() -> None:
    """'kotlin' in three projects, each time filling a template that elsewhere holds 'julia': the word is
    a slot's value, not a value said three ways."""
    kotlin = {"billing-ui": "uses kotlin notebooks for analysis",
              "garden-beds": "favours kotlin for new services",
              "novel-draft": "wants to learn kotlin properly"}
    julia = {"billing-db": "uses julia notebooks for analysis",
             "garden-tools": "favours julia for new services",
             "novel-plot": "wants to learn julia properly"}
    g = graph(extra={**kotlin, **julia})

    def found(**kw: object) -> list[list[str]]:
        return [sorted(e["content"] for e in p.evidence)
                for p in detect_value_principles(g, min_z=0.0, **kw)]

    assert found() == [sorted(VALUE.values())]
    assert sorted(kotlin.values()) in found(skip_templates=False)


def test_a_word_in_too_many_attributes_is_vocabulary() -> None:
    assert detect_value_principles(graph(), max_df=2) == []
    (p,) = detect_value_principles(graph(), max_df=3)
    assert len(p.evidence) == 3


def test_a_value_principle_takes_the_same_verbs() -> None:
    g = graph()
    (p,) = detect_value_principles(g)
    g = confirm(add_principles(g, [p]), p.id)
    assert g.meta["principles"][p.id]["status"] == "confirmed"
    assert detect_value_principles(g) == []  # found once


def test_the_config_switches_to_the_value_detector() -> None:
    from signet_rl.emergence.components import find_principles
    from signet_rl.emergence.config import EmergenceConfig

    cfg = EmergenceConfig.from_mapping({"principles": True, "principle": {"detector": "values"}})
    (p,) = find_principles(graph(), cfg.principle)
    assert set(p.entity_ids) == set(PROJECTS)
    assert find_principles(graph(), EmergenceConfig().principle) == []  # pairwise default: no decision word
    with pytest.raises(ValueError, match=r"PrincipleParams.detector must be 'pairs' or 'values', got 'x'"):
        EmergenceConfig.from_mapping({"principle": {"detector": "x"}})


def test_the_template_check_is_the_same_in_any_chunking() -> None:
    """The sparse check (row chunks, pair slices, stop words from bitsets) finds exactly the attributes
    that a word-by-word comparison of every pair finds."""
    from signet_rl.emergence.principles import _templated
    from signet_rl.emergence.similar import content_tokens, slot_variant

    texts = [*VALUE.values(), *(t for ts in FILLER.values() for t in ts), "demo slot every second friday",
             "demo slot every second monday", "also goes by Fomo", "also goes by Fiwu", "also goes by Fomo"]
    tokens = [content_tokens(t) for t in texts]
    brute = {i for i in range(len(tokens)) for j in range(len(tokens))
             if i != j and slot_variant(tokens[i], tokens[j], 0.4)}
    assert brute == set(range(len(texts) - 5, len(texts)))  # the two slots; Fiwu and both copies of Fomo
    every = list(range(len(tokens)))
    assert _templated(tokens, every, 0.4) == _templated(tokens, every, 0.4, chunk=1, pairs=1) == brute
