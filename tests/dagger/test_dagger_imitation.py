"""Issue 23: what an imitation user observes, kept wherever it costs none of our guarantees.

Each test names what imitation does and checks that ``sb3_hir.dagger`` does the same: the batch ``get_robot_acts``
gets, the first sentence of each ``ValueError``, the names and layout of round files (read by imitation's own
loader), file tokens drawn from the trainer's ``rng``, and where a used ``scratch_dir`` is refused. All use real
SB3 / imitation / gymnasium classes on tiny budgets.
"""

from __future__ import annotations

import pathlib
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th

pytest.importorskip("imitation", reason="DAgger test module: needs imitation (the 'dagger' extra)")

from imitation.algorithms import dagger as imitation_dagger
from imitation.data import serialize, types
from imitation.util import logger as imit_logger
from sb3_contrib import RecurrentPPO
from stable_baselines3.common.vec_env import DummyVecEnv
from test_dagger import QUIET_BC, BalancePolicy, StepLog, balance, cartpole, drive, make_bc, maze

from sb3_hir.dagger import (
    DAggerCollector,
    DAggerTrainer,
    SimpleDAggerTrainer,
    load_round_dir,
    load_trajectories,
    reconstruct_trainer,
    round_files,
    save_trajectories,
    trajectory_fingerprint,
)

#: imitation's file name for a DAgger demo (``_save_dagger_demo``): ``[prefix-]dagger-demo-{i}-{uuid hex}.npz``.
DEMO_NAME = re.compile(r"^(?:(?P<prefix>.+)-)?dagger-demo-(?P<i>\d+)-[0-9a-f]{32}\.npz$")


class RowCounter:
    """A ``get_robot_acts`` as imitation's users write it: one action per observation it gets, from that row."""

    def __init__(self) -> None:
        self.batches: list[np.ndarray] = []

    def __call__(self, obs: np.ndarray) -> list[np.int64]:
        self.batches.append(np.array(obs, copy=True))
        return [np.int64(row[1] > 0) for row in obs]  # a list, as imitation's tests return


def simple_trainer(venv, scratch_dir, seed: int = 0, **kwargs) -> SimpleDAggerTrainer:
    return SimpleDAggerTrainer(venv=venv, scratch_dir=scratch_dir, expert_policy=BalancePolicy(
        venv.observation_space, venv.action_space), rng=np.random.default_rng(seed),
        bc_trainer=make_bc(venv, batch_size=16), **kwargs)


# ----------------------------------------------------------------------------------------------- get_robot_acts
def test_get_robot_acts_gets_exactly_the_observations_of_the_envs_the_learner_acts_in(tmp_path):
    """imitation calls ``get_robot_acts(obs[mask])``; main passed all 8 sub-envs' observations (~5.7x the rows)."""
    venv = cartpole(n_envs=8, max_steps=40)
    learner = RowCounter()
    collector = DAggerCollector(venv, learner, 0.5, tmp_path, np.random.default_rng(0))
    drive(collector, BalancePolicy(venv.observation_space, venv.action_space), 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round("report")
    learner_steps = sum(int(t.learner_mask.sum()) for t in trajs)
    assert 0 < learner_steps < 100 * 8
    assert sum(len(b) for b in learner.batches) == learner_steps  # one row per learner step, nothing else
    assert all(0 < len(b) <= 8 for b in learner.batches)
    # each row it got is the observation of a sub-env it then acted in, and its action is the one executed
    got = np.concatenate(learner.batches)
    obs = np.concatenate([t.obs[:-1][t.learner_mask] for t in trajs])
    executed = np.concatenate([t.executed_acts[t.learner_mask] for t in trajs])
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, obs.tolist()))
    np.testing.assert_array_equal(executed, (obs[:, 1] > 0).astype(np.int64))


def test_a_recurrent_learner_acts_in_some_envs_and_keeps_every_envs_state():
    """The row-subset call must not cost a recurrent learner its memory where the expert acted this step."""
    log = StepLog(maze(n_envs=3, limits=[5, 8, 11], seed=1))
    model = RecurrentPPO("MultiInputLstmPolicy", log, n_steps=8, batch_size=8, seed=0, device="cpu",
                         policy_kwargs=dict(lstm_hidden_size=8, net_arch=[8]))
    policy = model.policy
    collector = DAggerCollector(log, policy, 0.5, None, np.random.default_rng(0), deterministic_learner=True)
    choices = np.random.default_rng(0)  # the collector's draws, replayed (nothing else draws without save_dir)
    obs = collector.reset()
    state, starts = None, np.ones(3, dtype=bool)
    mixed_steps = 0
    for _ in range(30):
        # replay by hand: the learner sees every sub-env's observation each step, reset where an episode starts
        manual, state = policy.predict(obs, state=state, episode_start=starts, deterministic=True)
        learner_envs = choices.random(3) >= 0.5
        labels = np.full(3, 3, dtype=np.int64)  # the expert's label everywhere
        obs, _, dones, _ = collector.step(labels)
        np.testing.assert_array_equal(log.actions[-1][learner_envs], manual[learner_envs])
        np.testing.assert_array_equal(log.actions[-1][~learner_envs], 3)
        for mine, theirs in zip(collector.learner_state, state, strict=True):
            np.testing.assert_allclose(mine, theirs, atol=1e-6)  # every sub-env's state, acting or not
        mixed_steps += bool(learner_envs.any() and (~learner_envs).any())
        starts = np.asarray(dones, dtype=bool)
    assert mixed_steps >= 10


# ----------------------------------------------------------------------------------------------- messages
def test_value_errors_start_with_imitations_sentence(tmp_path):
    """Code matching imitation's messages (``match="Mismatched observation"``) broke on main's wording."""
    venv = cartpole(n_envs=2)
    for attr, other in (("observation", gym.spaces.Box(-1, 1, (3,))), ("action", gym.spaces.Discrete(5))):
        expert = BalancePolicy(venv.observation_space, venv.action_space)
        setattr(expert, f"{attr}_space", other)
        with pytest.raises(ValueError) as info:
            SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path / attr, expert_policy=expert,
                                rng=np.random.default_rng(0), bc_trainer=make_bc(venv))
        assert str(info.value).startswith(f"Mismatched {attr} space between expert_policy and venv")
        assert f"expert_policy.{attr}_space" in str(info.value)  # our detail follows

    trainer = DAggerTrainer(venv=venv, scratch_dir=tmp_path / "big", rng=np.random.default_rng(0),
                            bc_trainer=make_bc(venv, batch_size=100_000))
    drive(trainer.create_trajectory_collector(), balance, 20)
    with pytest.raises(ValueError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trainer.extend_and_update(QUIET_BC)
    assert str(info.value).startswith("Not enough transitions to form a single batch: self.batch_size=100000 > "
                                      "len(transitions)=")
    assert "rollout_round_min_timesteps" in str(info.value)


# ----------------------------------------------------------------------------------------------- round files
def test_round_files_are_named_and_laid_out_as_imitations_and_its_loader_reads_them(tmp_path):
    """imitation globs ``dagger-demo-*.npz`` and reads each with ``serialize.load``; main's names matched nothing."""
    venv = cartpole(n_envs=2, max_steps=25)
    expert = BalancePolicy(venv.observation_space, venv.action_space)
    demo_obs = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    demo = types.Trajectory(obs=demo_obs, acts=balance(demo_obs[:-1]), infos=None, terminal=True)
    trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=tmp_path, expert_policy=expert,
                                  rng=np.random.default_rng(0), bc_trainer=make_bc(venv, batch_size=16),
                                  expert_trajs=[demo, demo])
    trainer.train(60, rollout_round_min_timesteps=60, bc_train_kwargs=QUIET_BC)
    round0 = tmp_path / "demos" / "round-000"
    names = sorted(p.name for p in round0.iterdir())
    matches = [DEMO_NAME.match(n) for n in names]
    assert all(matches), names
    # one file per initial demonstration, numbered from 0 as imitation numbers them
    assert sorted(int(m["i"]) for m in matches if m["prefix"] == "initial_data") == [0, 1]
    collected = sorted(round0.glob("dagger-demo-*.npz"))  # imitation's own glob, initial data excluded
    ours = [t for p in collected for t in load_trajectories(p)]
    assert len(collected) == len(ours) >= 4  # one file per episode
    with pytest.warns(DeprecationWarning, match="npz"):  # imitation's loader for its .npz layout
        theirs = [t for p in collected for t in serialize.load(p)]
    for mine, its in zip(ours, theirs, strict=True):
        assert isinstance(its, types.TrajectoryWithRew)
        np.testing.assert_array_equal(its.obs, mine.obs)
        np.testing.assert_array_equal(its.acts, mine.acts)
        np.testing.assert_array_equal(its.rews, mine.rews)
        assert its.terminal == mine.complete  # imitation's terminal: the episode ended (time limits included)
        assert [dict(i) for i in its.infos] == [dict(i) for i in mine.infos]
    for initial in round0.glob("initial_data-dagger-demo-*.npz"):
        with pytest.warns(DeprecationWarning):
            (its,) = serialize.load(initial)
        np.testing.assert_array_equal(its.obs, demo_obs)
    # imitation's own DAggerTrainer trains on our round directory (it reads the first trajectory of each file)
    theirs_trainer = imitation_dagger.DAggerTrainer(venv=venv, scratch_dir=tmp_path, rng=np.random.default_rng(0),
                                                    bc_trainer=make_bc(venv, batch_size=16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs_trainer.extend_and_update(QUIET_BC)
    assert sum(len(t) for t in theirs_trainer._all_demos) == sum(len(t) for t in load_round_dir(round0))


def test_dict_observation_round_files_take_the_documented_extension(tmp_path):
    """Dict observations: ``obs:{key}`` arrays that our loader reads; imitation's loader fails on the missing
    ``obs`` rather than misreading the file."""
    venv = maze(n_envs=2, time_limit=12)
    collector = DAggerCollector(venv, lambda obs: np.zeros(len(obs["obs"]), np.int64), 0.5, tmp_path,
                                np.random.default_rng(0))
    drive(collector, lambda obs: np.ones(len(obs["obs"]), np.int64), 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        trajs = collector.finish_round("report")
    paths = round_files(tmp_path)
    assert [DEMO_NAME.match(p.name) is not None for p in paths] == [True] * len(trajs)
    with np.load(paths[0], allow_pickle=False) as data:
        assert {"obs:obs", "obs:goals", "obs:achieved", "acts", "indices"} <= set(data.files)
        assert "obs" not in data.files
    loaded = load_round_dir(tmp_path)
    assert all(isinstance(t.obs, types.DictObs) for t in loaded)
    assert [trajectory_fingerprint(t) for t in loaded] == [trajectory_fingerprint(t) for t in trajs]
    with pytest.raises(KeyError, match="obs"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        serialize.load(paths[0])


def test_file_tokens_come_from_the_trainers_rng_so_seeded_runs_write_the_same_names(tmp_path):
    """main drew tokens from uuid4: two seeded runs wrote different names (imitation draws them from ``rng``)."""

    def names(run: str, seed: int) -> list[str]:
        trainer = simple_trainer(cartpole(n_envs=2, max_steps=20, seed=3), tmp_path / run, seed=seed)
        th.manual_seed(0)
        trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
        return sorted(p.name for p in (tmp_path / run / "demos" / "round-000").iterdir())

    first, again, other = names("a", 0), names("b", 0), names("c", 1)
    assert len(first) >= 2 and first == again
    assert not set(first) & set(other)


def test_a_seeded_name_that_is_taken_moves_to_the_next_index_and_replaces_nothing(tmp_path):
    """Seeded tokens repeat across writers with the same seed (two processes listing one round directory at
    once); the taken name moves to the next index instead of the rename replacing a collected episode."""
    from sb3_hir.dagger.storage import file_index, new_round_file

    taken = new_round_file(tmp_path, np.random.default_rng(7), index=0)
    save_trajectories(taken, [types.Trajectory(obs=np.zeros((2, 4), np.float32), acts=np.zeros(1, np.int64),
                                               infos=None, terminal=True)])
    again = new_round_file(tmp_path, np.random.default_rng(7), index=0)  # the same draw
    assert again != taken and file_index(again) == 1 and DEMO_NAME.match(again.name)
    assert file_index(new_round_file(tmp_path, np.random.default_rng(7))) == 1  # listing finds the same index
    assert len(load_trajectories(taken)) == 1


# ----------------------------------------------------------------------------------------------- scratch_dir
def test_a_used_scratch_dir_is_refused_at_the_first_write_not_at_construction(tmp_path):
    """main raised 'already holds a DAgger run' in the constructor; imitation's save/reload test builds a third
    trainer there only to compare its fresh weights. The guarantee (two runs never mix) stays."""
    venv = cartpole(n_envs=2, max_steps=20)
    first = simple_trainer(venv, tmp_path)
    first.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    demo = types.Trajectory(obs=np.zeros((3, 4), np.float32), acts=np.zeros(2, np.int64), infos=None, terminal=True)
    second = simple_trainer(venv, tmp_path, seed=1, expert_trajs=[demo])  # builds, writes nothing
    assert second.policy is not None
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    for write in (second.create_trajectory_collector, second.save_trainer,
                  lambda: second.extend_and_update(QUIET_BC),
                  lambda: second.train(20, rollout_round_min_timesteps=20, bc_train_kwargs=QUIET_BC)):
        with pytest.raises(ValueError, match=r"already holds a DAgger run.*reconstruct_trainer.*resume=True"):
            write()
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing written, nothing mixed
    # a trainer that owns the directory goes on: the first one, and a reconstructed one
    first.train(20, rollout_round_min_timesteps=20, bc_train_kwargs=QUIET_BC)
    resumed = reconstruct_trainer(tmp_path, venv, expert_policy=first.expert_policy)
    resumed.train(20, rollout_round_min_timesteps=20, bc_train_kwargs=QUIET_BC)
    assert resumed.round_num == 3
    # two fresh trainers on one empty directory: the one that writes first owns it
    a, b = simple_trainer(venv, tmp_path / "new"), simple_trainer(venv, tmp_path / "new", seed=1)
    a.save_trainer()
    with pytest.raises(ValueError, match="already holds a DAgger run"):
        b.create_trajectory_collector()


# ----------------------------------------------------------------------------------------------- reload
def test_reconstruct_trainer_takes_imitations_call_shapes_without_torch_pickles_and_keeps_the_bc_logger(
    tmp_path, monkeypatch
):
    """imitation's reconstruct_trainer needs TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD on torch >= 2.6 and loses the BC
    logger on reload (its ``BCLogger.__getstate__`` drops it); ours reads data only and logs where it is told."""
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    venv = cartpole(n_envs=2, max_steps=20)
    bc_trainer = make_bc(venv, batch_size=16)
    trainer = DAggerTrainer(venv=venv, scratch_dir=tmp_path / "run", rng=np.random.default_rng(0),
                            bc_trainer=bc_trainer)
    trainer.round_num = 3  # as imitation's save/reload test: a checkpoint before any demonstration
    trainer.save_trainer()
    shapes = {
        "positional": lambda log: reconstruct_trainer(tmp_path / "run", venv, log, "cpu"),
        "keywords": lambda log: reconstruct_trainer(str(tmp_path / "run"), venv=venv, custom_logger=log,
                                                    device="cpu"),
        "no logger": lambda log: reconstruct_trainer(tmp_path / "run", venv=venv),
    }
    for name, reload in shapes.items():
        log_dir = tmp_path / name
        log = imit_logger.configure(str(log_dir), ["csv"])
        loaded = reload(log)
        assert loaded.round_num == 3
        for a, b in zip(loaded.policy.parameters(), trainer.policy.parameters(), strict=True):
            assert th.equal(a.cpu(), b.cpu())
        if name == "no logger":
            assert loaded.logger is loaded.bc_trainer.logger
            continue
        assert loaded.logger is log and loaded.bc_trainer.logger is log
        # train after the reload: BC's logger writes to the logger given, where imitation's raises
        drive(loaded.create_trajectory_collector(), balance, 25)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            loaded.extend_and_update({"n_epochs": 1, "progress_bar": False, "log_rollouts_n_episodes": 0})
        log.close()
        header = (log_dir / "progress.csv").read_text().splitlines()[0].split(",")
        assert "bc/loss" in header and "bc/epoch" in header
        # leave the directory as it was for the next call shape
        for path in (tmp_path / "run" / "demos").rglob("*.npz"):
            path.unlink()


def test_policy_reload_by_imitations_call_shape(tmp_path, monkeypatch):
    """``bc.reconstruct_policy(policy_path, device)`` unpickles (weights_only fails on torch >= 2.6); ours takes
    the same arguments, a path to ``policy-latest.pt`` (or the scratch_dir) and a device, and reads data only."""
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    from sb3_hir.dagger import reconstruct_policy

    venv = cartpole(n_envs=2, max_steps=20)
    trainer = simple_trainer(venv, tmp_path)
    trainer.train(40, rollout_round_min_timesteps=40, bc_train_kwargs=QUIET_BC)
    _, policy_path = trainer.save_trainer()
    for args in ((str(policy_path),), (policy_path, "cpu"), (tmp_path,)):
        policy = reconstruct_policy(*args)
        assert type(policy) is type(trainer.policy)
        assert policy.observation_space == venv.observation_space and policy.action_space == venv.action_space
        for a, b in zip(policy.parameters(), trainer.policy.parameters(), strict=True):
            assert th.equal(a.cpu(), b.cpu())
    with pytest.raises(FileNotFoundError, match="policy_path"):
        reconstruct_policy(tmp_path / "nowhere" / "policy-latest.pt")


def test_imitations_own_collector_name_is_ours(tmp_path):
    """``InteractiveTrajectoryCollector(venv, get_robot_acts, beta, save_dir, rng)`` by keyword, as imitation's
    tests call it, writes imitation-named files into ``save_dir`` itself."""
    from sb3_hir import dagger

    venv = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=15)] * 2)
    collector = dagger.InteractiveTrajectoryCollector(venv=venv, get_robot_acts=RowCounter(), beta=0.5,
                                                      save_dir=tmp_path, rng=np.random.default_rng(0))
    collector.reset()
    for _ in range(40):
        collector.step(np.zeros(2, dtype=np.int64))
    files = sorted(pathlib.Path(tmp_path).glob("dagger-demo-*.npz"))
    assert files and len(files) == len(collector.trajectories)
