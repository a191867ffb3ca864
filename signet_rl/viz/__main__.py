"""``python -m signet_rl.viz constellation <run | spec | store.db> --out constellation.{png,html}``.

Draws a graph's Leiden communities and the desire paths a run learned (:mod:`signet_rl.viz.constellation`):

    python -m signet_rl.viz constellation runs/bandit/gnn-synthetic_small-0123456789 --out c.png c.html
    python -m signet_rl.viz constellation synthetic:xl --out xl.png xl.html      # community super-nodes
"""

from __future__ import annotations

import argparse
import sys
import time

from signet_rl.core.logs import quiet_libraries
from signet_rl.viz.constellation import HOT_EDGES, MAX_NODES, constellation_of, open_source, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m signet_rl.viz", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    con = sub.add_parser("constellation", help="draw entities, communities and desire paths")
    con.add_argument("source", help="a run folder, a dataset spec (synthetic:small) or a Signet store (.db)")
    con.add_argument("--out", nargs="+", required=True, help="output files: .png and/or .html")
    con.add_argument("--graph", default=None, help="graph id (default: the one the run walked most)")
    con.add_argument("--intent", default=None, help="desire weights of one intent (default: all)")
    con.add_argument("--max-nodes", type=int, default=MAX_NODES, help="above this, community super-nodes")
    con.add_argument("--hot", type=int, default=HOT_EDGES, help="hottest edges drawn in super-node mode")
    con.add_argument("--size-by", default="degree", choices=("degree", "mentions"))
    con.add_argument("--seed", type=int, default=0)
    con.add_argument("--verbose", action="store_true", help="keep library logs")
    args = parser.parse_args(argv)
    quiet_libraries(args.verbose)
    t0 = time.perf_counter()
    try:
        view = open_source(args.source)
        picture = constellation_of(
            view,
            args.graph,
            max_nodes=args.max_nodes,
            hot=args.hot,
            size_by=args.size_by,
            intent=args.intent,
            seed=args.seed,
        )
        written = render(picture, args.out)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    n = int((picture.nodes["kind"] != "community").sum())
    print(
        f"{picture.mode}: {len(picture.nodes):,} nodes ({n:,} entities), {len(picture.edges):,} edges, "
        f"{picture.communities.num_communities} communities; {time.perf_counter() - t0:.1f} s"
    )
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
