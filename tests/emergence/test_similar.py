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
