"""Smoke tests: each script under experiments/ runs tiny and writes what it promises."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def test_flat_baseline_report_writes_its_section_between_markers(tmp_path, capsys):
    report = _load("flat_baseline_report")
    out = tmp_path / "results.md"
    out.write_text("# Results\n\nkept above\n")
    report.main(
        ["--fast", "--sections", "synthetic", "--synthetic", "synthetic:tiny:0", "--output", str(out)]
    )
    text = out.read_text()
    assert text.startswith("# Results\n\nkept above\n")
    assert text.count(report.START) == 1 and text.count(report.END) == 1
    assert text.count("<!-- synthetic:start -->") == 1
    assert "flat_signet_uncapped" in text and "synthetic:tiny:0" in text
    # another section lands beside it; rerunning one section replaces only that section
    out.write_text(
        text.replace(
            "<!-- synthetic:end -->",
            "<!-- synthetic:end -->\n<!-- other:start -->\nkeep me\n<!-- other:end -->",
        )
    )
    report.main(
        ["--fast", "--sections", "synthetic", "--synthetic", "synthetic:tiny:1", "--output", str(out)]
    )
    text = out.read_text()
    assert text.count(report.START) == 1 and "synthetic:tiny:1" in text and "synthetic:tiny:0" not in text
    assert "keep me" in text and text.count("<!-- synthetic:start -->") == 1


def test_desire_report_runs_tiny_with_the_candidate_ceiling(tmp_path):
    report = _load("desire_report")
    out = tmp_path / "results.md"
    body = report.main(["--dataset", "synthetic:tiny:0", "--n-boot", "50", "--output", str(out)])
    for name in ("flat_signet_uncapped", "desire_prior", "desire_ppr", "desire_random", "candidate_ceiling"):
        assert name in body
    text = out.read_text()
    assert text.count(report.START) == 1 and text.count(report.END) == 1
