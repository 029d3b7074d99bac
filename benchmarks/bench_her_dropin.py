"""The drop-in for ``HerReplayBuffer``: same script, same GoalEnv, only the class swapped (``sb3_hir``'s for SB3's).

Both sides get the raw GoalEnv (``observation`` / ``achieved_goal`` / ``desired_goal``), the same algorithm,
hyperparameters, seeds and ``replay_buffer_kwargs`` (HER's own: ``n_sampled_goal``, ``goal_selection_strategy``);
the policy sees the same keys. Nothing is tuned for our side. Suites (``--suite``):

* ``perf``: SB3's own HER performance test (``tests/test_her.py::test_performance_her``): DQN on
  ``BitFlippingEnv(n_bits=10)``, 2 envs, ``n_sampled_goal=5``, ``learning_rate=2e-3``, ``train_freq=1``,
  ``gradient_steps=2``, ``learning_starts=20``, ``exploration_final_eps=0.02``, ``target_update_interval=100``,
  ``batch_size=32``, ``stats_window_size=50`` (SB3 2.9's ``tests/test_her.py``, which learns for 1500 steps).
  Scored as that test scores: training success over the last 50 episodes
  (``model.ep_success_buffer``) at the end of ``learn(budget)``, one run per budget of ``--budgets`` (DQN's
  exploration schedule spans the whole ``learn`` call, so a longer run read early would not be the test).
* ``bitflip``: ``BitFlippingEnv`` with 8, 12 and 15 bits (``--n-bits``), DQN with ``--dqn perf-test`` (the
  performance test's settings above, 2 envs, ``n_sampled_goal=5``: SB3's own tuned BitFlipping config, with
  ``learning_starts=100`` so that an episode of up to 15 steps has ended before the first sample) or
  ``--dqn defaults`` (SB3's DQN defaults, 1 env, ``n_sampled_goal=4``; ``target_update_interval=10000`` and
  ``learning_rate=1e-4`` learn little within 64k steps on either side), scored by ``--eval-episodes``
  deterministic episodes at budgets 250 * 2**i up to ``--max-steps``. The table reports both buffers at 1/4,
  1/2 and 1x of B, the first budget where HER's mean reaches 0.8 (the largest budget if it never does, said so).
* ``fetch``: ``FetchReach`` with rl-zoo3's tuned SAC config (``hyperparams/sac.yml``: ``VecNormalize``,
  ``ent_coef="auto"``, ``batch_size=256``, ``gamma=0.95``, ``learning_rate=1e-3``, ``learning_starts=1000``,
  ``net_arch=[64, 64]``, ``n_sampled_goal=4``, ``future``). Scored on FetchReach's own success: ``is_success`` at the
  last step of its 50-step episode (reach and hold), deterministic, at 5k, 10k and 20k steps.

* ``panda``: panda-gym's ``PandaReach-v3`` (``pip install panda-gym``; pybullet has wheels) with rl-zoo3's tuned TQC
  config (``hyperparams/tqc.yml``, ``PandaReach-v1``: the same settings as FetchReach's, ``n_critics=1``), at 5k,
  10k and 20k steps; success is ``is_success`` at the episode's end (the env terminates on success). panda-gym has
  no ``compute_terminated``; ours finds its radius on ``env.task``, and with continuous actions serves HER's
  recorded ``dones`` by default (``terminate_on_success=None``; see the buffer's docstring).

* ``push``: FetchPush, the canonical HER task, with rl-zoo3's tuned TQC config (``hyperparams/tqc.yml``,
  ``FetchPush-v1: &her-defaults``: ``buffer_size=1e6``, ``batch_size=2048``, ``gamma=0.95``, ``learning_rate=1e-3``,
  ``tau=0.05``, ``net_arch=[512, 512, 512]``, ``n_critics=2``, ``future``, ``n_sampled_goal=4``, no normalization,
  SB3's ``learning_starts=100``), on ``--framework sb3`` (sb3-contrib's TQC) or ``sbx`` (SBX's, the JAX fast path;
  the same settings). ``--net-arch`` and ``--batch-size`` shrink the networks or the batch for a 2-core budget; the
  change applies to every side and the output says so. Four sides, every other setting equal: SB3's HER, ours as a
  pure swap (``ours``), ours with ``n_steps=3`` (``ours-n3``), and ours with ``--demos`` episodes of the scripted
  pusher (``fetch_push_expert.py``, seeded apart from training) served as ``--demo-ratio`` of each batch
  (``ours-demos``). Scored as ``fetch``, every ``--budget-step`` env steps up to ``--max-push-steps``; the table
  shows 1/4, 1/2 and 1x of B, the first budget where HER's mean reaches 0.5 success, and for each other side the
  first budget where its mean reaches HER's at B, as a share of B (targets: 0.7 for ``ours-n3``, 0.3 for
  ``ours-demos``; not judged if HER never reaches 0.5). Each finished run is kept in ``results/push_runs/`` (a
  JSON file per settings, side and seed); ``--resume`` reuses the kept runs and runs only the missing ones.

* ``grid``: the setting grid that picked ``terminate_on_success``'s default for discrete actions: HER against ours
  as it ships (``ours``: HER's recorded ``dones``) and ours with ``terminate_on_success=None``
  (``ours-env-terminations``: terminations served where the env terminates on success), on

  - ``perf``: the performance test above (training success at 1500 steps);
  - ``dqn-defaults``: BitFlipping-12, DQN's learning speed as it ships (``learning_rate=1e-4``,
    ``target_update_interval=10000``, ``train_freq=1``, ``gradient_steps=1``) with ``learning_starts=120``,
    ``exploration_fraction=0.2``, ``exploration_final_eps=0.02``, 1 env, ``n_sampled_goal=4``;
  - ``target-1000``: the same with ``target_update_interval=1000``;
  - ``qrdqn-defaults``: sb3-contrib's QR-DQN at all its defaults, BitFlipping-12, 1 env, ``n_sampled_goal=4``;
  - ``bits8`` and ``bits15``: ``dqn-defaults`` on BitFlipping-8 and -15.

  All but ``perf`` are scored by ``--eval-episodes`` deterministic episodes at 5k, 10k and 20k steps of one run.
  Pick settings with ``--settings``.

Every (suite, buffer, seed) run is one function call; ``--ray`` runs them as Ray Tune trials (one torch thread
each), with the same printed table. A target holds when ours is not below HER by more than the spread (the larger
of the two standard deviations) at every budget.

Usage: ``python benchmarks/bench_her_dropin.py --suite perf|bitflip|fetch|panda|push|grid [--seeds 0 1 2 3 4] [--ray]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from sb3_hir_robotics.fetch_push_expert import push_demos, push_env_id
from stable_baselines3 import DQN, SAC, HerReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import VecNormalize

from sb3_hir import buffers as hir
from sb3_hir.atomic import atomic_path
from sb3_hir.experiment import (
    BudgetCallback,
    Records,
    TableLayout,
    arguments,
    episode_evaluator,
    markdown_table,
    mean_std,
)
from sb3_hir.experiment.runner import run_all
from sb3_hir.experiment.table import render_comparison

BUFFERS = {"HER": HerReplayBuffer, "ours": hir.HerReplayBuffer}
#: the push suite's sides: (buffer class, extra ``replay_buffer_kwargs``); demonstrations are added to ``ours-demos``.
PUSH_SIDES: dict[str, tuple[Any, dict[str, Any]]] = {
    "HER": (HerReplayBuffer, {}),
    "ours": (hir.HerReplayBuffer, {}),
    "ours-n3": (hir.HerReplayBuffer, dict(n_steps=3, gamma=0.95)),
    "ours-demos": (hir.HerReplayBuffer, {}),
}
# SB3 2.9's ``tests/test_her.py::test_performance_her`` (besides the env, the buffer and ``n_sampled_goal=5``).
PERF_TEST: dict[str, Any] = dict(
    learning_rate=2e-3, train_freq=1, gradient_steps=2, learning_starts=20, exploration_final_eps=0.02,
    target_update_interval=100, batch_size=32, buffer_size=int(1e5), stats_window_size=50,
)
#: the grid's sides: (buffer class, extra ``replay_buffer_kwargs``).
#: ``ours`` is the shipped default (HER's recorded dones since this grid picked it); ``ours-env-terminations`` the
#: option ``terminate_on_success=None`` (the env's terminations for discrete actions, the default before). The first
#: run of the grid (``benchmarks/results/bench_her_dropin_grid.txt``) named them ``ours-her-dones`` and ``ours``.
GRID_SIDES: dict[str, tuple[type, dict[str, Any]]] = {
    "HER": (HerReplayBuffer, {}),
    "ours": (hir.HerReplayBuffer, {}),
    "ours-env-terminations": (hir.HerReplayBuffer, dict(terminate_on_success=None)),
}
#: DQN's learning speed as it ships, with the exploration of issue 35's report (DQN's defaults explore for 10 %).
DQN_DEFAULTS: dict[str, Any] = dict(learning_starts=120, exploration_fraction=0.2, exploration_final_eps=0.02,
                                    train_freq=1, gradient_steps=1)
#: grid setting -> (algorithm, n_bits, n_envs, algorithm kwargs, n_sampled_goal).
GRID: dict[str, tuple[str, int, int, dict[str, Any], int]] = {
    "perf": ("dqn", 10, 2, PERF_TEST, 5),
    "dqn-defaults": ("dqn", 12, 1, DQN_DEFAULTS, 4),
    "target-1000": ("dqn", 12, 1, dict(DQN_DEFAULTS, target_update_interval=1000), 4),
    "qrdqn-defaults": ("qrdqn", 12, 1, {}, 4),
    "bits8": ("dqn", 8, 1, DQN_DEFAULTS, 4),
    "bits15": ("dqn", 15, 1, DQN_DEFAULTS, 4),
}
GRID_BUDGETS = [5000, 10000, 20000]


#: what a run is scored with at each budget (the model in, metrics out).
Scorer = Callable[[Any], Mapping[str, float]]


def training_success(model: Any) -> Mapping[str, float]:
    """SB3's performance-test score: mean ``is_success`` over the last 50 finished training episodes."""
    recent = list(model.ep_success_buffer)[-50:]
    return {"success_rate": float(np.mean(recent)) if recent else 0.0}


def successes(callback: BudgetCallback) -> dict[str, float]:
    """The success rate at each budget, keyed by the budget's text (JSON keys)."""
    return {str(b): v["success_rate"] for b, v in callback.results.items()}


def fetch_id() -> str:
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    return max(e for e in gym.registry if e.startswith("FetchReach-v"))


def run(config: dict[str, Any]) -> dict[str, Any]:
    """One training run of ``config["buffer"]`` on ``config["suite"]``; returns ``{budget: score}`` and seconds."""
    args = argparse.Namespace(**config["options"])
    seed = config["seed"]
    th.manual_seed(seed)
    if args.suite == "grid":
        return run_grid(config, args)
    if args.suite == "push":
        return run_push(config, args)
    score: Scorer
    buffer_class = BUFFERS[config["buffer"]]
    if args.suite == "perf":
        venv = make_vec_env(lambda: BitFlippingEnv(n_bits=10, continuous=False), n_envs=2, seed=seed)
        model: Any = DQN(
            "MultiInputPolicy", venv, replay_buffer_class=buffer_class,
            replay_buffer_kwargs=dict(n_sampled_goal=5, goal_selection_strategy="future"),
            **PERF_TEST, seed=seed, device="cpu",
        )
        budgets, score = [config["budget"]], training_success
    elif args.suite == "bitflip":
        n_bits = config["n_bits"]
        tuned = args.dqn == "perf-test"
        venv = make_vec_env(lambda: BitFlippingEnv(n_bits=n_bits, continuous=False), n_envs=2 if tuned else 1,
                            seed=seed)
        # learning_starts=20 ends no 12- or 15-step episode in time (HER refuses to sample before one has ended).
        settings: dict[str, Any] = dict(PERF_TEST, learning_starts=100) if tuned else {}
        model = DQN("MultiInputPolicy", venv, replay_buffer_class=buffer_class,
                    replay_buffer_kwargs=dict(n_sampled_goal=5 if tuned else 4, goal_selection_strategy="future"),
                    seed=seed, device="cpu", **settings)
        budgets = bitflip_budgets(args.max_steps[args.n_bits.index(n_bits)])
        score = episode_evaluator(lambda: BitFlippingEnv(n_bits=n_bits, continuous=False), args.eval_episodes,
                                      seed)
    elif args.suite == "panda":
        import panda_gym  # noqa: F401  (registers the Panda ids)
        from sb3_contrib import TQC

        venv = VecNormalize(make_vec_env("PandaReach-v3", n_envs=1, seed=seed), gamma=0.95)
        model = TQC(
            "MultiInputPolicy", venv, replay_buffer_class=buffer_class,
            replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
            buffer_size=1_000_000, ent_coef="auto", batch_size=256, gamma=0.95, learning_rate=1e-3,
            learning_starts=1000, policy_kwargs=dict(net_arch=[64, 64], n_critics=1), seed=seed, device="cpu",
        )
        budgets = args.budgets
        score = episode_evaluator(lambda: gym.make("PandaReach-v3"), args.eval_episodes, seed, normalize=venv)
    else:
        env_id = fetch_id()
        venv = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed), gamma=0.95)
        model = SAC(
            "MultiInputPolicy", venv, replay_buffer_class=buffer_class,
            replay_buffer_kwargs=dict(goal_selection_strategy="future", n_sampled_goal=4),
            buffer_size=1_000_000, ent_coef="auto", batch_size=256, gamma=0.95, learning_rate=1e-3,
            learning_starts=1000, policy_kwargs=dict(net_arch=[64, 64]), seed=seed, device="cpu",
        )
        budgets = args.budgets
        score = episode_evaluator(lambda: gym.make(env_id), args.eval_episodes, seed, normalize=venv)
    callback = BudgetCallback(budgets, score)
    begin = time.perf_counter()
    model.learn(total_timesteps=max(budgets), callback=callback)
    return {"scores": successes(callback), "seconds": time.perf_counter() - begin}


#: each finished push run, one JSON file per (settings, side, seed): a push run takes a quarter of an hour on one
#: core, so runs cut short by the end of a working session are resumed (``--resume``), not redone.
PUSH_RUNS = Path(__file__).resolve().parent / "results" / "push_runs"


def push_run_path(config: dict[str, Any], args: argparse.Namespace) -> Path:
    """Where the push run ``config`` is kept: its name holds every setting that changes its result."""
    settings = (f"{args.framework}-net{'x'.join(map(str, args.net_arch))}-batch{args.batch_size}-"
                f"{args.max_push_steps}steps-every{args.budget_step}-eval{args.eval_episodes}")
    if config["buffer"] == "ours-demos":
        settings += f"-demos{args.demos}-ratio{args.demo_ratio}"
    return PUSH_RUNS / f"{settings}-{config['buffer']}-seed{config['seed']}.json"


def push_budgets(args: argparse.Namespace) -> list[int]:
    return list(range(args.budget_step, args.max_push_steps + 1, args.budget_step))


def run_push(config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """One side of the push suite: rl-zoo3's FetchPush TQC, evaluated at every budget of one run."""
    seed, side = config["seed"], config["buffer"]
    buffer_class, extra = PUSH_SIDES[side]
    algo: Any  # SBX's TQC or sb3-contrib's, built alike
    device: dict[str, Any]
    if args.framework == "sbx":
        import sbx

        algo, device = sbx.TQC, {}
    else:
        from sb3_contrib import TQC

        algo, device = TQC, dict(device="cpu")
    env_id = push_env_id()
    venv = make_vec_env(env_id, n_envs=1, seed=seed)
    kwargs = dict(goal_selection_strategy="future", n_sampled_goal=4, **extra)
    if side == "ours-demos":
        kwargs["demo_ratio"] = args.demo_ratio
    model = algo("MultiInputPolicy", venv, replay_buffer_class=buffer_class, replay_buffer_kwargs=kwargs,
                 buffer_size=1_000_000, batch_size=args.batch_size, gamma=0.95, learning_rate=1e-3, tau=0.05,
                 policy_kwargs=dict(net_arch=args.net_arch, n_critics=2), seed=seed, **device)
    if side == "ours-demos":
        assert isinstance(model.replay_buffer, hir.HerReplayBuffer)
        model.replay_buffer.add_demonstrations(push_demos(args.demos, seed=100_000 + 1_000 * seed))
    callback = BudgetCallback(push_budgets(args), episode_evaluator(lambda: gym.make(env_id), args.eval_episodes,
                                                                   seed))
    begin = time.perf_counter()
    model.learn(total_timesteps=args.max_push_steps, callback=callback)
    out = {"scores": successes(callback), "seconds": time.perf_counter() - begin}
    with atomic_path(push_run_path(config, args)) as path:
        path.write_text(json.dumps(dict(config={k: v for k, v in config.items() if k != "options"}, **out)))
    return out


def push_table(configs: list[dict[str, Any]], outs: list[dict[str, Any]], args: argparse.Namespace) -> bool:
    """HER against each side at 1/4, 1/2 and 1x of B, and each side's env steps to HER's success at B."""
    budgets = push_budgets(args)
    scores: dict[str, dict[int, list[float]]] = {side: {b: [] for b in budgets} for side in PUSH_SIDES}
    for config, out in zip(configs, outs, strict=True):
        for budget in budgets:
            if str(budget) in out["scores"]:
                scores[config["buffer"]][budget].append(out["scores"][str(budget)])
    mean = {side: {b: float(np.mean(v)) if v else float("nan") for b, v in per.items()} for side, per in scores.items()}
    reaching = [b for b in budgets if mean["HER"][b] >= 0.5]
    top = reaching[0] if reaching else budgets[-1]
    # The largest evaluated budget at or below each fraction of B (B itself is one).
    shown = sorted({max(b for b in budgets if b <= top * f) for f in (0.25, 0.5, 1.0) if budgets[0] <= top * f})
    changed = [] if args.net_arch == [512, 512, 512] else [f"net_arch {args.net_arch}"]
    changed += [] if args.batch_size == 2048 else [f"batch_size {args.batch_size}"]
    note = f"; changed on every side: {', '.join(changed)}" if changed else ""
    print(f"\n{push_env_id()}, rl-zoo3 TQC ({args.framework}){note}; {len(args.seeds)} seeds (mean ± std); "
          f"B = {top} ({'HER first reaches 0.5' if reaching else 'HER never reaches 0.5: the largest budget'})")
    rows = []
    met = True
    for budget in shown:
        rows.append([budget, *(summary(scores[side][budget]) for side in PUSH_SIDES)])
        hers, ours = np.asarray(scores["HER"][budget]), np.asarray(scores["ours"][budget])
        met &= bool(ours.mean() >= hers.mean() - max(hers.std(), ours.std()))
    print(markdown_table(["budget", *PUSH_SIDES], rows, "r"))
    print(f"pure swap >= HER within the spread at 1/4, 1/2, 1x of B: {'met' if met else 'MISSED'}")
    level = mean["HER"][top]
    for side, target in (("ours-n3", 0.7), ("ours-demos", 0.3)):
        if not reaching:  # B is where HER first reaches 0.5: without it the share of B is not defined
            first = next((b for b in budgets if mean[side][b] >= 0.5), None)
            where = "never" if first is None else f"first at {first} env steps"
            print(f"{side}: not judged, HER never reaches 0.5 within the budgets ({side} reaches 0.5: {where})")
            met = False
            continue
        first = next((b for b in budgets if mean[side][b] >= level), None)
        share = float("nan") if first is None else first / top
        ok = first is not None and share <= target
        met &= ok
        where = "never within the budgets" if first is None else f"at {first} env steps, {share:.2f}x B"
        print(f"{side} reaches HER's {level:.2f} at B {where} (target <= {target}x): {'met' if ok else 'MISSED'}")
    print("full curves: " + "; ".join(f"{b}: " + " ".join(f"{s} {mean[s][b]:.2f}" for s in PUSH_SIDES)
                                      for b in budgets))
    return met


def run_grid(config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """One run of the grid: ``config["setting"]`` with ``config["buffer"]`` (a side of ``GRID_SIDES``)."""
    algo, n_bits, n_envs, settings, n_sampled_goal = GRID[config["setting"]]
    seed = config["seed"]
    buffer_class, extra = GRID_SIDES[config["buffer"]]
    score: Scorer
    venv = make_vec_env(lambda: BitFlippingEnv(n_bits=n_bits, continuous=False), n_envs=n_envs, seed=seed)
    kwargs = dict(n_sampled_goal=n_sampled_goal, goal_selection_strategy="future", **extra)
    if algo == "qrdqn":
        from sb3_contrib import QRDQN

        model: Any = QRDQN("MultiInputPolicy", venv, replay_buffer_class=buffer_class, replay_buffer_kwargs=kwargs,
                           seed=seed, device="cpu", **settings)
    else:
        model = DQN("MultiInputPolicy", venv, replay_buffer_class=buffer_class, replay_buffer_kwargs=kwargs,
                    seed=seed, device="cpu", **settings)
    if config["setting"] == "perf":
        budgets, score = [1500], training_success
    else:
        budgets = GRID_BUDGETS
        score = episode_evaluator(lambda: BitFlippingEnv(n_bits=n_bits, continuous=False), args.eval_episodes,
                                      seed)
    callback = BudgetCallback(budgets, score)
    begin = time.perf_counter()
    model.learn(total_timesteps=max(budgets), callback=callback)
    return {"scores": successes(callback), "seconds": time.perf_counter() - begin}


def grid_table(configs: list[dict[str, Any]], outs: list[dict[str, Any]], seeds: list[int]) -> bool:
    """One row per (setting, budget): every side's mean ± std, and whether each of ours holds against HER within
    the spread (the larger of the two standard deviations)."""
    sides = [s for s in GRID_SIDES if s != "HER"]
    print(f"\nGrid: success against SB3's HerReplayBuffer; {len(seeds)} seeds (mean ± std)")
    grid_rows = []
    held = {side: True for side in sides}
    for setting in dict.fromkeys(c["setting"] for c in configs):
        rows = [(c, o) for c, o in zip(configs, outs, strict=True) if c["setting"] == setting]
        budgets = sorted({int(b) for _, o in rows for b in o["scores"]})
        for budget in budgets:
            values = {side: np.asarray([o["scores"][str(budget)] for c, o in rows if c["buffer"] == side])
                      for side in GRID_SIDES}
            her = values["HER"]
            verdicts = []
            for side in sides:
                spread = max(her.std(), values[side].std())
                met = bool(values[side].mean() >= her.mean() - spread)
                held[side] &= met
                verdicts.append(f"{values[side].mean() - her.mean():+.2f} (spread {spread:.2f}) "
                                f"{'met' if met else 'MISSED'}")
            grid_rows.append([setting, budget, summary(list(her)), *(summary(list(values[s])) for s in sides),
                              *verdicts])
    print(markdown_table(["setting", "budget", "HER", *sides, *(f"{s} target" for s in sides)], grid_rows,
                         "lrr" + "r" * len(sides) + "l" * len(sides)))
    for side in sides:
        print(f"{side}: >= HER within the spread at every cell: {'met' if held[side] else 'MISSED'}")
    seconds = {side: [o["seconds"] for c, o in zip(configs, outs, strict=True) if c["buffer"] == side]
               for side in GRID_SIDES}
    print("train seconds per run (evaluation included): " + ", ".join(
        f"{side} {mean_std(s, 0)}" for side, s in seconds.items()))
    return held["ours"]


def bitflip_budgets(max_steps: int) -> list[int]:
    budgets, budget = [], 250
    while budget <= max_steps:
        budgets.append(budget)
        budget *= 2
    return budgets


def summary(values: list[float]) -> str:
    return mean_std(values, 2)


def table(title: str, budgets: list[int], records: Records, seeds: list[int]) -> bool:
    """``ours`` against HER at ``budgets`` (the harness's comparison table); whether ours holds at each."""
    print(f"\n{title}; {len(seeds)} seeds (mean ± std)")
    text, met = render_comparison(records, "ours", "HER", digits=2, difference="ours - HER", budgets=budgets,
                                  theirs_first=True)
    print(text)
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=["perf", "bitflip", "fetch", "panda", "push", "grid"], required=True)
    parser.add_argument("--framework", choices=["sb3", "sbx"], default="sb3", help="push suite: whose TQC")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[512, 512, 512],
                        help="push suite: hidden layers of every side (rl-zoo3: 512 512 512)")
    parser.add_argument("--batch-size", type=int, default=2048, help="push suite: every side's (rl-zoo3: 2048)")
    parser.add_argument("--budget-step", type=int, default=25_000, help="push suite: env steps between evaluations")
    parser.add_argument("--max-push-steps", type=int, default=400_000, help="push suite: env steps per run")
    parser.add_argument("--demos", type=int, default=100, help="push suite: scripted episodes for ours-demos")
    parser.add_argument("--demo-ratio", type=float, default=0.5, help="push suite: ours-demos's share of each batch")
    parser.add_argument("--resume", action="store_true",
                        help="push suite: reuse the runs already kept in results/push_runs/ with the same settings")
    parser.add_argument("--settings", nargs="+", choices=list(GRID), default=list(GRID), help="grid suite")
    arguments.add_seeds(parser, [0, 1, 2, 3, 4])
    arguments.add_budgets(parser, None, help="perf: default 1000 1500 2500; fetch, panda: default 5000 10000 20000")
    parser.add_argument("--n-bits", type=int, nargs="+", default=[8, 12, 15], help="bitflip suite")
    parser.add_argument("--max-steps", type=int, nargs="+", default=[16000, 32000, 64000],
                        help="bitflip suite: longest budget per --n-bits entry")
    parser.add_argument("--dqn", choices=["perf-test", "defaults"], default="perf-test",
                        help="bitflip suite: DQN settings (see the module docstring)")
    arguments.add_eval_episodes(parser, 50)
    arguments.add_ray(parser)
    args = parser.parse_args()
    if args.budgets is None:
        args.budgets = [1000, 1500, 2500] if args.suite == "perf" else [5000, 10000, 20000]
    if len(args.max_steps) != len(args.n_bits):
        parser.error("--max-steps needs one entry per --n-bits entry")
    th.set_num_threads(1)
    options = {k: v for k, v in vars(args).items() if k not in (*arguments.RAY_OPTIONS, "resume")}
    variants: list[dict[str, Any]] = [{}]
    if args.suite == "bitflip":
        variants = [dict(n_bits=n) for n in args.n_bits]
    elif args.suite == "perf":
        variants = [dict(budget=b) for b in args.budgets]
    configs = [dict(buffer=b, seed=s, options=options, **v) for v in variants for s in args.seeds
               for b in (PUSH_SIDES if args.suite == "push" else BUFFERS)]
    if args.suite == "grid":
        configs = [dict(setting=g, buffer=b, seed=s, options=options)
                   for g in args.settings for s in args.seeds for b in GRID_SIDES]
    began = time.perf_counter()
    kept: dict[int, dict[str, Any]] = {}
    if args.suite == "push" and args.resume:
        for i, config in enumerate(configs):
            if (path := push_run_path(config, args)).exists():
                kept[i] = json.loads(path.read_text())
        print(f"resumed {len(kept)} of {len(configs)} push runs from {PUSH_RUNS}")
    todo = [config for i, config in enumerate(configs) if i not in kept]
    ran = iter(run_all(run, todo, use_ray=args.ray, cpus_per_trial=args.cpus_per_trial, address=args.ray_address,
                       name=f"bench_her_dropin_{args.suite}") if todo else [])
    outs = [kept[i] if i in kept else next(ran) for i in range(len(configs))]
    for config, out in zip(configs, outs, strict=True):
        curve = " ".join(f"{b}:{v:.2f}" for b, v in out["scores"].items())
        extra = f" n_bits={config['n_bits']}" if "n_bits" in config else ""
        extra += f" {config['setting']}" if "setting" in config else ""
        print(f"{args.suite}{extra} seed {config['seed']} {config['buffer']:<14} {curve}  ({out['seconds']:.0f}s)")
    if args.suite == "push":
        met = push_table(configs, outs, args)
        print(f"\ntargets: {'met' if met else 'MISSED'}")
        print(f"wall time {time.perf_counter() - began:.0f} s")
        return
    if args.suite == "grid":
        met = grid_table(configs, outs, args.seeds)
        print(f"\ntarget 'ours >= HER within the spread at every cell': {'met' if met else 'MISSED'}")
        print(f"wall time {time.perf_counter() - began:.0f} s")
        return
    verdicts = []
    for variant in variants if args.suite != "perf" else [{}]:
        rows = [(c, o) for c, o in zip(configs, outs, strict=True) if c.get("n_bits") == variant.get("n_bits")]
        budgets = sorted({int(b) for _, o in rows for b in o["scores"]})
        records = Records("bench_her_dropin", layout=TableLayout(metrics={"success_rate": "success"}))
        for config, out in rows:  # perf: one budget per run
            records.add_run(config["buffer"], config["seed"],
                            {b: {"success_rate": v} for b, v in out["scores"].items()}, out["seconds"])
        scores = {b: {x: records.values(b, x, "success_rate") for x in budgets} for b in BUFFERS}
        seconds = {b: [o["seconds"] for c, o in rows if c["buffer"] == b] for b in BUFFERS}
        if args.suite == "perf":
            title = "SB3's HER performance test (DQN, BitFlipping-10, 2 envs): training success, last 50 episodes"
            verdicts.append(table(title, budgets, records, args.seeds))
            at = max(b for b in budgets if b <= 1500) if min(budgets) <= 1500 else budgets[0]
            ours = np.asarray(scores["ours"][at])
            passing = int((ours > 0.9).sum())
            hers_mean = float(np.mean(scores["HER"][at]))
            print(f"at {at} steps: ours mean {ours.mean():.2f} vs HER {hers_mean:.2f} "
                  f"({'met' if ours.mean() >= hers_mean else 'MISSED'}: ours >= HER); ours > 0.90 on {passing} of "
                  f"{len(ours)} seeds ({'met' if passing >= min(4, len(ours)) else 'MISSED'}: at least 4 of 5)")
        elif args.suite == "bitflip":
            hers = {b: float(np.mean(scores["HER"][b])) for b in budgets}
            reaching = [b for b in budgets if hers[b] >= 0.8]
            top = reaching[0] if reaching else budgets[-1]
            shown = [b for b in (top // 4, top // 2, top) if b in hers]
            note = "first reaches 0.8" if reaching else "never reaches 0.8; its largest budget"
            title = (f"BitFlipping n_bits={variant['n_bits']} (DQN {args.dqn} settings): deterministic success at 1/4, "
                     f"1/2 and 1x of B={top} (HER {note})")
            verdicts.append(table(title, shown, records, args.seeds))
            print("full curves: " + "; ".join(
                f"{b}: HER {np.mean(scores['HER'][b]):.2f} ours {np.mean(scores['ours'][b]):.2f}" for b in budgets))
        elif args.suite == "panda":
            title = "PandaReach-v3 (rl-zoo3 TQC config): is_success at the episode's end, deterministic"
            verdicts.append(table(title, budgets, records, args.seeds))
        else:
            title = f"{fetch_id()} (rl-zoo3 SAC config): is_success at the last of 50 steps, deterministic"
            verdicts.append(table(title, budgets, records, args.seeds))
        print("train seconds (evaluation included): " + ", ".join(
            f"{b} {mean_std(s, 0)}" for b, s in seconds.items()))
    print(f"\ntarget 'ours >= HER within the spread at every budget': {'met' if all(verdicts) else 'MISSED'}")
    print(f"wall time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
