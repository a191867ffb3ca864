"""KG path reasoning on the published protocols, with recipes frozen before their test runs (issue 30).

Three steps, each resumable (a finished run folder is skipped, an interrupted one resumes):

1. **Probe** (validation only). ``--probe`` trains each ``--recipes`` candidate on ``--datasets`` in a
   ``--setting`` with ``task.rank_test=false``: neither the walker nor an in-run anchor ever ranks the test
   split (``tests/kg/test_kg_trainer.py`` checks it with a spy). Each probe's validation figures go to the
   committed ledger ``experiments/kg_runs/probes.json``; the probe table prints validation columns only.
2. **Freeze.** ``--freeze <dataset>@<setting> <recipe>`` records, in the committed ledger
   ``experiments/kg_runs/frozen.json``, the recipe with the whole configuration of its later runs (the
   dataset's structural settings, the setting's inverse-edge rule and the recipe's task keys) and the
   validation figures that chose it. It refuses when no
   probe of that recipe finished, and when a final (test) run of that dataset and setting already exists: a
   recipe is chosen before its test run or not at all.
   ``--freeze-best <dataset>@<setting> <recipe> <recipe> ...`` freezes the candidate :func:`best_probe` picks:
   the higher validation MRR, a tie to the higher validation H@1, then to the first listed. Commit the ledger
   before running step 3.
3. **Final.** ``--final`` runs every frozen recipe of ``--datasets`` in ``--setting`` on fresh seeds
   (default 10, 11, 12), ranks validation and test, copies each run into ``experiments/kg_runs/final.json``
   and publishes the table (section ``kg-protocol`` of ``docs/results.md``): one row per dataset and
   setting with mean ± sd over the seeds, the in-run anchors beside it, and the published rows **of that
   setting only** — MINERVA's beside the MINERVA-setting rows, MultiHopKG's beside the MultiHopKG-setting
   rows.

Settings (``--setting``):

* ``minerva``: the walking graph as the folder's files define it (``dataset.inverse=null``): ``umls/`` has
  no inverse edges; Kinship's ``graph.txt`` already holds them; NELL-995's graph is rebuilt from
  ``full_kb/`` with ``<rel>_inv`` edges, as MINERVA's ``nell`` setting does (see the data's SOURCES.md).
* ``multihopkg``: every inverse edge added (``dataset.inverse=true``), MultiHopKG's setting. On Kinship and
  NELL-995 the two graphs are the same edge set; the table says so.

Where the two settings build one walking graph (Kinship: ``graph.txt`` already holds every inverse edge;
NELL-995: the loader adds them in both), ``--same-runs <dataset>@multihopkg <dataset>@minerva`` checks
that with ``experiments/kg_same_graph.py`` (graph, action table, facts and queries identical) and records
it in ``frozen.json``: the table then shows the ``minerva`` runs in the ``multihopkg`` row, labelled "same
runs as minerva: identical walking graph", beside MultiHopKG's published rows, and ``--final`` runs
nothing for that key (a run would read the same inputs with the same seed).

Any other MINERVA-layout folder a user points at (``--datasets <folder>``) runs unchanged with the generic
structure (path length 3, at most 200 actions per entity): nothing in a recipe names a benchmark.

    python experiments/kg_protocol.py --probe --datasets umls --setting minerva \\
        --recipes shaped regularised_sum --seeds 0
    python experiments/kg_protocol.py --freeze umls@minerva regularised_sum
    python experiments/kg_protocol.py --final --datasets umls --setting minerva
    python experiments/kg_protocol.py --report-only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kg_report import PUBLISHED, recipe_overrides, whole_seconds

from signet_rl import smoke
from signet_rl.reporting import Section, publish

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "experiments" / "kg_runs"
PROBES, FROZEN, FINAL = "probes.json", "frozen.json", "final.json"
#: per key, the query-bootstrap 95% interval of the test MRR (mean over seeds), by kg_bootstrap.py
BOOTSTRAP = "bootstrap.json"
RUNS = ROOT / "runs"
SETTINGS = {"minerva": ["dataset.inverse=null"], "multihopkg": ["dataset.inverse=true"]}
FINAL_SEEDS = (10, 11, 12)
#: Each benchmark's structure: MINERVA's published path lengths and NELL-995's 200-action cap and the
#: smaller policy its 75k entities need on a CPU. Training knobs are not here: they are the recipe's.
STRUCTURE: dict[str, list[str]] = {
    "countries_S1": ["dataset.path_length=2"],
    "countries_S2": ["dataset.path_length=2"],
    "countries_S3": ["dataset.path_length=3"],
    "kinship": ["dataset.path_length=2"],
    "umls": ["dataset.path_length=2"],
    # the ComplEx anchor trains on the walking graph's ~150k triples (validation and test triples dropped),
    # not on the 8,747 training queries alone, so "anchor vs walker" compares models that saw the same edges
    "nell-995": [
        "dataset.path_length=3",
        "dataset.max_actions=200",
        "task.anchors=[complex]",
        "++task.anchor.train_on=graph",
        "++task.anchor.time_budget_s=600",
        "task.entity_dim=100",
        "task.relation_dim=100",
        "task.history_dim=100",
        "task.hidden_dim=200",
        "task.batch_size=64",
    ],
}
GENERIC = ["dataset.path_length=3", "dataset.max_actions=200"]
#: Which published rows compare with which setting (keys of kg_report.PUBLISHED's per-dataset dicts).
PUBLISHED_SETTING = {
    "MINERVA": "minerva",
    "MultiHopKG (ConvE)": "multihopkg",
    "MultiHopKG (ComplEx)": "multihopkg",
    "ComplEx": "multihopkg",
}
METRICS = ("hits@1", "hits@3", "hits@10", "mrr")


def key_of(dataset: str, setting: str) -> str:
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; expected one of: {', '.join(SETTINGS)}")
    return f"{dataset}@{setting}"


def structure(dataset: str) -> list[str]:
    return list(STRUCTURE.get(dataset, GENERIC))


def _read(ledger: Path, name: str) -> dict:
    path = ledger / name
    return json.loads(path.read_text()) if path.exists() else {}


def _write(ledger: Path, name: str, data: dict) -> None:
    ledger.mkdir(parents=True, exist_ok=True)
    (ledger / name).write_text(json.dumps(dict(sorted(data.items())), indent=1, sort_keys=True) + "\n")


def _run(overrides: list[str], folder: Path) -> dict:
    from hydra import compose, initialize_config_dir

    from signet_rl.tasks.kg import run_kg

    if (folder / "results.json").exists():
        return json.loads((folder / "results.json").read_text())
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=["task=kg", "dataset=kg", *overrides, f"run_dir={folder}", "task.progress=false"],
        )
    if smoke.enabled():
        smoke.shrink_train(cfg)
    return run_kg(cfg)


def uses_anchor(recipe: str) -> bool:
    """Whether ``recipe``'s walker reads an in-run anchor: shaping by one (the task's default, unless the
    recipe sets ``task.shaping=none``) or starting from its vectors (``task.init_from_anchor``)."""
    overrides = recipe_overrides(recipe)
    return "task.shaping=none" not in overrides or any(
        o.startswith("task.init_from_anchor=") and not o.endswith("=null") for o in overrides
    )


def probe_overrides(
    dataset: str, setting: str, recipe: str, seed: int, budget: float, skip_anchors: bool = False
) -> list[str]:
    """The probe's overrides; ``skip_anchors`` leaves the in-run anchors out (``task.anchors=[]``).

    Skipping them changes nothing the probe measures when the walker does not read an anchor: the trainer
    seeds the walker after the anchors train (``torch.manual_seed(seed)``), so the walker starts from the
    same state, and the anchors' own figures are not a probe's business. It saves their training time
    (NELL-995's anchor: 600 s).

    Raises:
        ValueError: ``skip_anchors`` for a recipe whose walker reads an anchor (:func:`uses_anchor`).
    """
    if skip_anchors and uses_anchor(recipe):
        raise ValueError(
            f"recipe {recipe!r} shapes with or starts from an in-run anchor: its probe cannot skip the "
            "anchors (drop --skip-anchors)"
        )
    return [
        f"dataset.spec=kg:{dataset}",
        *structure(dataset),
        *SETTINGS[setting],
        *recipe_overrides(recipe),
        f"seed={seed}",
        f"task.time_budget_s={budget}",
        "task.rank_test=false",
        *(["task.anchors=[]"] if skip_anchors else []),
    ]


def probe(
    datasets: Sequence[str],
    setting: str,
    recipes: Sequence[str],
    seeds: Sequence[int],
    budget: float,
    runs: Path = RUNS / "probe-kg",
    ledger: Path = LEDGER,
    skip_anchors: bool = False,
) -> dict:
    """Run the probes (validation only) and copy each into the probe ledger; returns the ledger.

    ``skip_anchors``: leave the in-run anchors out (see :func:`probe_overrides`)."""
    book = _read(ledger, PROBES)
    for seed in seeds:
        for dataset in datasets:
            for recipe in recipes:
                name = f"{key_of(dataset, setting)}-{recipe}-s{seed}"
                t0 = time.perf_counter()
                overrides = probe_overrides(dataset, setting, recipe, seed, budget, skip_anchors)
                res = _run(overrides, runs / name)
                if res.get("test"):
                    raise RuntimeError(f"{runs / name} ranked the test split; a probe must not (delete it)")
                book[name] = {
                    "dataset": dataset,
                    "setting": setting,
                    "recipe": recipe,
                    "seed": seed,
                    "budget_s": budget,
                    "validation": res.get("validation", {}),
                    "timing": res.get("timing", {}),
                    **({"anchors_skipped": True} if skip_anchors else {}),
                }
                _write(ledger, PROBES, book)
                print(
                    f"[probe {name}] {time.perf_counter() - t0:.0f} s  validation MRR "
                    f"{res.get('validation', {}).get('kg_walk/mrr', float('nan')):.4f}",
                    flush=True,
                )
    return book


def probe_table(ledger: Path = LEDGER) -> str:
    """Validation MRR (×100) per dataset, setting and recipe over the probed seeds. No test column exists."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for e in _read(ledger, PROBES).values():
        groups.setdefault((e["dataset"], e["setting"], e["recipe"]), []).append(
            100 * e["validation"].get("kg_walk/mrr", float("nan"))
        )
    lines = ["| dataset | setting | recipe | seeds | validation MRR |", "|---|---|---|---:|---:|"]
    for (d, s, r), v in sorted(groups.items()):
        sd = f" ± {np.std(v, ddof=1):.1f}" if len(v) > 1 else ""
        lines.append(f"| {d} | {s} | {r} | {len(v)} | {np.mean(v):.1f}{sd} |")
    return "\n".join(lines)


def freeze(key: str, recipe: str, ledger: Path = LEDGER) -> dict:
    """Freeze ``recipe`` for ``key`` (``<dataset>@<setting>``) from its probes' validation figures.

    Raises:
        ValueError: a malformed key, no finished probe of that recipe, or a final (test) run of the key
            already recorded.
    """
    dataset, _, setting = key.partition("@")
    key_of(dataset, setting)
    finals = [n for n, e in _read(ledger, FINAL).items() if f"{e['dataset']}@{e['setting']}" == key]
    if finals:
        raise ValueError(
            f"{key}: final runs with test figures exist ({', '.join(finals)}); a recipe frozen "
            "now would be chosen with test in view"
        )
    probes = [
        e
        for e in _read(ledger, PROBES).values()
        if e["dataset"] == dataset and e["setting"] == setting and e["recipe"] == recipe
    ]
    if not probes:
        raise ValueError(
            f"{key}: no finished probe of recipe {recipe!r} in {ledger / PROBES}; run "
            f"--probe --datasets {dataset} --setting {setting} --recipes {recipe} first"
        )
    validation = {m: float(np.mean([p["validation"][f"kg_walk/{m}"] for p in probes])) for m in METRICS}
    overrides = [*structure(dataset), *SETTINGS[setting], *recipe_overrides(recipe)]
    budget = probes[0]["budget_s"]
    book = _read(ledger, FROZEN)
    book[key] = {
        "recipe": recipe,
        "budget_s": budget,
        "overrides": overrides,
        "validation": validation,
        "probe_seeds": sorted(p["seed"] for p in probes),
    }
    _write(ledger, FROZEN, book)
    print(f"froze {key}: {recipe} (validation MRR {validation['mrr']:.4f}) -> {ledger / FROZEN}")
    return book[key]


def best_probe(key: str, candidates: Sequence[str], ledger: Path = LEDGER) -> str:
    """The candidate recipe the freeze rule picks for ``key`` from its probes' validation figures.

    The rule, fixed before any probe runs: the higher mean validation MRR over the probed seeds; a tie (to
    six decimals) goes to the higher mean validation H@1, then to the candidate listed first.

    Raises:
        ValueError: no candidate of ``key`` has a finished probe, naming the candidates.
    """
    dataset, _, setting = key.partition("@")
    key_of(dataset, setting)
    book = _read(ledger, PROBES).values()
    scored = []
    for order, recipe in enumerate(candidates):
        runs = [e for e in book if (e["dataset"], e["setting"], e["recipe"]) == (dataset, setting, recipe)]
        if runs:
            mrr = round(float(np.mean([e["validation"]["kg_walk/mrr"] for e in runs])), 6)
            h1 = round(float(np.mean([e["validation"]["kg_walk/hits@1"] for e in runs])), 6)
            scored.append(((mrr, h1, -order), recipe))
    if not scored:
        raise ValueError(
            f"{key}: no finished probe of any candidate ({', '.join(candidates)}) in {ledger / PROBES}"
        )
    return max(scored)[1]


def frozen_recipe(key: str, ledger: Path = LEDGER) -> dict:
    """The recipe frozen for ``key`` in the committed ledger (recipe, budget, overrides, validation)."""
    book = _read(ledger, FROZEN)
    if key not in book:
        raise FileNotFoundError(
            f"{key}: no frozen recipe in {ledger / FROZEN} (frozen: {', '.join(sorted(book)) or 'none'}); "
            f"probe on validation and --freeze one first"
        )
    return book[key]


def _cap(dataset: str) -> int | None:
    """The action cap of ``dataset``'s structure (``dataset.max_actions``), None when uncapped."""
    caps = [o.split("=", 1)[1] for o in structure(dataset) if o.startswith("dataset.max_actions=")]
    return int(caps[-1]) if caps and caps[-1] != "null" else None


def same_runs(
    key: str, as_key: str, ledger: Path = LEDGER, root: Path | None = None, seeds: Sequence[int] = FINAL_SEEDS
) -> dict:
    """Record that ``key``'s runs are ``as_key``'s: the two settings of one dataset build one walking graph.

    ``experiments/kg_same_graph.py`` compares what a run is built from in the two settings (entities,
    relations, the graph's triples in order, the action table with the dataset's cap drawn with each of
    ``seeds``, the rewarded facts, every split's queries and answers). Only when all match is the entry
    written (``frozen.json``: ``same_runs_as``), so the table shows ``as_key``'s frozen recipe and final
    runs in ``key``'s row, labelled, beside ``key``'s setting's published rows; ``--final`` runs nothing
    for ``key``.

    Raises:
        ValueError: the keys name two datasets or one setting, ``key`` has a frozen recipe or final runs of
            its own, ``as_key`` has no frozen recipe, or the walking graphs differ (naming what differs).
    """
    import kg_same_graph

    from signet_rl.core.paths import data_root

    dataset, _, setting = key.partition("@")
    other, _, other_setting = as_key.partition("@")
    key_of(dataset, setting), key_of(other, other_setting)
    if dataset != other or setting == other_setting:
        raise ValueError(f"{key} and {as_key}: same_runs joins the two settings of one dataset")
    book = _read(ledger, FROZEN)
    if key in book and "same_runs_as" not in book[key]:
        raise ValueError(f"{key}: a recipe is frozen for it ({book[key]['recipe']}); it runs its own finals")
    if any(f"{e['dataset']}@{e['setting']}" == key for e in _read(ledger, FINAL).values()):
        raise ValueError(f"{key}: final runs of its own exist in {ledger / FINAL}")
    source = frozen_recipe(as_key, ledger)
    for seed in seeds:
        r = kg_same_graph.compare(dataset, root or data_root(), _cap(dataset), seed)
        if not r["identical"]:
            raise ValueError(
                f"{key} and {as_key} walk different graphs (seed {seed}: {', '.join(r['differs'])} differ); "
                f"probe, freeze and run {key} on its own"
            )
    book[key] = {
        "same_runs_as": as_key,
        "recipe": source["recipe"],
        "checked": (
            f"experiments/kg_same_graph.py {dataset}: the same entities, relations, graph triples, action "
            f"table (cap {_cap(dataset)}, drawn with seeds {', '.join(map(str, seeds))}), training facts and "
            "queries in both settings"
        ),
    }
    _write(ledger, FROZEN, book)
    print(f"{key}: the same runs as {as_key} (identical walking graph) -> {ledger / FROZEN}")
    return book[key]


def final(
    datasets: Sequence[str],
    setting: str,
    seeds: Sequence[int] = FINAL_SEEDS,
    runs: Path = RUNS / "final-kg",
    ledger: Path = LEDGER,
) -> dict:
    """Run each frozen recipe on the fresh seeds (validation and test) into the final ledger."""
    book = _read(ledger, FINAL)
    for dataset in datasets:
        key = key_of(dataset, setting)
        recipe = frozen_recipe(key, ledger)
        if "same_runs_as" in recipe:
            print(
                f"{key}: the same runs as {recipe['same_runs_as']} (identical walking graph); nothing to run"
            )
            continue
        for seed in seeds:
            name = f"{key}-s{seed}"
            overrides = [
                f"dataset.spec=kg:{dataset}",
                *recipe["overrides"],
                f"seed={seed}",
                f"task.time_budget_s={recipe['budget_s']}",
            ]
            res = _run(overrides, runs / name)
            book[name] = {
                "dataset": dataset,
                "setting": setting,
                "recipe": recipe["recipe"],
                "seed": seed,
                "budget_s": recipe["budget_s"],
                "validation": res.get("validation", {}),
                "test": res.get("test", {}),
                "timing": res.get("timing", {}),
            }
            _write(ledger, FINAL, book)
    return book


def _cells(runs: list[dict], model: str) -> list[str]:
    out = []
    for m in METRICS:
        v = 100 * np.asarray([r["test"].get(f"{model}/{m}", np.nan) for r in runs], dtype=float)
        out.append(f"{np.mean(v):.1f}" + (f" ± {np.std(v, ddof=1):.1f}" if len(v) > 1 else ""))
    return out


def report(ledger: Path = LEDGER) -> str:
    """The headline table from the final ledger: frozen recipes on fresh seeds, per setting."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for e in _read(ledger, FINAL).values():
        groups.setdefault((e["dataset"], e["setting"]), []).append(e)
    frozen = _read(ledger, FROZEN)
    # a key whose walking graph is another setting's (same_runs): that key's runs, labelled, in its own row
    alias: dict[tuple[str, str], str] = {}
    for key, entry in frozen.items():
        dataset, _, setting = key.partition("@")
        source = tuple(entry.get("same_runs_as", "").partition("@")[::2])
        if source in groups and (dataset, setting) not in groups:
            groups[(dataset, setting)] = groups[source]
            alias[(dataset, setting)] = source[1]
    lines = [
        f"_Written by `python experiments/kg_protocol.py` on {time.strftime('%Y-%m-%d')}: each recipe was "
        "frozen from validation-only probes (`experiments/kg_runs/frozen.json`, with the validation figures "
        "that chose it) before any test run, then run on fresh seeds. Test split, tail queries, filtered "
        "ranking (`docs/kg_protocol.md`), ×100, mean ± sd. Setting: `minerva` = the walking graph as the "
        "folder's files define it; `multihopkg` = inverse edges added; published rows appear beside the "
        "setting they were measured in._",
        "",
        "| dataset | setting | model | seeds | H@1 | H@3 | H@10 | MRR | MRR 95% interval (test queries) "
        "| minutes per seed |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    boot = _read(ledger, BOOTSTRAP)
    for (dataset, setting), runs in sorted(groups.items()):
        runs = sorted(runs, key=lambda r: r["seed"])
        recipe = frozen.get(f"{dataset}@{setting}", {}).get("recipe", runs[0]["recipe"])
        minutes = np.mean([whole_seconds(r["timing"])[0] for r in runs]) / 60
        seeds = ", ".join(str(r["seed"]) for r in runs)
        runs_of = alias.get((dataset, setting), setting)
        label = f"; same runs as {runs_of}: identical walking graph" if runs_of != setting else ""
        ci = boot.get(f"{dataset}@{runs_of}")
        # the interval belongs to these runs only: a stale one (other seeds) is left out, not shown
        ci_cell = (
            f"[{100 * ci['ci95'][0]:.1f}, {100 * ci['ci95'][1]:.1f}]"
            if ci and sorted(ci["runs"]) == sorted(f"{dataset}@{runs_of}-s{r['seed']}" for r in runs)
            else "–"
        )
        lines.append(
            f"| {dataset} | {setting} | walker ({recipe}{label}) | {seeds} | "
            + " | ".join(_cells(runs, "kg_walk"))
            + f" | {ci_cell} | {minutes:.1f} |"
        )
        for anchor in sorted({k.split("/")[0] for r in runs for k in r["test"] if k.startswith("anchor_")}):
            lines.append(
                f"| {dataset} | {setting} | {anchor.removeprefix('anchor_')} (in-run anchor{label}) | "
                f"{seeds} | " + " | ".join(_cells(runs, anchor)) + " | – | – |"
            )
        for model, (h1, h10, mrr) in PUBLISHED.get(dataset, {}).items():
            if PUBLISHED_SETTING.get(model) == setting:
                lines.append(
                    f"| {dataset} | {setting} | {model} (published) | – | {h1} | – | {h10} | {mrr} | – | – |"
                )
    if not groups:
        lines.append("| (no final runs yet) | | | | | | | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--probe", action="store_true", help="validation-only runs of candidate recipes")
    mode.add_argument("--freeze", nargs=2, metavar=("DATASET@SETTING", "RECIPE"))
    mode.add_argument(
        "--freeze-best",
        nargs="+",
        metavar="ARG",
        help="DATASET@SETTING RECIPE [RECIPE ...]: freeze the candidate best_probe picks on validation",
    )
    mode.add_argument(
        "--same-runs",
        nargs=2,
        metavar=("DATASET@SETTING", "DATASET@OTHER_SETTING"),
        help="record that the first key's runs are the second's (checked: one walking graph)",
    )
    mode.add_argument("--final", action="store_true", help="frozen recipes on fresh seeds, test ranked")
    mode.add_argument("--report-only", action="store_true")
    ap.add_argument("--datasets", nargs="*", default=[])
    ap.add_argument("--setting", default="minerva", choices=sorted(SETTINGS))
    ap.add_argument("--recipes", nargs="*", default=["shaped"])
    ap.add_argument("--seeds", type=int, nargs="*", default=None)
    ap.add_argument("--budget", type=float, default=1200.0, help="training seconds per probe")
    ap.add_argument(
        "--skip-anchors",
        action="store_true",
        help="probes leave the in-run anchors out (only for recipes whose walker reads none)",
    )
    ap.add_argument("--output", default=str(ROOT / "docs" / "results.md"))
    args = ap.parse_args(argv)
    if args.probe:
        probe(
            args.datasets, args.setting, args.recipes, args.seeds or [0], args.budget,
            skip_anchors=args.skip_anchors,
        )  # fmt: skip
        body = probe_table()
        print(body)  # validation only: a probe never publishes
        return body
    if args.freeze:
        return str(freeze(*args.freeze)["recipe"])
    if args.same_runs:
        return str(same_runs(*args.same_runs)["same_runs_as"])
    if args.freeze_best:
        if len(args.freeze_best) < 2:
            ap.error("--freeze-best needs DATASET@SETTING and at least one candidate recipe")
        key, *candidates = args.freeze_best
        return str(freeze(key, best_probe(key, candidates))["recipe"])
    if args.final:
        final(args.datasets, args.setting, args.seeds or FINAL_SEEDS)
    body = report()
    print(body)
    publish(
        args.output,
        [Section("kg-protocol", body, heading="## KG path reasoning on the published protocols (issue 30)")],
        "kg_protocol.py",
    )
    return body


if __name__ == "__main__":
    main()
