"""Intent classifiers: rules and the learned model, on generated queries and on hand-written examples.

The hand-written examples (``data/samples/intent_prompts.tsv``, shared with the report script) are worded
unlike the generator's templates. ``HAND_WRITTEN`` was in view while the
rules were written (two rules were added after reading its errors); ``HAND_WRITTEN_FRESH`` was written
afterwards and not tuned on, so it is the honest estimate. Generated held-out accuracy is near-trivial: the
generator has three or four templates per intent.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from signet_rl.datasets.synthetic import generate
from signet_rl.evaluation.audit import intent_report, training_examples
from signet_rl.retrieval.intent import (
    INTENTS,
    HashingFeaturizer,
    IntentClassifier,
    LearnedIntentClassifier,
    RuleIntentClassifier,
)

PROMPTS = Path(__file__).resolve().parents[2] / "data" / "samples" / "intent_prompts.tsv"


def _prompts(which: str) -> list[tuple[str, str]]:
    with PROMPTS.open(newline="") as f:
        return [
            (row["text"], row["intent"]) for row in csv.DictReader(f, delimiter="\t") if row["set"] == which
        ]


#: Seen while the rules were written (optimistic).
HAND_WRITTEN: list[tuple[str, str]] = _prompts("seen")
#: Written afterwards and never tuned on (the honest estimate).
HAND_WRITTEN_FRESH: list[tuple[str, str]] = _prompts("fresh")

ALL_HAND = HAND_WRITTEN + HAND_WRITTEN_FRESH


def _texts(pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    return [t for t, _ in pairs], [lab for _, lab in pairs]


@pytest.fixture(scope="module")
def small():
    return generate("small", seed=0)


@pytest.fixture(scope="module")
def learned(small) -> LearnedIntentClassifier:
    texts, labels = training_examples(small, "train", paraphrases=40, seed=0)
    return LearnedIntentClassifier().fit(texts, labels, seed=0)


def test_hand_written_sets_are_varied_and_cover_every_intent():
    assert len(ALL_HAND) >= 40
    for intent in INTENTS:
        assert sum(lab == intent for _, lab in HAND_WRITTEN_FRESH) >= 8
    assert len({t for t, _ in ALL_HAND}) == len(ALL_HAND)


def test_rules_on_hand_written_examples():
    rule = RuleIntentClassifier()
    assert intent_report(rule, *_texts(HAND_WRITTEN))["accuracy"] >= 0.95  # measured 0.98 (tuned on it)
    assert intent_report(rule, *_texts(HAND_WRITTEN_FRESH))["accuracy"] >= 0.8  # measured 0.85


def test_rules_on_generated_queries(small):
    rule = RuleIntentClassifier()
    queries = small.split("test")
    report = intent_report(rule, [q.text for q in queries], [small.truth[q.id].intent for q in queries])
    assert report["accuracy"] >= 0.97


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("", "none"),
        ("   \n\t", "none"),
        ("🎉🎉", "none"),
        ("thanks!", "none"),
        ("how does billing-api relate to the auth cutover?", "relate"),
        ("what should I know about the things orion needs?", "what"),
        ("how should I handle orion now?", "action"),
        ("has the schedule of Maya changed?", "changed"),
        ("orion deployment region and billing worker replicas and their settings please", "what"),
        ("what is orion? " * 10_000, "what"),
    ],
)
def test_rule_cases(text, intent):
    assert RuleIntentClassifier().predict([text]) == [intent]


def test_rule_proba_is_one_hot():
    proba = RuleIntentClassifier().predict_proba(["hi", "what is orion?"])
    assert proba.shape == (2, 5) and proba.dtype == np.float32
    np.testing.assert_array_equal(proba.sum(axis=1), [1.0, 1.0])
    assert RuleIntentClassifier().predict([]) == []


def test_learned_generalises_from_generated_queries(learned, small):
    queries = small.split("test")
    held_out = intent_report(learned, [q.text for q in queries], [small.truth[q.id].intent for q in queries])
    assert held_out["accuracy"] >= 0.95  # measured 0.988: the templates are few, this is near-trivial
    other = generate("small", seed=1)
    texts = [q.text for q in other.queries]
    assert (
        intent_report(learned, texts, [other.truth[q.id].intent for q in other.queries])["accuracy"] >= 0.95
    )


def test_learned_on_hand_written_examples(learned):
    assert intent_report(learned, *_texts(HAND_WRITTEN_FRESH))["accuracy"] >= 0.75  # measured 0.825
    assert intent_report(learned, *_texts(HAND_WRITTEN))["accuracy"] >= 0.8  # measured 0.87


def test_learned_without_paraphrases_does_not_generalise(small):
    """The honest baseline: trained on the generator's templates alone, hand-written accuracy is poor."""
    texts, labels = training_examples(small, "train", seed=0)
    clf = LearnedIntentClassifier(epochs=60).fit(texts, labels, seed=0)
    assert intent_report(clf, *_texts(HAND_WRITTEN_FRESH))["accuracy"] < 0.7  # measured about 0.5


def test_learned_is_deterministic_by_seed(small):
    texts, labels = training_examples(small, "train", paraphrases=5, seed=0)
    probe = [t for t, _ in HAND_WRITTEN_FRESH]
    a = LearnedIntentClassifier(epochs=20).fit(texts, labels, seed=3).predict_proba(probe)
    b = LearnedIntentClassifier(epochs=20).fit(texts, labels, seed=3).predict_proba(probe)
    c = LearnedIntentClassifier(epochs=20).fit(texts, labels, seed=4).predict_proba(probe)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=1e-5)


def test_learned_does_not_touch_the_global_torch_seed(small):
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    LearnedIntentClassifier(epochs=2).fit(["hi", "what is x?"], ["none", "what"], seed=0)
    torch.testing.assert_close(torch.rand(3), expected)


def test_save_and_load_round_trip(learned, tmp_path):
    path = learned.save(tmp_path / "intent.pt")
    loaded = LearnedIntentClassifier.load(path)
    probe = [t for t, _ in ALL_HAND]
    np.testing.assert_array_equal(loaded.predict_proba(probe), learned.predict_proba(probe))
    assert loaded.config == learned.config


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: LearnedIntentClassifier().predict(["hi"]), "not fitted"),
        (lambda: LearnedIntentClassifier(epochs=1).fit(["hi"], ["none", "what"]), "as many labels"),
        (lambda: LearnedIntentClassifier(epochs=1).fit([], []), "as many labels"),
        (lambda: LearnedIntentClassifier(epochs=1).fit(["hi"], ["smalltalk"]), "smalltalk"),
        (lambda: LearnedIntentClassifier(hidden=0), "hidden=0"),
        (lambda: intent_report(RuleIntentClassifier(), ["hi"], []), "1 texts but 0 labels"),
        (lambda: intent_report(RuleIntentClassifier(), ["hi"], ["chat"]), "chat"),
    ],
)
def test_bad_inputs(call, message):
    with pytest.raises((ValueError, RuntimeError), match=message):
        call()


def test_learned_handles_empty_and_huge_input(learned):
    proba = learned.predict_proba(["", "a" * 100_000])
    assert proba.shape == (2, 5)
    assert learned.predict_proba([]).shape == (0, 5)


class _Fixed(IntentClassifier):
    """Predicts a fixed list, to check the report against hand-computed values."""

    def __init__(self, predictions: list[str]) -> None:
        self.predictions = predictions

    def predict_proba(self, texts):
        out = np.zeros((len(texts), len(INTENTS)), dtype=np.float32)
        out[np.arange(len(texts)), [INTENTS.index(p) for p in self.predictions]] = 1.0
        return out


def test_report_matches_hand_computed_values():
    gold = ["what", "what", "what", "relate", "none", "none"]
    pred = ["what", "what", "none", "what", "none", "none"]
    report = intent_report(_Fixed(pred), ["t"] * 6, gold)
    assert report["accuracy"] == pytest.approx(4 / 6)
    what = report["per_class"]["what"]  # tp 2, predicted 3, support 3
    assert (what["precision"], what["recall"], what["f1"], what["support"]) == pytest.approx(
        (2 / 3, 2 / 3, 2 / 3, 3)
    )
    none = report["per_class"]["none"]  # tp 2, predicted 3, support 2
    assert (none["precision"], none["recall"], none["f1"]) == pytest.approx((2 / 3, 1.0, 0.8))
    relate = report["per_class"]["relate"]  # never predicted
    assert (relate["precision"], relate["recall"], relate["f1"], relate["support"]) == (0.0, 0.0, 0.0, 1)
    assert report["per_class"]["action"]["support"] == 0
    assert report["macro_f1"] == pytest.approx((2 / 3 + 0.0 + 0.8) / 3)  # over classes with support
    assert report["confusion"] == [
        [2, 0, 0, 0, 1],
        [1, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 2],
    ]


def test_featurizer_is_stable_and_marks_punctuation():
    f = HashingFeaturizer(buckets=1 << 10)
    assert "w<q>" in f.grams("what?") and "w<excl>" in f.grams("yay!")
    ids1, _, _ = f.transform(["what is orion?"])
    ids2, _, _ = f.transform(["what is orion?"])
    assert ids1.tolist() == ids2.tolist() and int(ids1.max()) < 1 << 10
