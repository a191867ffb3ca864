"""Query text helpers: keyword terms as Signet extracts them, in linear time, and the query length cap."""

from __future__ import annotations

import dataclasses
import logging
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signet_rl.datasets.synthetic import generate
from signet_rl.pipeline.desire import DesirePathRetriever
from signet_rl.retrieval.flat import flat_variant
from signet_rl.text.terms import MAX_QUERY_CHARS, SIGNET_HYPHENATED, STOP_WORDS, keyword_terms, query_text

_SIGNET = re.compile(SIGNET_HYPHENATED)


def signet_keyword_terms(text: str, max_terms: int | None = 12, min_chars: int = 3) -> list[str]:
    """The implementation before issue 31 (Signet's pattern scanned with findall; quadratic on long runs)."""
    hyphenated = [t.lower() for t in _SIGNET.findall(text)]
    words = [
        w
        for w in re.split(r"\W+", text.lower())
        if len(w) >= min_chars and w not in STOP_WORDS and not w.isdigit()
    ]
    out = list(dict.fromkeys([*hyphenated, *words]))
    return out if max_terms is None else out[:max_terms]


@pytest.fixture(scope="module")
def tiny():
    return generate("tiny", seed=0)


def test_same_terms_as_signets_pattern_on_the_synthetic_queries_and_memories(tiny):
    small = generate("small", seed=0)
    texts = [q.text for ds in (tiny, small) for q in ds.queries]
    texts += tiny.graph.memories["content"].tolist() + tiny.graph.attributes["content"].tolist()
    assert len(texts) > 500 and any("-" in t for t in texts)
    for t in texts:
        assert keyword_terms(t, None) == signet_keyword_terms(t, None), t
        assert keyword_terms(t) == signet_keyword_terms(t), t


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("What does the KA-6 deploy need?", ["ka-6", "deploy"]),
        ("12ab-cd", ["ab-cd", "12ab"]),  # leading digits of a run are not part of the identifier
        ("12-34-ab-cd-9", ["ab-cd-9"]),  # nor are digit-only parts before the first letter
        ("1a2b-c3", ["a2b-c3", "1a2b"]),
        ("ab-", []),  # two-character words are too short
        ("a--b a-b--c", ["a-b"]),
        ("x-y-z x-y", ["x-y-z", "x-y"]),
        ("café-bar naïve-x9", ["ve-x9", "café", "bar", "naïve"]),  # identifiers are ASCII, as in Signet
        ("-ab-cd- ef-", ["ab-cd"]),
        ("A-B_C-D", ["a-b", "c-d", "b_c"]),
        ("12-34", []),
    ],
)
def test_hand_made_hyphen_cases(text, terms):
    assert keyword_terms(text, None) == terms
    assert signet_keyword_terms(text, None) == terms


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aZ9-_ é.", max_size=40))
def test_same_terms_as_signets_pattern_on_any_short_text(text):
    assert keyword_terms(text, None) == signet_keyword_terms(text, None)


def test_long_tokens_and_a_1mb_paste_finish():
    # Signet's pattern needed 6-8 s for 'a' * 100_000 and minutes for a 1 MB paste; the subprocess' timeout
    # is a hang guard (thousands of times the milliseconds these take now), not a timing assertion.
    script = textwrap.dedent(
        """
        from signet_rl.text.terms import keyword_terms
        long = "a" * 100_000
        assert keyword_terms(long) == [long]
        assert keyword_terms("1" * 100_000 + "x") == ["1" * 100_000 + "x"]
        assert keyword_terms(("ab1" * 100_000) + " deploy") == ["ab1" * 100_000, "deploy"]
        paste = ("see KA-6 and the billing-service " + "q" * 5000 + " ") * 200
        assert len(paste) > 1_000_000
        assert keyword_terms(paste) == ["ka-6", "billing-service", "see", "billing", "service", "q" * 5000]
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_query_text_cuts_long_queries_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="signet_rl.text.terms"):
        assert query_text("short one", where="query 'q1'") == "short one"
        assert caplog.messages == []
        cut = query_text("word " * 5000, where="query 'q1'")
    assert MAX_QUERY_CHARS == 8192 and cut == ("word " * 5000)[:8192]
    assert caplog.messages == [
        "query 'q1': query of 25000 characters cut to its first 8192 "
        "(MAX_QUERY_CHARS in signet_rl.text.terms)"
    ]
    assert query_text(b"caf\xc3\xa9 \xff") == "café \ufffd"  # cleaned as well


@pytest.mark.parametrize("make", [lambda: flat_variant("flat_signet"), lambda: DesirePathRetriever("prior")])
def test_retrievers_read_only_the_first_max_query_chars(tiny, make, caplog):
    retriever = make()
    retriever.index(tiny)
    base = next(q for q in tiny.split("test") if retriever.retrieve(q))
    head = base.text + " " + "zz" * MAX_QUERY_CHARS
    head = head[:MAX_QUERY_CHARS]
    pasted = dataclasses.replace(base, text=head + " deploy-KA6 " + "billing " * 130_000)
    assert len(pasted.text) > 1_000_000
    with caplog.at_level(logging.WARNING, logger="signet_rl.text.terms"):
        units = retriever.retrieve(pasted)
    # what lies past the cap (a hyphenated identifier would otherwise lead the keyword terms) changes nothing
    assert units == retriever.retrieve(dataclasses.replace(base, text=head))
    assert [r.getMessage() for r in caplog.records if r.name == "signet_rl.text.terms"] == [
        f"query {base.id!r}: query of {len(pasted.text)} characters cut to its first 8192 "
        "(MAX_QUERY_CHARS in signet_rl.text.terms)"
    ]
