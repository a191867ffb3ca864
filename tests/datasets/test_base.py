"""The shared dataset records: a bare string where a tuple of ids belongs is one id, never its characters."""

from __future__ import annotations

import re

import pytest

from signet_rl.datasets.base import Truth


def test_a_bare_string_is_one_id():
    t = Truth("q1", needed="conv-1:D1:3", needed_kind="memory", misleading="a-7", answers="Paris")
    assert (t.needed, t.misleading, t.answers) == (("conv-1:D1:3",), ("a-7",), ("Paris",))
    lists = Truth("q1", needed=["m1", "m2"], needed_kind="memory", answers=["x"])
    assert lists.needed == ("m1", "m2") and lists.answers == ("x",)  # sequences become tuples
    assert Truth("q1", needed=(), needed_kind="memory").needed == ()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("needed", 7, "Truth for 'q1': needed must be ids (a tuple of strings), got 7"),
        ("needed", None, "Truth for 'q1': needed must be ids (a tuple of strings), got None"),
        ("misleading", {"a": 1}, "Truth for 'q1': misleading must be ids (a tuple of strings), got {'a': 1}"),
    ],
)
def test_something_else_is_refused(field, value, message):
    args = {"query_id": "q1", "needed": ("m1",), "needed_kind": "memory", field: value}
    with pytest.raises(ValueError, match=re.escape(message)):
        Truth(**args)


def test_fold_all_trains_on_every_query_and_a_bad_fold_is_named():
    from signet_rl.datasets.synthetic import generate

    ds = generate("tiny", seed=0)
    every = ds.learning_split(k=3, fold="all")
    assert {q.split for q in every.queries} == {"train"} and len(every.queries) == len(ds.queries)
    assert every.meta["learning_split"]["fold"] == "all"
    cut = ds.learning_split(k=3, fold=1)
    assert {q.split for q in cut.queries} == {"train", "validation", "test"}
    for bad in (3, -1, "some", True):
        with pytest.raises(ValueError, match=re.escape(f"fold={bad!r} must be in [0, 3) or 'all'")):
            ds.learning_split(k=3, fold=bad)
