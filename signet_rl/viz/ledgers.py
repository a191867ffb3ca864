"""Read the committed results ledger (``docs/results.md``) back into tables, for notebooks and plots.

The experiment scripts publish their figures into ``docs/results.md`` between section markers
(:mod:`signet_rl.reporting`). Three kinds of table there carry the scorer comparison:

* **bootstrap tables** (the harness's text table in a code block, ``desire`` / ``desire-musique`` /
  ``desire-locomo`` sections): one row per retriever with ``mean [low, high]`` 95% bootstrap intervals over
  queries, one table per budget (:func:`bootstrap_rows`);
* **markdown tables** of means per intent or per query category under the same budget headings
  (:func:`markdown_rows`);
* the **learning** section's tables: ``mean ± sd`` over training seeds, trained scorers beside the
  non-learned ones (:func:`learning_rows`).

:func:`comparison` joins them into one long table, one row per (source, dataset, budget, retriever,
metric) with the interval and what kind of interval it is, and each retriever classed as ``flat``,
``non-learned``, ``learned`` or ``ceiling`` (:func:`scorer_kind`).

The module reads text only (the standard library and pandas).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

__all__ = [
    "bootstrap_rows",
    "comparison",
    "learning_rows",
    "markdown_rows",
    "read_sections",
    "scorer_kind",
]

_SECTION = re.compile(r"<!-- ([\w-]+):start -->(.*?)<!-- \1:end -->", re.S)
_CI = re.compile(r"^(-?[\d.]+|nan|-) \[(-?[\d.]+|nan), (-?[\d.]+|nan)\]$")
_PM = re.compile(r"^(-?[\d.]+)(?: ± ([\d.]+))?$")  # one seed: a plain number (sd 0)
_BUDGET = re.compile(r"^#### Budget (\d+) characters")
_BOOT_HEAD = re.compile(r"^(\S+) \[(\w+)\] (\d+) queries, 95% bootstrap CI")
_LEARN_HEAD = re.compile(r"^#### (.+?), ([\d,]+) characters: (\w+) queries")
#: Flat retrievers (no graph walk).
FLAT = ("flat_signet", "flat_signet_uncapped", "best_flat")


def scorer_kind(retriever: str) -> str:
    """``flat``, ``ceiling``, ``learned`` or ``non-learned`` (``desire_<scorer>``), from a retriever's name.

    >>> [scorer_kind(r) for r in ("best_flat", "desire_ppr", "trained gnn", "learned", "candidate_ceiling")]
    ['flat', 'non-learned', 'learned', 'learned', 'ceiling']
    """
    name = retriever.strip()
    if name in FLAT or name.startswith("flat_") or name.startswith("best_flat"):
        return "flat"
    if "ceiling" in name:
        return "ceiling"
    if name.startswith("trained") or name.startswith("learned") or name.startswith("desire_learned"):
        return "learned"
    return "non-learned"


def read_sections(path: str | Path) -> dict[str, str]:
    """Section name -> body of every ``<!-- name:start -->`` … ``<!-- name:end -->`` block (outermost)."""
    text = Path(path).read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in _SECTION.finditer(text)}


def _number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return float("nan")


def bootstrap_rows(body: str, source: str = "") -> pd.DataFrame:
    """Every harness table in ``body``'s code blocks, long: ``source, dataset, split, queries, budget,
    retriever, metric, mean, low, high`` (metrics with an interval only)."""
    records: list[dict[str, object]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        head = _BOOT_HEAD.match(lines[i].strip())
        if head is None or i + 2 >= len(lines):
            i += 1
            continue
        dataset, split, queries = head.group(1), head.group(2), int(head.group(3))
        columns = lines[i + 1].split()
        i += 3  # header, rule
        while i < len(lines) and lines[i].strip() and not lines[i].startswith("```"):
            cells = re.split(r"\s{2,}", lines[i].strip())
            row = dict(zip(columns, cells, strict=False))
            for metric, cell in row.items():
                ci = _CI.match(cell)
                if ci is None:
                    continue
                records.append({
                    "source": source, "dataset": dataset, "split": split, "queries": queries,
                    "budget": row.get("budget", ""), "retriever": row["retriever"], "metric": metric,
                    "mean": _number(ci.group(1)), "low": _number(ci.group(2)), "high": _number(ci.group(3)),
                })  # fmt: skip
            i += 1
    return pd.DataFrame.from_records(records)


def _markdown_table(lines: list[str], start: int) -> tuple[list[str], list[list[str]], int]:
    header = [c.strip() for c in lines[start].strip().strip("|").split("|")]
    rows, i = [], start + 2
    while i < len(lines) and lines[i].strip().startswith("|"):
        rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
        i += 1
    return header, rows, i


def markdown_rows(body: str, by: str, source: str = "", dataset: str = "") -> pd.DataFrame:
    """Markdown tables of means whose first columns are ``by`` (``intent`` or ``category``) and
    ``retriever``, long: ``source, dataset, budget, <by>, retriever, metric, mean``."""
    records: list[dict[str, object]] = []
    lines = body.splitlines()
    budget = ""
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = _BUDGET.match(line)
        if m:
            budget = m.group(1)
        if line.startswith(f"| {by} | retriever |"):
            header, rows, i = _markdown_table(lines, i)
            for cells in rows:
                for metric, cell in zip(header[2:], cells[2:], strict=False):
                    records.append({
                        "source": source, "dataset": dataset, "budget": budget, by: cells[0],
                        "retriever": cells[1], "metric": metric, "mean": _number(cell),
                    })  # fmt: skip
            continue
        i += 1
    return pd.DataFrame.from_records(records)


def learning_rows(body: str, source: str = "learning") -> pd.DataFrame:
    """The learning section's ``mean ± sd`` tables, long: ``source, dataset, split, budget, retriever,
    metric, mean, low, high`` (low/high = mean ∓ sd over seeds)."""
    records: list[dict[str, object]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        head = _LEARN_HEAD.match(lines[i].strip())
        if head is None:
            i += 1
            continue
        dataset, budget, split = head.group(1), head.group(2).replace(",", ""), head.group(3)
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("| retriever |"):
            j += 1
        if j >= len(lines):
            break
        header, rows, i = _markdown_table(lines, j)
        for cells in rows:
            for metric, cell in zip(header[1:], cells[1:], strict=False):
                pm = _PM.match(cell)
                if pm is None:
                    continue
                mean, sd = float(pm.group(1)), float(pm.group(2) or 0.0)
                records.append({
                    "source": source, "dataset": dataset, "split": split, "budget": budget,
                    "retriever": cells[0], "metric": metric, "mean": mean, "low": mean - sd,
                    "high": mean + sd,
                })  # fmt: skip
    return pd.DataFrame.from_records(records)


def comparison(results: str | Path) -> pd.DataFrame:
    """The scorer comparison of the ledger at ``results``: bootstrap rows of every section that has them
    (interval ``bootstrap 95%``) and the learning section's rows (interval ``sd over seeds``), with
    ``kind`` from :func:`scorer_kind`.

    Raises:
        FileNotFoundError: no ledger at ``results``.
    """
    if not Path(results).exists():
        raise FileNotFoundError(f"no results ledger at {results}; run from the repository root")
    sections = read_sections(results)
    frames = []
    for name, body in sections.items():
        boot = bootstrap_rows(body, source=name)
        if len(boot):
            frames.append(boot.assign(interval="bootstrap 95%"))
    if "learning" in sections:
        learn = learning_rows(sections["learning"])
        if len(learn):
            frames.append(learn.assign(interval="sd over seeds", queries=pd.NA))
    if not frames:
        return pd.DataFrame(columns=["source", "dataset", "budget", "retriever", "metric", "mean", "kind"])
    out = pd.concat(frames, ignore_index=True)
    out["kind"] = out["retriever"].map(scorer_kind)
    return out
