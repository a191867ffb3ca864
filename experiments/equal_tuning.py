"""Read the equal-tuning sweeps (issue 25 §3) back from their Optuna storage: every trial's validation value
and the best trial, as a markdown table; write the traversal sweep's best parameters into
``conf/experiment/learning/sweep/traversal_best.yaml``, which every scorer sweep includes; and write each
calibrated-exploration study's best trial (issue 25 §1) into ``sweep/exploration_best-<scorer>.yaml``, the
task's exploration for that scorer, which the recipes rerun with it include.

The sweeps themselves are plain Hydra multiruns (``conf/experiment/learning/sweep/``), run in this order, each
resumable by running its command again::

    python -m signet_rl.train -m +experiment=learning/sweep/traversal
    python experiments/equal_tuning.py --traversal-best       # then the scorer sweeps share it
    python -m signet_rl.train -m +experiment=learning/sweep/gnn   # then linucb, signet_predictor, prior,
    ...                                                         # ppr, fused
    python experiments/equal_tuning.py --table gnn linucb ...
    python -m signet_rl.train -m +experiment=learning/sweep/signet_predictor-base   # with base scores
    python -m signet_rl.train -m +experiment=learning/sweep/exploration-gnn   # and -linucb, -signet_predictor
    python experiments/equal_tuning.py --enqueue-defaults exploration-gnn   # the default as one more trial
    python -m signet_rl.train -m +experiment=learning/sweep/exploration-gnn hydra.sweeper.n_trials=17
    python experiments/equal_tuning.py --exploration-best

Only the studies' objective (a validation metric) is read; nothing here looks at a test figure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STORAGE = ROOT / "data" / "sweeps" / "learning.db"
TRAVERSAL_BEST = ROOT / "conf" / "experiment" / "learning" / "sweep" / "traversal_best.yaml"
EXPLORATION = ("exploration-gnn", "exploration-linucb", "exploration-signet_predictor")
RECIPES = (
    "traversal", "gnn", "linucb", "signet_predictor", "signet_predictor-base", "prior", "ppr", "fused",
    *EXPLORATION, "exploration-linucb-thompson",
)  # fmt: skip
SWEEP_DIR = TRAVERSAL_BEST.parent


def load(recipe: str, storage: Path = STORAGE) -> Any:
    """The study ``learning-<recipe>``; a clear error when the storage or the study is missing."""
    import optuna

    if not storage.exists():
        raise SystemExit(f"no sweep storage at {storage}; run python -m signet_rl.train -m "
                         f"+experiment=learning/sweep/{recipe} first")  # fmt: skip
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{storage}"
    names = {s.study_name for s in optuna.get_all_study_summaries(url)}
    if f"learning-{recipe}" not in names:
        raise SystemExit(f"no study learning-{recipe} in {storage} (have {sorted(names)})")
    return optuna.load_study(study_name=f"learning-{recipe}", storage=url)


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-2 or abs(value) >= 1e3 else f"{value:.4g}"
    return str(value)


def table(recipe: str, storage: Path = STORAGE) -> str:
    """Every trial of the study (number, state, parameters, validation value), the best marked."""
    import optuna

    study = load(recipe, storage)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    best = study.best_trial if done else None
    keys = sorted({k for t in study.trials for k in t.params})
    lines = [
        f"`learning-{recipe}`: {len(done)} completed trials"
        + (f", best trial {best.number} at {best.value:.4f}" if best else ""),
        "",
        "| trial | "
        + " | ".join(k.removeprefix("scorer.").removeprefix("traversal.").removeprefix("task.") for k in keys)
        + " | val nDCG@10 |",
        "|---:|" + "---:|" * len(keys) + "---:|",
    ]
    for t in study.trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            value = f"{t.value:.4f}"
            if "reused_trial" in t.user_attrs:
                value += f" (= trial {t.user_attrs['reused_trial']})"
        else:
            value = t.state.name.lower()
        cells = [fmt(t.params.get(k, "–")) for k in keys]
        mark = "**" if best is not None and t.number == best.number else ""
        lines.append(f"| {mark}{t.number}{mark} | " + " | ".join(cells) + f" | {mark}{value}{mark} |")
    return "\n".join(lines)


def write_traversal_best(storage: Path = STORAGE, path: Path = TRAVERSAL_BEST) -> dict[str, Any]:
    """Write the traversal study's best parameters into ``traversal_best.yaml`` (the keys the recipe already
    holds, nothing else); returns them."""
    study = load("traversal", storage)
    best = study.best_trial
    params = {k.removeprefix("traversal."): v for k, v in best.params.items()}
    n = sum(1 for t in study.trials if t.state.name == "COMPLETE")
    lines = [
        "# @package _global_",
        "# The traversal every scorer sweep uses: the best trial of the traversal sweep",
        "#   python -m signet_rl.train -m +experiment=learning/sweep/traversal",
        f"# (study learning-traversal, {n} completed trials: trial {best.number}, validation nDCG@10 "
        f"{best.value:.4f} with the prior scorer),",
        "# written by python experiments/equal_tuning.py --traversal-best.",
        "traversal:",
    ]
    lines += [f"  {k}: {v!r}" for k, v in params.items()]
    path.write_text("\n".join(lines) + "\n")
    return params


def write_exploration_best(recipe: str, storage: Path = STORAGE, folder: Path = SWEEP_DIR) -> dict[str, Any]:
    """Write the study ``learning-<recipe>``'s best trial into ``exploration_best-<scorer>.yaml`` (a
    ``task:`` block: the strategy and the parameter it reads, epsilon for ``epsilon``, temperature for
    ``softmax``, none for ``thompson``; the other was drawn too but moved nothing); returns them."""
    study = load(recipe, storage)
    best = study.best_trial
    drawn = {k.removeprefix("task."): v for k, v in best.params.items()}
    reads = {"epsilon": "epsilon", "softmax": "temperature"}.get(drawn["exploration"])
    params = {"exploration": drawn["exploration"], **({reads: drawn[reads]} if reads else {})}
    n = sum(1 for t in study.trials if t.state.name == "COMPLETE")
    scorer = recipe.removeprefix("exploration-")
    lines = [
        "# @package _global_",
        f"# The calibrated exploration of the {scorer} scorer (issue 25 §1): the best trial of",
        f"#   python -m signet_rl.train -m +experiment=learning/sweep/{recipe}",
        f"# (study learning-{recipe}, {n} completed trials: trial {best.number}, validation nDCG@10 "
        f"{best.value:.4f}),",
        "# written by python experiments/equal_tuning.py --exploration-best. Recipes of this scorer rerun",
        "# with the tuned exploration include it; conf/task/bandit.yaml keeps epsilon 0.1 for the others.",
        "task:",
    ]
    lines += [f"  {k}: {v!r}" if not isinstance(v, str) else f"  {k}: {v}" for k, v in params.items()]
    (folder / f"exploration_best-{scorer}.yaml").write_text("\n".join(lines) + "\n")
    return params


def enqueue_defaults(recipe: str, storage: Path = STORAGE) -> dict[str, Any]:
    """Enqueue, as the study's next trial, the values the searched keys have in the recipe's own config (the
    defaults the sweep would replace), so the study measures them beside its draws under the same protocol;
    run the recipe with ``hydra.sweeper.n_trials`` one higher to evaluate it. Returns the parameters.
    Refuses a study that already holds its default trial (waiting, running or done), so running the step twice
    cannot measure the default twice."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    study = load(recipe, storage)
    already = [t.number for t in study.trials if t.user_attrs.get("defaults")]
    if already:
        raise SystemExit(f"learning-{recipe} already holds its default trial (trial {already[0]}, "
                         f"{study.trials[already[0]].state.name.lower()}); not enqueued again")  # fmt: skip
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"+experiment=learning/sweep/{recipe}"], return_hydra_config=True)
    keys = sorted({k for t in study.trials for k in t.params})
    params = {k: OmegaConf.select(cfg, k) for k in keys}
    study.enqueue_trial(params, user_attrs={"defaults": True})
    return params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", nargs="*", choices=RECIPES, help="print these studies' trial tables")
    parser.add_argument("--traversal-best", action="store_true", help="write traversal_best.yaml")
    parser.add_argument(
        "--exploration-best", action="store_true", help="write exploration_best-<scorer>.yaml for each scorer"
    )
    parser.add_argument(
        "--enqueue-defaults", nargs="*", choices=RECIPES, default=[],
        help="enqueue the recipe's own values of the searched keys as the study's next trial",
    )  # fmt: skip
    parser.add_argument("--storage", type=Path, default=STORAGE)
    args = parser.parse_args(argv)
    if args.traversal_best:
        print(f"traversal_best.yaml: {write_traversal_best(args.storage)}")
    if args.exploration_best:
        for recipe in EXPLORATION:
            print(f"exploration_best-{recipe.removeprefix('exploration-')}.yaml: "
                  f"{write_exploration_best(recipe, args.storage)}")  # fmt: skip
    for recipe in args.enqueue_defaults:
        print(f"learning-{recipe}: enqueued {enqueue_defaults(recipe, args.storage)}")
    for recipe in args.table or []:
        print(table(recipe, args.storage) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
