"""The synthetic v2 audit bounds (issue 23), on seeds the generator was never tuned on (tuned on 0-2)."""

from __future__ import annotations

import pytest

from signet_rl.datasets.synthetic import generate
from signet_rl.evaluation.audit import (
    CLASSIFIER_AUC_MAX,
    EDGE_SIGNALS,
    ITEM_SIGNALS,
    SIGNAL_AUC_MAX,
    WALK_AGREEMENT_MAX,
    _classifier_auc,
    _signal_aucs,
    drift_loss,
    edge_signals,
    item_signals,
    oriented,
    room_to_learn,
    walk_agreement,
)


@pytest.fixture(scope="module")
def fresh():
    return generate("small", seed=101, version=2), generate("small", seed=102, version=2)


def test_no_cheap_signal_nor_their_classifier_reads_the_labels_on_a_fresh_seed(fresh):
    test, train = fresh
    items, items_train = item_signals(test, max_queries=250), item_signals(train, max_queries=250)
    edges, edges_train = edge_signals(test), edge_signals(train)
    assert items["needed"].sum() > 300 and edges["spurious"].sum() > 50
    for name, auc in {**_signal_aucs(items, ITEM_SIGNALS, "needed")}.items():
        assert oriented(auc) <= SIGNAL_AUC_MAX, (name, auc)
    for name, auc in _signal_aucs(edges, EDGE_SIGNALS, "spurious").items():
        assert oriented(auc) <= SIGNAL_AUC_MAX, (name, auc)
    assert oriented(_classifier_auc(items_train, items, ITEM_SIGNALS, "needed")) <= CLASSIFIER_AUC_MAX
    assert oriented(_classifier_auc(edges_train, edges, EDGE_SIGNALS, "spurious")) <= CLASSIFIER_AUC_MAX


def test_the_walk_rules_do_not_write_the_truth(fresh):
    assert walk_agreement(fresh[0], max_queries=250) < WALK_AGREEMENT_MAX
    # v1 is written by the walk's rules: the same audit shows it.
    assert walk_agreement(generate("small", seed=101), max_queries=250) > 0.45


def test_the_audit_catches_v1s_readable_labels():
    aucs = _signal_aucs(edge_signals(generate("small", seed=101)), EDGE_SIGNALS, "spurious")
    assert oriented(aucs["aspect_id_null"]) == 1.0 and oriented(aucs["id_order"]) == 1.0


def test_a_scorer_told_the_hidden_component_beats_ppr(fresh):
    r = room_to_learn(fresh[0], max_queries=120)
    assert r["gain_ndcg@10"] >= 0.10, r


def test_a_policy_fixed_before_the_drift_loses_recall():
    d = generate("small", seed=103, version=2, drift=True)
    r = drift_loss(d, max_queries=80)
    assert r["loss"] >= 0.10 and r["drop"] >= 0.10, r
    no_drift = r"synthetic:tiny:0 has no drift; generate it with version=2, drift=True"
    with pytest.raises(ValueError, match=no_drift):
        drift_loss(generate("tiny", seed=0, version=2))


def test_drift_turns_the_needs_of_some_domains_round():
    d = generate("tiny", seed=6, version=2, drift=True)
    h = d.truth.labels["hidden"].pivot_table(index=["intent", "key"], columns="period", values="value")
    flipped = (h["post"] == -h["pre"]) & (h["pre"] != 0)
    assert 0 < flipped.mean() < 1 and ((h["post"] == h["pre"]) | flipped).all()
    assert len(d.meta["drift_domains"]) == 3 and d.meta["drift_at_day"] == 15.0
    after = d.truth.labels["queries"]["after_drift"]
    assert after.any() and not after.all()


def test_benchmark_audit_reads_another_seed_and_names_what_it_misses():
    from signet_rl.evaluation.audit import benchmark_audit
    from signet_rl.evaluation.describe import describe, format_description

    d = generate("tiny", seed=9, version=2)
    same_seed = "train_seed=9 is the audited seed; the classifiers need another one"
    with pytest.raises(ValueError, match=same_seed):
        benchmark_audit(d, train_seed=9)
    a = benchmark_audit(d, max_queries=60)
    assert a["generator_version"] == 2 and a["classifier_train_seed"] == 10
    assert set(a["needed_auc"]) == set(ITEM_SIGNALS) and set(a["spurious_auc"]) == set(EDGE_SIGNALS)
    assert isinstance(a["failed"], list) and 0.0 <= a["unnamed_share"] <= 1.0
    text = format_description({**describe(d, signals=False), "audit": a})
    assert "generator synthetic v2" in text and "walk-rule agreement" in text and "bounds missed:" in text
