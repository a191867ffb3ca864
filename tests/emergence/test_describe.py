"""``describe`` shows principles and promoted bridges found in a graph, and a run's health with ``--run``."""

from __future__ import annotations

import dataclasses

from signet_rl.datasets.__main__ import main as datasets_main
from signet_rl.emergence.bridges import BridgeTracker, find_bridges
from signet_rl.emergence.components import after_training
from signet_rl.emergence.config import EmergenceConfig
from signet_rl.emergence.principles import add_principles, confirm, detect_principles
from signet_rl.evaluation.describe import describe, format_description
from tests.emergence.test_bridges import graph as bridge_graph
from tests.emergence.test_components import ACROSS, record
from tests.emergence.test_principles import AT, THREE
from tests.emergence.test_principles import graph as principle_graph


def test_describe_shows_principles_and_promoted_bridges() -> None:
    from signet_rl.datasets import load_dataset

    g = principle_graph(THREE)
    (p,) = detect_principles(g)
    g = confirm(add_principles(g, [p], at=AT), p.id)
    tracker = BridgeTracker(promote_after=1)
    tracker.add(find_bridges(g, ["t-billing"]))
    for bid in list(tracker.states):
        g = tracker.rate(g, bid, +1, at=AT)
    ds = dataclasses.replace(load_dataset("synthetic:tiny"), graphs={"main": g}, queries=[])
    d = describe(ds, signals=False)
    em = d["emergence"]
    assert em["principles_by_status"] == {"confirmed": 1}
    assert em["principles"] == [{"id": p.id, "status": "confirmed", "text": p.text, "entities": 3,
                                 "evidence": 3}]
    assert em["promoted_bridges_by_reason"] == {"pattern-matched": len(tracker.states)}
    text = format_description(d)
    assert "emergence (issue 29):" in text and "  principles: confirmed 1" in text
    assert f"    {p.id} [confirmed] {p.text[:60]!r}: 3 entities, 3 evidence" in text
    assert f"  promoted bridge edges by reason: pattern-matched {len(tracker.states)}" in text
    plain = describe(dataclasses.replace(ds, graphs={"main": bridge_graph()}), signals=False)
    assert "emergence" not in plain and "emergence" not in format_description(plain)


def test_describe_run_shows_its_health(tmp_path, capsys) -> None:
    config = EmergenceConfig(health=True, bridges=True)
    out = after_training(config, bridge_graph(), [record(0, ["e0"], ACROSS, 1)], until=None)
    out.write(tmp_path / "run" / "artifacts")
    assert datasets_main(["describe", "synthetic:tiny", "--no-signals", "--run", str(tmp_path / "run")]) == 0
    text = capsys.readouterr().out
    assert "  entity health:    healthy 1  unused 3" in text
    assert "  community health: healthy 1  unused 2" in text  # detected: the graph carries no communities
    assert "  pruning plan (feedback until None): 3 unused, 0 sick, 0 kept (pinned or principle)" in text
    assert "  bridges: 2 candidates, 0 promoted, 0 faded" in text
    assert datasets_main(["describe", "synthetic:tiny", "--no-signals", "--run", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path} has no emergence/ (in artifacts/ or itself): "
                                       "train with an emergence.* switch on (e.g. emergence.health=true)\n")
