"""Issue 54, item 1: experts that read the env label each visited state at collection time (``sb3_hir.env_experts``).

The env hides its target from the observation, so only an expert that reads the env's state can label it. Checked:
the labels are the expert's at the visited states (also where the learner acted), a planning expert is shown every
executed action and replans after the learner's, the trainer's durable rounds, checkpoint and resume work with such an
expert by plugin name, and an observation-only expert's env is left as it is.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("imitation", reason="DAgger test module: needs imitation (the 'dagger' extra)")

from imitation.algorithms import bc
from stable_baselines3.common.vec_env import DummyVecEnv
from test_dagger import QUIET_BC

from sb3_hir import hookimpl, plugins
from sb3_hir.dagger import (
    DAggerCollector,
    DAggerTrajectory,
    SimpleDAggerTrainer,
    reconstruct_trainer,
    round_files,
    trajectory_fingerprint,
)
from sb3_hir.env_experts import (
    EXPERT_ACTION_KEY,
    EnvStateExpert,
    EnvStateExpertFactory,
    EnvStateLabelExpert,
    EnvStateLabels,
    with_expert_labels,
)

LEFT, STAY, RIGHT = 0, 1, 2


class HiddenTarget(gym.Env):
    """A line of ``size`` cells; the observation is the agent's cell only, the target cell is hidden state."""

    def __init__(self, size: int = 9) -> None:
        self.size = size
        self.observation_space = gym.spaces.Box(0.0, 1.0, (size,), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.pos = 0
        self.target = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.size, dtype=np.float32)
        obs[self.pos] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.pos, self.target = (int(v) for v in self.np_random.choice(self.size, 2, replace=False))
        return self._obs(), {"target": self.target}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.pos = int(np.clip(self.pos + int(action) - 1, 0, self.size - 1))
        done = self.pos == self.target
        return self._obs(), float(done), done, False, {"target": self.target}


def best(pos: int, target: int) -> int:
    return RIGHT if target > pos else LEFT if target < pos else STAY


def visited(traj: Any) -> tuple[list[int], int]:
    """The cells an episode's labels were given at, and its hidden target."""
    assert traj.infos is not None
    return [int(p) for p in np.argmax(np.asarray(traj.obs), axis=1)[:-1]], int(traj.infos[0]["target"])


class Planner(EnvStateExpert):
    """Plans its moves at reset and follows the plan; replans only when the executed action was not its own."""

    def __init__(self) -> None:
        self.plan: list[int] = []
        self.suggested: int | None = None
        self.observed: list[int] = []
        self.replans = 0

    def _replan(self, env: Any) -> None:
        self.plan = [best(env.pos, env.target)] * abs(env.target - env.pos)

    def reset(self, env: gym.Env) -> None:
        self._replan(env)
        self.observed.append(-1)  # an episode boundary in the log

    def act(self, env: gym.Env) -> int:
        self.suggested = self.plan[0] if self.plan else STAY
        return self.suggested

    def observe(self, env: gym.Env, action: Any) -> None:
        self.observed.append(int(action))
        if int(action) == self.suggested and self.plan:
            self.plan.pop(0)
        else:
            self.replans += 1
            self._replan(env)


def labelled_venv(n_envs: int = 3, seed: int = 0, expert: Any = Planner) -> DummyVecEnv:
    env_fn = with_expert_labels(lambda: gym.wrappers.TimeLimit(HiddenTarget(), 15), expert)
    venv = DummyVecEnv([env_fn] * n_envs)
    venv.seed(seed)
    return venv


def wander(obs: np.ndarray) -> np.ndarray:
    """A learner that steps right from every cell: wrong for half the targets."""
    return np.full(len(obs), RIGHT)


def make_bc(venv: DummyVecEnv, seed: int = 0) -> bc.BC:
    return bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                 rng=np.random.default_rng(seed), batch_size=16, device="cpu")


def test_labels_are_the_experts_at_the_visited_states_and_it_replans_after_the_learners_actions(tmp_path):
    venv = labelled_venv()
    expert = EnvStateLabelExpert(venv)
    collector = DAggerCollector(venv, wander, beta=0.5, save_dir=tmp_path, rng=0)
    obs: Any = collector.reset()
    while collector.round_episodes < 12:
        obs, *_ = collector.step(expert.predict(obs)[0])
    trajs = cast(list[DAggerTrajectory], collector.finish_round(expert=expert))
    learner_steps = 0
    for traj in trajs:
        pos, target = visited(traj)
        assert traj.learner_mask is not None and traj.executed_acts is not None
        assert list(traj.acts) == [best(p, target) for p in pos]  # the expert's action for the true state
        learner_steps += int(np.sum(traj.learner_mask & (traj.executed_acts != traj.acts)))
    assert learner_steps > 0  # the learner led somewhere the plan did not go
    planners: list[Planner] = venv.get_attr("expert")
    assert sum(p.replans for p in planners) >= learner_steps
    # every recorded episode's executed actions are what a planner was shown, the learner's included
    shown = {tuple(int(a) for a in ep.split()) for p in planners
             for ep in " ".join(map(str, p.observed)).split("-1") if ep.strip()}
    executed = {tuple(int(a) for a in np.asarray(t.executed_acts)) for t in trajs}
    assert executed <= shown


def test_a_planner_that_is_never_shown_the_learners_actions_would_label_wrong():
    """The test above has teeth: without ``observe``, the plan goes stale where the learner deviated."""

    class Deaf(Planner):
        def observe(self, env: gym.Env, action: Any) -> None:
            if self.plan:
                self.plan.pop(0)

    venv = labelled_venv(seed=1, expert=Deaf)
    collector = DAggerCollector(venv, wander, beta=0.3, rng=1)
    expert = EnvStateLabelExpert(venv)
    obs: Any = collector.reset()
    while collector.round_episodes < 12:
        obs, *_ = collector.step(expert.predict(obs)[0])
    wrong = 0
    for traj in collector.finish_round(expert=expert):
        pos, target = visited(traj)
        wrong += sum(int(a != best(p, target)) for a, p in zip(traj.acts, pos, strict=True))
    assert wrong > 0


def test_the_wrapper_puts_the_label_in_info_and_asks_the_expert_once_per_state():
    calls: list[str] = []

    class Counting(Planner):
        def act(self, env: gym.Env) -> int:
            calls.append("act")
            return super().act(env)

    env = EnvStateLabels(HiddenTarget(), Counting())
    _, info = env.reset(seed=3)
    line = cast(HiddenTarget, env.unwrapped)
    assert info[EXPERT_ACTION_KEY] == env.label == best(line.pos, line.target)
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(env.label)
        steps += 1
        if terminated or truncated:
            break
        assert info[EXPERT_ACTION_KEY] == env.label
    assert EXPERT_ACTION_KEY not in info and len(calls) == steps  # the last state is not labelled
    with pytest.raises(RuntimeError, match="reset the env"):
        _ = env.label
    with pytest.raises(ValueError, match="EnvStateExpert"):
        EnvStateLabels(HiddenTarget(), cast(Any, object()))


def test_an_unwrapped_venv_is_refused_in_one_sentence_and_an_observation_expert_keeps_its_env():
    plain = DummyVecEnv([HiddenTarget] * 2)
    with pytest.raises(ValueError, match=r"2 sub-env\(s\) lack; build the venv from with_expert_labels"):
        EnvStateLabelExpert(plain)
    env_fn = HiddenTarget
    assert with_expert_labels(env_fn, "shortest-path") is env_fn  # an observation-only expert: unchanged
    assert with_expert_labels(env_fn, object()) is env_fn
    with pytest.raises(ValueError, match="takes its arguments where each sub-env builds it"):
        EnvStateExpertFactory(Planner)(labelled_venv(), horizon=3)


class PlannerPlugin:
    @hookimpl
    def register_experts(self, register: Any) -> None:
        register("test-planner", EnvStateExpertFactory(Planner))


def test_durable_rounds_checkpoint_and_resume_with_an_env_state_expert_by_plugin_name(tmp_path):
    name = plugins.register(PlannerPlugin(), name="test-planner-plugin")
    try:
        venv = labelled_venv(n_envs=2, expert="test-planner")
        trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy="test-planner",
                                      rng=np.random.default_rng(0), bc_trainer=make_bc(venv))
        trainer.train(60, rollout_round_min_timesteps=30, bc_train_kwargs=QUIET_BC)
        rounds = trainer.round_num
        assert rounds >= 2 and round_files(tmp_path / "demos" / "round-000")
        for traj in trainer.load_demos():  # every stored label is the expert's at its state
            pos, target = visited(traj)
            assert list(traj.acts) == [best(p, target) for p in pos]
        stored = Counter(trajectory_fingerprint(t) for t in trainer.load_demos())
        # a round cut short, as by a kill: its finished episodes are on disk, the round never finished
        collector = trainer.create_trajectory_collector()
        expert = EnvStateLabelExpert(collector)
        obs: Any = collector.reset()
        while len(collector.saved_files) < 3:
            obs, *_ = collector.step(expert.predict(obs)[0])
        cut_short = round_files(tmp_path / "demos" / f"round-{rounds:03d}")
        assert len(cut_short) >= 3
        del trainer, collector

        venv2 = labelled_venv(n_envs=2, seed=100, expert="test-planner")
        again = reconstruct_trainer(tmp_path, venv2)  # the expert comes back from its plugin name
        assert isinstance(again, SimpleDAggerTrainer) and again.round_num == rounds
        assert isinstance(again.expert_policy, EnvStateLabelExpert) and again.expert_policy.venv is venv2
        again.train(30, rollout_round_min_timesteps=30, bc_train_kwargs=QUIET_BC)
        assert again.round_num == rounds + 1
        assert set(cut_short) < set(round_files(tmp_path / "demos" / f"round-{rounds:03d}"))  # kept, appended to
        after = Counter(trajectory_fingerprint(t) for t in again.load_demos())
        assert not stored - after  # every episode of the finished rounds is still there
    finally:
        plugins.unregister(name)
