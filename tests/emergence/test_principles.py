"""Principles: a pattern across 3 communities is found (and not one inside 1); the three verbs."""

from __future__ import annotations

import pandas as pd
import pytest

from signet_rl.emergence.principles import (
    PrincipleError,
    add_principles,
    confirm,
    correct,
    detect_principles,
    notification,
    reject,
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
from signet_rl.graph.store import read_graph, write_graph

AT = pd.Timestamp("2026-03-01", tz="UTC")
PATTERN = {  # the same preference, said three ways, in three unrelated projects
    "billing": "always prefers small reversible changes over big rewrites",
    "garden": "prefers small reversible changes to big rewrites, always",
    "novel": "always prefers small, reversible changes over one big rewrite",
}
NOISE = {"billing-db": "uses postgres fifteen", "garden-tools": "keeps a rake in the shed",
         "novel-plot": "the heroine leaves in chapter three"}


def graph(communities: dict[str, str]) -> KnowledgeGraph:
    """Six entities; ``communities`` maps each to its community. Each project links to its noise."""
    texts = {**PATTERN, **NOISE}
    return KnowledgeGraph.from_records(
        entities=[Entity(id=e, name=e) for e in texts],
        memories=[Memory(id=f"m-{e}", content=t) for e, t in texts.items()],
        aspects=[Aspect(id=f"a-{e}", entity_id=e, name="preferences" if e in PATTERN else "facts")
                 for e in texts],
        attributes=[Attribute(id=f"t-{e}", aspect_id=f"a-{e}", memory_id=f"m-{e}", content=t)
                    for e, t in texts.items()],
        dependencies=[Dependency(id=f"d-{e}", source_entity_id=e, target_entity_id=f"{e}-{n}",
                                 dependency_type="uses")
                      for e, n in (("billing", "db"), ("garden", "tools"), ("novel", "plot"))],
        communities=[Community(id=c) for c in sorted(set(communities.values()))],
        community_members=[CommunityMember(community_id=c, entity_id=e) for e, c in communities.items()])


THREE = {e: f"c-{e.split('-')[0]}" for e in [*PATTERN, *NOISE]}
ONE = {e: "c-all" for e in [*PATTERN, *NOISE]}


def test_a_pattern_across_three_communities_is_a_principle() -> None:
    (p,) = detect_principles(graph(THREE))
    assert set(p.entity_ids) == {"billing", "garden", "novel"}
    assert p.communities == ("c-billing", "c-garden", "c-novel")
    assert {e["attribute_id"] for e in p.evidence} == {"t-billing", "t-garden", "t-novel"}
    assert {e["memory_id"] for e in p.evidence} == {"m-billing", "m-garden", "m-novel"}
    assert p.text in PATTERN.values() and p.status == "proposed"


def test_the_same_pattern_inside_one_community_is_not() -> None:
    assert detect_principles(graph(ONE)) == []
    assert detect_principles(graph(ONE), min_communities=2) == []
    # an edge between two of the three entities breaks their link: two communities left
    g = graph(THREE)
    linked = g.replace(dependencies=pd.concat([g.dependencies, pd.DataFrame([{
        "id": "d-bg", "source_entity_id": "billing", "target_entity_id": "garden",
        "dependency_type": "uses", "strength": 0.5, "confidence": 0.7,
        "reason": "single-memory"}])], ignore_index=True))
    (p,) = detect_principles(linked, min_communities=2)
    assert len(p.entity_ids) == 3  # billing-novel and garden-novel still agree: one group
    assert detect_principles(graph(THREE), min_communities=4) == []


def test_added_principle_is_an_entity_with_edges_and_evidence_that_the_store_keeps(tmp_path) -> None:
    g = graph(THREE)
    (p,) = detect_principles(g)
    g = add_principles(g, [p], at=AT)
    ent = g.entity(p.id)
    assert (ent.entity_type, ent.description) == ("principle", p.text)
    deps = g.dependencies[g.dependencies["source_entity_id"] == p.id]
    assert sorted(deps["target_entity_id"]) == ["billing", "garden", "novel"]
    assert set(deps["reason"]) == {"pattern-matched"}
    assert detect_principles(g) == []  # found once
    back = read_graph(write_graph(g, tmp_path / "g.db"))
    assert back.meta["principles"][p.id]["evidence"] == [dict(e) for e in p.evidence]
    note = notification(back, p.id)
    assert note["status"] == "proposed" and "embedding" not in note and len(note["evidence"]) == 3


def test_confirm_reject_correct() -> None:
    g = graph(THREE)
    (p,) = detect_principles(g)
    g = add_principles(g, [p], at=AT)

    def edges(graph: KnowledgeGraph) -> set[tuple[str, float]]:
        d = graph.dependencies[graph.dependencies["source_entity_id"] == p.id]
        return set(zip(d["reason"], d["confidence"].round(3), strict=True))

    up = confirm(g, p.id)
    assert edges(up) == {("single-memory", 0.7)} and up.meta["principles"][p.id]["status"] == "confirmed"
    down = reject(g, p.id)
    assert edges(down) == {("inferred", 0.4)} and down.meta["principles"][p.id]["status"] == "rejected"
    assert g.meta["principles"][p.id]["status"] == "proposed"  # the input graph is unchanged
    fixed = correct(g, p.id, "prefers incremental change")
    rec = fixed.meta["principles"][p.id]
    assert rec["text"] == fixed.entity(p.id).description == "prefers incremental change"
    assert rec["evidence"] == g.meta["principles"][p.id]["evidence"]
    assert rec["embedding"] != g.meta["principles"][p.id]["embedding"]


def test_verbs_on_a_principle_that_does_not_exist_name_it() -> None:
    g = graph(THREE)
    with pytest.raises(PrincipleError, match=r"cannot correct principle 'principle-0': it does not "
                                             r"exist; the graph has no principles"):
        correct(g, "principle-0", "x")
    (p,) = detect_principles(g)
    g = add_principles(g, [p], at=AT)
    with pytest.raises(PrincipleError, match=rf"cannot confirm principle 'billing': it does not exist; "
                                             rf"known principles: {p.id}"):
        confirm(g, "billing")
    with pytest.raises(PrincipleError, match=rf"cannot correct principle '{p.id}': the new text is empty"):
        correct(g, p.id, "  ")


def test_a_snake_case_preference_aspect_counts_as_one() -> None:
    """A bug: ``\\b`` does not split ``design_preferences``, so its attributes were never looked at."""
    texts = {"billing": "small reversible changes over big rewrites",
             "garden": "small reversible changes over big rewrites, in the garden too",
             "novel": "small reversible changes over big rewrites, even in chapters"}
    g = graph(THREE)
    attrs = g.attributes.copy()
    attrs["content"] = [texts.get(a.removeprefix("t-"), c) for a, c in zip(attrs["id"], attrs["content"],
                                                                          strict=True)]
    aspects = g.aspects.copy()
    aspects["name"] = ["design_preferences" if n == "preferences" else n for n in aspects["name"]]
    g = g.replace(attributes=attrs, aspects=aspects)
    (p,) = detect_principles(g)
    assert set(p.entity_ids) == {"billing", "garden", "novel"}
    aspects["name"] = ["working notes" if n == "design_preferences" else n for n in aspects["name"]]
    assert detect_principles(g.replace(aspects=aspects)) == []  # neither a decision nor a preference


def test_one_template_filled_in_three_communities_is_not_a_principle() -> None:
    """The same text, or the same wording with other values, at three unrelated entities is a template,
    not one idea said three ways: with ``variant_overlap`` such pairs are never linked."""
    template = {"billing": "always prefers small reversible changes over big rewrites",
                "garden": "always prefers small reversible changes over big rewrites",
                "novel": "always prefers large reversible changes over small rewrites"}
    g = graph(THREE)
    attrs = g.attributes.copy()
    attrs["content"] = [template.get(a.removeprefix("t-"), c) for a, c in zip(attrs["id"], attrs["content"],
                                                                             strict=True)]
    g = g.replace(attributes=attrs)
    assert len(detect_principles(g)) == 1  # without the check the template is "found"
    assert detect_principles(g, variant_overlap=0.4) == []
    (p,) = detect_principles(graph(THREE), variant_overlap=0.4)  # the paraphrased pattern still is
    assert set(p.entity_ids) == {"billing", "garden", "novel"}


def test_a_loose_chain_fails_the_tightness_check() -> None:
    (p,) = detect_principles(graph(THREE), min_tightness=0.5)
    assert set(p.entity_ids) == {"billing", "garden", "novel"}
    assert detect_principles(graph(THREE), min_tightness=0.99) == []


def test_communities_detected_from_structure_when_the_graph_has_none() -> None:
    """Without community rows every entity would be a community of its own. ``community_source="auto"``
    runs Leiden: the three projects are three communities (found), and once their entities form one
    densely linked cluster they are one (not found)."""
    apart = graph(THREE).replace(communities=graph(THREE).communities.iloc[0:0],
                                 community_members=graph(THREE).community_members.iloc[0:0])
    (p,) = detect_principles(apart, community_source="auto")
    assert len(p.communities) == 3 and all(c.startswith("leiden:") for c in p.communities)
    ents = ["billing", "garden", "novel"]
    extra = [{"id": f"x-{a}-{b}", "source_entity_id": f"{a}-{n}", "target_entity_id": f"{b}-{m}",
              "dependency_type": "uses", "strength": 1.0, "confidence": 1.0, "reason": "user-asserted"}
             for a, n in zip(ents, ("db", "tools", "plot"), strict=True)
             for b, m in zip(ents, ("db", "tools", "plot"), strict=True) if a < b]
    extra += [{"id": f"y-{e}-{o}", "source_entity_id": e, "target_entity_id": f"{o}-{m}",
               "dependency_type": "uses", "strength": 1.0, "confidence": 1.0, "reason": "user-asserted"}
              for e in ents for o, m in zip(ents, ("db", "tools", "plot"), strict=True) if o != e]
    together = apart.replace(dependencies=pd.concat([apart.dependencies, pd.DataFrame(extra)],
                                                    ignore_index=True))
    assert detect_principles(together, community_source="auto") == []
    assert len(detect_principles(together, community_source="auto", min_communities=2)) == 0
    with pytest.raises(ValueError, match=r"community_source must be 'graph', 'detect' or 'auto', got 'x'"):
        detect_principles(apart, community_source="x")
