"""How far a query entity's neighbours take it, without learning: the neighbour-vote baseline (issue 7).

For a tail query ``(h, r, ?)`` every entity adjacent to ``h`` by another relation votes once for each
candidate it reaches by ``r`` edges (transitively: a country ``locatedIn`` a subregion ``locatedIn`` a
region votes for both). Candidates are the tails of ``r`` among the training queries (subregions on
Countries S2, regions on S1/S3), ranked by their votes, filtered (the query's other known answers are
removed), ties broken at their expected rank; an answer no neighbour votes for is a miss (reciprocal rank
0), as a walker's unreached answer is. On Countries it says which test queries the graph decides and
which it leaves to chance: the walkers of ``experiments/kg_report.py`` and MINERVA see the same evidence.

    python experiments/neighbour_vote.py                     # every countries_* folder under the data root
    python experiments/neighbour_vote.py --datasets countries_S2 --split validation

Prints MRR and Hits@1 per folder and every query the vote does not rank first (its votes beside it), and
writes them to ``runs/neighbour_vote.json``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runs" / "neighbour_vote.json"


def expected_reciprocal_rank(votes: Mapping[str, int], answer: str, others: Iterable[str] = ()) -> float:
    """The answer's reciprocal rank under ``votes`` with ties in random order (its expectation); 0 when it
    has no vote. ``others`` (the query's other known answers) are filtered out first."""
    mine = votes.get(answer, 0)
    if mine <= 0:
        return 0.0
    skip = set(others) - {answer}
    above = sum(1 for c, v in votes.items() if c != answer and c not in skip and v > mine)
    tied = sum(1 for c, v in votes.items() if c != answer and c not in skip and v == mine)
    return sum(1.0 / (above + 1 + j) for j in range(tied + 1)) / (tied + 1)


def neighbour_votes(
    triples: Iterable[tuple[str, str, str]], head: str, relation: str, candidates: set[str]
) -> Counter[str]:
    """Votes of ``head``'s neighbours (by any relation but ``relation``) for the ``candidates`` they reach
    by ``relation`` edges, one vote per neighbour and candidate."""
    out: dict[str, set[str]] = defaultdict(set)
    adjacent: set[str] = set()
    for h, r, t in triples:
        if r == relation:
            out[h].add(t)
        elif h == head and t != head:
            adjacent.add(t)
    votes: Counter[str] = Counter()
    for n in adjacent:
        seen: set[str] = set()
        todo = [n]
        while todo:
            for nxt in out[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        votes.update(seen & candidates)
    return votes


def vote_split(folder: str, split: str, data_root: str | None = None) -> dict[str, Any]:
    """The baseline on one split of one KG folder (the graph file as it is, no inverse edges added)."""
    from signet_rl.core.paths import data_root as resolve
    from signet_rl.datasets.kg import load_kg

    ds = load_kg(folder, root=resolve(data_root), inverse=None)
    deps = ds.graphs["main"].dependencies
    triples = list(
        zip(deps["source_entity_id"], deps["dependency_type"], deps["target_entity_id"], strict=True)
    )
    truth = ds.truth
    tails_of: dict[str, set[str]] = defaultdict(set)
    for q in ds.queries:
        if q.split == "train":
            tails_of[q.meta["relation"]].update(truth[q.id].needed)
    rows: list[dict[str, Any]] = []
    for q in ds.queries:
        if q.split != split:
            continue
        h, r = q.meta["head"], q.meta["relation"]
        answer = truth[q.id].needed[0]
        votes = neighbour_votes(triples, h, r, tails_of[r])
        rr = expected_reciprocal_rank(votes, answer, truth[q.id].answers)
        rows.append(
            {"query": f"{h} {r} ?", "answer": answer, "rr": round(rr, 4), "votes": dict(votes.most_common())}
        )
    n = len(rows)
    return {
        "folder": folder,
        "split": split,
        "queries": n,
        "mrr": round(100 * sum(float(x["rr"]) for x in rows) / max(n, 1), 1),
        "hits@1": round(100 * sum(x["rr"] == 1.0 for x in rows) / max(n, 1), 1),
        "not_first": [x for x in rows if x["rr"] != 1.0],
    }


def main(argv: list[str] | None = None) -> None:
    from signet_rl.core.paths import data_root as resolve

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--datasets", nargs="*", help="KG folders under <data_root>/kg (default: every countries_*)"
    )
    p.add_argument("--split", default="test", choices=("validation", "test"))
    p.add_argument("--data-root", default=None, help="default: $SIGNET_RL_DATA")
    p.add_argument("--output", type=Path, default=OUT)
    args = p.parse_args(argv)
    folders = args.datasets or sorted(d.name for d in (resolve(args.data_root) / "kg").glob("countries_*"))
    if not folders:
        raise SystemExit(f"no countries_* folder under {resolve(args.data_root) / 'kg'}; pass --datasets")
    results = [vote_split(f, args.split, args.data_root) for f in folders]
    for res in results:
        head = f"{res['folder']} [{res['split']}] {res['queries']} queries"
        print(f"{head}: MRR {res['mrr']}, H@1 {res['hits@1']}")
        for row in res["not_first"]:
            print(f"    {row['query']} -> {row['answer']}: reciprocal rank {row['rr']}, votes {row['votes']}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
