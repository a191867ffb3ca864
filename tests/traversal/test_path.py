from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet_rl.traversal.path import Hop, HopKind, Path, PathError

ids = st.text(min_size=1, max_size=12)


@st.composite
def paths(draw):
    hops = [Hop.entity(draw(ids))]
    for _ in range(draw(st.integers(0, 3))):
        hops += [Hop.dependency(draw(ids), draw(st.sampled_from([1, -1]))), Hop.entity(draw(ids))]
    if draw(st.booleans()):
        hops.append(Hop.aspect(draw(ids)))
        hops += [Hop.attribute(draw(ids)) for _ in range(draw(st.integers(1, 3)))]
    return Path(tuple(hops))


@given(paths())
def test_serialisation_round_trips_and_ids_are_stable(path):
    again = Path.parse(path.serialise())
    assert again == path and hash(again) == hash(path) and again.id == path.id
    assert path.id.startswith("p-") and len(path.id) == 18


def test_views_and_identity():
    p = Path.of(
        Hop.entity("e1"),
        Hop.dependency("d7", -1),
        Hop.entity("e2"),
        Hop.aspect("a3"),
        Hop.attribute("t9"),
        Hop.attribute("t10"),
        strategy="what",
    )
    assert p.entities == ("e1", "e2") and p.dependencies == ("d7",) and p.aspects == ("a3",)
    assert p.attributes == ("t9", "t10") and p.length == 5 and p.start == "e1"
    assert p.serialise() == "E:e1>D-:d7>E:e2>A:a3>T:t9>T:t10"
    assert p == Path(p.hops, strategy="relate", explorer=True)  # how it was found is not identity
    assert p.id == "p-" + __import__("hashlib").sha256(p.serialise().encode()).hexdigest()[:16]
    assert {p: 1}[Path.parse(p.serialise())] == 1
    odd = Path.of(Hop.entity("conv-26:D1:3"), Hop.aspect("a>b%c"), Hop.attribute("x"))
    assert Path.parse(odd.serialise()) == odd


@pytest.mark.parametrize(
    ("hops", "message"),
    [
        ((), "a path needs at least one hop"),
        ((Hop.aspect("a"),), r"hop 0 \(A:a\): a aspect cannot follow start; expected entity"),
        (
            (Hop.entity("e"), Hop.attribute("t")),
            "a attribute cannot follow a entity hop; expected aspect, dependency",
        ),
        ((Hop.entity("e"), Hop.dependency("d"), Hop.aspect("a")), "a aspect cannot follow a dependency hop"),
        ((Hop.entity(""),), "hop 0: bad id ''"),
    ],
)
def test_bad_paths_are_named(hops, message):
    with pytest.raises(PathError, match=message):
        Path(hops)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("X:e1", "token 0 'X:e1': expected KIND:id"),
        ("E:e1>D:d1>E:e2", "token 1 'D:d1': a dependency needs a direction"),
        ("E+:e1", "only dependencies carry a direction"),
    ],
)
def test_bad_serialisations_are_named(text, message):
    with pytest.raises(PathError, match=message):
        Path.parse(text)


def test_direction_is_validated():
    with pytest.raises(PathError, match="direction must be"):
        Hop.dependency("d", 0)
    assert Hop.dependency("d", -1).kind is HopKind.DEPENDENCY
