"""PPO with a masked categorical policy on ``signet_rl/EdgeWalk-v0`` (CleanRL style, one file).

Trains on the train split of ``--dataset`` with a synchronous vector env (same-step autoreset), then plays
the greedy policy, a uniform random agent and the prior agent on the same ``--eval-split`` queries (one
sequential pass, same seed) and prints the three mean returns. The learning curve (mean return of the
episodes finished in each rollout) goes to ``<output-dir>/ppo_edgewalk.csv`` and ``.png``, the summary to
``ppo_edgewalk.json``.

    python experiments/ppo_edgewalk.py                                   # synthetic:small, 60k steps
    python experiments/ppo_edgewalk.py --total-timesteps 200000 --seed 2
    python experiments/ppo_edgewalk.py --total-timesteps 1024 --output-dir /tmp/ppo   # a smoke run

The policy sees the flattened observation (query features, current entity, path summary, the candidate
edges, budgets); masked actions get a logit of -1e8, so they are never sampled and the entropy bonus only
spreads mass over valid actions (CleanRL's ``ppo.py`` plus an action mask, as in its invalid-action
masking variant).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import nn
from torch.distributions.categorical import Categorical

import signet_rl.envs  # noqa: F401  (registers the ids)
from signet_rl.envs.agents import PriorAgent, RandomAgent, run_agent

ENV_ID = "signet_rl/EdgeWalk-v0"


@dataclass
class Args:
    dataset: str = "synthetic:small"
    """dataset spec the environment walks"""
    seed: int = 1
    """seed of the environments, torch and numpy"""
    total_timesteps: int = 60_000
    """environment steps of training (all envs together)"""
    num_envs: int = 8
    """parallel environments (one process, SyncVectorEnv)"""
    num_steps: int = 64
    """steps per environment per rollout"""
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    path_budget: int = 4
    """paths stopped per episode"""
    eval_split: str = "validation"
    """split of the final comparison (greedy PPO vs random vs prior, same queries)"""
    eval_episodes: int = 0
    """episodes of the final comparison; 0: one pass over the split's usable queries"""
    output_dir: str = "experiments/results"
    """where the CSV, PNG and JSON go"""
    torch_threads: int = 1


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=f.default)
        else:
            kind = {"int": int, "float": float, "str": str}[str(f.type)]
            parser.add_argument(flag, type=kind, default=f.default)
    return Args(**vars(parser.parse_args(argv)))


def flatten(obs: dict[str, np.ndarray]) -> np.ndarray:
    """A batch of Dict observations as one float32 matrix ``[n, obs_dim]`` (the mask stays apart)."""
    n = obs["node"].shape[0]
    parts = [obs["query"], obs["node"], obs["path"], obs["edges"].reshape(n, -1), obs["budgets"] / 4.0]
    return np.concatenate(parts, axis=1).astype(np.float32)


def layer_init(layer: nn.Linear, std: float = float(np.sqrt(2)), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """Separate actor and critic MLPs; the actor's logits are masked to the valid actions."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        logits = torch.where(mask, self.actor(x), torch.tensor(-1e8))
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


class GreedyPolicy:
    """The trained actor's most probable valid action, as a :mod:`signet_rl.envs.agents` agent."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def reset(self, seed: int | None = None) -> None:
        return None

    def act(self, obs: Mapping[str, np.ndarray], info: Mapping[str, Any] | None = None) -> int:
        batch = {k: v[None] for k, v in obs.items()}
        with torch.no_grad():
            logits = self.agent.actor(torch.from_numpy(flatten(batch)))[0]
        logits[torch.from_numpy(obs["action_mask"] == 0)] = -1e8
        return int(torch.argmax(logits))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    # seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)

    # environment setup
    env_kwargs: dict[str, Any] = {"dataset": args.dataset, "path_budget": args.path_budget}
    envs = gym.make_vec(
        ENV_ID,
        args.num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        **env_kwargs,
    )
    n_actions = int(envs.single_action_space.n)  # type: ignore[attr-defined]
    next_obs_dict, _ = envs.reset(seed=args.seed)
    obs_dim = flatten(next_obs_dict).shape[1]
    agent = Agent(obs_dim, n_actions, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # rollout storage
    obs = torch.zeros((args.num_steps, args.num_envs, obs_dim))
    masks = torch.zeros((args.num_steps, args.num_envs, n_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    next_obs = torch.from_numpy(flatten(next_obs_dict))
    next_mask = torch.from_numpy(next_obs_dict["action_mask"].astype(bool))
    next_done = torch.zeros(args.num_envs)
    running = np.zeros(args.num_envs)
    curve: list[dict[str, float]] = []
    global_step, start = 0, time.time()

    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * args.learning_rate
        finished: list[float] = []
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs_dict, reward, terminated, truncated, _ = envs.step(action.numpy())
            done = np.logical_or(terminated, truncated)
            rewards[step] = torch.from_numpy(np.asarray(reward, dtype=np.float32))
            running += reward
            finished.extend(running[done].tolist())
            running[done] = 0.0
            next_obs = torch.from_numpy(flatten(next_obs_dict))
            next_mask = torch.from_numpy(next_obs_dict["action_mask"].astype(bool))
            next_done = torch.from_numpy(done.astype(np.float32))

        # generalized advantage estimation
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        # flatten the batch and optimise the clipped objective
        b_obs, b_masks = obs.reshape(-1, obs_dim), masks.reshape(-1, n_actions)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs = []
        for _ in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for lo in range(0, batch_size, minibatch_size):
                mb = b_inds[lo : lo + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb]
                )
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio, -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                newvalue = newvalue.view(-1)
                v_clipped = b_values[mb] + torch.clamp(
                    newvalue - b_values[mb], -args.clip_coef, args.clip_coef
                )
                v_loss = (
                    0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2).mean()
                )
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        mean_return = float(np.mean(finished)) if finished else float("nan")
        last_entropy = float(entropy.mean().detach())
        curve.append(
            {
                "iteration": iteration,
                "global_step": global_step,
                "episodes": len(finished),
                "mean_return": mean_return,
                "entropy": last_entropy,
                "clipfrac": float(np.mean(clipfracs)),
            }
        )
        print(
            f"iter {iteration:4d}  step {global_step:7d}  episodes {len(finished):4d}  "
            f"mean return {mean_return:+.3f}  entropy {last_entropy:.3f}  "
            f"{global_step / (time.time() - start):.0f} steps/s"
        )
    envs.close()

    # the same queries for every agent: one environment, a sequential pass, the same seed
    eval_env = gym.make(ENV_ID, split=args.eval_split, order="sequential", **env_kwargs)
    n_eval = args.eval_episodes or len(eval_env.unwrapped.episode_queries())  # type: ignore[attr-defined]
    scores = {
        "ppo_greedy": run_agent(eval_env, GreedyPolicy(agent), n_eval, args.seed),
        "random": run_agent(eval_env, RandomAgent(args.seed), n_eval, args.seed),
        "prior": run_agent(eval_env, PriorAgent(), n_eval, args.seed),
    }
    eval_env.close()
    summary = {
        "args": dataclasses.asdict(args),
        "eval_episodes": n_eval,
        "eval_split": args.eval_split,
        "mean_return": scores,
        "beats_random": scores["ppo_greedy"] > scores["random"],
        "train_seconds": round(time.time() - start, 1),
        "final_train_return": curve[-1]["mean_return"],
    }
    print(f"\n{args.eval_split} split, {n_eval} episodes, same queries for each agent:")
    for name, score in scores.items():
        print(f"  {name:12s} {score:+.3f}")
    print("PPO beats random" if summary["beats_random"] else "PPO does NOT beat random")

    with open(out_dir / "ppo_edgewalk.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(curve[0]))
        writer.writeheader()
        writer.writerows(curve)
    (out_dir / "ppo_edgewalk.json").write_text(json.dumps(summary, indent=2) + "\n")
    _plot(curve, scores, out_dir / "ppo_edgewalk.png", args)
    return summary


def _plot(curve: list[dict[str, float]], scores: dict[str, float], path: Path, args: Args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(
        [c["global_step"] for c in curve], [c["mean_return"] for c in curve], label="PPO (training episodes)"
    )
    for name, style in (("random", ":"), ("prior", "--")):
        ax.axhline(scores[name], linestyle=style, color="grey", label=f"{name} ({args.eval_split})")
    ax.axhline(scores["ppo_greedy"], linestyle="-.", color="C1", label=f"PPO greedy ({args.eval_split})")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episode return")
    ax.set_title(f"PPO on EdgeWalk-v0, {args.dataset}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
