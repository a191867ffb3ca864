"""The constellation command: a real run folder in, PNG and HTML out, hottest edges = most reinforced."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from fork_runner import run_forked

from signet_rl.datasets import load_dataset
from signet_rl.graph.arrays import GraphArrays
from signet_rl.learning.trainer import BanditConfig, BanditTrainer
from signet_rl.scorers import make_scorer
from signet_rl.viz.constellation import (
    build_constellation,
    draw_html,
    html_edges,
    open_source,
    render,
    strongest_paths,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bandit run on synthetic:tiny (LinUCB, 60 interactions, no evaluation): marker, checkpoint,
    feedback log."""
    folder = tmp_path_factory.mktemp("run") / "linucb-tiny"
    dataset = load_dataset("synthetic:tiny")
    config = BanditConfig(max_interactions=60, eval_every=0, checkpoint_every=0, reinforce_lr=0.4)
    BanditTrainer(dataset, make_scorer("linucb"), config, run_dir=folder, progress=False).run()
    return folder


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_forked(
        [sys.executable, "-m", "signet_rl.viz", "constellation", *args], cwd=cwd, env=env, timeout=120
    )


def _stats_weights(run: Path) -> tuple[dict[str, float], int]:
    view = open_source(run)
    gid = view.graph_id()
    arrays = GraphArrays.from_graph(view.dataset.graphs[gid])
    cells = view.stats[gid].weights.reshape(arrays.num_dependencies, -1).astype(float)
    # an edge's strongest (intent, time bucket) cell when reinforced, else its weakest
    w = np.where(cells.max(axis=1) > 1, cells.max(axis=1), cells.min(axis=1))
    walks = int(view.stats[gid].walks.sum())
    return dict(zip(arrays.edge_ids.astype(str), w, strict=True)), walks


def _top_html(path: Path, k: int) -> list[tuple[str, float]]:
    """The ``k`` widest desire edges the page draws: (dependency id, width)."""
    edges = [e for e in html_edges(path) if str(e["id"]).startswith("desire:")]
    edges.sort(key=lambda e: -float(e["width"]))
    return [(str(e["id"]).split(":", 2)[2], float(e["width"])) for e in edges[:k]]


def test_cli_draws_png_and_html_whose_hottest_edges_are_the_most_reinforced(
    run_dir: Path, tmp_path: Path
) -> None:
    done = _cli(str(run_dir), "--out", "c.png", "c.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote c.png" in done.stdout and "wrote c.html" in done.stdout
    image = mpimg.imread(tmp_path / "c.png")
    assert image.shape[0] > 600 and image.shape[1] > 1000
    assert image[..., :3].std() > 0.02  # not a blank canvas
    weights, walks = _stats_weights(run_dir)
    assert walks > 0
    k = 5
    top = _top_html(tmp_path / "c.html", k)
    assert len(top) == k
    best = sorted(weights.values(), reverse=True)[:k]
    assert best[0] > 1.0  # the run reinforced something
    assert sorted((weights[e] for e, _ in top), reverse=True) == pytest.approx(best)
    # every drawn desire edge: width increases with the run's weight (ties allowed)
    drawn = [e for e in html_edges(tmp_path / "c.html") if str(e["id"]).startswith("desire:")]
    assert len(drawn) == len(weights)
    pairs = sorted((weights[str(e["id"]).split(":", 2)[2]], float(e["width"])) for e in drawn)
    assert all(b[1] >= a[1] - 1e-9 for a, b in itertools.pairwise(pairs))
    assert (
        "vis-network" in (tmp_path / "c.html").read_text()
        or "vis.Network" in (tmp_path / "c.html").read_text()
    )


def test_super_nodes_when_large_keep_the_hottest_edges(run_dir: Path, tmp_path: Path) -> None:
    view = open_source(run_dir)
    gid = view.graph_id()
    con = build_constellation(view.dataset.graphs[gid], view.stats[gid], max_nodes=20, hot=4)
    assert con.mode == "communities"
    communities = con.nodes[con.nodes["kind"] == "community"]
    assert len(communities) == con.communities.num_communities
    assert communities["members"].sum() == view.dataset.graphs[gid].num_entities
    weights, _ = _stats_weights(run_dir)
    draw_html(con, tmp_path / "big.html")
    top = _top_html(tmp_path / "big.html", 4)
    assert sorted((weights[e] for e, _ in top), reverse=True) == pytest.approx(
        sorted(weights.values())[-4:][::-1]
    )
    render(con, [tmp_path / "big.png"])
    assert mpimg.imread(tmp_path / "big.png").shape[0] > 400


def test_principles_are_stars_and_spec_sources_draw_untouched_edges(tmp_path: Path) -> None:
    graph = load_dataset("synthetic:tiny").graph
    entities = graph.entities.copy()
    entities.loc[entities.index[:3], "entity_type"] = "principle"
    graph = graph.replace(entities=entities)
    con = build_constellation(graph)
    assert (con.nodes["kind"] == "principle").sum() == 3
    assert set(con.edges["weight"]) == {1.0} and set(con.edges["heat"]) == {0.25}
    draw_html(con, tmp_path / "p.html")
    assert sum('"shape": "star"' in line for line in (tmp_path / "p.html").read_text().split("{")) == 3


def test_strongest_and_faded_paths_name_the_queries_that_wore_them(run_dir: Path) -> None:
    view = open_source(run_dir)
    strong = strongest_paths(view, top=3)
    assert len(strong) == 3 and strong["weight"].is_monotonic_decreasing and strong["weight"].iloc[0] > 1
    assert any(strong["queries"].map(len) > 0)
    texts = {q.text for q in view.dataset.queries}
    assert all(q in texts for qs in strong["queries"] for q in qs)
    faded = strongest_paths(view, top=3, faded=True)
    assert faded["weight"].is_monotonic_increasing


def test_bad_sources_and_outputs_are_named(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    done = _cli(str(tmp_path / "plain"), "--out", "x.png", cwd=tmp_path)
    assert done.returncode == 2
    assert f"{tmp_path / 'plain'} is not a signet_rl run folder (no .signet_rl_run.json)" in done.stderr
    with pytest.raises(ValueError, match=r"--out c\.svg: the constellation is written as \.png or \.html"):
        render(build_constellation(load_dataset("synthetic:tiny").graph), ["c.png", "c.svg"])
    assert not Path("c.png").exists()


def test_a_runs_health_bridges_and_principles_are_drawn(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    import matplotlib

    matplotlib.use("Agg")
    from signet_rl.emergence.components import after_training
    from signet_rl.emergence.config import EmergenceConfig
    from signet_rl.learning.feedback_log import FeedbackLog
    from signet_rl.viz.constellation import HEALTH_RING, constellation_of, draw_png

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    view = open_source(run)
    assert view.emergence == {}  # a run without the switches: nothing overlaid
    graph = view.dataset.graphs["main"]
    log = FeedbackLog.read(run / "feedback.parquet")
    outcome = after_training(EmergenceConfig(health=True), graph, log, until=None)
    outcome.write(run / "artifacts")
    view = open_source(run)
    con = constellation_of(view)
    statuses = outcome.health.set_index("entity_id")["status"]
    drawn = con.nodes[con.nodes["kind"] == "entity"].set_index("key")
    assert (drawn["health"] == statuses.reindex(drawn.index)).all()
    sick_or_unused = drawn[drawn["health"].isin(list(HEALTH_RING))]
    assert len(sick_or_unused) and all("\nhealth: " in t for t in sick_or_unused["title"])
    counts = outcome.health["status"].value_counts()
    assert f"emergence: health {', '.join(f'{k} {v:,}' for k, v in sorted(counts.items()))}" in con.title

    # a promoted bridge and a principle, as read_outcome gives them
    a, b, c = drawn.index[:3]
    extra = {"statuses": {}, "bridges": {"by_status": {"promoted": 1}, "promoted": [
        {"id": "bridge-x", "entity_a": a, "entity_b": b, "positive": 3, "negative": 0}]},
        "principles": [{"id": "principle-y", "text": "keeps things small", "status": "proposed",
                        "entity_ids": [a, b, c], "evidence": [{}, {}, {}]}]}
    from signet_rl.viz.constellation import overlay_emergence

    con2 = overlay_emergence(constellation_of(open_source(run_dir)), extra)
    bridge = con2.edges[con2.edges["kind"] == "bridge"]
    assert bridge[["source", "target"]].values.tolist() == [[a, b]]
    star = con2.nodes.set_index("key").loc["principle-y"]
    assert star["kind"] == "principle" and np.isclose(star["x"], drawn.loc[[a, b, c], "x"].mean())
    assert sorted(con2.edges.loc[con2.edges["kind"] == "principle", "target"]) == sorted([a, b, c])
    assert "1 bridges promoted; 1 principles" in con2.title
    draw_png(con2, tmp_path / "e.png")
    draw_html(con2, tmp_path / "e.html")
    kinds = [str(e["id"]).split(":")[0] for e in html_edges(tmp_path / "e.html")]
    assert kinds.count("bridge") == 1 and kinds.count("principle") == 3
    assert mpimg.imread(tmp_path / "e.png").shape[0] > 100
