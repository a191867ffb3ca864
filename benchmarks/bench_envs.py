"""Steps per second of the Gymnasium environments, single-process and as an 8-env sync vector env.

EdgeWalk-v0 and PathBandit-v0 on a synthetic preset (default ``xl``: 43,520 entities), KGWalk-v0 on NELL-995
(skipped with a message when its data or ``signet_rl.envs.kgwalk`` is missing). Each environment is timed
with uniformly random *valid* actions (drawn from the mask, a few microseconds per step) in two passes over
the same seeded episodes: ``cold`` (first visit: per-query work such as entry search, the walk, featurising
and per-entity caches) and ``warm`` (the same queries again, caches filled: the steady state of training).
The yardstick measured in the same run is Gymnasium's ``CartPole-v1`` (unwrapped, same loop; timed first
and last, as the load of a shared machine drifts), and the Python speed of the machine
(``sum(range(1000))``) is recorded. A cProfile of
the warm single-process EdgeWalk run says where the time goes. Issue 5's target: EdgeWalk unwrapped, rating
at STOP_PATH included, at least 20,000 steps/s on ``xl``. Prints a table and writes
``benchmarks/results/envs.json``; nothing is asserted.

    python benchmarks/bench_envs.py                         # xl, 20k steps per pass
    python benchmarks/bench_envs.py --preset small --steps 5000 --no-kg
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import time
import timeit
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import signet_rl.envs as envs
from signet_rl.core.paths import data_root

ROOT = Path(__file__).resolve().parents[1]


def _mask(obs: Any, n_actions: int) -> np.ndarray:
    """The action mask of an observation (all ones for an environment without one, e.g. CartPole)."""
    if not isinstance(obs, dict):
        shape = (n_actions,) if np.ndim(obs) <= 1 else (len(obs), n_actions)
        return np.ones(shape, dtype=np.int8)
    return obs["action_mask"] if "action_mask" in obs else obs["mask"]


def run_single(env: gym.Env[Any, Any], steps: int, seed: int) -> float:
    """Steps per second of ``steps`` random valid steps (resets included), from ``reset(seed)``."""
    u = np.random.default_rng(seed).random(steps).tolist()
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    obs, _ = env.reset(seed=seed)
    start = time.perf_counter()
    for k in range(steps):
        valid = [i for i, m in enumerate(_mask(obs, n_actions).tolist()) if m] or [0]
        obs, _, terminated, truncated, _ = env.step(valid[int(u[k] * len(valid))])
        if terminated or truncated:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - start)


def run_vector(venv: gym.vector.VectorEnv, steps: int, seed: int) -> float:
    """Environment steps per second (all sub-envs together) of ``steps`` vector steps, same-step autoreset."""
    rng = np.random.default_rng(seed)
    n_actions = int(venv.single_action_space.n)  # type: ignore[attr-defined]
    obs, _ = venv.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        mask = _mask(obs, n_actions).astype(np.float64)
        actions = np.argmax(rng.random(mask.shape) * mask + 1e-9 * (mask.sum(1, keepdims=True) == 0), axis=1)
        obs, *_ = venv.step(actions)
    return steps * venv.num_envs / (time.perf_counter() - start)


def profile_top(env: gym.Env[Any, Any], steps: int, seed: int, n: int = 12) -> list[dict[str, Any]]:
    prof = cProfile.Profile()
    prof.enable()
    run_single(env, steps, seed)
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO()).sort_stats("tottime")
    out = []
    for (file, line, func), (_, calls, tottime, cumtime, _) in list(stats.stats.items()):  # type: ignore[attr-defined]
        out.append(
            {
                "function": f"{Path(file).name}:{line}({func})",
                "calls": calls,
                "tottime_s": round(tottime, 4),
                "cumtime_s": round(cumtime, 4),
            }
        )
    out.sort(key=lambda r: -r["tottime_s"])
    return out[:n]


def measure(name: str, make: Any, make_vec: Any, steps: int, vec_steps: int, seed: int) -> dict[str, Any]:
    t = time.perf_counter()
    env = make()
    build_s = time.perf_counter() - t
    row: dict[str, Any] = {"build_s": round(build_s, 2)}
    row["single_cold"] = round(run_single(env, steps, seed), 1)
    row["single_warm"] = round(run_single(env, steps, seed), 1)
    if make_vec is not None:
        venv = make_vec()
        run_vector(venv, vec_steps, seed)  # cold pass: fills the shared caches
        row["vector8_warm"] = round(run_vector(venv, vec_steps, seed), 1)
        venv.close()
    vec = row.get("vector8_warm", float("nan"))
    print(
        f"{name:12s} build {row['build_s']:7.1f} s   single cold {row['single_cold']:9,.0f}   "
        f"warm {row['single_warm']:9,.0f}   8-env sync {vec:9,.0f} steps/s"
    )
    row["env"] = env
    return row


def kg_root() -> Path | None:
    for root in (data_root(), ROOT.parent / "shared" / "data"):
        if (root / "kg" / "nell-995").exists():
            return root
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="xl")
    ap.add_argument("--steps", type=int, default=20_000, help="steps per single-process pass")
    ap.add_argument("--vector-steps", type=int, default=1_000, help="vector steps (x8 env steps) per pass")
    ap.add_argument("--bandit-episodes", type=int, default=2_000, help="PathBandit steps per pass")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-kg", action="store_true", help="skip KGWalk on NELL-995")
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "envs.json"))
    args = ap.parse_args()
    spec = f"synthetic:{args.preset}"
    py_us = min(timeit.repeat("sum(range(1000))", number=2000, repeat=5)) / 2000 * 1e6
    usable = len(os.sched_getaffinity(0))
    print(f"machine: {os.cpu_count()} CPUs, {usable} usable, sum(range(1000)) {py_us:.1f} us")
    machine = {
        "cpus": os.cpu_count(),
        "usable_cpus": usable,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gym.__version__,
        "sum_range_1000_us": round(py_us, 2),
    }
    results: dict[str, Any] = {
        "machine": machine,
        "dataset": spec,
        "steps": args.steps,
        "vector_steps": args.vector_steps,
        "envs": {},
    }

    cart = measure("CartPole-v1", lambda: gym.make("CartPole-v1").unwrapped, None, args.steps, 0, args.seed)
    results["envs"]["CartPole-v1 (yardstick)"] = {k: v for k, v in cart.items() if k != "env"}

    walk = measure(
        "EdgeWalk",
        lambda: envs.EdgeWalkEnv(spec),
        lambda: envs.make_vec("signet_rl/EdgeWalk-v0", 8, "sync", dataset=spec),
        args.steps,
        args.vector_steps,
        args.seed,
    )
    walk["profile_warm"] = profile_top(walk["env"], args.steps, args.seed)
    walk["single_warm_again"] = round(run_single(walk.pop("env"), args.steps, args.seed), 1)
    results["envs"]["EdgeWalk-v0"] = walk
    bandit = measure(
        "PathBandit",
        lambda: envs.PathBanditEnv(spec),
        lambda: envs.make_vec("signet_rl/PathBandit-v0", 8, "sync", dataset=spec),
        args.bandit_episodes,
        args.bandit_episodes // 8,
        args.seed,
    )
    bandit.pop("env")
    results["envs"]["PathBandit-v0"] = bandit

    root = None if args.no_kg else kg_root()
    try:
        import signet_rl.envs.kgwalk  # noqa: F401
    except ImportError:
        root = None
        print("KGWalk: signet_rl.envs.kgwalk is not there yet; skipped")
    if root is None:
        print("KGWalk: skipped (--no-kg, or kg/nell-995 not under the data root)")
        results["envs"]["KGWalk-v0"] = {"skipped": True}
    else:
        kw: dict[str, Any] = {"dataset": "kg:nell-995", "max_actions": 200, "data_root": str(root)}
        kg = measure(
            "KGWalk",
            lambda: gym.make("signet_rl/KGWalk-v0", **kw).unwrapped,
            lambda: gym.make_vec("signet_rl/KGWalk-v0", 8, vectorization_mode="sync", **kw),
            args.steps,
            args.vector_steps,
            args.seed,
        )
        kg.pop("env")
        results["envs"]["KGWalk-v0 (nell-995, max_actions 200)"] = kg

    again = measure("CartPole-v1", lambda: gym.make("CartPole-v1").unwrapped, None, args.steps, 0, args.seed)
    results["envs"]["CartPole-v1 (yardstick)"]["single_warm_again"] = again["single_warm"]
    print("\nwhere the warm EdgeWalk time goes (cProfile, tottime):")
    for r in walk["profile_warm"][:8]:
        print(f"  {r['tottime_s']:7.3f} s  {r['calls']:8d} calls  {r['function']}")
    best = max(walk["single_warm"], walk["single_warm_again"])
    target = best >= 20_000
    results["target_edgewalk_20k"] = "PASS" if target else "MISS"
    cart_best = max(cart["single_warm"], again["single_warm"])
    results["edgewalk_vs_cartpole"] = round(best / cart_best, 3)
    print(
        f"\nEdgeWalk unwrapped warm: {best:,.0f} steps/s ({best / cart_best:.2f}x CartPole's best in this "
        f"run): {'PASS' if target else 'MISS'} (target 20,000)"
    )
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
