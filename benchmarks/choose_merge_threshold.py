"""Choose the extractor's alias-merge threshold on the hand-labelled name pairs, per encoder.

Reads ``signet_rl/datasets/extract_merge_sample.csv`` (``a,b,same,note``: 69 name pairs, ``same`` = 1 when
both name one thing), scores every pair with :func:`signet_rl.datasets.extract.alias_score` (mean of
character 3-gram cosine and encoder cosine on normalised names), prints precision, recall and F1 of
"merge when score >= t" for t = 0.30, 0.35, ..., 0.95, and the threshold with the highest F1 (ties go to
the higher threshold: a wrong merge costs more than a missed one). The chosen values are frozen in
``MERGE_THRESHOLDS`` (``tests/datasets/test_extract.py`` checks the hashing one still is the choice).
Figures go to ``benchmarks/results/merge_threshold.json``.

    python benchmarks/choose_merge_threshold.py                  # hashing and (if installed) minilm
    python benchmarks/choose_merge_threshold.py --encoders hashing
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from signet_rl.datasets.extract import MERGE_THRESHOLDS, alias_score, resolve_encoder

SAMPLE = Path(__file__).resolve().parents[1] / "signet_rl" / "datasets" / "extract_merge_sample.csv"
GRID = np.round(np.arange(0.30, 0.951, 0.05), 2)


def read_sample(path: Path = SAMPLE) -> pd.DataFrame:
    """The labelled pairs; a ``same`` that is not 0 or 1 is a ValueError naming the row."""
    frame = pd.read_csv(path, dtype={"a": str, "b": str, "note": str})
    bad = ~frame["same"].isin([0, 1])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{path} row {row + 2}: same={frame['same'].iat[row]!r}, expected 0 or 1")
    return frame


def sweep(scores: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """Precision, recall and F1 of ``score >= t`` for every t of :data:`GRID`."""
    rows = []
    for t in GRID:
        pred = scores >= t
        tp = int((pred & (labels == 1)).sum())
        fp = int((pred & (labels == 0)).sum())
        fn = int((~pred & (labels == 1)).sum())
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        rows.append({"threshold": float(t), "precision": p, "recall": r, "f1": f1, "merged": tp + fp})
    return pd.DataFrame(rows)


def choose(table: pd.DataFrame) -> float:
    """The threshold of highest F1, the higher one on ties."""
    best = table["f1"].max()
    return float(table.loc[np.isclose(table["f1"], best), "threshold"].max())


def main(argv: list[str] | None = None) -> dict[str, dict[str, object]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoders", nargs="+", default=["hashing", "minilm"])
    default_out = Path(__file__).resolve().parent / "results" / "merge_threshold.json"
    ap.add_argument("--out", default=str(default_out))
    args = ap.parse_args(argv)
    sample = read_sample()
    labels = sample["same"].to_numpy()
    out: dict[str, dict[str, object]] = {}
    for name in args.encoders:
        encoder, fallback = resolve_encoder(name)
        if fallback:
            print(f"{name}: unavailable, skipped ({fallback})")
            continue
        scores = alias_score(sample["a"].tolist(), sample["b"].tolist(), encoder)
        table = sweep(scores, labels)
        chosen = choose(table)
        print(f"\nencoder {encoder.name}: {len(sample)} pairs ({int(labels.sum())} same)")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        frozen = MERGE_THRESHOLDS.get(encoder.name)
        print(f"chosen threshold {chosen:.2f} (frozen in MERGE_THRESHOLDS: {frozen})")
        wrong = sample.assign(score=scores)[(scores >= chosen) != (labels == 1)]
        for r in wrong.itertuples(index=False):
            print(f"  {'false merge' if r.same == 0 else 'missed'}: {r.a!r} / {r.b!r} score {r.score:.3f}")
        out[encoder.name] = {"chosen": chosen, "frozen": frozen, "table": table.to_dict("records")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"\nwritten {args.out}")
    return out


if __name__ == "__main__":
    main()
