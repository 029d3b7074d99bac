"""Demonstrations on a Box action space that is not [-1, 1]: do expert episodes still help SAC / TQC + HER?

SB3's off-policy algorithms store online Box actions scaled to [-1, 1] (``policy.scale_action``); demonstrations
must be stored the same way, or the critic learns their actions at another scale than the policy's. On ``[-1, 1]``
(FetchPush, ``bench_her_dropin.py --suite push``) both scales coincide, so that benchmark cannot tell. This one
trains on ``PointMaze_UMaze-v3`` (``continuing_task=False``: the episode ends at the goal) wrapped in gymnasium's
``RescaleAction(env, -2.0, 2.0)``, so the action space is ``Box(-2, 2)`` and the two scales differ by a factor 2.

Two sides, the same in all else (seeds, budget, env, hyperparameters of ``bench_goalenv_her.py`` on PointMaze):
SAC with ``sb3_hir.HerReplayBuffer`` (``goal_selection_strategy="future"``, ``n_sampled_goal=4``) without
demonstrations, and with ``--demos`` episodes of the scripted expert (``pointmaze_expert.py``, recorded with
``Episode.record`` on seeds apart from the evaluation's, actions in the env's units) added before training and
served as ``--demo-ratio`` of each batch. Each run is evaluated at every budget of ``--budgets`` inside one
training run, with ``sb3_hir.callbacks.evaluate_instruction_policy``: ``--eval-episodes`` deterministic episodes
from a fixed seed; success = the env's ``is_success`` at the episode's last step, which is "at some step" here,
since the episode ends at the first success. Prints a line per (seed, side), then mean ± std per budget and side
and the difference; the whole output goes to ``--out`` (rewritten atomically after every run).

``--env push``: FetchPush (``fetch_push_expert.py``'s env and scripted pusher, whose [-1, 1] actions are mapped
to the wrapper's units) in the same ``RescaleAction(env, -2.0, 2.0)``, with the push suite's TQC of
``bench_her_dropin.py`` (rl-zoo3's FetchPush config with ``net_arch [256, 256, 256]`` and ``batch_size 256`` on
every side, SBX's TQC with ``--framework sbx``), 100 demonstrations at ``demo_ratio`` 0.5 by default: the setting
where demonstrations lifted FetchPush from 0.06 to 0.63 at 50k steps.

Each finished run is kept as JSON in ``--runs-dir`` (``results/demos_box_runs/``; atomically), so seeds can run as
separate processes, one core each, and ``--resume`` prints the table from the kept runs and reruns only the missing
ones.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/bench_demos_box.py [--env pointmaze|push] [--seeds 0 1 2]
[--budgets 5000 10000 20000] [--demos 50] [--demo-ratio 0.25] [--eval-episodes 30] [--max-episode-steps 100]
[--framework sb3|sbx] [--resume] [--runs-dir benchmarks/results/demos_box_runs]
[--out benchmarks/results/bench_demos_box.txt]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from sb3_hir_robotics.fetch_push_expert import ScriptedPusher, push_env_id
from sb3_hir_robotics.pointmaze_expert import make_env, maze_demos
from stable_baselines3 import SAC
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import Episode, HerReplayBuffer
from sb3_hir.atomic import atomic_path
from sb3_hir.buffers.demonstrations import stored_episodes
from sb3_hir.callbacks import evaluate_instruction_policy
from sb3_hir.experiment import BudgetCallback, markdown_table, mean_std

ENV_ID = "PointMaze_UMaze-v3"
SCALE = 2.0
RUNS = Path(__file__).resolve().parent / "results" / "demos_box_runs"


def eval_seed(seed: int) -> int:
    """The evaluation episodes' seed (the same at every budget and on both sides)."""
    return 100_000 + 1_000 * seed


def demo_seed(seed: int) -> int:
    """The first demonstration's seed; episode ``i`` uses ``demo_seed + i`` (apart from the evaluation seeds)."""
    return 1_000_000 + 10_000 * seed


def stored_action_span(model: SAC) -> tuple[float, float]:
    """Smallest and largest demonstration action as the buffer stores them (online ones are in [-1, 1])."""
    buffer = model.replay_buffer
    assert isinstance(buffer, HerReplayBuffer)
    source = buffer.demonstrations.source
    assert source is not None, "no demonstrations stored"
    actions = np.concatenate([episode.actions for episode in stored_episodes(source, env_units=False)])
    return float(actions.min()), float(actions.max())


def push_env(max_episode_steps: int | None = None) -> gym.Env:
    """FetchPush with actions in ``Box(-2, 2)`` (gymnasium's ``RescaleAction``); its own 50-step limit."""
    env = gym.make(push_env_id())
    space = env.action_space
    assert isinstance(space, gym.spaces.Box)
    bound = np.full(space.shape, SCALE, dtype=space.dtype)
    return gym.wrappers.RescaleAction(env, -bound, bound)


def push_demos(n_episodes: int, seed: int) -> list[Episode]:
    """The scripted pusher's episodes in the rescaled env, its [-1, 1] actions mapped to the env's units."""
    env, pusher = push_env(), ScriptedPusher()
    episodes = []
    for i in range(n_episodes):
        pusher.reset()
        episodes.append(Episode.record(env, lambda obs: SCALE * pusher(obs), seed=seed + i, info_keys=("is_success",)))
    env.close()
    return episodes


def build(args: argparse.Namespace, venv: Any, seed: int, buffer_kwargs: dict[str, Any]) -> Any:
    """The algorithm of ``--env``: SAC as ``bench_goalenv_her.py`` on PointMaze, the push suite's TQC on push."""
    if args.env == "pointmaze":
        return SAC("MultiInputPolicy", venv, learning_rate=1e-3, buffer_size=max(args.budgets[-1], 1000),
                   learning_starts=500, batch_size=128, tau=0.05, gamma=0.95, train_freq=1, gradient_steps=1,
                   ent_coef="auto", replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=buffer_kwargs,
                   policy_kwargs=dict(net_arch=[64, 64]), seed=seed, device="cpu")
    algo: Any  # SBX's TQC or sb3-contrib's, built alike
    device: dict[str, Any]
    if args.framework == "sbx":
        import sbx

        algo, device = sbx.TQC, {}
    else:
        from sb3_contrib import TQC

        algo, device = TQC, dict(device="cpu")
    return algo("MultiInputPolicy", venv, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=buffer_kwargs,
                buffer_size=1_000_000, batch_size=256, gamma=0.95, learning_rate=1e-3, tau=0.05,
                policy_kwargs=dict(net_arch=[256, 256, 256], n_critics=2), seed=seed, **device)


def run(seed: int, demos: int, args: argparse.Namespace) -> tuple[dict[int, float], float, str]:
    """One training run; returns success per budget, training seconds and a note on the stored demonstrations."""
    env_fn = (lambda: make_env(ENV_ID, args.max_episode_steps, SCALE)) if args.env == "pointmaze" else push_env
    venv = make_vec_env(env_fn, n_envs=1, seed=seed)
    buffer_kwargs: dict[str, Any] = dict(goal_selection_strategy="future", n_sampled_goal=4)
    if demos:
        buffer_kwargs["demo_ratio"] = args.demo_ratio
    model = build(args, venv, seed, buffer_kwargs)
    note = ""
    if demos:
        if args.env == "pointmaze":
            demo_env = env_fn()
            episodes = maze_demos(demo_env, demos, demo_seed(seed))
            demo_env.close()
        else:
            episodes = push_demos(demos, demo_seed(seed))
        model.replay_buffer.add_demonstrations(episodes)
        low, high = stored_action_span(model)
        expert = np.mean([bool(ep.infos is not None and ep.infos[-1]["is_success"]) for ep in episodes])
        note = f"; demos: expert success {expert:.2f}, actions stored in [{low:.2f}, {high:.2f}]"
    eval_env = make_vec_env(env_fn, n_envs=1)
    callback = BudgetCallback(args.budgets, lambda m: {"success_rate": evaluate_instruction_policy(
        m, eval_env, args.eval_episodes, deterministic=True, seed=eval_seed(seed)).success_rate})
    begin = time.perf_counter()
    model.learn(total_timesteps=args.budgets[-1], callback=callback)
    seconds = time.perf_counter() - begin
    eval_env.close()
    venv.close()
    return {b: v["success_rate"] for b, v in callback.results.items()}, seconds, note


def run_path(args: argparse.Namespace, side: str, seed: int) -> Path:
    """Where one run is kept: its name holds every setting that changes its result."""
    settings = (f"{args.env}-{args.framework if args.env == 'push' else 'sb3'}-steps{args.max_episode_steps}-"
                f"budgets{'_'.join(map(str, args.budgets))}-eval{args.eval_episodes}")
    if side != "no demos":
        settings += f"-demos{args.demos}-ratio{args.demo_ratio}"
    return args.runs_dir / f"{settings}-{side.replace(' ', '_')}-seed{seed}.json"


def kept_or_run(args: argparse.Namespace, side: str, demos: int, seed: int) -> tuple[dict[int, float], float, str]:
    path = run_path(args, side, seed)
    if args.resume and path.exists():
        record = json.loads(path.read_text())
        return {int(b): v for b, v in record["success"].items()}, record["seconds"], record["note"] + " (kept)"
    success, seconds, note = run(seed, demos, args)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(dict(side=side, seed=seed, success={str(b): v for b, v in success.items()},
                                       seconds=seconds, note=note)))
    return success, seconds, note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", choices=["pointmaze", "push"], default="pointmaze")
    parser.add_argument("--framework", choices=["sb3", "sbx"], default="sbx", help="push: whose TQC")
    parser.add_argument("--resume", action="store_true", help="reuse the runs kept in --runs-dir")
    parser.add_argument("--runs-dir", type=Path, default=RUNS, help="where each run is kept (default: %(default)s)")
    parser.add_argument("--sides", choices=["no-demos", "demos"], nargs="+", default=["no-demos", "demos"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budgets", type=int, nargs="+", default=[5000, 10000, 20000],
                        help="env steps at which to evaluate; the last one is the training length")
    parser.add_argument("--demos", type=int, default=50, help="expert episodes of the demonstrations side")
    parser.add_argument("--demo-ratio", type=float, default=0.25, help="their share of each batch")
    parser.add_argument("--eval-episodes", type=int, default=30)
    parser.add_argument("--max-episode-steps", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "bench_demos_box.txt")
    args = parser.parse_args()
    args.budgets = sorted(args.budgets)
    th.set_num_threads(1)

    all_sides = {"no demos": 0, f"{args.demos} demos": args.demos}
    sides = {name: n for name, n in all_sides.items() if ("demos" if n else "no-demos") in args.sides}
    results: dict[str, dict[int, list[float]]] = {name: {b: [] for b in args.budgets} for name in sides}
    lines: list[str] = []

    def emit(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)
        with atomic_path(args.out) as path:
            path.write_text("\n".join(lines) + "\n")

    begin = time.perf_counter()
    if args.env == "pointmaze":
        setting = (f"{ENV_ID} continuing_task=False max_episode_steps={args.max_episode_steps}, RescaleAction to "
                   f"[-{SCALE}, {SCALE}]; SAC + sb3_hir.HerReplayBuffer (future, n_sampled_goal=4)")
    else:
        setting = (f"{push_env_id()} (50 steps), RescaleAction to [-{SCALE}, {SCALE}]; rl-zoo3 TQC ({args.framework}) "
                   "with net_arch [256, 256, 256] and batch_size 256 on every side + sb3_hir.HerReplayBuffer (future, "
                   "n_sampled_goal=4)")
    emit(f"{setting}; demo_ratio={args.demo_ratio}; {args.eval_episodes} deterministic eval episodes per seed "
         "and budget")
    for seed in args.seeds:
        for name, demos in sides.items():
            success, seconds, note = kept_or_run(args, name, demos, seed)
            for budget in args.budgets:
                results[name][budget].append(success.get(budget, float("nan")))
            curve = " ".join(f"{b}:{success.get(b, float('nan')):.2f}" for b in args.budgets)
            emit(f"seed {seed} {name:<10} success at budgets {curve}  ({seconds:.0f}s){note}")

    if len(sides) < 2:
        emit(f"wall time {time.perf_counter() - begin:.0f} s (one side: the table needs both)")
        return
    first, second = sides
    emit()
    emit(f"{len(args.seeds)} seeds (mean ± std)")
    rows = []
    for budget in args.budgets:
        a, b = (np.asarray(results[name][budget]) for name in sides)
        rows.append([budget, mean_std(a, 3), mean_std(b, 3), f"{b.mean() - a.mean():+.3f}"])
    for line in markdown_table(["budget", first, second, "difference"], rows, "r").splitlines():
        emit(line)
    emit(f"wall time {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main()
