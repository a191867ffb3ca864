"""Constructed memories, the constraints section and slates."""

from __future__ import annotations

import pandas as pd
import pytest

from signet_rl.core.types import Unit
from signet_rl.datasets.synthetic import generate
from signet_rl.graph.model import Aspect, Attribute, Dependency, Entity, KnowledgeGraph, Memory
from signet_rl.rating.items import ItemResolver
from signet_rl.traversal.construct import (
    CONSTRAINTS_HEADER,
    MemoryBuilder,
    build_slate,
    slate_chars,
    tokens_of,
)
from signet_rl.traversal.path import Hop, Path

T0 = pd.Timestamp("2026-01-01", tz="UTC")


def _graph() -> KnowledgeGraph:
    day = pd.Timedelta(days=1)
    return KnowledgeGraph.from_records(
        memories=[Memory(id=f"m{i}", content=f"memory {i}", created_at=T0) for i in range(1, 5)],
        entities=[
            Entity(id="e1", name="signet-api"),
            Entity(id="e2", name="postgres-db"),
            Entity(id="e3", name="ops-team"),
        ],
        aspects=[
            Aspect(id="a1", entity_id="e2", name="deployment", weight=0.9),
            Aspect(id="a2", entity_id="e1", name="release", weight=0.5),
        ],
        attributes=[
            Attribute(
                id="t1",
                aspect_id="a1",
                memory_id="m1",
                content="runs 3 replicas in oregon",
                importance=0.6,
                created_at=T0,
            ),
            Attribute(
                id="t2",
                aspect_id="a1",
                memory_id="m2",
                kind="constraint",
                content="must not deploy on fridays",
                importance=0.9,
                created_at=T0,
            ),
            Attribute(
                id="t3",
                aspect_id="a1",
                memory_id="m1",
                content="runs 2 replicas",
                status="superseded",
                superseded_by="t1",
                created_at=T0 - 10 * day,
            ),
            Attribute(
                id="t4",
                aspect_id="a2",
                memory_id="m3",
                kind="constraint",
                content="needs a rollback plan",
                importance=0.5,
                created_at=T0,
            ),
            Attribute(
                id="t5",
                aspect_id="a2",
                memory_id="m3",
                kind="constraint",
                content="needs a rollback plan",
                importance=0.4,
                created_at=T0,
            ),
            Attribute(
                id="t6",
                aspect_id="a1",
                memory_id="m4",
                kind="constraint",
                content="never drop tables",
                importance=0.7,
                created_at=T0,
            ),
            Attribute(
                id="t7", aspect_id="a1", memory_id="m4", content="runs 3 replicas in oregon", created_at=T0
            ),
        ],
        dependencies=[
            Dependency(
                id="d1",
                source_entity_id="e1",
                target_entity_id="e2",
                dependency_type="uses",
                confidence=0.9,
                reason="multi-memory",
            ),
            Dependency(
                id="d2",
                source_entity_id="e3",
                target_entity_id="e1",
                dependency_type="owned_by",
                confidence=0.7,
            ),
        ],
    )


@pytest.fixture
def builder() -> MemoryBuilder:
    return MemoryBuilder(_graph())


P1 = Path.of(
    Hop.entity("e1"),
    Hop.dependency("d1", 1),
    Hop.entity("e2"),
    Hop.aspect("a1"),
    Hop.attribute("t1"),
    Hop.attribute("t2"),
    strategy="what",
)


def test_construct_exact_text_items_and_tokens(builder: MemoryBuilder) -> None:
    u = builder.construct(P1, score=0.8)
    text = (
        "signet-api —uses (0.9, multi-memory)→ postgres-db · deployment: runs 3 replicas in oregon; "
        "must not deploy on fridays [constraint]"
    )
    assert u.text == text
    assert u.kind == "constructed" and u.score == 0.8
    assert u.items == ("t1", "t2")
    assert u.meta["tokens"] == -(-len(text) // 4) == tokens_of(text)
    assert u.meta["path_id"] == P1.id and u.meta["path"] == P1.serialise()
    assert u.meta["strategy"] == "what" and u.meta["explorer"] is False
    assert u.meta["memories"] == ("m1", "m2")


def test_backward_dependency_keeps_true_direction(builder: MemoryBuilder) -> None:
    p = Path.of(
        Hop.entity("e2"),
        Hop.dependency("d1", -1),
        Hop.entity("e1"),
        Hop.dependency("d2", -1),
        Hop.entity("e3"),
    )
    assert builder.construct(p).text == (
        "postgres-db ←uses (0.9, multi-memory)— signet-api ←owned_by (0.7, single-memory)— ops-team"
    )
    assert builder.construct(p).items == ()
    assert MemoryBuilder(_graph(), entity_items=True).construct(p).items == ("e1", "e3")


def test_stale_attribute_marked_and_time_aware(builder: MemoryBuilder) -> None:
    p = Path.of(Hop.entity("e2"), Hop.aspect("a1"), Hop.attribute("t3"))
    assert builder.construct(p).text == "postgres-db · deployment: runs 2 replicas [superseded]"
    # Before its successor t1 was written, t3 was current.
    before = builder.construct(p, at=T0 - pd.Timedelta(days=1))
    assert before.text == "postgres-db · deployment: runs 2 replicas"


def test_cite_path_counts_its_characters() -> None:
    u = MemoryBuilder(_graph(), cite_path=True).construct(P1)
    assert u.text.endswith(f" [{P1.id}]") and u.meta["tokens"] == tokens_of(u.text)


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        (Path.of(Hop.entity("nope")), KeyError, "no entity with id 'nope'"),
        (Path.of(Hop.entity("e1"), Hop.dependency("d1", -1), Hop.entity("e2")), ValueError, "joins"),
        (Path.of(Hop.entity("e1"), Hop.aspect("a1")), ValueError, "belongs to 'e2'"),
        (Path.of(Hop.entity("e1"), Hop.aspect("a2"), Hop.attribute("t1")), ValueError, "under aspect"),
        (Path.of(Hop.entity("e1"), Hop.aspect("a2"), Hop.attribute("zz")), KeyError, "zz"),
    ],
)
def test_construct_bad_paths(builder: MemoryBuilder, path: Path, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        builder.construct(path)


def test_constraints_section_grouped_dedup_ordered(builder: MemoryBuilder) -> None:
    u = builder.constraints_section(["t4", "t6", "t2", "t5", "t2"])
    assert u is not None and u.kind == "constraints"
    assert u.text == (
        f"{CONSTRAINTS_HEADER}\npostgres-db: must not deploy on fridays; never drop tables\n"
        "signet-api: needs a rollback plan"
    )
    assert u.items == ("t2", "t6", "t4", "t5")  # the duplicate content keeps both ids as items
    assert u.meta["omitted"] == () and u.meta["tokens"] == tokens_of(u.text)
    assert builder.constraints_section([]) is None
    with pytest.raises(ValueError, match="not a constraint"):
        builder.constraints_section(["t1"])


def test_constraints_section_fits_its_budget(builder: MemoryBuilder) -> None:
    u = builder.constraints_section(["t2", "t4", "t6"], budget_chars=60)
    assert u is not None and u.chars <= 60
    assert u.text == f"{CONSTRAINTS_HEADER}\npostgres-db: must not deploy on fridays\n+2 more"
    assert u.meta["omitted"] == ("t6", "t4")
    tiny = builder.constraints_section(["t2", "t4", "t6"], budget_chars=20)
    assert tiny is not None and tiny.text == f"{CONSTRAINTS_HEADER}\n+3 more" and tiny.items == ()
    assert builder.constraints_section(["t2"], budget_chars=5) is None


def _paths() -> list[tuple[Path, float]]:
    p_dup_attrs = Path.of(Hop.entity("e2"), Hop.aspect("a1"), Hop.attribute("t1"))  # covered by P1
    p_same_text = Path.of(Hop.entity("e2"), Hop.aspect("a1"), Hop.attribute("t7"))  # same words as above
    p_dep = Path.of(Hop.entity("e3"), Hop.dependency("d2", 1), Hop.entity("e1"), explorer=True)
    return [(p_dep, 0.5), (P1, 0.9), (P1, 0.85), (p_dup_attrs, 0.7), (p_same_text, 0.6)]


def test_slate_dedup_constraints_first_and_explorer_tagged(builder: MemoryBuilder) -> None:
    slate = build_slate(_paths(), ["t2", "t4"], 2000, builder)
    assert [u.kind for u in slate] == ["constraints", "constructed", "constructed", "constructed"]
    texts = [u.text for u in slate]
    assert texts[1].startswith("signet-api —uses")
    # the covered path is dropped, the identical text appears once and carries both attribute ids
    assert texts[2] == "postgres-db · deployment: runs 3 replicas in oregon"
    assert slate[2].items == ("t7",)
    assert texts[3] == "[speculative] ops-team —owned_by (0.7, single-memory)→ signet-api"
    assert slate[3].meta["speculative"] is True and slate[1].meta["speculative"] is False


def test_slate_identical_text_merges_items(builder: MemoryBuilder) -> None:
    a = Path.of(Hop.entity("e2"), Hop.aspect("a1"), Hop.attribute("t1"))
    b = Path.of(Hop.entity("e2"), Hop.aspect("a1"), Hop.attribute("t7"))
    slate = build_slate([(a, 0.9), (b, 0.8)], [], None, builder)
    assert len(slate) == 1 and slate[0].items == ("t1", "t7")
    assert slate[0].meta["merged_paths"] == (b.id,)


def test_slate_all_covered_by_constraints_is_dropped(builder: MemoryBuilder) -> None:
    p = Path.of(Hop.entity("e2"), Hop.aspect("a1"), Hop.attribute("t2"))
    assert [u.kind for u in build_slate([(p, 1.0)], ["t2"], 2000, builder)] == ["constraints"]


@pytest.mark.parametrize("budget", [25, 60, 100, 150, 200, 260, 400, 2000])
def test_slate_never_exceeds_budget_and_keeps_constraints(builder: MemoryBuilder, budget: int) -> None:
    slate = build_slate(_paths(), ["t2", "t4", "t6"], budget, builder)
    assert slate_chars(slate) <= budget
    assert slate[0].kind == "constraints"  # always present, even when tight
    if budget < 60:  # the constraints alone fill the budget: they win, nothing else is injected
        assert len(slate) == 1 and slate[0].meta["omitted"]


def test_slate_skips_what_does_not_fit_like_fit_budget(builder: MemoryBuilder) -> None:
    small = Path.of(Hop.entity("e3"))
    slate = build_slate([(P1, 0.9), (small, 0.1)], [], 40, builder)
    assert [u.text for u in slate] == ["ops-team"]
    with pytest.raises(ValueError, match="positive"):
        build_slate([], [], 0, builder)


def test_synthetic_single_edge_paths_count_the_right_items() -> None:
    dataset = generate("small", seed=0)
    graph = dataset.graphs["main"]
    builder = MemoryBuilder(graph)
    resolver = ItemResolver(dataset)
    query = next(q for q in dataset.queries if dataset.truth[q.id].needed_kind == "attribute")
    deps = graph.dependencies
    aspects_of = graph.aspects.groupby("entity_id")["id"].apply(list)
    attrs_of = graph.attributes.groupby("aspect_id")["id"].apply(list)
    built = 0
    for ent in graph.entities["id"].iloc[:40]:
        for dep in deps[(deps["source_entity_id"] == ent) | (deps["target_entity_id"] == ent)].itertuples():
            forward = dep.source_entity_id == ent
            other = dep.target_entity_id if forward else dep.source_entity_id
            hops = [Hop.entity(ent), Hop.dependency(dep.id, 1 if forward else -1), Hop.entity(other)]
            for asp in aspects_of.get(other, [])[:1]:
                attrs = attrs_of.get(asp, [])
                path = Path.of(*hops, Hop.aspect(asp), *[Hop.attribute(a) for a in attrs])
                unit = builder.construct(path, score=1.0)
                assert unit.meta["tokens"] == tokens_of(unit.text)
                assert all(graph.attribute(a).content in unit.text for a in attrs)
                assert resolver.unit_items(query, unit) == list(dict.fromkeys(attrs))
                built += 1
            plain = builder.construct(Path.of(*hops))
            assert resolver.unit_items(query, plain) == [] and plain.items == ()
    assert built > 10
    # the resolver counts items, never units: a constructed memory of n attributes is n items
    both = " ".join(graph.attribute(a).content for a in ("att-0000000", "att-0000001"))
    assert resolver.ranking(query, [Unit(text=both, items=("att-0000000", "att-0000001"))]) == [
        "att-0000000",
        "att-0000001",
    ]


def test_walked_edges_carry_their_source_passages() -> None:
    graph = _graph()
    graph.meta["dependency_memory"] = ["m2", "m3"]  # d1 was extracted from m2, d2 from m3 (OpenIE graphs)
    builder = MemoryBuilder(graph, source_chars=7)
    p = Path.of(
        Hop.entity("e3"), Hop.dependency("d2", 1), Hop.entity("e1"), Hop.dependency("d1", 1), Hop.entity("e2")
    )
    u = builder.construct(p)
    assert u.text == (
        "ops-team —owned_by (0.7, single-memory)→ signet-api —uses (0.9, multi-memory)→ "
        "postgres-db\n  source: memory …\n  source: memory …"
    )
    # cut passages are not items (equal text, equal credit); they are named in meta
    assert u.items == () and u.meta["memories"] == ("m3", "m2") and u.meta["cut_sources"] == ("m3", "m2")
    whole = MemoryBuilder(graph, source_chars=0).construct(p)
    assert whole.text.endswith("\n  source: memory 3\n  source: memory 2")
    assert whole.items == ("m3", "m2") and whole.meta["cut_sources"] == ()
    # Without the record (or with sources=False) a path lists no passages.
    assert MemoryBuilder(_graph()).construct(p).items == ()
    assert MemoryBuilder(graph, sources=False).construct(p).items == ()
    graph.meta["dependency_memory"] = ["m2"]
    with pytest.raises(
        ValueError, match=r"graph.meta\['dependency_memory'\] has 1 entries for 2 dependencies"
    ):
        MemoryBuilder(graph)
