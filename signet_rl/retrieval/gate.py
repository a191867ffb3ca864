"""The significance gate: sometimes the right amount of context is zero.

:class:`SignificanceGate` decides, before any search, whether a prompt is worth injecting context for.
Chit-chat, thanks and excitement about a milestone are not (docs/design.md §1). The decision is

* **hard rules first**: an empty or whitespace-only text is never significant; text is classified on its
  first ``max_chars`` (1,000) characters, so a 100,000-character paste is still classified, cheaply;
  ``bytes`` and lone surrogates are cleaned (:func:`~signet_rl.text.terms.clean_text`), not rejected;
* then the classifier: significant unless ``P(none) >= threshold``. With the default 0.5 the gate silences
  only prompts the classifier is at least even odds on being chit-chat; it errs toward injecting.

:func:`gate_report` measures it on a split: the share of non-queries silenced (higher is better) and the
share of real queries wrongly silenced (lower is better).

    >>> from signet_rl.retrieval.intent import RuleIntentClassifier
    >>> gate = SignificanceGate(RuleIntentClassifier())
    >>> gate.is_significant("thanks!"), gate.is_significant("what port does billing-api use?")
    (False, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signet_rl.core.checks import check_integer, check_range
from signet_rl.retrieval.intent import INTENTS, MAX_CHARS, IntentClassifier
from signet_rl.text.terms import clean_text

__all__ = ["SignificanceGate"]

_NONE = INTENTS.index("none")


class SignificanceGate:
    """Inject nothing for prompts that are not queries.

    Args:
        classifier: anything with ``predict_proba(texts) -> [n, 5]`` over
            :data:`~signet_rl.retrieval.intent.INTENTS`.
        threshold: a prompt with ``P(none) >= threshold`` is not significant; in ``(0, 1]``.
        max_chars: prompts are classified on their first this many characters.

    Raises:
        ValueError: a threshold outside ``(0, 1]`` or ``max_chars`` < 1.
    """

    def __init__(
        self, classifier: IntentClassifier, threshold: float = 0.5, max_chars: int = MAX_CHARS
    ) -> None:
        check_range("gate threshold", threshold, 0, 1, lo_open=True)
        check_integer("max_chars", max_chars, 1)
        self.classifier = classifier
        self.threshold = float(threshold)
        self.max_chars = max_chars

    def p_none(self, texts: Sequence[str | bytes]) -> np.ndarray:
        """P(not a query) of each text; 1.0 for empty or whitespace-only text. Shape ``[n]``."""
        cut = [clean_text(t)[: self.max_chars] for t in texts]
        out = np.ones(len(cut), dtype=np.float64)
        real = [i for i, t in enumerate(cut) if t.strip()]
        if real:
            proba = self.classifier.predict_proba([cut[i] for i in real])
            out[real] = proba[:, _NONE]
        return out

    def significant(self, texts: Sequence[str | bytes]) -> list[bool]:
        """:meth:`is_significant` of many texts at once."""
        return (self.p_none(texts) < self.threshold).tolist()

    def is_significant(self, text: str | bytes) -> bool:
        """Whether ``text`` should get context at all (False: inject nothing)."""
        return bool(self.significant([text])[0])


