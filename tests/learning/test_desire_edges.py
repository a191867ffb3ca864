"""Desire edges learned online (issue 24): a rated unit wears a shortcut from the query's entries to its
memory, the next query entering there gets that memory as a candidate and ranks it higher, a bad rating
weakens it, weights stay in bounds, the memory-level ablation ignores the entries, and the prequential loop
never lets a question gain from its own rating."""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pandas as pd
import pytest

from signet_rl.core.types import Query, Unit, fit_budget
from signet_rl.datasets.base import GroundTruth, Truth
from signet_rl.evaluation.online import OnlineSystem, prequential, question_order
from signet_rl.learning.desire_edges import DesireEdges, FlatFeedback, OnlineDesire, standardise
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.serving.policy import ServedPolicy
from signet_rl.text.encoders import encode_query, make_encoder
from tests.pipeline.test_hybrid import HYBRID, conversation, flat

# -- the statistic -------------------------------------------------------------------------------------


def test_a_positive_rating_creates_an_edge_and_a_negative_one_weakens_it():
    e = DesireEdges(num_entities=3, num_memories=5, lr=0.5)
    assert len(e) == 0 and e.desire([0]).tolist() == [0.0] * 5
    e.reinforce([0], [3], +1)
    assert len(e) == 1 and math.isclose(e.w[0], math.exp(0.5))
    assert e.desire([0])[3] == pytest.approx(0.5) and e.shortcuts([0]).tolist() == [3]
    assert e.shortcuts([1]).tolist() == []  # conditioned on the entry: another entity has no shortcut
    e.reinforce([0], [3], -1)
    e.reinforce([0], [3], -1)
    assert e.desire([0])[3] == pytest.approx(-0.5) and e.shortcuts([0]).tolist() == []
    # a zero rating of a pair with no edge creates none; of an existing edge, it leaves it as it is
    e.reinforce([1], [2], 0)
    assert len(e) == 1 and e.desire([1]).tolist() == [0.0] * 5


def test_weights_stay_within_floor_and_ceiling_and_cool_toward_neutral():
    e = DesireEdges(num_entities=2, num_memories=2, lr=1.0, floor=0.25, ceiling=2.0, cool=0.5)
    for _ in range(10):
        e.reinforce([0], [0], +1)
        e.reinforce([1], [1], -1)
    assert e.w[:2].tolist() == [2.0, 0.25]
    e.cool(touched=[0])  # edge 0 was rated this step, edge 1 relaxes half way to 1.0
    assert e.w[:2].tolist() == [2.0, 0.625]
    with pytest.raises(ValueError, match=r"rating 2 must be in \[-1, 1\]"):
        e.reinforce([0], [0], 2)
    with pytest.raises(ValueError, match="memory row 7 is outside this graph's 2 memories"):
        e.reinforce([0], [7], 1)
    with pytest.raises(ValueError, match="entity row 5 is outside this graph's 2 entities"):
        e.reinforce([5], [0], 1)
    with pytest.raises(ValueError, match="idf='tfidf': known modes are none, reach, df"):
        DesireEdges(1, 1, idf="tfidf")


def test_the_memory_level_ablation_ignores_the_entries_and_idf_discounts_a_common_entity():
    mem = DesireEdges(num_entities=3, num_memories=4, lr=0.5, conditioned=False)
    mem.reinforce([0], [2], +1)
    assert mem.desire([1])[2] == pytest.approx(0.5) and mem.desire([])[2] == pytest.approx(0.5)
    # df: the speaker (in 3 of 4 memories) counts log(1 + 4/4), a rare entity (1 of 4) log(1 + 4/2)
    idf = DesireEdges(num_entities=2, num_memories=4, lr=0.5, idf="df", entity_df=[3, 1])
    idf.reinforce([0, 1], [2], +1)
    assert idf.desire([0])[2] == pytest.approx(0.5 * math.log(2.0))
    assert idf.desire([1])[2] == pytest.approx(0.5 * math.log(3.0))


def test_standardise_is_zero_for_equal_scores():
    assert standardise([2.0, 2.0]).tolist() == [0.0, 0.0]
    assert standardise([0.0, 1.0]).tolist() == [-1.0, 1.0]


# -- over the hybrid entry ------------------------------------------------------------------------------


def _retriever(**kw):
    ds = conversation()
    small = {"max_paths": 4, "max_floor_paths": 2, "session_paths": 1, "walk_paths": 1}
    ret = DesirePathRetriever("prior", config={**HYBRID, **small}, flat=flat(), floor_first=False)
    ret.index(ds)
    od = OnlineDesire(**kw)
    od.attach(ret)
    return ds, ret, od


def _unit(memory_id: str, text: str = "x") -> Unit:
    return Unit(text=text, items=(memory_id,), meta={"memories": (memory_id,)})


def test_a_worn_shortcut_joins_the_next_querys_pool_and_ranks_higher():
    ds, ret, od = _retriever(beta=5.0, lr=0.5, max_paths=10)
    q = ds.queries[1]  # "What did Ann do in Paris?"
    budget = 60  # a pool of a few candidates: the target turn is outside it
    before = ret.candidates(q, budget)
    target = "c:D2:4"  # "Bob: beagles love to run": no word of the query, no entry entity of it
    assert target not in {m for p in before.walk.paths for m in p.memories}
    od.feedback(q, before.entries, [_unit(target)], [1])
    after = ret.candidates(q, budget)
    desire = [p for p in after.walk.paths if p.strategy == "desire"]
    assert [p.memories for p in desire] == [(target,)] and desire[0].start in before.entries
    assert after.pool.sizes["desire"] == 1 and len(after.walk.paths) == len(before.walk.paths) == 4
    scores = ret.scorer.score(q, after.walk.paths, after.context)
    assert int(np.argmax(scores)) == after.walk.paths.index(desire[0])  # beta 5: first
    units = ret.retrieve(q, budget)
    assert units[0].items == (target,) and units[0].meta["strategy"] == "desire"
    # a bad rating, twice, takes it off the pool again and ranks the memory below its plain score
    od.feedback(q, before.entries, [_unit(target)], [-1])
    od.feedback(q, before.entries, [_unit(target)], [-1])
    assert not [p for p in ret.candidates(q, budget).walk.paths if p.strategy == "desire"]
    # a query entering elsewhere does not see it (conditioned on the entries)
    other = Query(id="q3", text="Rex the beagle", graph_id="c", split="test", timestamp=q.timestamp)
    od2 = _retriever(beta=5.0, lr=0.5)[2]
    assert od2.candidates(other, ["name:rex"]) == []


def test_learn_feeds_the_served_policy_with_its_scorer_frozen(monkeypatch):
    """learn() passes the shown paths and their ratings to ServedPolicy.feedback with learn_scorer=False:
    the policy's edge statistics may learn, its scorer never updates."""
    ds = conversation()
    small = {"max_paths": 4, "max_floor_paths": 2, "session_paths": 1, "walk_paths": 1}
    policy = ServedPolicy.fixed("prior", traversal={**HYBRID, **small})
    ret = policy.retriever(encoder="hashing")
    ret.flat_spec = flat()
    ret.floor_first = False
    ret.index(ds)
    od = OnlineDesire(beta=1.0)
    od.attach(ret)
    seen = []
    real = policy.feedback

    def feedback(fb, learn_scorer=True):
        seen.append((fb, learn_scorer))
        real(fb, learn_scorer)

    monkeypatch.setattr(policy, "feedback", feedback)
    monkeypatch.setattr(policy.scorer, "update", lambda fb: pytest.fail("the scorer must stay frozen"))
    q = ds.queries[0]
    units = ret.retrieve(q, 300)
    assert q.id in od.last and units
    od.learn(q, units, [1] * len(units))
    assert q.id not in od.last and [s[1] for s in seen] == [False]
    fb = seen[0][0][0]
    assert [fb.paths[i].id for i in fb.shown] == [u.meta["path_id"] for u in units]
    assert list(fb.ratings) == [1] * len(units) and len(od.edges["c"]) > 0


# -- flat with feedback ---------------------------------------------------------------------------------


def test_flat_feedback_moves_a_rated_memory_up_its_own_ranking():
    ds = conversation()
    ff = FlatFeedback(beta=10.0, variant="memory", flat=flat(), depth=12, depth_budgets=10.0, lr=1.0)
    ff.index(ds)
    q = ds.queries[1]
    first = ff.retrieve(q, 60)
    deep = ff.flat.retrieve(q, None)
    target = deep[-1].items[0]  # flat's last-ranked turn
    assert target not in {u.items[0] for u in first}
    ff.feedback(q, [Unit(text="t", items=(target,))], [1])
    assert ff.retrieve(q, 60)[0].items == (target,)
    with pytest.raises(ValueError, match="FlatFeedback: unknown variant 'tfidf'; known: memory, knn"):
        FlatFeedback(variant="tfidf")


# -- the prequential loop -------------------------------------------------------------------------------


class _LearnsTheAnswer:
    """Injects nothing until a rating told it which turn helped (a real, if minimal, online learner)."""

    def __init__(self) -> None:
        self.known: list[str] = []

    def index(self, dataset):
        self.text = dataset.graphs["c"].memories.set_index("id")["content"]

    def retrieve(self, query, budget_chars=None):
        return [Unit(text=self.text[t], items=(t,)) for t in self.known]

    def learn(self, query, units, ratings):
        self.known = ["c:D3:3"]  # what the rater would have called helpful for q1


def test_a_question_never_gains_from_its_own_rating():
    ds = conversation()
    learner = _LearnsTheAnswer()
    learner.index(ds)
    rows = prequential(ds, {"l": OnlineSystem(learner, learner.learn)}, [ds.queries[0]], seed=0)
    assert rows["needed_recall"].tolist() == [0.0]  # answered before its own rating
    learner2 = _LearnsTheAnswer()
    learner2.index(ds)
    rows = prequential(ds, {"l": OnlineSystem(learner2, learner2.learn)}, [ds.queries[0]] * 2, seed=0)
    assert rows["needed_recall"].tolist() == [0.0, 1.0]  # the repeat gains from the first one's
    assert rows["recall_new"].tolist()[0] == 0.0 and math.isnan(rows["recall_seen"].tolist()[0])
    assert rows["recall_seen"].tolist()[1] == 1.0 and rows["position"].tolist() == [0, 1]
    # the learner injected nothing for the first, so nothing needed had been rated helpful before either
    assert rows["n_rated"].tolist() == [0, 0]
    learner3 = _LearnsTheAnswer()
    learner3.index(ds)
    system = {"l": OnlineSystem(learner3, learner3.learn)}
    rows = prequential(ds, system, [ds.queries[0]] * 3, seed=0, rater_noise=0.0, rater_prob=1.0)
    assert rows["n_rated"].tolist() == [0, 0, 1] and rows["recall_rated"].tolist()[2] == 1.0


def test_question_order_is_per_graph_and_seeded():
    qs = [Query(id=f"{g}{i}", text="t", graph_id=g, split="test") for g in "ba" for i in range(6)]
    a, b = question_order(qs, 1), question_order(qs, 1)
    assert [q.id for q in a] == [q.id for q in b]
    assert [q.graph_id for q in a] == ["a"] * 6 + ["b"] * 6
    assert [q.id for q in question_order(qs, 2)] != [q.id for q in a]


def test_the_online_desire_report_prints_its_tables_from_prequential_rows():
    """experiments/online_desire.py's tables from real prequential rows (the tiny conversation, two
    seeds): every system row, the paired intervals, the learning curve by question position."""
    from experiment_script import load_experiment

    report = load_experiment("online_desire")
    ds = conversation()
    frames = []
    for seed in (0, 1):
        ff = FlatFeedback(beta=1.0, variant="memory", flat=flat(), depth=12, depth_budgets=10.0)
        ff.index(ds)
        base = flat()
        base.index(ds)
        systems = {"best_flat": OnlineSystem(base), "learned_online": OnlineSystem(ff, ff.feedback)}
        frames.append(prequential(ds, systems, ds.queries, seed=seed, budget_chars=60))
    rows = pd.concat(frames, ignore_index=True)
    text = report.summary(rows)
    assert "| best_flat |" in text and "| learned_online |" in text
    assert "2 questions (0 multi-hop), 2 seed(s)" in text
    paired = report.pairs(rows, "learned_online", ["best_flat"])
    assert "| learned_online − best_flat |" in paired and "| – (0) |" in paired  # no multi-hop question
    assert "| 0–24 | 4 |" in report.curve(rows)  # 2 questions x 2 seeds


def test_the_knn_mode_conditions_on_the_query_itself():
    """knn > 0: the memories rated helpful for earlier queries are this query's shortcuts, weighted by how
    similar each earlier query is to it; with one neighbour, only the most similar query's count."""
    ds, _, od = _retriever(beta=5.0, knn=3, encoder="hashing")
    q1, q2 = ds.queries  # "Where did Ann go hiking with Rex?", "What did Ann do in Paris?"
    od.feedback(q1, [], [_unit("c:D3:3")], [1])
    od.feedback(q2, [], [_unit("c:D1:1")], [1])
    rows = od.graph("c")[1].memory
    again = Query(id="q2b", text=q2.text, graph_id="c", split="test", timestamp=q2.timestamp)
    d = od._knn_desire(again)
    assert d[rows["c:D1:1"]] > d[rows["c:D3:3"]] > 0 and d.sum() == pytest.approx(1.0)
    assert [p.memories for p, _ in od.candidates(again, [])] == [("c:D1:1",), ("c:D3:3",)]
    od.knn = 1
    assert [p.memories for p, _ in od.candidates(again, [])] == [("c:D1:1",)]


# -- review fixes: the knn flat feedback, keep, idf=reach, no ratings, state, the test-read guard ---------


def test_idf_reach_discounts_an_entity_by_the_memories_its_positive_edges_reach():
    """idf='reach': log(1 + M / (1 + n_e)), n_e the memories e's edges of weight above neutral reach; a
    weakened edge does not count."""
    e = DesireEdges(num_entities=2, num_memories=4, lr=0.5, idf="reach")
    e.reinforce([0], [0, 1, 2], +1)  # entity 0 reaches 3 memories: log(1 + 4/4)
    e.reinforce([1], [2], +1)  # entity 1 reaches 1: log(1 + 4/2)
    e.reinforce([1], [3], -1)  # a weakened edge is not reach
    assert e.desire([0])[2] == pytest.approx(0.5 * math.log(2.0))
    assert e.desire([1])[2] == pytest.approx(0.5 * math.log(3.0))
    assert e.desire([1])[3] == pytest.approx(-0.5 * math.log(3.0))


def _knn_flat(**kw):
    ds = conversation()
    ff = FlatFeedback(variant="knn", encoder="hashing", flat=flat(), depth=12, depth_budgets=10.0, **kw)
    ff.index(ds)
    return ds, ff


def test_knn_flat_feedback_boosts_a_rated_memory_for_a_similar_query_only():
    """The knn variant's boost of a memory is the similarity-weighted mean rating the k most similar earlier
    queries gave it (positive cosine only): 1.0 for the same question again, 0 for a dissimilar one; with a
    second, partly similar query (cosine s) the weights are 1 / (1 + s) and s / (1 + s)."""
    ds, ff = _knn_flat(beta=10.0, k=10)
    q1, q2 = ds.queries  # "Where did Ann go hiking with Rex?", "What did Ann do in Paris?"
    same = Query(id="q1b", text=q1.text, graph_id="c", split="test", timestamp=q1.timestamp)
    other = Query(id="z", text="zebra quartz", graph_id="c", split="test", timestamp=q1.timestamp)
    units = [_unit("c:D3:3"), _unit("c:D1:1"), _unit("c:D2:1")]
    assert ff._boost(same, units).tolist() == [0.0, 0.0, 0.0]  # nothing rated yet
    ff.feedback(q1, [_unit("c:D3:3")], [1])
    assert ff._boost(same, units) == pytest.approx([1.0, 0.0, 0.0])
    assert ff._boost(other, units).tolist() == [0.0, 0.0, 0.0]  # cosine with q1 below 0: no neighbour
    # beta 10: the rated turn leads the similar query's slate; the dissimilar query keeps flat's order
    assert ff.retrieve(same, 60)[0].items == ("c:D3:3",)
    base = flat()
    base.index(ds)
    flat_order = [u.items for u in fit_budget(ff._depth(list(base.retrieve(other, None)), 60), 60)]
    assert [u.items for u in ff.retrieve(other, 60)] == flat_order
    ff.feedback(q2, [_unit("c:D1:1")], [1])
    enc = make_encoder("hashing")
    s = float(np.asarray(encode_query(enc, q1.text)) @ np.asarray(encode_query(enc, q2.text)))
    assert 0 < s < 1
    assert ff._boost(same, units) == pytest.approx([1 / (1 + s), s / (1 + s), 0.0])
    ff.k = 1  # one neighbour: only the identical question counts
    assert ff._boost(same, units) == pytest.approx([1.0, 0.0, 0.0])


def test_keep_holds_flats_head_for_its_share_of_the_budget():
    """keep=0.5: the units of flat's ranking that fit half the budget stay first, in flat's order; the
    rated memory comes right after them (without keep it leads)."""
    ds = conversation()
    q = ds.queries[1]
    got = {}
    for keep in (0.0, 0.5):
        ff = FlatFeedback(beta=10.0, variant="memory", keep=keep, flat=flat(), depth=12, depth_budgets=10.0,
                          lr=1.0)  # fmt: skip
        ff.index(ds)
        before = ff.retrieve(q, 120)  # no rating yet: flat's own order
        target = ff.flat.retrieve(q, None)[-1].items[0]  # flat's last-ranked turn
        assert target not in {u.items[0] for u in before}
        ff.feedback(q, [Unit(text="t", items=(target,))], [1])
        got[keep] = (before, ff.retrieve(q, 120), target)
    before, after, target = got[0.0]
    assert after[0].items == (target,)
    before, after, target = got[0.5]
    head = fit_budget(before, 60)
    assert 0 < len(head) < len(before)
    assert [u.items for u in after[: len(head)]] == [u.items for u in head]
    assert after[len(head)].items == (target,)


def _served_online(ds, attach: bool):
    small = {"max_paths": 4, "max_floor_paths": 2, "session_paths": 1, "walk_paths": 1}
    policy = ServedPolicy.fixed("prior", traversal={**HYBRID, **small})
    ret = policy.retriever(encoder="hashing")
    ret.flat_spec = flat()
    ret.floor_first = False
    ret.index(ds)
    if not attach:
        return OnlineSystem(ret)
    od = OnlineDesire(beta=1.0, max_paths=10)
    od.attach(ret)
    return OnlineSystem(ret, od.learn)


def test_an_online_system_with_no_ratings_ranks_exactly_as_its_frozen_base():
    """rating probability 0: every rating is None, so the online system (desire edges + the policy's edge
    statistics) never changes and injects exactly what the frozen policy injects, question after question."""
    ds = conversation()
    queries = [
        Query(id=f"{q.id}-{i}", text=q.text, graph_id="c", split="test", timestamp=q.timestamp)
        for i in range(3) for q in ds.queries
    ]  # fmt: skip
    ds.truth = GroundTruth([Truth(q.id, ds.truth[q.id.split("-")[0]].needed, "memory") for q in queries])
    systems = {"frozen": _served_online(ds, attach=False), "online": _served_online(ds, attach=True)}
    shown: dict[str, list] = {"frozen": [], "online": []}
    for name, system in systems.items():
        real = system.retriever.retrieve

        def spy(query, budget_chars=None, real=real, name=name):
            units = real(query, budget_chars)
            shown[name].append([(u.items, u.text) for u in units])
            return units

        system.retriever.retrieve = spy
    rows = prequential(ds, systems, queries, seed=0, budget_chars=120, rater_prob=0.0)
    assert shown["online"] == shown["frozen"] and len(shown["online"]) == 6
    assert all(shown["online"])
    cols = ["query_id", "needed_recall", "precision", "units", "chars"]
    by = {name: g[cols].reset_index(drop=True) for name, g in rows.groupby("system")}
    pd.testing.assert_frame_equal(by["online"], by["frozen"])
    assert rows["rated_helpful"].sum() == 0


def test_prequential_with_fresh_systems_reproduces_its_rows_and_reused_ones_carry_state():
    """prequential() keeps the systems' learned state: fresh systems per call reproduce a run row for row,
    the same objects again start from what the first call learned."""
    ds = conversation()

    def systems():
        ff = FlatFeedback(beta=10.0, variant="memory", flat=flat(), depth=12, depth_budgets=10.0, lr=1.0)
        ff.index(ds)
        return {"ff": OnlineSystem(ff, ff.feedback)}

    queries = ds.queries * 2
    first = prequential(ds, systems(), queries, seed=3, budget_chars=60)
    pd.testing.assert_frame_equal(prequential(ds, systems(), queries, seed=3, budget_chars=60), first)
    learner = _LearnsTheAnswer()
    learner.index(ds)
    reused = {"l": OnlineSystem(learner, learner.learn)}
    assert prequential(ds, reused, [ds.queries[0]], seed=0)["needed_recall"].tolist() == [0.0]
    assert prequential(ds, reused, [ds.queries[0]], seed=0)["needed_recall"].tolist() == [1.0]


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip


def test_the_test_read_refuses_an_uncommitted_or_provisional_recipe_and_an_existing_parquet(tmp_path):
    """experiments/online_desire.py's guard of --split test, on a real git repository: an untracked, a
    modified and a PROVISIONAL recipe are refused, naming the file; a committed one gives its commit hash;
    an existing output is overwritten only with --force; a recipe may not set the rater."""
    from experiment_script import load_experiment

    script = load_experiment("online_desire")
    conf = tmp_path / "conf"
    conf.mkdir()
    file = conf / "hand.yaml"
    file.write_text("desire: {beta: 0.5}\n")
    _git(tmp_path, "init", "-q")
    out = tmp_path / "hand-test.parquet"
    with pytest.raises(ValueError) as err:
        script.guard_test_read("hand", out, False, conf_dir=conf)
    assert str(err.value) == f"{file} is not tracked by git: commit the recipe before the test read"
    _git(tmp_path, "add", "conf/hand.yaml")
    _git(tmp_path, "commit", "-q", "-m", "recipe")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    assert script.guard_test_read("hand", out, False, conf_dir=conf) == head and len(head) == 40
    out.write_bytes(b"rows")
    with pytest.raises(ValueError) as err:
        script.guard_test_read("hand", out, False, conf_dir=conf)
    assert str(err.value) == f"{out} exists: the test fold is read once; pass --force to overwrite it"
    assert script.guard_test_read("hand", out, True, conf_dir=conf) == head
    file.write_text("desire: {beta: 1.0}\n")
    with pytest.raises(ValueError) as err:
        script.guard_test_read("hand", out, True, conf_dir=conf)
    assert str(err.value) == f"{file} has uncommitted changes: commit the recipe before the test read"
    file.write_text("# PROVISIONAL\ndesire: {beta: 0.5}\n")
    _git(tmp_path, "commit", "-q", "-am", "provisional")
    with pytest.raises(ValueError) as err:
        script.guard_test_read("hand", out, True, conf_dir=conf)
    assert str(err.value) == (
        f"{file} is marked PROVISIONAL: finish the choice on validation, remove the marker and commit the "
        "recipe before the test read"
    )
    file.write_text("desire: {beta: 0.5}\nrater_prob: 1.0\nrater_noise: 0.0\n")
    with pytest.raises(ValueError) as err:
        script.recipe("hand", conf_dir=conf)
    assert str(err.value) == (
        f"{file} sets rater_noise, rater_prob: the rater is the bandit task's (conf/task/bandit.yaml); "
        "remove the key from the recipe"
    )
    file.write_text("desire: {beta: 0.5}\n")
    assert script.recipe("hand", conf_dir=conf) == {"rater_noise": 0.05, "rater_prob": 0.8,
                                                     "desire": {"beta": 0.5}}  # fmt: skip


def test_the_report_prints_the_clean_contrast_and_the_spread_by_conversation_and_seed():
    """pairs() with a contrast (d, c, b, a) prints (d − c) − (b − a) per question; spread() prints d − c per
    conversation × seed (hand-made rows: the numbers are exact)."""
    from experiment_script import load_experiment

    script = load_experiment("online_desire")
    recall = {"a": [0.5, 0.5], "b": [0.5, 1.0], "c": [0.5, 0.5], "d": [1.0, 0.5]}
    rows = pd.DataFrame([
        {"system": s, "seed": seed, "graph_id": g, "query_id": f"{g}q", "category": "single-hop",
         "n_needed": 1, "needed_recall": recall[s][i], "recall_new": recall[s][i], "recall_seen": math.nan}
        for s in "abcd" for seed in (0,) for i, g in enumerate(("g1", "g2"))
    ])  # fmt: skip
    text = script.pairs(rows, "d", ["c"], [("d", "c", "b", "a")])
    # per question: d − c = (+0.5, 0), b − a = (0, +0.5): the contrast is (+0.5, −0.5), mean 0
    assert "| d − c | +0.250 [" in text
    assert "| (d − c) − (b − a) | +0.000 [-0.500, +0.500] (2) |" in text
    spread = script.spread(rows, "d", "c")
    assert "| g1 | 0 | +0.500 |" in spread and "| g2 | 0 | +0.000 |" in spread
    assert "d − c by conversation × seed: +0.000 to +0.500 (2 cells)." in spread
