"""docs/results.md is reproducible: the figures quoted from a quick command are what it prints now, and every
command the page names exists."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

from signet_rl.datasets.__main__ import main as datasets_main

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "results.md").read_text()


def test_the_describe_figures_quoted_are_what_describe_prints(capsys):
    quoted = re.search(
        r"describe synthetic:small` — .*?config hash\s+`(\w+)`\).*?attribute importance ([\d.]+),\s+recency "
        r"([\d.]+), dependency confidence ([\d.]+), confidence × strength ([\d.]+); confidence separates "
        r"true from\s+spurious edges with AUC ([\d.]+)\.",
        PAGE,
        re.S,
    )
    assert quoted is not None, "docs/results.md no longer quotes describe synthetic:small's figures"
    assert datasets_main(["describe", "synthetic:small"]) == 0
    out = capsys.readouterr().out
    block = out.split("AUC of cheap signals alone", 1)[1].split("benchmark audit", 1)[0]  # v1's own block
    printed = {k: v for k, v in re.findall(r"^\s+(\w+)\s+([\d.]+)$", block, re.M)}
    assert re.search(rf"config hash {quoted.group(1)}\b", out)
    names = ("attribute_importance", "recency", "dependency_confidence", "confidence_x_strength",
             "spurious_edge_confidence")  # fmt: skip
    assert [printed[n] for n in names] == [quoted.group(i) for i in range(2, 7)]


def test_every_command_the_page_names_exists():
    commands = re.findall(r"`(python [^`]+)`", PAGE)
    assert len(commands) > 20
    missing = []
    for command in commands:
        words = shlex.split(command.replace("<name>", "x"))
        if words[1] == "-m":
            if importlib.util.find_spec(words[2]) is None:
                missing.append(command)
        elif not (ROOT / words[1]).is_file():
            missing.append(command)
    assert not missing, f"docs/results.md names commands that are not there: {missing}"
    for unlabelled in ("helper's run", "ad hoc run on"):
        assert unlabelled not in PAGE, f"a figure without its command: {unlabelled!r}"
