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
