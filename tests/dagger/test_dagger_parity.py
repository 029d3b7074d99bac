"""Issue 13: no label lost by default, resume without duplicates, imitation's behaviour, data-only checkpoints.

Each test names the bug it guards against; all use real SB3 / imitation / gymnasium classes on tiny budgets.
"""

from __future__ import annotations

import json
import sys
import textwrap
import warnings
from collections import Counter

import numpy as np
import pytest
import torch as th

pytest.importorskip("imitation", reason="DAgger test module: needs imitation (the 'dagger' extra)")

import imitation.algorithms.dagger as imitation_dagger
from imitation.algorithms import bc
from imitation.data import types
from imitation.policies.base import FeedForward32Policy
from sb3_contrib import RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
from test_dagger import QUIET_BC, BalancePolicy, drive, kill_at_marker, make_bc
from test_dagger import cartpole as _cartpole

import sb3_hir.dagger
from sb3_hir.dagger import (
    DAggerCollector,
    SimpleDAggerTrainer,
    load_round_dir,
    reconstruct_trainer,
    trajectory_fingerprint,
)
from sb3_hir.envs import MazeRunnerEnv


def cartpole(n_envs: int = 2, seed: int = 0) -> DummyVecEnv:
    return _cartpole(n_envs=n_envs, max_steps=30, seed=seed)


def small_bc(venv: VecEnv, **kwargs) -> bc.BC:
    return make_bc(venv, batch_size=16, **kwargs)



def fingerprints(trajs) -> Counter:
    return Counter(trajectory_fingerprint(t) for t in trajs)


# ----------------------------------------------------------------------------------------------- losses
DEFAULTS_KILL_SCRIPT = textwrap.dedent(
    """
    import os, pathlib, sys
    import gymnasium as gym, numpy as np, torch as th
    th.set_num_threads(1)
    from imitation.algorithms import bc
    from stable_baselines3.common.vec_env import DummyVecEnv
    from sb3_hir.dagger import PolicyRunner, SimpleDAggerTrainer, trajectory_fingerprint

    scratch = pathlib.Path(sys.argv[1])
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=20)] * 2)
    venv.seed(0)
    balance = lambda obs: (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)
    learner = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space,
                    rng=np.random.default_rng(0))
    # default arguments everywhere: nothing about files is configured
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=scratch / "run", expert_policy=balance,
                                  rng=np.random.default_rng(0), bc_trainer=learner)
    collector = trainer.create_trajectory_collector()
    expert = PolicyRunner(balance, 2)
    log = open(scratch / "finished.log", "a")
    obs = collector.reset()
    seen = 0
    while True:
        obs, _, dones, _ = collector.step(expert(obs))
        expert.observe_dones(dones)
        for traj in collector.trajectories[seen:]:  # finished episodes, as the collector reports them
            log.write(trajectory_fingerprint(traj) + "\\n")
        seen = len(collector.trajectories)
        log.flush()
        os.fsync(log.fileno())
        if seen >= 7:
            (scratch / "marker").touch()
    """
)


def test_sigkill_mid_round_with_default_arguments_loses_no_finished_episode(tmp_path):
    """Bug: with the defaults, kill -9 mid-round lost every finished episode of the round (7 of 7)."""
    script = tmp_path / "run.py"
    script.write_text(DEFAULTS_KILL_SCRIPT)
    kill_at_marker(script, tmp_path, "finished 7 episodes", linger=0.1)
    finished = Counter((tmp_path / "finished.log").read_text().split())
    assert sum(finished.values()) >= 7
    stored = fingerprints(load_round_dir(tmp_path / "run" / "demos" / "round-000"))
    assert not finished - stored  # every episode the collector had reported finished is on disk
    assert all(count == 1 for count in stored.values())


def test_fsync_true_writes_the_same_round_files(tmp_path):
    venv = cartpole(seed=4)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    collector = DAggerCollector(venv, expert, 1.0, tmp_path, np.random.default_rng(0), fsync=True)
    drive(collector, expert, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round("report")
    assert fingerprints(load_round_dir(tmp_path)) == fingerprints(trajs)
    assert len(collector.saved_files) == len(trajs)


def test_several_collectors_in_one_round_all_count(tmp_path):
    """Bug: a second create_trajectory_collector() in a round dropped the first collector's episodes."""
    venv = cartpole(seed=1)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=expert,
                                  rng=np.random.default_rng(0), bc_trainer=small_bc(venv))
    first = trainer.create_trajectory_collector()
    drive(first, expert, 70)
    second = trainer.create_trajectory_collector()  # e.g. a notebook cell run again in the same round
    drive(second, expert, 70)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # running episodes are reported as partial
        trainer.extend_and_update(QUIET_BC)
    collected = fingerprints(first.trajectories) + fingerprints(second.trajectories)
    assert sum(collected.values()) >= 8
    assert fingerprints(trainer._all_demos) == collected  # both collectors' episodes, each once


# ----------------------------------------------------------------------------------------------- resume
def test_rerun_after_a_kill_in_round_0_refuses_or_resumes_and_never_duplicates(tmp_path):
    """Bug: after a kill during round 0, rerunning wrote duplicate episodes without a warning."""

    def run(**kwargs) -> SimpleDAggerTrainer:
        venv = cartpole(seed=0)  # the rerun repeats the killed run's seed: the same episodes come again
        return SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=BalancePolicy(
            venv.observation_space, venv.action_space), rng=np.random.default_rng(0), bc_trainer=small_bc(venv),
            **kwargs)

    killed = run()
    drive(killed.create_trajectory_collector(), killed.expert_policy, 60)  # abandoned mid-round, never finished
    before = fingerprints(load_round_dir(tmp_path / "demos" / "round-000"))
    assert sum(before.values()) >= 4
    rerun = run()  # building writes nothing; its first collection refuses the used directory
    with pytest.raises(ValueError, match=r"already holds a DAgger run.*reconstruct_trainer.*resume=True"):
        rerun.train(60, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    resumed = run(resume=True)
    assert resumed.round_num == 0
    with pytest.warns(RuntimeWarning, match="not stored again"):
        resumed.train(60, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    after = fingerprints(load_round_dir(tmp_path / "demos" / "round-000"))
    assert all(count == 1 for count in after.values())
    assert not before - after  # the killed run's episodes are kept
    assert fingerprints(resumed._all_demos) == after


def test_reconstruct_trainer_rebuilds_feed_forward32_policy_also_inside_an_except_block(tmp_path):
    """Bug: _build_policy parsed TypeError text and failed with KeyError: 'net_arch' inside an except block."""
    venv = cartpole()
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=BalancePolicy(
        venv.observation_space, venv.action_space), rng=np.random.default_rng(0), bc_trainer=small_bc(venv))
    assert type(trainer.policy) is FeedForward32Policy  # imitation's default BC policy
    trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    try:
        raise RuntimeError("an error being handled while the trainer is rebuilt")
    except RuntimeError:
        resumed = reconstruct_trainer(tmp_path, venv, expert_policy=trainer.expert_policy)
    assert type(resumed.policy) is FeedForward32Policy
    for a, b in zip(resumed.policy.parameters(), trainer.policy.parameters(), strict=True):
        assert th.equal(a, b)


def test_a_kill_between_the_numbered_and_the_latest_checkpoint_resumes_from_the_newer_one(tmp_path):
    venv = cartpole()
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=BalancePolicy(
        venv.observation_space, venv.action_space), rng=np.random.default_rng(0), bc_trainer=small_bc(venv))
    for _ in range(2):  # one round per call
        trainer.train(1, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    assert trainer.round_num == 2
    # as if killed after checkpoint-002.json was in place but before checkpoint-latest.json was replaced
    (tmp_path / "checkpoint-latest.json").write_text((tmp_path / "checkpoint-001.json").read_text())
    resumed = reconstruct_trainer(tmp_path, venv, expert_policy=trainer.expert_policy)
    assert resumed.round_num == 2
    for a, b in zip(resumed.policy.parameters(), trainer.policy.parameters(), strict=True):
        assert th.equal(a, b)


# ----------------------------------------------------------------------------------------------- imitation
def test_every_public_name_of_imitations_dagger_module_is_importable_from_ours():
    """Bug: LinearBetaSchedule, ExponentialBetaSchedule, BetaSchedule, InteractiveTrajectoryCollector and
    NeedsDemosException were missing."""
    public = {name for name, value in vars(imitation_dagger).items()
              if not name.startswith("_") and getattr(value, "__module__", None) == imitation_dagger.__name__}
    assert public >= {"LinearBetaSchedule", "ExponentialBetaSchedule", "BetaSchedule",
                      "InteractiveTrajectoryCollector", "NeedsDemosException", "SimpleDAggerTrainer",
                      "DAggerTrainer", "reconstruct_trainer"}
    assert not [name for name in public if not hasattr(sb3_hir.dagger, name)]
    assert issubclass(sb3_hir.dagger.NeedsDemosError, sb3_hir.dagger.NeedsDemosException)
    assert sb3_hir.dagger.LinearBetaSchedule(4)(2) == 0.5


def test_the_learner_samples_by_default_as_in_imitation():
    """Bug: the learner acted deterministically by default; imitation samples from it."""
    venv = cartpole(n_envs=4)
    th.manual_seed(0)
    learner = FeedForward32Policy(venv.observation_space, venv.action_space, lr_schedule=lambda _: 1e-3)
    collector = DAggerCollector(venv, learner, 0.0, None, np.random.default_rng(0))
    assert collector.deterministic_learner is False
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    drive(collector, expert, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round("report")
    obs = np.concatenate([t.obs[:-1] for t in trajs])
    executed = np.concatenate([t.executed_acts for t in trajs])
    mode, _ = learner.predict(obs, deterministic=True)
    assert np.mean(executed != mode) > 0.1  # an untrained policy is near 50:50, so samples often differ


def test_a_plain_trajectory_is_accepted_in_expert_trajs(tmp_path):
    """Bug: expert_trajs rejected a plain imitation Trajectory (imitation accepts it)."""
    venv = cartpole()
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    demo = types.Trajectory(obs=obs, acts=(obs[:-1, 2] > 0).astype(np.int64), infos=None, terminal=True)
    SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=expert, rng=np.random.default_rng(0),
                        bc_trainer=small_bc(venv), expert_trajs=[demo])
    (stored,) = load_round_dir(tmp_path / "demos" / "round-000")
    np.testing.assert_array_equal(stored.obs, demo.obs)
    np.testing.assert_array_equal(stored.acts, demo.acts)
    assert stored.terminal


def test_policy_latest_loads_with_imitations_bc_reconstruct_policy(tmp_path, monkeypatch):
    """Bug: there was no policy-latest.pt for imitation's bc.reconstruct_policy."""
    venv = cartpole()
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=BalancePolicy(
        venv.observation_space, venv.action_space), rng=np.random.default_rng(0), bc_trainer=small_bc(venv))
    trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    # imitation's loader calls torch.load with torch's default; since torch 2.6 that refuses any pickled policy
    # (imitation's own files too) unless this is set, as imitation's users already do
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    policy = bc.reconstruct_policy(str(tmp_path / "policy-latest.pt"), device="cpu")
    assert type(policy) is FeedForward32Policy
    for a, b in zip(policy.parameters(), trainer.policy.parameters(), strict=True):
        assert th.equal(a.cpu(), b.cpu())


def test_a_recurrent_expert_keeps_its_memory_in_finish_round():
    """Bug: a recurrent expert passed to finish_round(expert=...) had its memory reset mid-episode."""
    venv = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=25)] * 2)
    venv.seed(3)
    th.manual_seed(0)
    expert = RecurrentPPO("MultiInputLstmPolicy", venv, n_steps=8, batch_size=8, seed=0, device="cpu",
                          policy_kwargs=dict(lstm_hidden_size=32, net_arch=[32])).policy
    collector = DAggerCollector(venv, expert, 1.0, None, np.random.default_rng(0))
    drive(collector, expert, 12)  # the caller's own runner carries the expert's memory for 12 steps
    trajs = collector.finish_round("complete", expert=expert)  # the bare policy: no runner, no state given
    checked = 0
    for traj in trajs:
        # the labels a recurrent expert gives when it runs the whole episode with its memory
        obs = traj.obs[:-1]
        state, starts, labels = None, np.ones(1, dtype=bool), []
        for t in range(len(traj)):
            act, state = expert.predict({k: v[t : t + 1] for k, v in obs.unwrap().items()}, state=state,
                                        episode_start=starts, deterministic=True)
            starts = np.zeros(1, dtype=bool)
            labels.append(act[0])
        np.testing.assert_array_equal(traj.acts, np.array(labels))
        checked += len(traj) > 12
    assert checked >= 1  # some episode ran on past the hand-over, where the memory matters


# ----------------------------------------------------------------------------------------------- data only
def test_a_hostile_class_name_in_a_checkpoint_is_never_imported(tmp_path, monkeypatch):
    """Bug: the checkpoint decoder imported any module:qualname written in the file."""
    venv = cartpole()
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path / "run", expert_policy=BalancePolicy(
        venv.observation_space, venv.action_space), rng=np.random.default_rng(0), bc_trainer=small_bc(venv))
    trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    # a module that announces its import, on sys.path
    sentinel = "sb3_hir_hostile_sentinel"
    (tmp_path / f"{sentinel}.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.imported').touch()\n"
        "class Evil:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    hostile = f"{sentinel}:Evil"

    def plant(value):
        if isinstance(value, dict):
            return {k: hostile if isinstance(v, str) and ("class" in k or k in ("trainer", "__import__",
                                                                                "__object__"))
                    else plant(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plant(v) for v in value]
        return value

    for path in (tmp_path / "run").glob("checkpoint-*.json"):
        state = plant(json.loads(path.read_text()))
        path.write_text(json.dumps(state))
    assert hostile in (tmp_path / "run" / "checkpoint-latest.json").read_text()
    with pytest.raises(ValueError, match="sb3_hir_hostile_sentinel"):
        reconstruct_trainer(tmp_path / "run", venv, expert_policy=trainer.expert_policy)
    assert sentinel not in sys.modules
    assert not (tmp_path / f"{sentinel}.imported").exists()


class _Scaled(th.nn.Module):
    """An activation that is not on the allow-list and carries a value: its policy cannot be stored as data."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: th.Tensor) -> th.Tensor:
        return th.tanh(x) * 0.5


def test_a_policy_that_is_not_plain_data_still_saves_tensors_only_and_reloads_from_the_caller(tmp_path):
    """Bug: arguments that could not be encoded fell back to SB3's pickle-based save/load."""
    venv = cartpole()
    th.manual_seed(0)
    policy = ActorCriticPolicy(venv.observation_space, venv.action_space, lambda _: 1e-3, net_arch=[8],
                               activation_fn=_Scaled)
    bc_trainer = small_bc(venv, policy=policy)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=BalancePolicy(
        venv.observation_space, venv.action_space), rng=np.random.default_rng(0), bc_trainer=bc_trainer)
    trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    state = json.loads((tmp_path / "checkpoint-latest.json").read_text())
    payload = th.load(tmp_path / state["policy"]["file"], weights_only=True)  # tensors only, no SB3 zip
    assert set(payload) == {"policy", "optimizer"}
    with pytest.raises(ValueError, match="bc_trainer="):
        reconstruct_trainer(tmp_path, venv, expert_policy=trainer.expert_policy)
    th.manual_seed(1)
    fresh = small_bc(venv, policy=ActorCriticPolicy(venv.observation_space, venv.action_space, lambda _: 1e-3,
                                                   net_arch=[8], activation_fn=_Scaled))
    resumed = reconstruct_trainer(tmp_path, venv, expert_policy=trainer.expert_policy, bc_trainer=fresh)
    assert resumed.bc_trainer is fresh and resumed.round_num == trainer.round_num
    for a, b in zip(resumed.policy.parameters(), trainer.policy.parameters(), strict=True):
        assert th.equal(a, b)


# ----------------------------------------------------------------------------------------------- the swap
def test_imitations_seed_style_flow_runs_against_sb3_hir_by_swapping_the_import(tmp_path):
    """imitation's documented DAgger example, with ``from sb3_hir import dagger`` for its import line."""
    from imitation.data.wrappers import RolloutInfoWrapper
    from imitation.util.util import make_vec_env

    from sb3_hir import dagger  # was: from imitation.algorithms import dagger

    rng = np.random.default_rng(0)
    env = make_vec_env("CartPole-v1", rng=rng, n_envs=2, max_episode_steps=50,
                       post_wrappers=[lambda env, _: RolloutInfoWrapper(env)])
    expert = PPO("MlpPolicy", env, seed=0, device="cpu").policy  # the example loads a trained PPO expert
    bc_trainer = bc.BC(observation_space=env.observation_space, action_space=env.action_space, rng=rng)
    scratch_dir = tmp_path / "dagger_example_"
    dagger_trainer = dagger.SimpleDAggerTrainer(venv=env, scratch_dir=scratch_dir, expert_policy=expert,
                                                bc_trainer=bc_trainer, rng=rng)
    dagger_trainer.train(600, rollout_round_min_timesteps=200, bc_train_kwargs={"progress_bar": False})
    checkpoint_path, policy_path = dagger_trainer.save_trainer()
    assert checkpoint_path.exists() and policy_path.exists()
    reconstructed = dagger.reconstruct_trainer(scratch_dir, env)
    assert reconstructed.round_num == dagger_trainer.round_num >= 2
    for a, b in zip(reconstructed.policy.parameters(), dagger_trainer.policy.parameters(), strict=True):
        assert th.equal(a, b)
    reconstructed.train(200, rollout_round_min_timesteps=200, bc_train_kwargs={"progress_bar": False})
    assert reconstructed.round_num == dagger_trainer.round_num + 1
