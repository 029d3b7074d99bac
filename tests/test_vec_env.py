"""VecHideKeys, and sb3-contrib's RecurrentPPO on MazeRunner through it (learning and as a DAgger learner)."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib import RecurrentPPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.episodes import Episode
from sb3_hir.extras import has
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.vec_env import VecHideKeys

if has("imitation"):  # the 'dagger' extra; tests using it are marked dagger
    from sb3_hir.dagger import DAggerCollector, load_round_dir


VISIBLE = {"goals", "obs"}


def maze_venv(n_envs: int = 2, time_limit: int = 12, num_goals: int = 2, seed: int = 0) -> DummyVecEnv:
    venv = DummyVecEnv(
        [lambda: MazeRunnerEnv(maze_dim=7, num_goals=num_goals, time_limit=time_limit) for _ in range(n_envs)]
    )
    venv.seed(seed)
    return venv


def agent_cells(venv) -> np.ndarray:
    return np.asarray(venv.get_attr("agent_pos"), dtype=np.int32)


def tiny_recurrent_ppo(venv, seed: int = 0, memory_gain: float = 1.0) -> RecurrentPPO:
    """A small RecurrentPPO; ``memory_gain`` scales the actor's LSTM and action head so that its deterministic
    actions depend on the hidden state (a fresh LSTM's state barely moves the argmax, so a test could not tell a
    carried state from a reset one)."""
    model = RecurrentPPO(
        "MultiInputLstmPolicy",
        venv,
        n_steps=16,
        batch_size=16,
        n_epochs=1,
        policy_kwargs=dict(lstm_hidden_size=16, net_arch=[16]),
        seed=seed,
        device="cpu",
    )
    if memory_gain != 1.0:
        with th.no_grad():
            for name, param in model.policy.named_parameters():
                if name.startswith("lstm_actor."):
                    param.mul_(memory_gain)
                elif name.startswith("action_net."):
                    param.mul_(100.0)
    return model


# -- the wrapper --------------------------------------------------------------------------------------------------
def test_hidden_keys_leave_the_space_and_the_observations_but_travel_in_infos():
    venv = VecHideKeys(maze_venv(time_limit=5), keys="achieved")
    assert set(venv.observation_space.spaces) == VISIBLE
    assert list(venv.hidden_observation_space.spaces) == ["achieved"]
    assert set(venv.full_observation_space.spaces) == VISIBLE | {"achieved"}
    obs = venv.reset()
    assert set(obs) == VISIBLE
    cells = agent_cells(venv)
    np.testing.assert_array_equal(venv.last_full_observation["achieved"][:, 0], cells)
    for i, info in enumerate(venv.reset_infos):
        np.testing.assert_array_equal(info[VecHideKeys.INFO_KEY]["achieved"][0], cells[i])
    ended = 0
    rng = np.random.default_rng(0)
    for _ in range(12):
        before = agent_cells(venv)
        obs, _, dones, infos = venv.step(rng.integers(0, 5, size=2))
        assert set(obs) == VISIBLE
        full = VecHideKeys.full_observation(obs, infos)
        for key, value in venv.last_full_observation.items():
            np.testing.assert_array_equal(full[key], value)
        for i, info in enumerate(infos):
            np.testing.assert_array_equal(info[VecHideKeys.SOURCE_INFO_KEY]["achieved"][0], before[i])
            if dones[i]:
                ended += 1
                assert set(info["terminal_observation"]) == VISIBLE
                terminal = VecHideKeys.full_terminal_observation(info)
                assert set(terminal) == VISIBLE | {"achieved"}
                # a time-limit end after a random walk: the terminal cell is a neighbour of (or equal to) the last
                assert np.abs(terminal["achieved"][0] - before[i]).sum() <= 1
                # the auto-reset's info carries the new episode's first achieved cell
                np.testing.assert_array_equal(venv.reset_infos[i][VecHideKeys.INFO_KEY]["achieved"],
                                              venv.last_full_observation["achieved"][i])
    assert ended >= 2


def test_bad_keys_are_rejected_naming_the_problem():
    venv = maze_venv()
    with pytest.raises(ValueError, match=r"keys \['where'\] are not in the observation space"):
        VecHideKeys(venv, keys=["where"])
    with pytest.raises(ValueError, match="at least one observation key visible"):
        VecHideKeys(venv, keys=["achieved", "goals", "obs"])
    with pytest.raises(ValueError, match="must not repeat"):
        VecHideKeys(venv, keys=["achieved", "achieved"])
    with pytest.raises(ValueError, match="one or more str"):
        VecHideKeys(venv, keys=[])
    box = DummyVecEnv([lambda: __import__("gymnasium").make("CartPole-v1")])
    with pytest.raises(ValueError, match="Dict observation space"):
        VecHideKeys(box)
    assert isinstance(VecHideKeys(venv).observation_space, spaces.Dict)


# -- RecurrentPPO, class unchanged --------------------------------------------------------------------------------
def test_recurrent_ppo_learns_on_mazerunner_through_the_wrappers():
    venv = VecMonitor(VecHideKeys(maze_venv(time_limit=10)))
    model = tiny_recurrent_ppo(venv)
    assert type(model) is RecurrentPPO
    assert set(model.policy.observation_space.spaces) == VISIBLE
    params = [p.detach().clone() for p in model.policy.parameters()]
    # 48 steps of 2 envs with a 10-step time limit: truncations happen, so RecurrentPPO bootstraps from
    # terminal_observation, which must match the policy's space exactly.
    model.learn(total_timesteps=96)
    assert model.num_timesteps == 96
    assert len(model.ep_info_buffer) >= 8
    assert set(model.rollout_buffer.observations) == VISIBLE
    assert any(not np.allclose(a.numpy(), b.detach().numpy()) for a, b in zip(params, model.policy.parameters(),
                                                                                strict=True))
    obs = venv.reset()
    actions, state = model.predict(obs, state=None, episode_start=np.ones(2, dtype=bool))
    assert actions.shape == (2,) and state[0].shape == (1, 2, 16)  # (layers, sub-envs, hidden)


# -- DAgger round with a recurrent learner -------------------------------------------------------------------------
@pytest.mark.dagger
def test_dagger_round_with_a_recurrent_ppo_learner_carries_its_state_per_sub_env(tmp_path):
    venv = VecHideKeys(maze_venv(n_envs=2, time_limit=9, num_goals=2, seed=3))
    learner = tiny_recurrent_ppo(venv, seed=1, memory_gain=20.0)
    collector = DAggerCollector(venv, learner, beta=0.5, save_dir=tmp_path, rng=0, deterministic_learner=True)
    expert = ShortestPathExpert(collector)
    obs = collector.reset()
    for _ in range(25):
        obs, _, _, _ = collector.step(expert.predict(obs)[0])
    state = collector.learner_state
    assert state is not None and state[0].shape == (1, 2, 16)
    assert not np.allclose(state[0][:, 0], state[0][:, 1])  # one hidden state per sub-env
    trajs = collector.finish_round(policy="complete", expert=expert)
    assert len(trajs) >= 4 and all(t.complete for t in trajs)
    learner_steps = memory_matters = 0
    for traj in trajs:
        assert set(traj.obs.keys()) == VISIBLE
        # Replaying the learner alone over this episode, from a fresh state, gives the actions the collector
        # executed for it: the state was carried per sub-env and reset at each episode start.
        offline_state, start = None, np.ones(1, dtype=bool)
        for t in range(len(traj)):
            step_obs = {key: traj.obs.get(key)[t : t + 1] for key in VISIBLE}
            action, offline_state = learner.predict(step_obs, state=offline_state, episode_start=start,
                                                    deterministic=True)
            start = np.zeros(1, dtype=bool)
            if traj.learner_mask[t]:
                learner_steps += 1
                assert action[0] == traj.executed_acts[t], (t, action, traj.executed_acts[t])
                memoryless, _ = learner.predict(step_obs, state=None, episode_start=np.ones(1, dtype=bool),
                                                deterministic=True)
                memory_matters += int(memoryless[0] != action[0])
    assert learner_steps > 0
    assert memory_matters > 0  # the learner's actions depend on its state, so the check above is not vacuous
    # The round is on disk, and the hidden "achieved" comes back for relabeling.
    loaded = load_round_dir(tmp_path)
    assert len(loaded) == len(trajs)
    relabeler = HindsightInstructionRelabeler(2, strategy="none")
    for traj in loaded:
        full = venv.restore_trajectory(traj)
        assert set(full.obs.keys()) == VISIBLE | {"achieved"}
        # replaying the episode under its own instruction with the restored achieved cells reproduces its rewards
        episode = Episode.from_trajectory(full)
        replayed = relabeler.replay(episode, episode.observations["goals"][0])
        np.testing.assert_array_equal(replayed.rewards, episode.rewards)
        np.testing.assert_array_equal(replayed.terminated, episode.terminated)
