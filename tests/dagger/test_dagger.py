"""DAgger collection and trainers: Box and Dict observations, recurrent learners, files, crashes, bad input."""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("imitation", reason="DAgger test module: needs imitation (the 'dagger' extra, or on gymnasium "
                    "1.x the 'dagger-gymnasium1' extra plus pip install --no-deps imitation==1.0.0)")

from imitation.algorithms import bc
from imitation.data import types
from imitation.policies.base import FeedForward32Policy
from imitation.util import util as imitation_util
from sb3_contrib import RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper

from sb3_hir.dagger import (
    CorruptRoundFileError,
    DAggerCollector,
    DAggerTrainer,
    NeedsDemosError,
    PolicyRunner,
    SimpleDAggerTrainer,
    TrajectoryRelabeling,
    load_round_dir,
    load_trajectories,
    reconstruct_trainer,
    relabel_trajectory,
    round_files,
    save_trajectories,
    trajectory_fingerprint,
)
from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.relabel import HindsightInstructionRelabeler

QUIET_BC = {"n_epochs": 1, "progress_bar": False, "log_rollouts_n_episodes": 0}



# ----------------------------------------------------------------------------------------------- helpers
class BalancePolicy(BasePolicy):
    """CartPole expert without training: push toward the side the pole falls to."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__(observation_space, action_space)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        return self._predict(obs)

    def _predict(self, observation: th.Tensor, deterministic: bool = False) -> th.Tensor:  # type: ignore[override]
        return (observation[:, 2] + 0.5 * observation[:, 3] > 0).long()


def balance(obs: np.ndarray) -> np.ndarray:
    return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)


def push_left(obs: np.ndarray) -> np.ndarray:
    return np.zeros(len(obs), dtype=np.int64)


class StepLog(VecEnvWrapper):
    """Records the actions that reach the env (under the collector), and counts vector steps."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.actions: list[np.ndarray] = []

    def reset(self):
        return self.venv.reset()

    def step_async(self, actions: np.ndarray) -> None:
        self.actions.append(np.array(actions))
        self.venv.step_async(actions)

    def step_wait(self):
        return self.venv.step_wait()


def cartpole(n_envs: int = 4, max_steps: int = 30, seed: int = 0) -> DummyVecEnv:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=max_steps)] * n_envs)
    venv.seed(seed)
    return venv


def maze(n_envs: int = 3, time_limit: int = 60, seed: int = 0, limits: list[int] | None = None) -> DummyVecEnv:
    limits = limits or [time_limit] * n_envs
    venv = DummyVecEnv([lambda t=t: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=t) for t in limits])
    venv.seed(seed)
    return venv


def feed_forward(venv: VecEnv, seed: int = 0) -> FeedForward32Policy:
    th.manual_seed(seed)
    return FeedForward32Policy(venv.observation_space, venv.action_space, lr_schedule=lambda _: 1e-3)


def wander(venv: VecEnv, seed: int = 0):
    """A learner for any Discrete-action env: uniform random actions, one per observation it is given."""
    rng = np.random.default_rng(seed)
    return lambda obs: rng.integers(0, venv.action_space.n, len(next(iter(obs.values()))))


def make_bc(venv: VecEnv, seed: int = 0, batch_size: int = 32, **kwargs) -> bc.BC:
    th.manual_seed(seed)
    return bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                 rng=np.random.default_rng(seed), batch_size=batch_size, **kwargs)


def kill_at_marker(script: pathlib.Path, workdir: pathlib.Path, what: str, linger: float = 0.2) -> None:
    """Run ``script workdir``, SIGKILL it ``linger`` s after it touches ``workdir/marker``."""
    proc = subprocess.Popen([sys.executable, str(script), str(workdir)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not (workdir / "marker").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, f"the subprocess never {what}"
            time.sleep(0.02)
        time.sleep(linger)  # let it get further
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def drive(collector: DAggerCollector, expert, steps: int):
    runner = PolicyRunner(expert, collector.num_envs)
    obs = collector.reset()
    for _ in range(steps):
        obs, _, dones, _ = collector.step(runner(obs))
        runner.observe_dones(dones)
    return runner


def files_in(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file())


def mean_neglogp(policy, trajs) -> float:
    transitions = types.DictObs.concatenate([t.obs[:-1] for t in trajs])
    acts = np.concatenate([t.acts for t in trajs])
    obs = {k: imitation_util.safe_to_tensor(v) for k, v in transitions.unwrap().items()}
    with th.no_grad():
        _, log_prob, _ = policy.evaluate_actions(obs, th.as_tensor(acts))
    return float(-log_prob.mean())


# ----------------------------------------------------------------------------------------------- Box path
def test_box_path_labels_every_step_with_the_expert_and_writes_each_episode(tmp_path):
    log = StepLog(cartpole(n_envs=4, max_steps=30))
    expert = BalancePolicy(log.observation_space, log.action_space)
    learner = feed_forward(log)
    collector = DAggerCollector(log, learner, 0.5, tmp_path, np.random.default_rng(0), deterministic_learner=True)
    drive(collector, expert, 70)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # completing never reports partial episodes
        trajs = collector.finish_round("complete", expert=expert)
    assert len(trajs) >= 8 and all(t.complete for t in trajs)
    # no label lost: every env step taken is in an episode, or in an episode begun while completing the others
    assert sum(len(t) for t in trajs) + collector.discarded_steps == len(log.actions) * 4
    masks = np.concatenate([t.learner_mask for t in trajs])
    assert 0.35 < masks.mean() < 0.65
    for t in trajs:
        assert t.obs.shape == (len(t) + 1, 4)
        np.testing.assert_array_equal(t.acts, balance(t.obs[:-1]))  # labels: the expert's action, always
        mask = t.learner_mask
        np.testing.assert_array_equal(t.executed_acts[~mask], t.acts[~mask])
        if mask.any():
            learner_acts, _ = learner.predict(t.obs[:-1][mask], deterministic=True)
            np.testing.assert_array_equal(t.executed_acts[mask], learner_acts)
    # one file per episode by default, no temporary file left, and they hold exactly the round's episodes
    assert files_in(tmp_path) == sorted(p.name for p in collector.saved_files)
    assert [len(load_trajectories(p)) for p in collector.saved_files] == [1] * len(trajs)
    loaded = load_round_dir(tmp_path)
    assert [trajectory_fingerprint(t) for t in loaded] == [trajectory_fingerprint(t) for t in trajs]
    for a, b in zip(loaded, trajs, strict=True):
        assert (a.terminal, a.truncated, a.complete) == (b.terminal, b.truncated, b.complete)
        np.testing.assert_array_equal(a.executed_acts, b.executed_acts)
        np.testing.assert_array_equal(a.rews, b.rews)
        assert [sorted(i) for i in a.infos] == [sorted(k for k in i if k != "terminal_observation") for i in b.infos]


def test_terminated_and_truncated_are_recorded_separately_and_beta_bounds(tmp_path):
    venv = cartpole(n_envs=3, max_steps=20, seed=1)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    # beta = 1: the balancing expert always acts, every episode hits the time limit
    collector = DAggerCollector(venv, push_left, 1.0, tmp_path / "b1", np.random.default_rng(0))
    drive(collector, expert, 45)
    truncated = collector.finish_round("complete", expert=expert)
    assert truncated and all(len(t) == 20 and t.truncated and not t.terminal for t in truncated)
    assert all(t.infos[-1]["TimeLimit.truncated"] for t in truncated)
    for t in truncated:
        np.testing.assert_array_equal(t.executed_acts, t.acts)  # labels equal executed actions
        assert not t.learner_mask.any()
    # beta = 0: the learner (always left) acts, the pole falls: terminated, not truncated, labels still expert's
    collector = DAggerCollector(venv, push_left, 0.0, tmp_path / "b0", np.random.default_rng(0))
    drive(collector, expert, 45)
    terminated = collector.finish_round("complete", expert=expert)
    assert terminated and all(len(t) < 20 and t.terminal and not t.truncated for t in terminated)
    for t in terminated:
        np.testing.assert_array_equal(t.executed_acts, push_left(t.obs[:-1]))
        assert t.learner_mask.all()
        np.testing.assert_array_equal(t.acts, balance(t.obs[:-1]))
    for directory, expected in ((tmp_path / "b1", truncated), (tmp_path / "b0", terminated)):
        loaded = load_round_dir(directory)
        assert [(t.terminal, t.truncated) for t in loaded] == [(t.terminal, t.truncated) for t in expected]


# ----------------------------------------------------------------------------------------------- Dict path
def test_mazerunner_dict_path_with_shortest_path_expert_and_bc_trains_on_it(tmp_path):
    venv = maze(n_envs=3, time_limit=60)
    expert = ShortestPathExpert(venv)
    bc_trainer = make_bc(venv)
    collector = DAggerCollector(venv, bc_trainer.policy, 0.7, tmp_path, np.random.default_rng(0))
    runner = PolicyRunner(expert, 3)
    obs = collector.reset()
    while collector.round_episodes < 6:
        obs, _, dones, _ = collector.step(runner(obs))
        runner.observe_dones(dones)
    trajs = collector.finish_round("complete", expert=runner)
    assert all(isinstance(t.obs, types.DictObs) for t in trajs)
    for t in trajs:
        assert t.obs.shape == {"achieved": (len(t) + 1, 1, 2), "goals": (len(t) + 1, 2, 2), "obs": (len(t) + 1, 7)}
        assert t.obs.dtype == {"achieved": np.int32, "goals": np.int32, "obs": np.float32}
        if t.terminal:  # both goals reached, one reward each
            assert t.rews.sum() == 2.0 and t.infos[-1]["is_success"] and (t.obs.get("goals")[-1] == -1).all()
        else:
            assert t.truncated and len(t) == 60
    assert any(t.terminal for t in trajs)
    loaded = load_round_dir(tmp_path)
    assert [trajectory_fingerprint(t) for t in loaded] == [trajectory_fingerprint(t) for t in trajs]
    assert all(isinstance(t.obs, types.DictObs) for t in loaded)
    # imitation's BC, unchanged, trains on the DictObs trajectories through its own data loader
    before = mean_neglogp(bc_trainer.policy, loaded)
    bc_trainer.set_demonstrations(loaded)
    bc_trainer.train(n_epochs=4, progress_bar=False)
    assert mean_neglogp(bc_trainer.policy, loaded) < before - 0.1


def test_recurrent_learner_state_is_carried_per_sub_env_and_reset_at_episode_start():
    log = StepLog(maze(n_envs=2, limits=[4, 7], seed=2))
    model = RecurrentPPO("MultiInputLstmPolicy", log, n_steps=8, batch_size=8,
                         policy_kwargs=dict(lstm_hidden_size=8, net_arch=[8]), seed=0, device="cpu")
    policy = model.policy
    expert = ShortestPathExpert(log)
    collector = DAggerCollector(log, policy, 0.0, None, np.random.default_rng(0), deterministic_learner=True)
    obs = collector.reset()
    # replay by hand: one state per sub-env, reset where an episode starts; and a control that never resets
    state, never_reset = None, None
    starts = np.ones(2, dtype=bool)
    checked_resets = 0
    for step in range(15):
        manual, state = policy.predict(obs, state=state, episode_start=starts, deterministic=True)
        _, never_reset = policy.predict(obs, state=never_reset, episode_start=starts & (step == 0),
                                        deterministic=True)
        previous = obs
        obs, _, dones, _ = collector.step(expert.predict(obs)[0])
        np.testing.assert_array_equal(log.actions[-1], manual)  # the executed actions are the learner's
        for mine, theirs in zip(collector.learner_state, state, strict=True):
            np.testing.assert_allclose(mine, theirs, atol=1e-6)
        for env in np.flatnonzero(starts).tolist() if step else []:
            # a sub-env at episode start got a fresh state: the state of its observation alone, from zeros
            alone = {k: v[env : env + 1] for k, v in previous.items()}
            _, fresh = policy.predict(alone, state=None, episode_start=np.ones(1, bool), deterministic=True)
            np.testing.assert_allclose(collector.learner_state[0][:, env], fresh[0][:, 0], atol=1e-6)
            assert not np.allclose(collector.learner_state[0][:, env], never_reset[0][:, env], atol=1e-4)
            checked_resets += 1
        starts = np.asarray(dones, dtype=bool)
    assert checked_resets >= 4  # both sub-envs ended episodes, at different steps (time limits 4 and 7)


# ----------------------------------------------------------------------------------------------- unfinished
def test_unfinished_episodes_are_reported_or_completed_never_dropped(tmp_path):
    venv = cartpole(n_envs=3, max_steps=200)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    collector = DAggerCollector(venv, push_left, 1.0, tmp_path / "report", np.random.default_rng(0))
    drive(collector, expert, 5)
    with pytest.warns(RuntimeWarning, match="3 unfinished episode"):
        partial = collector.finish_round("report")
    assert [len(t) for t in partial] == [5, 5, 5]
    assert all(not (t.complete or t.terminal or t.truncated) for t in partial)
    assert [t.complete for t in load_round_dir(tmp_path / "report")] == [False] * 3

    collector = DAggerCollector(venv, push_left, 1.0, tmp_path / "complete", np.random.default_rng(0))
    drive(collector, expert, 5)
    with pytest.raises(ValueError, match="needs expert="):
        collector.finish_round("complete")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        completed = collector.finish_round("complete", expert=expert)
    assert [len(t) for t in completed] == [200] * 3 and all(t.truncated for t in completed)

    # a reset mid-episode keeps the running episodes as partial trajectories, with a warning
    collector = DAggerCollector(venv, push_left, 1.0, None, np.random.default_rng(0))
    drive(collector, expert, 3)
    with pytest.warns(RuntimeWarning, match="reset"):
        collector.reset()
    assert [len(t) for t in collector.trajectories] == [3, 3, 3]


class CountingEnv(gym.Env):
    """Observation [env id, t]; episodes of random length, ended by termination or truncation at random."""

    def __init__(self, env_id: int) -> None:
        self.env_id = env_id
        self.observation_space = gym.spaces.Box(0, 100, shape=(2,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(100)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.length = int(self.np_random.integers(1, 8))
        self.cut = bool(self.np_random.integers(2))
        return np.array([self.env_id, 0], np.float32), {}

    def step(self, action):
        assert action == self.t  # the label (expert action) is the step index; beta = 1 executes it
        self.t += 1
        done = self.t == self.length
        return np.array([self.env_id, self.t], np.float32), 1.0, done and not self.cut, done and self.cut, {}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_envs=st.integers(1, 4), buffer_steps=st.integers(1, 5), steps=st.integers(1, 40), seed=st.integers(0, 99))
def test_episodes_survive_buffer_compaction_and_round_trip_through_files(tmp_path, n_envs, buffer_steps, steps, seed):
    venv = DummyVecEnv([lambda i=i: CountingEnv(i) for i in range(n_envs)])
    venv.seed(seed)
    save_dir = tmp_path / f"{n_envs}-{buffer_steps}-{steps}-{seed}"
    collector = DAggerCollector(venv, push_left, 1.0, save_dir, np.random.default_rng(seed),
                                buffer_steps=buffer_steps, episodes_per_file=3)
    obs = collector.reset()
    for _ in range(steps):
        obs, _, _, _ = collector.step(obs[:, 1].astype(np.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round("report")
    assert sum(len(t) for t in trajs) == steps * n_envs
    for t in trajs:
        np.testing.assert_array_equal(t.obs[:, 1], np.arange(len(t) + 1))  # contiguous, in order
        assert len(set(t.obs[:, 0].tolist())) == 1  # from one sub-env
        np.testing.assert_array_equal(t.acts, np.arange(len(t)))
        assert t.terminal + t.truncated + (not t.complete) == 1
    loaded = load_round_dir(save_dir)
    assert len(collector.saved_files) == math.ceil(len(trajs) / 3)
    assert [trajectory_fingerprint(t) for t in loaded] == [trajectory_fingerprint(t) for t in trajs]
    assert [(t.terminal, t.truncated, t.complete) for t in loaded] == [(t.terminal, t.truncated, t.complete)
                                                                        for t in trajs]


# ----------------------------------------------------------------------------------------------- trainers
def test_trainer_rounds_checkpoint_reload_with_weights_only_and_resume(tmp_path):
    venv = cartpole(n_envs=2, max_steps=30)
    th.manual_seed(0)
    expert = PPO("MlpPolicy", venv, seed=0, device="cpu").policy
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=expert,
                                  rng=np.random.default_rng(0), bc_trainer=make_bc(venv),
                                  beta_schedule="linear", beta_schedule_kwargs={"rampdown_rounds": 3})
    trainer.train(150, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    rounds = trainer.round_num
    assert rounds >= 2
    for r in range(rounds):  # one file per episode, no temporary file anywhere
        round_dir = tmp_path / "demos" / f"round-{r:03d}"
        assert len(round_files(round_dir)) == len(load_round_dir(round_dir)) > 0
    assert not [name for name in files_in(tmp_path) if name.startswith(".") or ".tmp" in name]
    # checkpoints hold tensors only: torch's default weights_only loader reads them
    state = json.loads((tmp_path / "checkpoint-latest.json").read_text())
    payload = th.load(tmp_path / state["policy"]["file"], weights_only=True)
    assert set(payload) == {"policy", "optimizer"}
    resumed = reconstruct_trainer(tmp_path, venv)
    assert isinstance(resumed, SimpleDAggerTrainer) and resumed.round_num == rounds
    for a, b in zip(resumed.policy.parameters(), trainer.policy.parameters(), strict=True):
        assert th.equal(a, b)
    for a, b in zip(resumed.expert_policy.parameters(), expert.parameters(), strict=True):
        assert th.equal(a, b)
    assert resumed.rng.bit_generator.state == trainer.rng.bit_generator.state
    assert resumed.beta_for_round(1) == pytest.approx(2 / 3)
    resumed.train(60, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    assert resumed.round_num == rounds + 1
    assert len(resumed._all_demos) == len(resumed.load_demos(range(rounds + 1)))


def test_callable_expert_and_stochastic_learner(tmp_path):
    venv = cartpole(n_envs=2, max_steps=30)
    learner = feed_forward(venv)
    th.manual_seed(0)
    collector = DAggerCollector(venv, learner, 0.0, None, np.random.default_rng(0), deterministic_learner=False)
    drive(collector, balance, 60)  # a plain callable expert
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round("report")
    obs = np.concatenate([t.obs[:-1] for t in trajs])
    executed = np.concatenate([t.executed_acts for t in trajs])
    deterministic, _ = learner.predict(obs, deterministic=True)
    assert np.mean(executed != deterministic) > 0.1  # sampled, not the mode (an untrained policy is near 50:50)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=balance,
                                  rng=np.random.default_rng(0), bc_trainer=make_bc(venv))
    trainer.train(60, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    with pytest.raises(ValueError, match="pass expert_policy="):
        reconstruct_trainer(tmp_path, venv)
    resumed = reconstruct_trainer(tmp_path, venv, expert_policy=balance)
    assert resumed.round_num == trainer.round_num == 1 and resumed.expert_policy is balance


def test_collector_relabels_its_in_memory_episodes_as_configured_and_stores_them_raw(tmp_path):
    venv = maze(n_envs=2, time_limit=10, seed=4)
    expert = ShortestPathExpert(venv)
    collector = DAggerCollector(venv, wander(venv), 0.0, tmp_path, np.random.default_rng(0),
                                relabeler="hindsight-instruction", relabeler_kwargs={"strategy": "all"},
                                relabel_labels="executed")
    drive(collector, expert, 30)
    trajs = collector.finish_round("complete", expert=expert)
    raw = load_round_dir(tmp_path)
    assert len(raw) == len(trajs) > 0
    assert any(not np.array_equal(r.acts, r.executed_acts) for r in raw)  # the learner acted: labels differ
    pairs = list(zip(raw, trajs, strict=True))
    assert any(not np.array_equal(t.obs.get("goals")[0], r.obs.get("goals")[0]) for r, t in pairs)  # relabeled
    for r, t in pairs:  # "executed": the executed actions are the labels, relabeled or not
        np.testing.assert_array_equal(t.acts, r.executed_acts[: len(t)])
    one = relabel_trajectory(raw[0], collector.relabeler, np.random.default_rng(0), "executed")  # the one-shot form
    np.testing.assert_array_equal(one.acts, raw[0].executed_acts[: len(one)])


def test_relabel_labels_is_checked_when_the_relabeling_is_built(tmp_path):
    with pytest.raises(ValueError, match=r"^relabel_labels must be one of 'auto', 'expert', 'executed'; got 'exec'$"):
        TrajectoryRelabeling(None, "exec")  # type: ignore[arg-type]
    venv = maze(n_envs=1, time_limit=5)
    collector = DAggerCollector(venv, wander(venv), 0.0, None, np.random.default_rng(0))
    drive(collector, ShortestPathExpert(venv), 5)
    (traj,) = collector.finish_round("report")
    assert TrajectoryRelabeling(None, "executed")(traj, np.random.default_rng(0)) is traj  # no relabeler: unchanged
    relabeler = HindsightInstructionRelabeler(2)
    with pytest.raises(ValueError, match=r"^labels must be one of 'auto', 'expert', 'executed'; got 'exec'$"):
        relabel_trajectory(traj, relabeler, np.random.default_rng(0), "exec")  # type: ignore[arg-type]


def test_maze_trainer_by_plugin_names_with_relabeling_resumes(tmp_path):
    venv = maze(n_envs=2, time_limit=10, seed=4)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy="shortest-path",
                                  rng=np.random.default_rng(0), bc_trainer=make_bc(venv),
                                  beta_schedule="exponential", beta_schedule_kwargs={"decay_probability": 0.5},
                                  relabeler="hindsight-instruction", relabeler_kwargs={"strategy": "all"},
                                  episodes_per_file=2)
    trainer.train(100, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    raw = trainer.load_demos()
    assert len(round_files(tmp_path / "demos" / "round-000")) == math.ceil(
        len(trainer.load_demos([0])) / 2)
    # "all": every episode that missed a goal is relabeled to goals it reached, with its executed actions as labels
    relabeled = [t for t in trainer._all_demos if t.terminal]
    assert len(relabeled) == len(trainer._all_demos) and all(t.rews.sum() == 2 for t in relabeled)
    changed = [(r, t) for r, t in zip(raw, trainer._all_demos, strict=True) if not r.terminal]
    assert changed
    for r, t in changed:
        np.testing.assert_array_equal(t.acts, r.executed_acts[: len(t)])
    resumed = reconstruct_trainer(tmp_path, maze(n_envs=2, time_limit=10, seed=5))
    assert isinstance(resumed.expert_policy, ShortestPathExpert)
    assert isinstance(resumed.relabeler, HindsightInstructionRelabeler) and resumed.relabeler.strategy == "all"
    assert resumed.beta_for_round(2) == 0.25
    resumed.train(30, rollout_round_min_timesteps=30, bc_train_kwargs=QUIET_BC)
    assert resumed.round_num == trainer.round_num + 1


KILL_SCRIPT = textwrap.dedent(
    """
    import os, pathlib, sys
    import gymnasium as gym, numpy as np, torch as th
    th.set_num_threads(1)
    from imitation.algorithms import bc
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv
    from sb3_hir.dagger import SimpleDAggerTrainer, trajectory_fingerprint

    scratch = pathlib.Path(sys.argv[1])
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=30)] * 2)
    venv.seed(0)
    th.manual_seed(0)
    expert = PPO("MlpPolicy", venv, seed=0, device="cpu").policy
    learner = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                    rng=np.random.default_rng(0), batch_size=16)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=scratch, expert_policy=expert,
                                  rng=np.random.default_rng(0), bc_trainer=learner, episodes_per_file=2)
    log = open(scratch / "flushed.log", "a")

    def on_flush(path, trajs):
        for traj in trajs:
            log.write(f"{path.parent.name} {trajectory_fingerprint(traj)}\\n")
        log.flush()
        os.fsync(log.fileno())
        if trainer.round_num == 1:  # round 0 is on disk and round 1 has files: time to be killed
            (scratch / "marker").touch()

    collector = trainer.create_trajectory_collector()
    collector.on_flush = on_flush
    trainer.collect_round(collector, min_episodes=4, min_timesteps=40)
    trainer.extend_and_update({"n_epochs": 1, "progress_bar": False, "log_rollouts_n_episodes": 0})
    trainer.save_trainer()
    collector = trainer.create_trajectory_collector()
    collector.on_flush = on_flush
    trainer.collect_round(collector, min_episodes=10**9)  # runs until killed
    """
)


def test_sigkill_mid_round_then_reconstruct_keeps_every_saved_episode_exactly_once(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    kill_at_marker(script, scratch, "reached round 1")
    logged = Counter(line.split()[1] for line in (scratch / "flushed.log").read_text().splitlines())
    assert all(count == 1 for count in logged.values())
    # a new seed: with the killed run's seed, the deterministic expert and learner would replay its episodes
    venv = cartpole(n_envs=2, max_steps=30, seed=100)
    trainer = reconstruct_trainer(scratch, venv)
    assert trainer.round_num == 1  # the checkpoint of round 0; round 1 was cut short

    def stored() -> Counter:
        return Counter(trajectory_fingerprint(t) for t in trainer.load_demos())

    before = stored()
    assert all(before[fp] == 1 for fp in logged)  # every episode saved before the kill, exactly once
    assert all(count == 1 for count in before.values())
    killed_round_files = round_files(scratch / "demos" / "round-001")
    assert killed_round_files
    trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    assert trainer.round_num == 2
    after = stored()
    assert all(after[fp] == 1 for fp in logged) and all(count == 1 for count in after.values())
    assert set(killed_round_files) < set(round_files(scratch / "demos" / "round-001"))  # appended, not rewritten
    assert Counter(trajectory_fingerprint(t) for t in trainer._all_demos) == after  # what BC trained on


# ----------------------------------------------------------------------------------------------- corrupt files
def test_corrupt_round_file_names_the_file_and_can_be_skipped(tmp_path):
    venv = cartpole(n_envs=2, max_steps=10)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    round_dir = tmp_path / "demos" / "round-000"
    collector = DAggerCollector(venv, push_left, 0.5, round_dir, np.random.default_rng(0), episodes_per_file=2)
    drive(collector, expert, 30)
    collector.finish_round("complete", expert=expert)
    paths = round_files(round_dir)
    assert len(paths) >= 3
    data = paths[1].read_bytes()
    paths[1].write_bytes(data[: len(data) // 2])  # truncated
    paths[2].write_bytes(b"\x00" * 64)  # garbage
    with pytest.raises(CorruptRoundFileError, match=re.escape(str(paths[1]))) as info:
        load_round_dir(round_dir)
    assert info.value.path == paths[1] and "skip_corrupt=True" in str(info.value)
    with pytest.raises(CorruptRoundFileError, match=re.escape(str(paths[2]))):
        load_trajectories(paths[2])
    with pytest.warns(RuntimeWarning, match="skipping") as record:
        kept = load_round_dir(round_dir, skip_corrupt=True)
    assert len(record) == 2
    expected = [t for p in [paths[0], *paths[3:]] for t in load_trajectories(p)]
    assert [trajectory_fingerprint(t) for t in kept] == [trajectory_fingerprint(t) for t in expected]
    # the trainer takes the same option
    trainer = DAggerTrainer(venv=venv, scratch_dir=tmp_path, rng=np.random.default_rng(0),
                            bc_trainer=make_bc(venv, batch_size=4), skip_corrupt=True, resume=True)
    with pytest.warns(RuntimeWarning, match="skipping"):
        trainer.extend_and_update(QUIET_BC)
    assert len(trainer._all_demos) == len(kept)


# ----------------------------------------------------------------------------------------------- bad input
def test_bad_input_raises_errors_that_say_what_to_do(tmp_path):
    venv = cartpole(n_envs=2)
    for beta in (-0.1, 1.5, float("nan"), "half"):
        with pytest.raises(ValueError, match=r"beta must be a probability in \[0, 1\]"):
            DAggerCollector(venv, push_left, beta, None, np.random.default_rng(0))
    trainer = DAggerTrainer(venv=venv, scratch_dir=tmp_path, rng=np.random.default_rng(0),
                            bc_trainer=make_bc(venv), beta_schedule=lambda r: 1.0 + r)
    trainer.create_trajectory_collector()  # round 0: beta 1 is fine
    with pytest.raises(NeedsDemosError, match="collect a round first") as info:
        trainer.extend_and_update(QUIET_BC)
    assert isinstance(info.value, ValueError)
    trainer.round_num = 1
    with pytest.raises(ValueError, match=r"beta_schedule\(1\).*\[0, 1\].*got 2.0"):
        trainer.create_trajectory_collector()
    maze_venv = maze(n_envs=2)
    with pytest.raises(ValueError, match=r"expert_policy.observation_space .* does not match venv"):
        SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=ShortestPathExpert(maze_venv),
                            rng=np.random.default_rng(0), bc_trainer=make_bc(venv))
    with pytest.raises(ValueError, match=r"learner.observation_space .* does not match venv"):
        DAggerCollector(venv, feed_forward(maze_venv), 0.5)
    with pytest.raises(ValueError, match="Observation spaces do not match"):
        DAggerTrainer(venv=venv, scratch_dir=tmp_path, rng=np.random.default_rng(0), bc_trainer=make_bc(maze_venv))
    with pytest.raises(ValueError, match="episodes_per_file"):
        DAggerCollector(venv, push_left, 0.5, tmp_path, episodes_per_file=0)
    collector = DAggerCollector(venv, push_left, 0.5, None, np.random.default_rng(0))
    collector.reset()
    with pytest.raises(ValueError, match=r"expert actions must have shape \(2,\)"):
        collector.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match=r"^policy must be one of 'complete', 'report'; got 'drop'$"):
        collector.finish_round("drop")
    with pytest.raises(ValueError, match=r"^relabel_labels must be one of 'auto', 'expert', 'executed'; got 'exec'$"):
        DAggerCollector(venv, push_left, 0.5, None, np.random.default_rng(0), relabel_labels="exec")
    with pytest.raises(FileNotFoundError, match="save_trainer"):
        reconstruct_trainer(tmp_path / "nowhere", venv)
    with pytest.raises(ValueError, match="at least one trajectory"):
        save_trajectories(tmp_path / "x.npz", [])
