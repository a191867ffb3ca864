"""similar_pairs: chunking changes memory, not the answer."""

from __future__ import annotations

import numpy as np

from signet_rl.emergence.similar import similar_pairs


def test_chunked_pairs_equal_the_dense_ones() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    rows = np.arange(0, 60, 3)
    dense = x[rows] @ x.T
    want = {(int(rows[r]), int(j)) for r, j in zip(*np.nonzero(dense >= 0.5), strict=True) if rows[r] != j}
    for chunk in (1, 7, 2048):
        i, j, s = similar_pairs(x, rows, 0.5, chunk=chunk)
        assert set(zip(i.tolist(), j.tolist(), strict=True)) == want
        assert np.allclose(s, (x[i] * x[j]).sum(axis=1), atol=1e-6)
    empty = similar_pairs(x, np.zeros(0, np.int64), 0.5)
    assert [len(a) for a in empty] == [0, 0, 0]


def test_an_empty_cached_encoder_is_used_not_replaced_by_the_default(tmp_path) -> None:
    """A bug: ``encoder or default`` dropped a CachedEncoder whose cache was empty (it has a length of 0),
    so bridges and principles silently ran on the hashing encoder whatever encoder was asked for."""
    from signet_rl.emergence.bridges import find_bridges
    from signet_rl.emergence.principles import detect_principles
    from signet_rl.text.encoders import CachedEncoder, HashingEncoder
    from tests.emergence.test_bridges import graph as bridge_graph
    from tests.emergence.test_principles import THREE
    from tests.emergence.test_principles import graph as principle_graph

    class Counting(HashingEncoder):
        calls = 0

        def encode(self, texts, batch_size=256, progress=False):
            Counting.calls += 1
            return super().encode(texts, batch_size, progress)

    cached = CachedEncoder(Counting(), tmp_path)
    assert len(cached) == 0 and not cached  # falsy while empty: the trap
    find_bridges(bridge_graph(), ["t-e0"], encoder=cached)
    assert Counting.calls == 1 and len(cached) == 4
    detect_principles(principle_graph(THREE), encoder=CachedEncoder(Counting(), tmp_path / "p"))
    assert Counting.calls == 2


def test_slot_variants_are_the_same_wording_with_other_values() -> None:
    from signet_rl.emergence.similar import content_tokens, slot_variant

    a = content_tokens("the quarterly review falls on the first tuesday of march")
    dup = content_tokens("the quarterly review falls on the first thursday of january")
    para = content_tokens("in march the first tuesday is kept free for going over the quarter")
    longer = content_tokens("the quarterly review falls on the first tuesday of march, in the big room")
    assert content_tokens("the 250 am slots") == frozenset({"the", "250", "am", "slot"})  # numbers kept
    assert slot_variant(a, dup, 0.4)  # 7 of 11 tokens shared, each side has its own values
    assert slot_variant(content_tokens("also goes by Fomo"), content_tokens("also goes by Fiwu"), 0.4)
    assert not slot_variant(content_tokens("prefers small changes over rewrites"),
                            content_tokens("prefers small changes to rewrites"), 0.4)  # stop words only
    assert not slot_variant(a, para, 0.4)  # a restatement shares the values, not the wording
    assert not slot_variant(a, longer, 0.4)  # adds words, changes none: not two facts
    assert not slot_variant(a, a, 0.4)


def test_agreeing_neighbours_equal_a_brute_force_scan() -> None:
    from signet_rl.emergence.similar import agreeing_neighbours

    rng = np.random.default_rng(1)
    x = rng.normal(size=(80, 6)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)

    def allowed(i: int, j: int) -> bool:
        return (i + j) % 3 != 0  # an arbitrary rule that removes a third of the pairs

    for k, scan in ((1, 64), (3, 2), (5, 4)):  # a tiny scan forces the full-row fallback
        got = agreeing_neighbours(x, np.arange(80), allowed, k, 0.2, chunk=7, scan=scan)
        for i in range(80):
            sims = x @ x[i]
            want = [int(j) for j in np.argsort(-sims, kind="stable")
                    if j != i and sims[j] >= 0.2 and allowed(i, int(j))][:k]
            assert got[i] == want, (i, k, scan)
