from __future__ import annotations

import pandas as pd
import pytest

from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Dependency,
    Entity,
    EntityType,
    GraphValidationError,
    KnowledgeGraph,
    Memory,
    Mention,
)

T = pd.Timestamp("2026-03-01T09:30:00.123Z")


def small_graph(**changes):
    records = {
        "memories": [Memory(id="m1", content="signet uses sqlite", created_at=T)],
        "entities": [Entity(id="e1", name="signet", entity_type=EntityType.PROJECT),
                     Entity(id="e2", name="sqlite", entity_type="extracted")],
        "aspects": [Aspect(id="a1", entity_id="e1", name="storage", weight=0.8)],
        "attributes": [
            Attribute(id="t1", aspect_id="a1", memory_id="m1", content="stores in sqlite",
                      status="superseded", superseded_by="t2"),
            Attribute(id="t2", aspect_id="a1", memory_id="m1", content="stores in sqlite WAL"),
            Attribute(id="t3", aspect_id=None, content="unclassified fact", kind="constraint"),
        ],
        "dependencies": [Dependency(id="d1", source_entity_id="e1", target_entity_id="e2",
                                    dependency_type="uses", aspect_id="a1")],
        "mentions": [Mention(memory_id="m1", entity_id="e1"), Mention(memory_id="m1", entity_id="e2")],
    }
    records.update(changes)
    return KnowledgeGraph.from_records(**records)


def test_records_round_trip_through_frames():
    g = small_graph()
    assert g.entity("e2").entity_type == "extracted"  # open strings
    assert g.dependency("d1").reason == "single-memory" and g.dependency("d1").confidence == 0.7
    assert g.attribute("t3").aspect_id is None
    assert g.memory("m1").created_at == T
    assert list(g.attribute_entity_ids()) == ["e1", "e1", None]
    assert [a.id for a in g.records("attributes")] == ["t1", "t2", "t3"]
    assert g == small_graph() and g.diff(small_graph()) == []


def test_diff_names_the_table():
    other = small_graph(entities=[Entity(id="e1", name="signet", entity_type="project"),
                                  Entity(id="e2", name="SQLite", entity_type="extracted")])
    assert other != small_graph()
    assert small_graph().diff(other)[0].startswith("entities:")


@pytest.mark.parametrize(("change", "message"), [
    ({"attributes": [Attribute(id="t9", aspect_id="nope", content="x")]},
     "entity_attributes row 't9': aspect_id 'nope' does not exist in entity_aspects"),
    ({"dependencies": [Dependency(id="d9", source_entity_id="e1", target_entity_id="ghost",
                                  dependency_type="uses")]},
     "entity_dependencies row 'd9': target_entity_id 'ghost' does not exist in entities"),
    ({"dependencies": [Dependency(id="d9", source_entity_id="e1", target_entity_id="e2",
                                  dependency_type="uses", confidence=float("nan"))]},
     r"entity_dependencies row 'd9': confidence nan is not a number in \[0, 1\]"),
    ({"dependencies": [Dependency(id="d9", source_entity_id="e1", target_entity_id="e2",
                                  dependency_type="uses", confidence=1.2)]},
     r"entity_dependencies row 'd9': confidence 1.2 is not a number in \[0, 1\]"),
    ({"dependencies": [Dependency(id="d9", source_entity_id="e1", target_entity_id="e2",
                                  dependency_type="uses", reason="vibes")]},
     "entity_dependencies row 'd9': unknown reason 'vibes'; expected one of: inferred"),
    ({"attributes": [Attribute(id="t9", content="x", kind="rule")]},
     "entity_attributes row 't9': unknown kind 'rule'; expected one of: attribute, constraint"),
    ({"attributes": [Attribute(id="t9", content="x", status="gone")]},
     "entity_attributes row 't9': unknown status 'gone'"),
    ({"attributes": [Attribute(id="t9", content="x", superseded_by="t404")]},
     "entity_attributes row 't9': superseded_by 't404' does not exist in entity_attributes"),
    ({"entities": [Entity(id="e1", name="a"), Entity(id="e1", name="b")], "aspects": [],
      "dependencies": [], "mentions": []},
     r"entities: duplicate key \['e1'\]"),
    ({"mentions": [Mention(memory_id="m404", entity_id="e1")]},
     "memory_entity_mentions row 'm404/e1': memory_id 'm404' does not exist in memories"),
])
def test_bad_rows_are_named(change, message):
    with pytest.raises(GraphValidationError, match=message):
        small_graph(**change)


def test_bad_timestamp_and_unknown_columns_are_named():
    g = small_graph()
    with pytest.raises(GraphValidationError, match="entities: column 'created_at' holds a bad value"):
        g.replace(entities=g.entities.assign(created_at=["soon", "later"]))
    with pytest.raises(GraphValidationError, match=r"entities: unknown columns \['colour'\]"):
        g.replace(entities=g.entities.assign(colour="red"))


def test_signet_timestamp_formats_parse_to_the_same_instant():
    from signet_rl.graph.model import to_timestamp

    parsed = to_timestamp(pd.Series(["2026-03-01T09:30:00.123Z", "2026-03-01 09:30:00.123",
                                     "2026-03-01T09:30:00.123+00:00"]))
    assert (parsed == T).all()
