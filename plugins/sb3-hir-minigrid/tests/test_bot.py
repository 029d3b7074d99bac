"""Issue 54, item 2: BabyAI's bot as the env-state expert ``"babyai-bot"``.

With minigrid >= 3.0: the bot's own success on every go-to level the plugin serves, labels at the states a learner
visits (replayed against a bot driven by the same executed actions), its replanning after the learner's actions, and
one error class when it fails. With minigrid 2.3.1 (the gymnasium 0.29 profile): one error naming the version and
the profile that has the bot.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
from sb3_hir_minigrid.bot import BabyAIBotExpert, BotStuckError, BotUnavailableError
from sb3_hir_minigrid.wrapper import BABYAI_MAX_GOALS, make_babyai_goto
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import plugins, resolvers
from sb3_hir.env_experts import EnvStateExpertFactory, EnvStateLabelExpert, EnvStateLabels, with_expert_labels

try:
    import minigrid.utils.baby_ai_bot  # noqa: F401

    HAS_BOT = True
except ImportError:
    HAS_BOT = False
needs_bot = pytest.mark.skipif(not HAS_BOT, reason="BabyAI's bot comes with minigrid >= 3.0")

#: The go-to levels the plugin serves (README's coverage table) and their goal slots.
LEVELS = {"GoToLocal": 1, "GoTo": 1, "GoToSeqS5R2": BABYAI_MAX_GOALS, "GoToSeq": BABYAI_MAX_GOALS}


def level_env(level: str) -> gym.Env:
    return make_babyai_goto(f"BabyAI-{level}-v0", k_max=LEVELS[level])


def test_sb3_hir_plugins_lists_the_bot_as_an_expert(capsys):
    from sb3_hir import cli

    info = plugins.available("expert")["babyai-bot"]
    assert info.distribution == "sb3-hir-minigrid"
    assert cli.main(["plugins"]) == 0
    listing = capsys.readouterr().out
    assert "expert: babyai-bot" in listing.split("minigrid (sb3-hir-minigrid", 1)[1]


@pytest.mark.skipif(HAS_BOT, reason="this minigrid has the bot")
def test_without_the_bot_asking_for_it_is_one_error_naming_the_version_and_profile_that_have_it():
    venv = DummyVecEnv([lambda: level_env("GoToLocal")])
    for ask in (lambda: with_expert_labels(lambda: level_env("GoToLocal"), "babyai-bot"),
                lambda: resolvers.resolve_expert("babyai-bot", venv=venv)):
        with pytest.raises(BotUnavailableError, match=r"minigrid 2\.3\.1.*'current' profile.*minigrid>=3\.0") as err:
            ask()
        assert "\n" not in str(err.value)
    assert issubclass(BotUnavailableError, ImportError)


@needs_bot
@pytest.mark.parametrize("level", list(LEVELS))
def test_the_bots_own_success_on_each_go_to_level(level):
    """20 episodes per level (seeds 0-19); measured 1.0 on each (benchmarks/results/bench_babyai_bot.txt)."""
    env = EnvStateLabels(level_env(level), resolvers_bot())
    successes = 0
    for seed in range(20):
        env.reset(seed=seed)
        while True:
            _, _, terminated, truncated, info = env.step(env.label)
            if terminated or truncated:
                break
        successes += bool(info["is_success"])
    assert successes == 20


def resolvers_bot() -> BabyAIBotExpert:
    return cast(BabyAIBotExpert, cast(EnvStateExpertFactory, plugins.get("expert", "babyai-bot")).make_expert())


@needs_bot
@pytest.mark.parametrize("level", ["GoToLocal", "GoToSeqS5R2"])
def test_labels_are_the_bots_at_the_states_a_learner_visits(level):
    """A random learner acts half the time; each label equals a fresh bot's, driven through the same episode by
    BabyAI's contract (``replan(action)`` after an action it did not suggest, ``replan(None)`` otherwise)."""
    from minigrid.utils.baby_ai_bot import BabyAIBot

    from sb3_hir.dagger import DAggerCollector

    n_envs, seed = 2, 7
    venv = DummyVecEnv([with_expert_labels(lambda: level_env(level), "babyai-bot")] * n_envs)
    venv.seed(seed)
    expert = resolvers.resolve_expert("babyai-bot", venv=venv)
    assert isinstance(expert, EnvStateLabelExpert)
    rng = np.random.default_rng(0)
    collector = DAggerCollector(venv, lambda obs: rng.integers(0, 7, len(obs["obs"])), beta=0.5, rng=0)
    obs: Any = collector.reset()
    first: dict[int, Any] = {}
    while len(first) < n_envs:  # the first episode of each sub-env: its seed is known
        obs, _, dones, _ = collector.step(expert.predict(obs)[0])
        ended = np.flatnonzero(dones).tolist()  # the collector adds their episodes in this order
        for k, env_index in enumerate(ended):
            first.setdefault(env_index, collector.trajectories[len(collector.trajectories) - len(ended) + k])
    assert sum(int(np.sum(t.acts != t.executed_acts)) for t in first.values()) > 0  # the learner deviated
    for i, traj in first.items():
        env = level_env(level)
        env.reset(seed=seed + i)
        bot = BabyAIBot(env.unwrapped)
        taken: int | None = None
        for label, executed in zip(traj.acts, traj.executed_acts, strict=True):
            suggested = bot.replan(taken)
            assert int(label) == int(suggested)
            env.step(int(executed))
            taken = None if int(executed) == int(suggested) else int(executed)
    assert sum(bot.replans for bot in venv.get_attr("expert")) > 0
    collector.finish_round(policy="report")


@needs_bot
def test_a_broken_plan_is_taken_over_by_a_new_bot_and_a_failing_bot_is_one_error_class(monkeypatch):
    """Measured on GoTo with a random learner: the bot's plan breaks (``AssertionError`` in ``replan``) after the
    learner dropped what the bot meant to drop. A new bot takes over; a bot that fails again is a BotStuckError."""
    from minigrid.utils.baby_ai_bot import BabyAIBot

    original = BabyAIBot.replan
    failures = {"left": 1}

    def breaks_once(self: Any, action_taken: Any = None) -> Any:
        if failures["left"] and action_taken is not None:
            failures["left"] -= 1
            raise AssertionError("the plan broke")
        return original(self, action_taken)

    monkeypatch.setattr(BabyAIBot, "replan", breaks_once)
    expert = resolvers_bot()
    env = EnvStateLabels(level_env("GoToLocal"), expert)
    env.reset(seed=0)
    env.step(0 if env.label != 0 else 1)  # not the bot's suggestion: replan(action) fails, a new bot takes over
    assert expert.restarts == 1
    while True:
        _, _, terminated, truncated, info = env.step(env.label)
        if terminated or truncated:
            break
    assert info["is_success"]

    def broken(self: Any, action_taken: Any = None) -> Any:
        raise AssertionError("0nothing left to explore")

    monkeypatch.setattr(BabyAIBot, "replan", broken)
    strict = EnvStateLabels(level_env("GoToLocal"), BabyAIBotExpert(restart_on_failure=False))
    monkeypatch.setattr(BabyAIBot, "replan", original)
    strict.reset(seed=0)
    monkeypatch.setattr(BabyAIBot, "replan", broken)
    with pytest.raises(BotStuckError, match=r"failed at step 1 of 'BabyAI-GoToLocal-v0', mission 'go to .*Assertion"):
        strict.step(0)
    monkeypatch.setattr(BabyAIBot, "replan", original)
    env.reset(seed=1)
    monkeypatch.setattr(BabyAIBot, "replan", broken)
    with pytest.raises(BotStuckError, match=r"failed again after a restart at step 1 of 'BabyAI-GoToLocal-v0'"):
        env.step(0)


@needs_bot
def test_a_box_toggled_away_by_the_learner_does_not_stop_the_bot():
    """BabyAI's bot gives up (``DisappearedBoxError``) when the agent opens a box; the mission goes on."""
    env = EnvStateLabels(level_env("GoToLocal"), resolvers_bot())
    rng = np.random.default_rng(0)
    toggled = finished = 0
    for seed in range(30):
        env.reset(seed=seed)
        done = False
        for _ in range(40):  # wander (left, right, forward) until a box is in front, then toggle it away
            level: Any = env.unwrapped
            front = level.grid.get(*level.front_pos)
            if front is not None and front.type == "box":
                _, _, terminated, truncated, _ = env.step(5)
                toggled += 1
                done = terminated or truncated
                break
            _, _, terminated, truncated, _ = env.step(int(rng.integers(0, 3)))
            if terminated or truncated:
                done = True
                break
        while not done:  # the bot takes over
            _, _, terminated, truncated, _ = env.step(env.label)
            done = terminated or truncated
        finished += 1
    assert toggled > 0 and finished == 30
    assert cast(BabyAIBotExpert, env.expert).box_repairs == toggled


@needs_bot
def test_one_command_runs_dagger_with_the_bot_end_to_end(tmp_path):
    """``sb3-hir dagger --env babyai-goto --expert babyai-bot`` at a tiny budget: rounds, files, the table."""
    import contextlib
    import io

    from sb3_hir import cli
    from sb3_hir.dagger import load_round_dir

    out = tmp_path / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        rc = cli.main(["dagger", "--env", "babyai-goto", "--expert", "babyai-bot", "--rounds", "2",
                       "--steps-per-round", "64", "--batch-size", "32", "--bc-epochs", "1", "--n-envs", "2",
                       "--eval-episodes", "2", "--no-progress", "--out", str(out)])
    assert rc == 0
    assert "expert babyai-bot (success 1.00)" in printed.getvalue()
    assert (out / "rounds.md").is_file() and (out / "checkpoint-latest.json").is_file()
    trajs = load_round_dir(out / "demos" / "round-001")
    # round 1 mixes the learner in (beta 0.5)
    assert trajs and any(t.learner_mask is not None and t.learner_mask.any() for t in trajs)


@pytest.mark.skipif(HAS_BOT, reason="this minigrid has the bot")
def test_the_command_without_the_bot_is_one_error_line(tmp_path, capsys):
    from sb3_hir import cli

    assert cli.main(["dagger", "--env", "babyai-goto", "--expert", "babyai-bot", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "minigrid>=3.0" in err and "'current' profile" in err
    assert not (tmp_path / "run").exists()  # refused before anything was written


@needs_bot
def test_the_benchmark_runs_at_its_tiny_budget():
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "plugins" / "sb3-hir-minigrid")])}
    proc = subprocess.run([sys.executable, "bench_babyai_bot.py", "--tiny"], cwd=root / "benchmarks", env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| GoToLocal | 1.00 |" in proc.stdout and "target: labelling with the bot costs <= 2x" in proc.stdout


@needs_bot
def test_train_takes_bot_demonstrations(tmp_path):
    """``sb3-hir train --demos N --expert babyai-bot``: the bot's episodes go into the buffer's demonstrations."""
    import contextlib
    import io

    from sb3_hir import cli

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        rc = cli.main(["train", "--env", "babyai-goto", "--demos", "2", "--expert", "babyai-bot", "--relabel", "none",
                       "--timesteps", "200", "--eval-freq", "200", "--eval-episodes", "2", "--no-progress", "--out",
                       str(tmp_path / "run")])
    assert rc == 0, printed.getvalue()[-2000:]


@needs_bot
def test_the_bot_labels_in_subprocvecenv_workers():
    """The bot runs beside its env in the worker process; the adapter reads the labels with ``get_attr``."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    venv = SubprocVecEnv([with_expert_labels(lambda: level_env("GoToLocal"), "babyai-bot")] * 2)
    try:
        venv.seed(3)
        expert = resolvers.resolve_expert("babyai-bot", venv=venv)
        obs: Any = venv.reset()
        successes = 0
        for _ in range(200):
            obs, _, dones, infos = venv.step(expert.predict(obs)[0])
            successes += sum(bool(info["is_success"]) for info, done in zip(infos, dones, strict=True) if done)
        assert successes >= 2
    finally:
        venv.close()
