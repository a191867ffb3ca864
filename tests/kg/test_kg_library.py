"""signet_rl.kg is a library: no Hydra, OmegaConf, MLflow or signet_rl.tracking, not even inside functions
(the entry layer, signet_rl.tasks.kg, turns configs into KGConfig and logs)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("hydra", "omegaconf", "mlflow", "signet_rl.tracking", "signet_rl.tasks", "signet_rl.evaluation")


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


def test_no_kg_module_imports_the_entry_layer_anywhere_in_its_code():
    found = {
        f"{path.name}: {name}"
        for path in sorted((ROOT / "signet_rl" / "kg").glob("*.py"))
        for name in _imports(path)
        if name == "signet_rl" or any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert found == set()


def test_training_and_reranking_a_run_loads_none_of_them(tmp_path):
    folder = tmp_path / "kg" / "tiny"
    folder.mkdir(parents=True)
    (folder / "graph.txt").write_text("a\tr\tb\nb\tr\tc\nc\tr\ta\n")
    for name in ("train", "dev", "test"):
        (folder / f"{name}.txt").write_text("a\tq\tc\n")
    code = f"""
import sys
from signet_rl.kg.config import KGConfig
from signet_rl.kg.rerank import evaluate_run
from signet_rl.kg.trainer import run_kg
task = dict(anchors=[], shaping="none", max_batches=1, progress=False, entity_dim=4, relation_dim=4,
            history_dim=4, hidden_dim=8, beam_width=2)
data = dict(spec="kg:tiny", data_root={str(tmp_path)!r}, path_length=2, inverse=True)
record = {{"task": task, "dataset": data, "seed": 0}}
run_kg(KGConfig.from_dicts(task, data), {str(tmp_path / "run")!r}, record)
evaluate_run({str(tmp_path / "run")!r})
print(sorted(m for m in sys.modules if m.split(".")[0] in ("hydra", "omegaconf", "mlflow")
             or m.startswith({FORBIDDEN[3:]!r})))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
