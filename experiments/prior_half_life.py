"""The prior's half-life default (issue 25 §3): the trials of its equal-tuning study, scored on validation
twice, and the choice among them.

The study (``python -m signet_rl.train -m +experiment=learning/sweep/prior``, study ``learning-prior`` in
``data/sweeps/learning.db``) tunes the half-life on synthetic v2 medium validation, where questions ask
about recently written facts; its best trials are 0.5-11 days. Real conversations ask about any session, so
every trial's half-life is also scored on LoCoMo's validation fold (the validation fold of its 5-fold
learning split by conversation with test fold 0, i.e. fold 1: the fold best_flat and the LoCoMo recipes were
chosen on, never a test fold): the prior's graph walk (``desire_prior``, the default traversal, no
hybrid entry, whose floor would hide the prior), needed recall at 2,000 characters. The default is the trial
whose worse score, each relative to its set's best trial, is highest (ties: the lower trial number): a
default has to serve the benchmark it was tuned on and real conversations both. Nothing here reads a test
split.

    python experiments/prior_half_life.py       # the table; experiments/choices/learning-prior.json
    python experiments/prior_half_life.py --study learning-fused      # the same check of desire_fused
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The studies this script reads, and the scorer each tunes (its trial parameters are ``scorer.<argument>``).
STUDIES = {"learning-prior": "prior", "learning-fused": "fused"}


def choose(trials: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trial with the highest worse relative score (``synthetic`` / its best, ``real`` / its best); ties:
    the lower ``number``. Each trial gains ``relative`` (that worse score).

        >>> choose([{"number": 0, "synthetic": 0.2, "real": 0.4},
        ...         {"number": 1, "synthetic": 0.3, "real": 0.2},
        ...         {"number": 2, "synthetic": 0.25, "real": 0.35}])["number"]
        2
    """
    if not trials:
        raise ValueError("no finished trials to choose from")
    best = {k: max(t[k] for t in trials) for k in ("synthetic", "real")}
    for k, v in best.items():
        if v <= 0:
            raise ValueError(f"every trial scores {v} on {k}: nothing to choose by")
    for t in trials:
        t["relative"] = min(t["synthetic"] / best["synthetic"], t["real"] / best["real"])
    return max(trials, key=lambda t: (t["relative"], -t["number"]))


def real_validation(scorer: str, settings: Sequence[dict[str, Any]], spec: str = "locomo",
                    budget: int = 2000, max_queries: int | None = None) -> list[float]:  # fmt: skip
    """Mean needed recall of ``scorer``'s walk under each of ``settings`` (constructor arguments) on
    ``spec``'s validation split (when it has none of its own, the validation fold of its 5-fold learning split
    with test fold 0)."""
    from signet_rl.datasets import load_dataset
    from signet_rl.evaluation.harness import evaluate
    from signet_rl.pipeline.desire import DesirePathRetriever
    from signet_rl.scorers import make_scorer

    ds = load_dataset(spec, options={"version": 2} if spec.startswith("synthetic") else None)
    if not ds.split("validation"):
        ds = ds.learning_split(k=5, fold=0, seed=0, group="graph")
    out = []
    for kwargs in settings:
        retriever = DesirePathRetriever(make_scorer(scorer, **kwargs), name=f"desire_{scorer}")
        res = evaluate(ds, {retriever.name: retriever}, split="validation", budget_chars=budget,
                       max_queries=max_queries, n_boot=1)  # fmt: skip
        out.append(float(res.rows["needed_recall"].mean()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="learning-prior", choices=sorted(STUDIES))
    ap.add_argument("--storage", default="sqlite:///data/sweeps/learning.db", help="the studies' storage")
    ap.add_argument("--real", default="locomo", help="the real dataset scored on its validation fold")
    ap.add_argument("--out", default=None, help="default: experiments/choices/<study>.json (committed)")
    args = ap.parse_args(argv)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    db = args.storage.removeprefix("sqlite:///")
    if args.storage.startswith("sqlite:///") and not Path(db).exists():
        recipe = args.study.removeprefix("learning-")
        print(f"error: {db} does not exist: run the study first (python -m signet_rl.train -m "
              f"+experiment=learning/sweep/{recipe})", file=sys.stderr)  # fmt: skip
        return 2
    try:
        study = optuna.load_study(study_name=args.study, storage=args.storage)
    except KeyError:
        print(f"error: {args.storage} holds no study {args.study!r}", file=sys.stderr)
        return 2
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    settings = [{k.removeprefix("scorer."): v for k, v in t.params.items()} for t in done]
    t0 = time.perf_counter()
    real = real_validation(STUDIES[args.study], settings, spec=args.real)
    trials = [{"number": t.number, **kw, "synthetic": float(t.value), "real": r}
              for t, kw, r in zip(done, settings, real, strict=True)]  # fmt: skip
    chosen = choose(trials)
    keys = sorted(settings[0]) if settings else []
    print(f"| trial | {' | '.join(keys)} | synthetic v2 medium val nDCG@10 | {args.real} val needed recall "
          "| worse, relative |")  # fmt: skip
    print("|---:|" + "---:|" * (len(keys) + 3))
    for t in sorted(trials, key=lambda t: [t[k] for k in reversed(keys)]):
        mark = " (chosen)" if t is chosen else ""
        cells = " | ".join(f"{t[k]:.4g}" for k in keys)
        print(f"| {t['number']}{mark} | {cells} | {t['synthetic']:.4f} | {t['real']:.3f} "
              f"| {t['relative']:.3f} |")
    print(f"chosen: trial {chosen['number']}, {', '.join(f'{k} {chosen[k]!r}' for k in keys)} "
          f"({time.perf_counter() - t0:.0f} s)")
    out = Path(args.out or ROOT / "experiments" / "choices" / f"{args.study}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"study": args.study, "real": args.real, "trials": trials, "chosen": chosen},
                              indent=2))  # fmt: skip
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
