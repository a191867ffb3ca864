"""The flat variants of the yardstick issue on a hand-built graph: each fusion formula against hand-computed
values, Signet's graph boost and constraints section, window expansion, and best_flat's resolution from a
frozen choice file with its bad inputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport, Truth
from signet_rl.datasets.synthetic import generate
from signet_rl.graph.model import Aspect, Attribute, Dependency, Entity, KnowledgeGraph, Memory, Mention
from signet_rl.retrieval.flat import BEST_FLAT_FILE, best_flat, best_flat_choice, flat_variant
from signet_rl.retrieval.fusion import minmax_fusion

T0 = pd.Timestamp("2026-01-01", tz="UTC")

#: Hand-chosen unit vectors: cosine(query, m1) = 0.6, cosine(query, m2) = 1.0, cosine(query, m3) = 0.
VECTORS = {
    "apple banana": [1.0, 0.0],
    "apple banana split": [0.6, 0.8],
    "apple cherry": [1.0, 0.0],
    "durian": [0.0, 1.0],
}


class FixedEncoder:
    """An encoder whose vectors are written above, so cosine similarities are known by hand."""

    name = "fixed-2"
    dim = 2

    def encode(self, texts: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
        return np.asarray([VECTORS.get(t, [0.0, 0.0]) for t in texts], dtype=np.float32)


def _dataset(memories: list[Memory], **records) -> Dataset:
    graph = KnowledgeGraph.from_records(memories=memories, **records)
    query = Query(
        id="q", text="apple banana", graph_id="main", split="test", timestamp=T0 + pd.Timedelta("1D")
    )
    truth = GroundTruth([Truth(query_id="q", needed=(), needed_kind="memory")])
    return Dataset("hand", {"main": graph}, [query], truth, LoadReport(), {})


@pytest.fixture(scope="module")
def fruit() -> Dataset:
    """m1 "apple banana split" (both query words), m2 "apple cherry" (one), m3 "durian" (none); entity
    banana (mentioned by m2) depends on entity split (mentioned by m1); banana has a constraint."""
    mems = [
        Memory(id="m1", content="apple banana split", created_at=T0),
        Memory(id="m2", content="apple cherry", created_at=T0 + pd.Timedelta("1s")),
        Memory(id="m3", content="durian", created_at=T0 + pd.Timedelta("2s")),
    ]
    return _dataset(
        mems,
        entities=[Entity(id="e1", name="Banana"), Entity(id="e2", name="Split")],
        dependencies=[
            Dependency(id="d1", source_entity_id="e2", target_entity_id="e1", dependency_type="uses")
        ],
        mentions=[Mention(memory_id="m2", entity_id="e1"), Mention(memory_id="m1", entity_id="e2")],
        aspects=[Aspect(id="a1", entity_id="e1", name="care")],
        attributes=[
            Attribute(id="c1", content="never peel with a knife", aspect_id="a1", kind="constraint",
                      importance=0.9, created_at=T0),
            Attribute(id="c2", content="keep cool", aspect_id="a1", kind="constraint", importance=0.5,
                      created_at=T0),
            Attribute(id="c3", content="written later", aspect_id="a1", kind="constraint", importance=1.0,
                      created_at=T0 + pd.Timedelta("30D")),
        ],
    )  # fmt: skip


def _scores(dataset: Dataset, variant: str, **knobs) -> list[tuple[str, float]]:
    r = flat_variant(variant, encoder=FixedEncoder(), cache=False, **knobs)
    r.index(dataset)
    return [(k, round(s, 6)) for k, s, _ in r.scores(dataset.queries[0])]


def test_signet_linear_fusion_by_hand(fruit):
    # bm25s min-max: m1 (both words) 1, m2 (one word) 0, which counts as "not found by keyword".
    # m1: 0.7 * 0.6 + 0.3 * 1 = 0.72; m2 keeps its vector score 1.0; m3 (0) is under min_score 0.1.
    assert _scores(fruit, "flat_hybrid_bm25s", importance_min=None) == [("m2", 1.0), ("m1", 0.72)]


def test_minmax_linear_fusion_by_hand(fruit):
    # vector min-max: m2 1, m1 0.6, m3 0; keyword min-max: m1 1, m2 0.
    got = _scores(fruit, "flat_minmax", alpha=0.5)
    assert got == [("m1", 0.8), ("m2", 0.5), ("m3", 0.0)]
    got = _scores(fruit, "flat_minmax", alpha=0.1)  # m1: 0.1*0.6 + 0.9; m2: 0.1
    assert got == [("m1", 0.96), ("m2", 0.1), ("m3", 0.0)]
    assert minmax_fusion({"a": 2.0}, {}, 0.3) == [("a", pytest.approx(0.3))]  # one hit normalises to 1


def test_reciprocal_rank_fusion_by_hand(fruit):
    # vector ranks m2, m1, m3; keyword ranks m1, m2; divided by the best possible 2 / (k + 1).
    for k in (10, 60):
        top = 2 / (k + 1)
        both = round((1 / (k + 1) + 1 / (k + 2)) / top, 6)
        assert _scores(fruit, "flat_rrf", rrf_k=k) == [
            ("m1", both),
            ("m2", both),
            ("m3", round(1 / (k + 3) / top, 6)),
        ]


def test_graph_boost_reaches_one_hop_and_the_constraints_section_comes_first(fruit):
    # "banana" names e1; e2 (split) is one hop away and mentioned by m1: 0.85 * 0.72 + 0.15 = 0.762;
    # m2 mentions e1 itself: 0.85 * 1.0 + 0.15 = 1.0.
    got = _scores(fruit, "flat_signet_full", keyword="bm25s", min_score=0.1)
    assert got == [("m2", 1.0), ("m1", 0.762)]
    full = flat_variant("flat_signet_full", keyword="bm25s", encoder=FixedEncoder(), cache=False)
    full.index(fruit)
    units = full.retrieve(fruit.queries[0], budget_chars=2000)
    # c3 is written after the query's time; the rest, most important first
    assert units[0].kind == "constraints"
    assert units[0].text == "Constraints:\nBanana: never peel with a knife; keep cool"
    assert units[0].items == ("c1", "c2")
    assert [u.items for u in units[1:]] == [("m2",), ("m1",)]
    # the section is whole constraints within the budget, most important first; a shorter, less important
    # one may still fit where a longer one did not
    short = full.retrieve(fruit.queries[0], budget_chars=45)
    assert short[0].text == "Constraints:\nBanana: never peel with a knife" and short[0].items == ("c1",)
    assert full.retrieve(fruit.queries[0], budget_chars=40)[0].items == ("c2",)


@pytest.fixture(scope="module")
def turns() -> Dataset:
    """Five turns in time order; only t3 and t5 mention "apple"."""
    texts = ["hello there", "nice weather", "apple banana pie", "lovely indeed", "apple crumble"]
    mems = [
        Memory(id=f"t{i + 1}", content=t, created_at=T0 + pd.Timedelta(seconds=i))
        for i, t in enumerate(texts)
    ]
    return _dataset(mems)


def _window(dataset: Dataset, window: int, at: pd.Timestamp | None = None) -> list[tuple[str, str]]:
    r = flat_variant("flat_bm25_open", window=window)
    r.index(dataset)
    q = dataset.queries[0] if at is None else Query("q", "apple banana", "main", "test", at)
    return [(u.items[0], u.meta["source"]) for u in r.retrieve(q)]


def test_window_expansion_adds_neighbouring_turns_after_each_hit(turns):
    assert [i for i, _ in _window(turns, 0)] == ["t3", "t5"]
    # nearest first, the earlier first at equal distance; t5's only neighbour, t4, is already injected
    assert _window(turns, 1) == [("t3", "keyword"), ("t2", "window"), ("t4", "window"), ("t5", "keyword")]
    assert [i for i, _ in _window(turns, 2)] == ["t3", "t2", "t4", "t1", "t5"]
    # a neighbour written after the query's time is never injected
    assert [i for i, _ in _window(turns, 1, at=T0 + pd.Timedelta(seconds=2))] == ["t3", "t2"]
    with pytest.raises(ValueError, match=r"^window must be a non-negative integer \(0: off\), got -1$"):
        flat_variant("flat_dense", window=-1)


# -- best_flat ---------------------------------------------------------------------------------------------
CHOICE = """\
script: experiments/best_flat.py
script_version: 1
date: '2026-12-04'
families:
  synthetic:
    variant: flat_minmax
    params: {encoder: hashing, alpha: 0.3}
    validation: {needed_recall@2000: 0.5}
"""


def test_best_flat_is_resolved_per_family_from_the_frozen_file(tmp_path):
    path = tmp_path / "best_flat.yaml"
    path.write_text(CHOICE)
    r = best_flat("synthetic:medium:0", path)
    assert (r.name, r.fusion, r.alpha, r.keyword, r.gate, r.max_chars) == (
        "best_flat",
        "minmax",
        0.3,
        "bm25s",
        None,
        None,
    )
    assert r.encoder is not None and r.encoder.name == "hashing-384"
    assert flat_variant("best_flat", dataset="synthetic:tiny", path=path).config() == r.config()
    lazy = flat_variant("best_flat", path=path, cache=False)
    lazy.index(generate("tiny"))
    assert lazy.config() == {
        **flat_variant("flat_minmax", encoder="hashing", alpha=0.3).config(),
        "name": "best_flat",
        "family": "synthetic",
    }
    assert best_flat_choice("SYNTHETIC", path)["validation"] == {"needed_recall@2000": 0.5}


def test_the_committed_choice_file_names_every_family():
    for family in ("synthetic", "locomo", "musique"):
        choice = best_flat_choice(family)
        assert choice["split"] == "validation" and choice["trials"] >= 6
        assert best_flat(family).name == "best_flat"
    assert BEST_FLAT_FILE.name == "best_flat.yaml"


def test_best_flat_bad_inputs_name_the_value(tmp_path):
    path = tmp_path / "best_flat.yaml"
    path.write_text(CHOICE)
    with pytest.raises(ValueError) as err:
        best_flat("locomo", path)
    assert str(err.value) == (
        f"best_flat has no frozen choice for dataset family 'locomo' (from 'locomo') in {path}; frozen "
        "families: synthetic; choose one on validation with python experiments/best_flat.py --families locomo"
    )
    with pytest.raises(ValueError) as err:
        flat_variant("flat_magic")
    assert str(err.value) == (
        "unknown flat variant 'flat_magic'; known variants: flat_signet, flat_signet_uncapped, "
        "flat_signet_full, flat_top15, flat_hybrid_bm25s, flat_vector, flat_bm25, flat_dense, "
        "flat_bm25_open, flat_minmax, flat_rrf, best_flat"
    )
    lazy = flat_variant("best_flat", path=path)  # resolved when indexed, from the dataset's name
    with pytest.raises(
        ValueError, match=r"^best_flat has no frozen choice for dataset family 'hand' \(from 'hand'\)"
    ):
        lazy.index(_dataset([Memory(id="m1", content="apple")]))
    path.write_text(CHOICE.replace("flat_minmax", "flat_magic"))
    with pytest.raises(ValueError) as err:
        best_flat("synthetic", path)
    assert str(err.value).startswith(
        f"{path}: families.synthetic.variant is 'flat_magic', not a flat variant"
    )
    missing = tmp_path / "none.yaml"
    with pytest.raises(
        FileNotFoundError, match=r"no frozen best_flat choice file at .*none\.yaml; run python"
    ):
        best_flat("synthetic", missing)


def test_best_flat_file_lives_in_conf():
    assert Path(__file__).resolve().parents[2] / "conf" / "best_flat.yaml" == BEST_FLAT_FILE
