"""Text helpers shared by the encoders, the keyword indexes and the flat baseline.

* :func:`clean_text` makes any input a valid Unicode string: ``bytes`` are decoded as UTF-8 and lone
  surrogates (which SQLite, the tokenizers and ``str.encode`` reject) become U+FFFD. Invalid input is
  *handled*, never an error, so one bad memory cannot break an index build.
* :func:`keyword_terms` reproduces Signet's per-prompt keyword extraction (``extractSubstantiveWords``):
  hyphenated identifiers first, then lower-cased words of at least three characters that are not stop words
  and not all digits, de-duplicated in order, at most ``max_terms`` (12) of them.
* :func:`vector_query` is Signet's vector query: the prompt's first 200 characters, stripped.
* :func:`query_text` is how a query's text enters retrieval: cleaned, and cut to :data:`MAX_QUERY_CHARS`
  (8,192) characters with a logged warning when longer, so a pasted document costs no more than a long
  prompt. Every retriever applies it once, before any index, classifier or encoder sees the text.

Every function here runs in time linear in the length of its input (no regular expression that backtracks
more than once over a character): ``keyword_terms("a" * 1_000_000)`` takes milliseconds.

    >>> keyword_terms("What does the KA-6 deploy need? Deploy it on 2024 hosts")
    ['ka-6', 'deploy', 'hosts']
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from signet_rl.core.types import Query

__all__ = [
    "MAX_QUERY_CHARS",
    "SIGNET_HYPHENATED",
    "STOP_WORDS",
    "capped_query",
    "clean_text",
    "keyword_terms",
    "query_text",
    "vector_query",
]

log = logging.getLogger(__name__)

#: The longest query text retrieval reads, in characters; longer queries are cut to this many characters
#: (their start kept) with a logged warning, never refused. 8,192 is far above any query in the datasets
#: (the longest LoCoMo and MuSiQue questions are 131 and 224 characters) and short enough that no stage of
#: retrieval notices it.
MAX_QUERY_CHARS = 8192

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

#: Signet's own pattern for hyphenated identifiers (``extractSubstantiveWords``), kept as the reference the
#: linear pattern below is tested against; do not scan untrusted text with it (see below).
SIGNET_HYPHENATED = r"[a-zA-Z][a-zA-Z0-9]*-[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*"
# Scanned with ``findall``, Signet's pattern is quadratic on a long run of letters without a hyphen: every
# start inside the run reads to the run's end before failing (0.5 s at 25,000 characters, minutes for a 1 MB
# paste). The same matches come from starting only where a run of ASCII letters and digits begins (the
# lookbehind), skipping the run's leading digits and capturing from its first letter: each character is
# then read a bounded number of times.
_HYPHENATED = re.compile(r"(?<![a-zA-Z0-9])[0-9]*([a-zA-Z][a-zA-Z0-9]*(?:-[a-zA-Z0-9]+)+)")
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


def query_text(text: str | bytes, max_chars: int = MAX_QUERY_CHARS, where: str = "query") -> str:
    """A query's text as retrieval reads it: :func:`clean_text`, then cut to its first ``max_chars``
    characters (:data:`MAX_QUERY_CHARS`) with a warning on the ``signet_rl.text.terms`` logger naming
    ``where`` (the query id) and both lengths. Longer queries are truncated, not refused: a pasted document
    still retrieves from its start.

    >>> len(query_text("word " * 5000))
    8192
    """
    text = clean_text(text)
    if len(text) > max_chars:
        log.warning(
            "%s: query of %d characters cut to its first %d (MAX_QUERY_CHARS in signet_rl.text.terms)",
            where,
            len(text),
            max_chars,
        )
        text = text[:max_chars]
    return text


def vector_query(text: str, max_chars: int | None = 200) -> str:
    """Signet's vector query: ``text`` stripped and cut to its first ``max_chars`` characters."""
    text = text.strip()
    return text if max_chars is None else text[:max_chars]


def capped_query(query: Query) -> Query:
    """``query`` with its text as retrieval reads it (:func:`query_text`): cleaned and cut to
    :data:`MAX_QUERY_CHARS` characters, with a logged warning naming the query when it was longer. The same
    object when nothing changes."""
    text = query_text(query.text, where=f"query {query.id!r}")
    return query if text is query.text or text == query.text else replace(query, text=text)
