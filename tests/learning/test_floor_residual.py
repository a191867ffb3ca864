"""The learned scorers over the hybrid entry learn a residual over best_flat's frozen floor (issue 24): with
no interaction they inject exactly the flat retriever's slate, and ratings move them away from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.base import Dataset, GroundTruth, Truth
from signet_rl.evaluation.harness import evaluate
from signet_rl.graph.model import Entity, KnowledgeGraph, Memory, Mention
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.scorers import make_scorer
from signet_rl.scorers.features import floor_prior

T0 = pd.Timestamp("2024-03-01", tz="UTC")
WORDS = ["apple", "river", "violin", "garden", "rocket", "harbor", "pepper", "candle", "meadow", "bridge",
         "falcon", "lantern", "marble", "orchid", "pirate", "quartz", "saddle", "tunnel", "walnut", "zipper",
         "anchor", "basket", "cactus", "dragon", "engine", "feather", "glacier", "hammer", "island", "jungle",
         "kettle", "ladder", "magnet", "needle", "oyster", "parrot"]  # fmt: skip
N_TRAIN = 30
FLOOR = {"floor": True, "session": False, "entity_walks": False, "graph_walk": False,
         "floor_budget_factor": 6.0}  # fmt: skip
BUDGET = 60  # one turn


def topics() -> Dataset:
    """One session per word: a distractor turn, the answer turn (the evidence), a filler turn. Queries
    before ``N_TRAIN`` train, the rest test."""
    mems, ments = [], []
    ents = [Entity(id="person:ann", name="Ann", entity_type="person", created_at=T0),
            Entity(id="person:bob", name="Bob", entity_type="person", created_at=T0)]  # fmt: skip
    queries, truth = [], []
    for s, w in enumerate(WORDS):
        turns = [f"Ann: {w} {w} {w} {w}, again and again", f"Bob: the {w} secret answer code is {s}",
                 f"Ann: thanks, that helps, number {s}"]  # fmt: skip
        for i, text in enumerate(turns):
            mid = f"c:D{s}:{i + 1}"
            mems.append(Memory(id=mid, content=text, tags=f"session_{s}",
                               created_at=T0 + pd.Timedelta(days=s, seconds=i)))  # fmt: skip
            ments.append(Mention(memory_id=mid, entity_id=f"person:{text.split(':')[0].lower()}"))
        split = "train" if s < N_TRAIN else "test"
        queries.append(Query(id=f"q{s}", text=f"What is the secret answer code of the {w}?", graph_id="c",
                             split=split, timestamp=T0 + pd.Timedelta(days=60 + s)))  # fmt: skip
        truth.append(Truth(f"q{s}", (f"c:D{s}:2",), "memory"))
    graph = KnowledgeGraph.from_records(entities=ents, memories=mems, mentions=ments)
    return Dataset(name="hand:topics", graphs={"c": graph}, queries=queries, truth=GroundTruth(truth))


class FixedFlat:
    """A flat retriever whose ranking is fixed: for the query about word ``s``, its distractor turn, the
    next word's distractor, then its answer turn (rank 2), then its filler and the other distractors."""

    name = "fixed_flat"

    def index(self, dataset: Dataset) -> None:
        self.text = dataset.graphs["c"].memories.set_index("id")["content"].to_dict()

    def retrieve(self, query: Query, budget_chars: int | None = None) -> list[Unit]:
        s = int(query.id[1:])
        nxt = (s + 1) % len(WORDS)
        order = [f"c:D{s}:1", f"c:D{nxt}:1", f"c:D{s}:2", f"c:D{s}:3"]
        order += [f"c:D{t}:1" for t in range(len(WORDS)) if t not in (s, nxt)][:6]
        units = [Unit(self.text[m], (m,), score=1.0 - 0.05 * r, meta={"vector": 1.0 - 0.05 * r})
                 for r, m in enumerate(order)]  # fmt: skip
        return units if budget_chars is None else fit_budget(units, budget_chars)


def scorer(name: str):
    if name == "gnn":
        return make_scorer("gnn", hidden=8, layers=1, n_heads=2, floor_prior=0.3, seed=0)
    return make_scorer("linucb", alpha=0.5, floor_prior=0.3)


@pytest.mark.parametrize("name", ["linucb", "gnn"])
def test_untrained_learned_policy_injects_exactly_best_flats_floor_order(name):
    ds = topics()
    flat = FixedFlat()
    flat.index(ds)
    cfg = {**FLOOR, "session": True, "entity_walks": True}  # walks and session steps among the candidates
    # the policy evaluation reads before any interaction (greedy: LinUCB's confidence width off)
    desire = BanditTrainer(ds, scorer(name), traversal=cfg, flat=flat, progress=False).frozen("untrained")
    assert isinstance(desire, DesirePathRetriever)
    assert not desire.floor_first  # a learned scorer ranks every candidate itself
    for q in ds.queries[:8]:
        cands = desire.candidates(q, 400)
        kinds = {p.kind for p in cands.walk.paths}
        assert "floor" in kinds and kinds - {"floor"}, kinds
        scores = desire.scorer.score(q, cands.walk.paths, cands.context)
        # the residual starts at exactly 0: the score is the floor prior, 0.3 / (1 + flat's rank), 0 off it
        np.testing.assert_allclose(scores, floor_prior(cands.walk.paths, cands.context, 0.3), atol=1e-7)
        for budget in (60, 120, 400):
            want = [u.items for u in flat.retrieve(q, budget)]
            got = desire.retrieve(q, budget)
            assert [u.items for u in got[: len(want)]] == want
            assert all(u.meta["source"] == "floor" for u in got[: len(want)])


def test_linucb_learns_a_residual_that_beats_its_untrained_policy():
    ds = topics()
    flat = FixedFlat()
    config = BanditConfig(epochs=3, budget_chars=BUDGET, slate_size=3, exploration="epsilon", epsilon=0.2,
                          explorer_per_session=0, reinforcement=False, rater_noise=0.0, rater_prob=1.0,
                          eval_every=10_000, checkpoint_every=10_000)  # fmt: skip
    trainer = BanditTrainer(ds, scorer("linucb"), config, traversal=FLOOR, seed=0, flat=flat, progress=False)
    untrained = trainer.frozen("untrained")
    trainer.run()
    res = evaluate(ds, {"flat": flat, "untrained": untrained, "learned": trainer.frozen("learned")},
                   split="test", budget_chars=BUDGET, n_boot=1)  # fmt: skip
    recall = res.rows.groupby("retriever")["needed_recall"].mean()
    assert recall["flat"] == 0.0 and recall["untrained"] == 0.0  # flat's top turn is the distractor
    assert recall["learned"] >= 0.8, recall.to_dict()


class ReverseFlat:
    """A scorer that ranks the floor in the reverse of flat's order, below every other candidate."""

    name = "reverse_flat"

    def prepare(self, graph, arrays) -> None:
        return None

    def score(self, query, paths, context) -> np.ndarray:
        ranks = [context.path_info.get(p.id, {}).get("floor_rank", -1.0) for p in paths]
        return np.asarray([r if r >= 0 else -1.0 for r in ranks], dtype=np.float64)

    def update(self, feedback) -> None:
        return None


def test_floor_keep_injects_flats_head_whatever_a_learned_scorer_says():
    ds = topics()
    flat = FixedFlat()
    flat.index(ds)
    cfg = {**FLOOR, "session": True}
    free = DesirePathRetriever(ReverseFlat(), config=cfg, flat=flat)
    kept = DesirePathRetriever(ReverseFlat(), config={**cfg, "floor_keep": 0.5}, flat=flat)
    assert not free.floor_first and not kept.floor_first  # learned-style: the scorer ranks everything
    for r in (free, kept):
        r.index(ds)
    for q in ds.queries[:5]:
        head = [u.items for u in flat.retrieve(q, 60)]  # what fits half of the 120-character budget
        assert len(head) == 1
        assert [u.items for u in free.retrieve(q, 120)][:1] != head  # the scorer alone drops flat's top turn
        got = kept.retrieve(q, 120)
        assert [u.items for u in got][:1] == head and got[0].meta["source"] == "floor"
        # the rest of the budget follows the scorer: flat's last floor unit next (reverse order)
        floor = free.candidates(q, 120).context.path_info
        last = max(floor.values(), key=lambda rec: rec["floor_rank"])["floor_rank"]
        assert last > 0 and len(got) > 1
        assert floor[got[1].meta["path_id"]]["floor_rank"] == last
    with pytest.raises(ValueError, match=r"TraversalConfig.floor_keep must be a number in \[0, 1\], got 1.5"):
        DesirePathRetriever("prior", config={**cfg, "floor_keep": 1.5})


def test_every_injected_floor_unit_says_whether_flats_head_flats_slate_or_flats_deeper_ranking_gave_it():
    """The evaluation separates a learned slate's floor re-ranking from its walks: ``floor_part`` is ``head``
    for what ``floor_keep`` keeps, ``flat`` / ``deep`` for a floor unit the scorer placed that flat itself
    injects / does not inject at the budget, and absent off the floor; the harness's ``floor_rest_share``
    and ``floor_deep_share`` are those units' share of the injected characters."""
    ds = topics()
    flat = FixedFlat()
    flat.index(ds)
    kept = DesirePathRetriever(ReverseFlat(), config={**FLOOR, "session": True, "floor_keep": 0.5}, flat=flat)
    kept.index(ds)
    q = ds.queries[0]
    flats_slate = {u.items for u in flat.retrieve(q, 120)}
    got = kept.retrieve(q, 120)
    parts = [u.meta.get("floor_part") for u in got]
    assert parts[0] == "head" and parts.count("head") == 1  # the one turn that fits 60 characters
    assert parts[1] == "deep" and got[1].items not in flats_slate  # flat's last floor unit, next (reversed)
    for u, part in zip(got, parts, strict=True):
        assert (part is None) == (u.meta["source"] != "floor")
        if part in ("head", "flat"):
            assert u.items in flats_slate
    res = evaluate(ds, {"kept": kept, "flat": flat}, split="test", budget_chars=120, n_boot=1)
    rows = res.rows.set_index(["retriever", "query_id"])
    first = ds.queries[N_TRAIN]
    row = rows.loc[("kept", first.id)]
    units = kept.retrieve(first, 120)
    chars = sum(u.chars for u in units)
    rest = sum(u.chars for u in units if u.meta.get("floor_part") in ("flat", "deep"))
    deep = sum(u.chars for u in units if u.meta.get("floor_part") == "deep")
    assert 0 < deep <= rest < chars
    assert row["floor_rest_share"] == pytest.approx(rest / chars)
    assert row["floor_deep_share"] == pytest.approx(deep / chars)
    assert np.isnan(rows.loc[("flat", first.id)]["floor_rest_share"])  # flat's units are no desire paths


def test_floor_keep_rates_only_the_candidates_that_compete_for_the_rest():
    ds = topics()
    flat = FixedFlat()
    config = BanditConfig(epochs=1, budget_chars=120, slate_size=3, exploration="epsilon", epsilon=0.5,
                          explorer_per_session=0, reinforcement=False, rater_noise=0.0, rater_prob=1.0,
                          eval_every=10_000, checkpoint_every=10_000)  # fmt: skip
    shown_heads = {}
    for keep in (0.0, 0.5):
        trainer = BanditTrainer(ds, scorer("linucb"), config, traversal={**FLOOR, "floor_keep": keep}, seed=0,
                                flat=flat, progress=False)  # fmt: skip
        trainer.run()
        # flat's top turn for the query about word s is its distractor c:D<s>:1 (the head at 60 characters)
        shown_heads[keep] = sum(
            rec.candidates[i] == f"M:c:D{rec.query_id[1:]}:1"
            for rec in trainer.log.records
            for i in rec.shown
        )
        assert len(trainer.log.records) == N_TRAIN
    assert shown_heads[0.0] > 0 and shown_heads[0.5] == 0, shown_heads
@pytest.mark.parametrize("floor_baseline", [True, False])
def test_untrained_signet_predictor_ranks_best_flats_floor_first_as_its_baseline(floor_baseline):
    """Signet's predictor fuses its network with a baseline ranking; over the hybrid entry that ranking is
    best_flat's floor order (Signet's baseline is its own flat recall), so in cold start (alpha = 1) it
    injects exactly flat's slate. With ``floor_baseline=false`` the prior's order stands instead, and it
    does not."""
    ds = topics()
    flat = FixedFlat()
    flat.index(ds)
    cfg = {**FLOOR, "session": True, "entity_walks": True}
    # the prior as the baseline scorer: its order differs from flat's on this conversation
    predictor = make_scorer(
        "signet_predictor", hidden=8, baseline="prior", floor_baseline=floor_baseline, seed=0
    )
    desire = BanditTrainer(ds, predictor, traversal=cfg, flat=flat, progress=False).frozen("untrained")
    assert desire.scorer.fusion_alpha == 1.0 and not desire.floor_first
    same = []
    for q in ds.queries[:8]:
        cands = desire.candidates(q, 400)
        paths = cands.walk.paths
        assert {p.kind for p in paths} - {"floor"}, "walks and session steps are among the candidates"
        scores = desire.scorer.score(q, paths, cands.context)
        rank = [cands.context.path_info.get(p.id, {}).get("floor_rank", -1.0) for p in paths]
        floor = [i for i in np.argsort(-scores, kind="stable") if rank[i] >= 0]
        want = [u.items for u in flat.retrieve(q, 120)]
        got = [u.items for u in desire.retrieve(q, 120)]
        if floor_baseline:
            # the floor first, in flat's order, every other candidate after it
            top = np.argsort(-scores, kind="stable")[: len(floor)]
            assert [rank[i] for i in top] == sorted(rank[i] for i in floor), q.id
            assert got[: len(want)] == want, q.id
        same.append(got[: len(want)] == want)
    assert all(same) if floor_baseline else not any(same), same
