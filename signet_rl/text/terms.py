"""Text helpers shared by the encoders, the keyword indexes and the flat baseline.

* :func:`clean_text` makes any input a valid Unicode string: ``bytes`` are decoded as UTF-8 and lone
  surrogates (which SQLite, the tokenizers and ``str.encode`` reject) become U+FFFD. Invalid input is
  *handled*, never an error, so one bad memory cannot break an index build.
* :func:`keyword_terms` reproduces Signet's per-prompt keyword extraction (``extractSubstantiveWords``):
  hyphenated identifiers first, then lower-cased words of at least three characters that are not stop words
  and not all digits, de-duplicated in order, at most ``max_terms`` (12) of them.
* :func:`vector_query` is Signet's vector query: the prompt's first 200 characters, stripped.

    >>> keyword_terms("What does the KA-6 deploy need? Deploy it on 2024 hosts")
    ['ka-6', 'deploy', 'hosts']
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "clean_text", "keyword_terms", "vector_query"]

#: English stop words dropped from keyword queries: Signet's per-prompt recall list (``RECALL_STOPWORDS``)
#: plus common function words, so that chit-chat ("ok thanks, sounds good") yields no keyword terms.
_STOP_WORDS = """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don done down during each
    few for from further get go going got had hadn has hasn have haven having he her here hers herself hey hi
    him himself his how i if in into is isn it its itself just kind let like make me more most mustn my
    myself need no nor not now of off ok okay on once only or other ought our ours ourselves out over own
    please pretty really right same say shan she should shouldn so some something still such sure than
    thank thanks that the their theirs them themselves then there these they this those through to too uh um
    under until up use very want was wasn we well were weren what when where which while who whom why will
    with won would wouldn yeah yes you your yours yourself yourselves
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS.split())

_HYPHENATED = re.compile(r"[a-zA-Z][a-zA-Z0-9]*-[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*")
_NON_WORD = re.compile(r"\W+")


def clean_text(text: str | bytes) -> str:
    """``text`` as a valid Unicode string.

    ``bytes`` are decoded as UTF-8 with invalid sequences replaced by U+FFFD; in a ``str``, a surrogate pair
    written as two code points is joined and a lone surrogate becomes U+FFFD.

    Raises:
        TypeError: ``text`` is neither ``str`` nor ``bytes`` (the message names its type).
    """
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise TypeError(f"expected str or bytes, got {type(text).__name__}: {text!r:.80}")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def keyword_terms(text: str, max_terms: int | None = 12, min_chars: int = 3) -> list[str]:
    """Signet's per-prompt keyword terms: hyphenated identifiers, then words of ``min_chars`` or more
    characters that are neither stop words nor all digits; lower-cased, de-duplicated, at most
    ``max_terms`` (``None``: all)."""
    hyphenated = [t.lower() for t in _HYPHENATED.findall(text)]
    words = [
        w
        for w in _NON_WORD.split(text.lower())
        if len(w) >= min_chars and w not in STOP_WORDS and not w.isdigit()
    ]
    out = list(dict.fromkeys([*hyphenated, *words]))
    return out if max_terms is None else out[:max_terms]


def vector_query(text: str, max_chars: int | None = 200) -> str:
    """Signet's vector query: ``text`` stripped and cut to its first ``max_chars`` characters."""
    text = text.strip()
    return text if max_chars is None else text[:max_chars]
