"""The significance gate: hard rules, the threshold, and its shares on the synthetic test split."""

from __future__ import annotations

import numpy as np
import pytest

from signet_rl.datasets.synthetic import generate
from signet_rl.evaluation.audit import gate_report
from signet_rl.retrieval.gate import SignificanceGate
from signet_rl.retrieval.intent import INTENTS, IntentClassifier, RuleIntentClassifier


class _Constant(IntentClassifier):
    """P(none) = ``p`` for every text; counts the characters it was shown."""

    def __init__(self, p: float) -> None:
        self.p = p
        self.seen: list[int] = []

    def predict_proba(self, texts):
        self.seen += [len(t) for t in texts]
        out = np.full((len(texts), len(INTENTS)), (1 - self.p) / 4, dtype=np.float32)
        out[:, INTENTS.index("none")] = self.p
        return out


@pytest.fixture(scope="module")
def small():
    return generate("small", seed=0)


def test_shares_on_small_test_split(small):
    report = gate_report(SignificanceGate(RuleIntentClassifier()), small.split("test"), small.truth)
    assert report["nonqueries"] + report["queries"] == len(small.split("test"))
    assert report["nonquery_silenced"] == 1.0  # measured 1.0
    assert report["query_silenced"] == 0.0  # measured 0.0


def test_hard_rules_and_cut():
    clf = _Constant(0.0)
    gate = SignificanceGate(clf)
    assert gate.is_significant("") is False
    assert gate.is_significant(" \n\t ") is False
    assert clf.seen == []  # empty text never reaches the classifier
    assert gate.is_significant("x" * 100_000) is True
    assert clf.seen == [1000]
    assert gate.is_significant(b"caf\xc3\xa9 \xff status?") is True  # invalid UTF-8 is cleaned


@pytest.mark.parametrize(
    ("p_none", "threshold", "significant"),
    [
        (0.49, 0.5, True),
        (0.5, 0.5, False),
        (0.9, 0.95, True),
        (0.2, 0.1, False),
        (1.0, 1.0, False),
    ],
)
def test_threshold(p_none, threshold, significant):
    assert SignificanceGate(_Constant(p_none), threshold).is_significant("hello there") is significant


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5])
def test_bad_threshold(threshold):
    with pytest.raises(ValueError, match=r"^gate threshold must be a number in \(0, 1\], got "):
        SignificanceGate(RuleIntentClassifier(), threshold)


def test_report_counts_hand_computed(small):
    queries = small.split("test")
    report = gate_report(SignificanceGate(_Constant(1.0)), queries, small.truth)  # silences everything
    assert report["nonquery_silenced"] == 1.0 and report["query_silenced"] == 1.0
    assert report["accuracy"] == pytest.approx(report["nonqueries"] / len(queries))
    empty = gate_report(SignificanceGate(_Constant(0.0)), [], small.truth)
    assert np.isnan(empty["nonquery_silenced"]) and empty["nonqueries"] == 0
