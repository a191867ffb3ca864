"""Keyword-term extraction on long queries: Signet's hyphenation pattern (quadratic) against the linear one.

Times :func:`signet_rl.text.terms.keyword_terms` and the implementation it replaced (Signet's pattern
scanned with ``findall``, :data:`~signet_rl.text.terms.SIGNET_HYPHENATED`) on the same inputs, best of
``--repeats`` runs each, and checks that both give the same terms:

* ``a * n``: one long token with no hyphen, the worst case of the old pattern;
* ``paste * n``: ordinary text (a LoCoMo-like sentence with identifiers) repeated to ``n`` characters.

The old implementation is skipped above ``--old-max`` characters (it needs minutes for 1 MB). Figures are
printed and written to ``benchmarks/results/text.json``; nothing is asserted.

    python benchmarks/bench_text.py                      # 1k, 25k, 100k (both) and 1M (new only)
    python benchmarks/bench_text.py --sizes 1000 25000 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import time
from collections.abc import Callable
from pathlib import Path

from signet_rl.text.terms import SIGNET_HYPHENATED, STOP_WORDS, keyword_terms

_SIGNET = re.compile(SIGNET_HYPHENATED)
_NON_WORD = re.compile(r"\W+")
PASTE = "Caroline moved the KA-6 deploy to the billing-service on 2023-05-08; see ticket OPS-1142 again. "


def old_keyword_terms(text: str, max_terms: int | None = 12, min_chars: int = 3) -> list[str]:
    """The implementation before issue 31: Signet's pattern scanned with ``findall``."""
    hyphenated = [t.lower() for t in _SIGNET.findall(text)]
    words = [
        w
        for w in _NON_WORD.split(text.lower())
        if len(w) >= min_chars and w not in STOP_WORDS and not w.isdigit()
    ]
    out = list(dict.fromkeys([*hyphenated, *words]))
    return out if max_terms is None else out[:max_terms]


def best_of(fn: Callable[[str], list[str]], text: str, repeats: int) -> tuple[float, list[str]]:
    """The fastest of ``repeats`` calls, in seconds, and the terms."""
    best, out = float("inf"), []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn(text)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 25_000, 100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-max", type=int, default=100_000, help="largest input the old implementation gets")
    ap.add_argument("--output", default=str(Path(__file__).parent / "results" / "text.json"))
    args = ap.parse_args()

    rows = []
    print(f"{'input':>8} {'chars':>9} {'old s':>10} {'new s':>10} {'speed-up':>9} same")
    for kind, unit in (("a", "a"), ("paste", PASTE)):
        for n in args.sizes:
            text = (unit * (n // len(unit) + 1))[:n]
            new_s, new_terms = best_of(keyword_terms, text, args.repeats)
            row: dict[str, object] = {"input": kind, "chars": n, "new_s": new_s, "old_s": None, "same": None}
            if n <= args.old_max:
                old_s, old_terms = best_of(old_keyword_terms, text, args.repeats)
                row.update(old_s=old_s, same=old_terms == new_terms, speedup=old_s / max(new_s, 1e-9))
            rows.append(row)
            old = f"{row['old_s']:10.4f}" if row["old_s"] is not None else f"{'-':>10}"
            speedup = f"{row['speedup']:8.0f}x" if "speedup" in row else f"{'-':>9}"
            print(f"{kind:>8} {n:>9} {old} {new_s:10.4f} {speedup} {row['same']}")

    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine()}
    out.write_text(json.dumps({"machine": machine, "repeats": args.repeats, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
