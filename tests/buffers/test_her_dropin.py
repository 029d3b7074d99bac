"""HindsightInstructionReplayBuffer as a drop-in for SB3's HerReplayBuffer: GoalEnvs as they come, HER's arguments.

Every SB3 setup here is the one a HER user writes, with ``replay_buffer_class`` swapped; served rows are checked
against an oracle that replays the stored episode under the served goal with the env's own ``compute_reward``.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import DDPG, DQN, SAC, TD3, HerReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize
from stable_baselines3.her.goal_selection_strategy import GoalSelectionStrategy

from sb3_hir.buffers import HerReplayBuffer as Buffer
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.episodes import Episode
from sb3_hir.goals import ToleranceGoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.testing import PointReachEnv

ALGOS = {"dqn": DQN, "sac": SAC, "td3": TD3, "ddpg": DDPG}


def small(**overrides: Any) -> dict[str, Any]:
    """Tiny settings, a fresh dict per model (SB3 writes into ``policy_kwargs``)."""
    kwargs = dict(train_freq=4, gradient_steps=1, learning_starts=40, buffer_size=2000, batch_size=32,
                  policy_kwargs=dict(net_arch=[16]), seed=0, device="cpu")
    return {**kwargs, **overrides}


class PointGoalEnv(PointReachEnv):
    """:class:`~sb3_hir.testing.PointReachEnv` as it comes (steps of 0.3, reward -1/0 within 0.25, float32 goals),
    whose ``info["scale"]`` multiplies the reward, so that a ``compute_reward`` reading infos can be told apart from
    one that does not. ``terminate`` ends the episode on success and says so through ``compute_terminated``."""

    def __init__(self, terminate: bool = True, scale: float = 1.0, discrete: bool = False) -> None:
        super().__init__(terminate_on_success=terminate, discrete=discrete, report_success=False)
        self.scale = scale

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        reward = super().compute_reward(achieved_goal, desired_goal, info)
        if isinstance(info, (list, np.ndarray)) and len(info) and isinstance(info[0], dict):
            reward = reward * np.array([i.get("scale", 1.0) for i in info], dtype=np.float32)
        return reward

    def step(self, action: Any):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward * self.scale, terminated, truncated, {"scale": self.scale}


def point_venv(n_envs: int = 1, **kwargs: Any):
    return make_vec_env(lambda: gym.wrappers.TimeLimit(PointGoalEnv(**kwargs), 12), n_envs=n_envs, seed=0)


def bitflip_venv(n_envs: int = 1, vec_env_cls=DummyVecEnv, **kwargs: Any):
    kwargs.setdefault("n_bits", 4)
    return make_vec_env(lambda: BitFlippingEnv(**kwargs), n_envs=n_envs, seed=0, vec_env_cls=vec_env_cls)


def episode_rows(buffer: Buffer, start: int, env: int) -> np.ndarray:
    """Rows of the stored episode starting at ``start``, walked by the recorded ``dones`` (not the buffer's index)."""
    rows = [start]
    while not buffer.dones[rows[-1], env]:
        rows.append((rows[-1] + 1) % buffer.buffer_size)
    return np.asarray(rows)


def check_served(buffer: Buffer, venv: Any, samples: Any, selection: str = "future", terminating: bool | None = None,
                 infos: bool = False) -> int:
    """Every relabeled row equals the stored episode replayed under its served goal, with the env's own reward.

    Returns how many rows were relabeled. ``terminating``: the env ends an episode on success (None: the buffer's
    own decision, which it must serve consistently). The oracle walks the episode by its recorded ``dones`` and
    calls the env's ``compute_reward`` per step, independently of the buffer's index and batching.
    """
    info = buffer.last_sample_info
    assert info is not None
    terminating = buffer.terminates_on_success if terminating is None else terminating
    relabeled = np.flatnonzero(info.relabeled)
    desired = samples.observations["desired_goal"].numpy()
    next_desired = samples.next_observations["desired_goal"].numpy()
    rewards = samples.rewards.numpy().reshape(-1)
    dones = samples.dones.numpy().reshape(-1)
    gamma, n = buffer.gamma, buffer.n_steps
    for i in relabeled:
        env, t, start = int(info.env_indices[i]), int(info.t[i]), int(info.episode_start[i])
        rows = episode_rows(buffer, start, env)
        goal = info.goals[i, 0]
        achieved = buffer.next_observations["achieved_goal"][rows, env]  # steps 1..T
        np.testing.assert_array_equal(desired[i], goal)
        np.testing.assert_array_equal(next_desired[i], goal)
        exact = achieved.dtype.kind in "biu"
        if exact:
            hit = np.array([np.array_equal(a, goal) for a in achieved])
        else:
            hit = np.linalg.norm(achieved - goal, axis=-1) <= buffer.goal_spec.tolerance
        drawn_from = np.array([np.array_equal(a, goal) for a in achieved])  # the step(s) the goal was taken from
        assert drawn_from.any(), "the served goal was never achieved in its episode"
        if selection == "final":
            assert drawn_from[-1]
        elif selection == "future":
            assert np.flatnonzero(drawn_from).max() + 1 >= t + 1
        # Replay under `goal`: the env's reward per step, the window cut where the replayed episode ends.
        row_infos = [buffer.infos[r, env] for r in rows] if infos else [{} for _ in rows]
        goals = np.repeat(goal[None], len(rows), axis=0)
        step_rewards = venv.env_method("compute_reward", achieved, goals, row_infos, indices=[0])[0]
        step_rewards = np.asarray(step_rewards, dtype=np.float32).reshape(-1)
        recorded_end = bool(buffer.dones[rows[-1], env]) and not bool(buffer.timeouts[rows[-1], env])
        # The episode replayed from t under `goal`: it ends at the first step after t that reaches the goal (where
        # successes terminate), whether or not the goal was also passed before t.
        after = np.flatnonzero(hit[t:])
        reached = terminating and len(after) > 0
        end = t + 1 + int(after[0]) if reached else len(rows)
        if terminating:  # a recorded termination that the episode's own goal caused does not happen under `goal`
            own = buffer.observations["desired_goal"][start, env]
            own_hit = np.flatnonzero([np.array_equal(a, own) for a in achieved] if exact else
                                     np.linalg.norm(achieved - own, axis=-1) <= buffer.goal_spec.tolerance)
            recorded_end &= not (len(own_hit) and own_hit[0] + 1 == len(rows))
        m = min(n, end - t)
        expected = sum(gamma**j * step_rewards[t + j] for j in range(m))
        assert rewards[i] == pytest.approx(expected, abs=1e-5)
        expected_done = t + m == end and (reached or recorded_end)
        assert bool(dones[i]) == expected_done, (i, t, m, end, len(rows))
    return len(relabeled)


# ------------------------------------------------------------------------------------------------ the swap itself
@pytest.mark.parametrize(
    "strategy",
    ["future", "final", "episode", GoalSelectionStrategy.FUTURE, GoalSelectionStrategy.FINAL,
     GoalSelectionStrategy.EPISODE],
)
@pytest.mark.parametrize("algo", list(ALGOS))
def test_every_goal_selection_strategy_with_every_algorithm(algo: str, strategy: Any) -> None:
    venv = bitflip_venv(n_envs=2, continuous=algo != "dqn")
    model = ALGOS[algo]("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                        replay_buffer_kwargs=dict(goal_selection_strategy=strategy, n_sampled_goal=2), **small())
    buffer = model.replay_buffer
    assert isinstance(buffer, HerReplayBuffer) and buffer.goal_env and buffer.env is venv
    name = strategy if isinstance(strategy, str) else strategy.name.lower()
    assert buffer.goal_selection == name and buffer.goal_selection_strategy == GoalSelectionStrategy[name.upper()]
    assert buffer.relabel_ratio == pytest.approx(2 / 3)
    model.learn(160)
    assert model.logger.name_to_value["train/n_updates"] > 0
    samples = buffer.sample(128)
    assert check_served(buffer, venv, samples, selection=name) > 40


@pytest.mark.parametrize("kind", ["multibinary", "discrete", "image", "box"])
def test_goal_spaces_served_with_the_envs_reward(kind: str) -> None:
    if kind == "box":
        venv = point_venv(n_envs=2)
        model: Any = SAC("MultiInputPolicy", venv, replay_buffer_class=Buffer, **small())
    else:
        extra = {"discrete": dict(discrete_obs_space=True), "image": dict(image_obs_space=True)}.get(kind, {})
        venv = bitflip_venv(n_envs=2, **extra)
        model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer, **small())
    model.learn(300)
    buffer = model.replay_buffer
    assert buffer.goal_env
    samples = buffer.sample(256)
    assert check_served(buffer, venv, samples) > 100
    # Served rewards are the env's scale (-1/0), not an instruction's 0/1.
    assert set(np.unique(samples.rewards.numpy())) <= {-1.0, 0.0}


def test_subproc_vec_env() -> None:
    venv = bitflip_venv(n_envs=2, vec_env_cls=SubprocVecEnv)
    try:
        model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer, **small())
        model.learn(200)
        samples = model.replay_buffer.sample(128)
        assert check_served(model.replay_buffer, venv, samples) > 40
    finally:
        venv.close()


def test_vec_normalize_rewards_from_raw_goals_and_normalized_observations() -> None:
    venv = VecNormalize(point_venv(n_envs=2), norm_reward=False, gamma=0.95)
    model = SAC("MultiInputPolicy", venv, replay_buffer_class=Buffer, **small())
    model.learn(300)
    buffer = model.replay_buffer
    samples = buffer.sample(128, env=venv)
    info = buffer.last_sample_info
    rows, envs = info.rows, info.env_indices
    raw_next = buffer.next_observations["achieved_goal"][rows, envs]
    goals = info.goals[:, 0]
    served_goals = np.where(info.relabeled[:, None], goals, buffer.observations["desired_goal"][rows, envs])
    expected = venv.normalize_obs({"observation": buffer.observations["observation"][rows, envs],
                                   "achieved_goal": buffer.observations["achieved_goal"][rows, envs],
                                   "desired_goal": served_goals})
    for key in expected:
        np.testing.assert_allclose(samples.observations[key].numpy(), expected[key], rtol=1e-5, atol=1e-5)
    rel = info.relabeled
    want = PointGoalEnv().compute_reward(raw_next[rel], goals[rel], None)
    np.testing.assert_allclose(samples.rewards.numpy().reshape(-1)[rel], want)


# ------------------------------------------------------------------------------------------------- arguments
def test_her_arguments_and_ours_must_agree() -> None:
    venv = bitflip_venv()
    space, action = venv.observation_space, venv.action_space
    assert Buffer(100, space, action, env=venv, n_sampled_goal=4).relabel_ratio == pytest.approx(0.8)
    assert Buffer(100, space, action, env=venv, n_sampled_goal=4, relabel_ratio=0.8).n_sampled_goal == 4
    assert Buffer(100, space, action, env=venv).her_ratio == pytest.approx(0.8)  # HER's default, n_sampled_goal=4
    cases = [
        (dict(n_sampled_goal=4, relabel_ratio=0.5), "disagree"),
        (dict(goal_step="episode", goal_selection_strategy="future"), "disagree"),
        (dict(goal_selection_strategy="later"), "goal_selection_strategy must be one of"),
        (dict(goal_step="later"), "goal_step must be one of"),
        (dict(n_sampled_goal=-1), "n_sampled_goal must be an int >= 0"),
        (dict(n_sampled_goal=True), "n_sampled_goal must be an int"),
        (dict(copy_info_dict="yes"), "copy_info_dict must be a bool"),
        (dict(terminate_on_success="auto"), "terminate_on_success must be True, False or None"),
        (dict(hindsight_goals="some"), "hindsight_goals must be None or 'all'"),
        (dict(relabeler="my-relabeler"), "relabeler and relabeler_kwargs are for instruction envs"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            Buffer(100, space, action, env=venv, **kwargs)
    assert Buffer(100, space, action, env=venv, goal_selection_strategy="FINAL").goal_selection == "final"


def test_the_plain_buffer_needs_no_env_and_points_goal_envs_to_the_drop_in(tmp_path) -> None:
    venv = bitflip_venv()
    with pytest.raises(ValueError, match=r"use sb3_hir\.HerReplayBuffer"):
        HindsightInstructionReplayBuffer(100, venv.observation_space, venv.action_space)
    assert not issubclass(HindsightInstructionReplayBuffer, HerReplayBuffer)
    by_hand = HindsightInstructionReplayBuffer(100, venv.observation_space, venv.action_space, env=venv)
    assert by_hand.goal_env and by_hand.env is venv


def test_goal_env_mode_needs_the_env_for_rewards_and_says_so() -> None:
    venv = bitflip_venv()
    buffer = Buffer(100, venv.observation_space, venv.action_space)
    obs = venv.reset()
    for _ in range(8):
        action = np.array([venv.action_space.sample()])
        next_obs, reward, done, infos = venv.step(action)
        buffer.add(obs, next_obs, action, reward, done, infos)
        obs = next_obs
    with pytest.raises(RuntimeError, match="needs the env to compute rewards"):
        buffer.sample(16)
    buffer.set_env(venv)
    assert buffer.sample(16).rewards.shape == (16, 1)


def test_relabel_ratio_is_the_share_served_relabeled() -> None:
    venv = bitflip_venv(n_envs=2)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                replay_buffer_kwargs=dict(n_sampled_goal=4), **small())
    model.learn(400)
    buffer = model.replay_buffer
    buffer.num_served = buffer.num_served_relabeled = 0
    for _ in range(40):
        buffer.sample(256)
    assert buffer.served_relabeled_share == pytest.approx(0.8, abs=0.02)


# ---------------------------------------------------------------------------------------------- terminations
def test_the_default_serves_hers_dones_with_every_action_space() -> None:
    """Picked by bench_her_dropin.py's grid: the env's terminations cost DQN at its default learning speed (0.58
    against HER's 0.74 on BitFlipping-12), HER's dones never fell below HER."""
    for venv in (bitflip_venv(n_bits=4), point_venv(terminate=True, discrete=True), point_venv(terminate=True)):
        buffer = Buffer(100, venv.observation_space, venv.action_space, env=venv)
        assert buffer.terminate_on_success is False and not buffer.terminates_on_success


def test_success_termination_from_compute_terminated_for_discrete_actions() -> None:
    for terminate in (True, False):
        venv = point_venv(terminate=terminate, discrete=True)
        buffer = Buffer(100, venv.observation_space, venv.action_space, env=venv, terminate_on_success=None)
        assert buffer.terminate_on_success is terminate and buffer.terminates_on_success is terminate
        assert buffer.goal_spec.tolerance == PointGoalEnv().distance_threshold  # the env's own success radius


def test_continuous_actions_default_to_hers_dones_and_take_terminations_when_asked() -> None:
    """SAC/TQC's entropy bonus makes terminal successes look worse than going on: None keeps HER's dones there."""
    venv = point_venv(terminate=True)
    assert not Buffer(100, venv.observation_space, venv.action_space, env=venv).terminates_on_success
    assert not Buffer(100, venv.observation_space, venv.action_space, env=venv,
                      terminate_on_success=None).terminates_on_success
    asked = Buffer(100, venv.observation_space, venv.action_space, env=venv, terminate_on_success=True)
    assert asked.terminates_on_success and asked.goal_spec.tolerance == PointGoalEnv().distance_threshold
    model = SAC("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                replay_buffer_kwargs=dict(terminate_on_success=True), **small())
    model.learn(400)
    samples = model.replay_buffer.sample(256)
    assert check_served(model.replay_buffer, venv, samples, terminating=True) > 100


def test_success_termination_inferred_from_recorded_episodes() -> None:
    """BitFlippingEnv terminates on success without compute_terminated: the recorded episodes tell."""
    venv = bitflip_venv(n_envs=2, n_bits=2)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                replay_buffer_kwargs=dict(terminate_on_success=None), **small())
    buffer = model.replay_buffer
    assert buffer.terminate_on_success is None and buffer.terminates_on_success  # the prior, before any episode
    model.learn(300)
    assert buffer.episodes_ending_at_goal > 0 and buffer.episodes_going_on_after_goal == 0
    assert buffer.terminates_on_success
    samples = buffer.sample(256)
    assert check_served(buffer, venv, samples, terminating=True) > 100
    assert samples.dones.numpy()[buffer.last_sample_info.relabeled].mean() > 0.2  # relabeled successes terminate


def test_continuing_env_is_inferred_to_go_on_after_success() -> None:
    venv = point_venv(terminate=False)
    buffer = Buffer(1000, venv.observation_space, venv.action_space, env=venv, terminate_on_success=None)
    buffer.terminate_on_success = None  # forget the probe: decide from the episodes only
    assert buffer.terminates_on_success  # the prior
    model = SAC("MultiInputPolicy", venv, **small())
    model.replay_buffer = buffer
    model.learn(600)
    assert buffer.episodes_going_on_after_goal > 0 and not buffer.terminates_on_success


def test_terminate_on_success_false_serves_hers_recorded_dones() -> None:
    venv = bitflip_venv(n_envs=2, n_bits=2)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                replay_buffer_kwargs=dict(terminate_on_success=False), **small())
    model.learn(300)
    buffer = model.replay_buffer
    samples = buffer.sample(256)
    info = buffer.last_sample_info
    recorded = buffer.dones[info.rows, info.env_indices] * (1 - buffer.timeouts[info.rows, info.env_indices])
    np.testing.assert_array_equal(samples.dones.numpy().reshape(-1), recorded)
    check_served(buffer, venv, samples, terminating=False)


@pytest.mark.parametrize("handle_timeout_termination", [True, False])
def test_timeouts(handle_timeout_termination: bool) -> None:
    venv = point_venv(terminate=False)  # every episode ends by the 12-step time limit
    model = SAC("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                replay_buffer_kwargs=dict(handle_timeout_termination=handle_timeout_termination), **small())
    model.learn(300)
    buffer = model.replay_buffer
    samples = buffer.sample(512)
    check_served(buffer, venv, samples)
    info = buffer.last_sample_info
    last = info.t == 11
    relabeled_last = samples.dones.numpy().reshape(-1)[info.relabeled & last]
    assert len(relabeled_last) > 0
    assert (relabeled_last == (0.0 if handle_timeout_termination else 1.0)).all()


def test_copy_info_dict_passes_stored_infos_to_compute_reward() -> None:
    for copy_info_dict in (True, False):
        venv = point_venv(terminate=False, scale=3.0)
        model = SAC("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                    replay_buffer_kwargs=dict(copy_info_dict=copy_info_dict), **small())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.learn(200)
        # Without the infos, compute_reward cannot rebuild the recorded (scaled) rewards: said once, at first use.
        disagree = [w for w in caught if "compute_reward disagrees with the rewards" in str(w.message)]
        assert len(disagree) == (0 if copy_info_dict else 1)
        buffer = model.replay_buffer
        samples = buffer.sample(256)
        check_served(buffer, venv, samples, infos=copy_info_dict)
        relabeled = samples.rewards.numpy().reshape(-1)[buffer.last_sample_info.relabeled]
        assert set(np.unique(relabeled)) <= ({-3.0, 0.0} if copy_info_dict else {-1.0, 0.0})
        assert (buffer.infos is not None) == copy_info_dict


@pytest.mark.parametrize("terminate", [True, False])
def test_n_step_returns_with_the_envs_reward(terminate: bool) -> None:
    venv = point_venv(terminate=terminate)
    model = SAC("MultiInputPolicy", venv, replay_buffer_class=Buffer, gamma=0.9,
                replay_buffer_kwargs=dict(n_steps=3, gamma=0.9, terminate_on_success=terminate), **small())
    model.learn(400)
    buffer = model.replay_buffer
    samples = buffer.sample(256)
    assert check_served(buffer, venv, samples) > 100
    window = buffer.last_sample_info.window
    np.testing.assert_allclose(samples.discounts.numpy().reshape(-1), 0.9**window, rtol=1e-6)
    assert (window[buffer.last_sample_info.relabeled] > 1).any()


def test_looping_episodes_are_relabeled_at_every_step_as_her_relabels_them() -> None:
    """A greedy policy that flips one bit back and forth passes the same two values again and again. HER relabels
    every one of its transitions; an earlier rule (draw only goals first reached after t) relabeled none after t = 1
    and served almost no transition that starts at its goal, which cost DQN 0.70 -> 0.44 on BitFlipping-12."""
    venv = bitflip_venv(n_bits=4, max_steps=8)
    buffer = Buffer(1000, venv.observation_space, venv.action_space, env=venv, seed=0, terminate_on_success=None)
    assert buffer.terminates_on_success  # BitFlipping ends on success: the rule that changed
    obs = venv.reset()
    for _ in range(8 * 20):
        action = np.array([0])  # flip bit 0: two values, alternating
        new_obs, rewards, dones, infos = venv.step(action)
        next_obs = {key: value.copy() for key, value in new_obs.items()}
        if dones[0]:
            for key in next_obs:
                next_obs[key][0] = infos[0]["terminal_observation"][key]
        buffer.add(obs, next_obs, action.reshape(-1, 1), rewards, dones, infos)
        obs = new_obs
    relabeled_t, at_goal, checked = [], 0, 0
    for _ in range(20):
        samples = buffer.sample(128)
        checked += check_served(buffer, venv, samples)
        info = buffer.last_sample_info
        rel = info.relabeled
        relabeled_t += list(info.t[rel])
        at_goal += int((samples.observations["achieved_goal"].numpy()[rel]
                        == samples.observations["desired_goal"].numpy()[rel]).all(axis=1).sum())
        dones = samples.dones.numpy().reshape(-1)[rel]
        next_at_goal = (samples.next_observations["achieved_goal"].numpy()[rel]
                        == samples.next_observations["desired_goal"].numpy()[rel]).all(axis=1)
        np.testing.assert_array_equal(dones > 0, next_at_goal)  # terminal exactly where the goal is reached
    assert checked > 1000
    assert set(relabeled_t) == set(range(8))  # every step of the looping episodes is relabeled
    assert at_goal > 0.2 * checked  # half the goals are the value the transition starts at, as HER draws them


# ------------------------------------------------------------------------------------------------- save / load
@pytest.mark.parametrize("truncate", [True, False])
def test_save_load_model_and_buffer_resumed_mid_episode(tmp_path, truncate: bool) -> None:
    venv = bitflip_venv(n_envs=2, n_bits=6)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer, **small())
    model.learn(203)  # stops mid-episode in both sub-envs
    buffer = model.replay_buffer
    running = buffer._index.episode_start != buffer._index.num_adds
    assert running.any()
    model.save(tmp_path / "model.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")

    loaded = DQN.load(tmp_path / "model.zip", env=venv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded.load_replay_buffer(tmp_path / "buffer.pkl", truncate_last_traj=truncate)
    messages = [str(w.message) for w in caught if "will be truncated" in str(w.message)]
    assert len(messages) == (1 if truncate else 0)  # HER's warning, exactly when HER gives it
    restored = loaded.replay_buffer
    assert isinstance(restored, Buffer) and restored.env is venv  # set_env by SB3, as for HER
    assert restored.pos == buffer.pos
    for key in buffer.observations:
        np.testing.assert_array_equal(restored.observations[key], buffer.observations[key])
    still_running = restored._index.episode_start != restored._index.num_adds
    assert still_running.any() != truncate
    loaded.learn(200, reset_num_timesteps=False)
    samples = restored.sample(128)
    assert check_served(restored, venv, samples) > 30


def test_learn_continued_mid_episode_keeps_the_episode_whole() -> None:
    venv = bitflip_venv(n_envs=1, n_bits=8, max_steps=8)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer,
                replay_buffer_kwargs=dict(terminate_on_success=False), **small())
    model.learn(40)
    buffer = model.replay_buffer
    while buffer._index.num_adds == int(buffer._index.episode_start[0]):  # step on until an episode is running
        model.learn(1, reset_num_timesteps=False)
    start, t = int(buffer._index.episode_start[0]), buffer._index.num_adds - int(buffer._index.episode_start[0])
    assert 0 < t < 8
    model.learn(40, reset_num_timesteps=False)  # the same episode goes on: no reset in between
    field = buffer._index.field
    row = start % buffer.buffer_size
    length = int(buffer._index.meta[row, 0, field["len"]])
    assert length == len(episode_rows(buffer, row, 0)) and length > t


def test_her_and_ours_store_the_same_transitions() -> None:
    """Same seed, same script: the stored data is identical, only sampling differs."""
    stored = {}
    for cls in (HerReplayBuffer, Buffer):
        venv = bitflip_venv(n_envs=2)
        model = DQN("MultiInputPolicy", venv, replay_buffer_class=cls, **small(learning_starts=10_000))
        model.learn(120)
        stored[cls] = model.replay_buffer
    her, ours = stored[HerReplayBuffer], stored[Buffer]
    for key in her.observations:
        np.testing.assert_array_equal(her.observations[key][: her.pos], ours.observations[key][: ours.pos])
    np.testing.assert_array_equal(her.rewards[: her.pos], ours.rewards[: ours.pos])


# ------------------------------------------------------------------------------------------- instruction envs
def test_step_reward_is_served_in_relabeled_rows_and_read_from_the_env() -> None:
    venv = make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=30, step_reward=-1.0), n_envs=2,
                        seed=0)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=Buffer, replay_buffer_kwargs=dict(hindsight_goals="all"),
                **small(buffer_size=5000))
    buffer = model.replay_buffer
    assert buffer.goal_spec.step_reward == -1.0  # the env's declared spec, handed over by SB3
    model.learn(400)
    samples = buffer.sample(256)
    info = buffer.last_sample_info
    relabeler = HindsightInstructionRelabeler(2, strategy="none", goal_spec=buffer.goal_spec)
    served = 0
    for i in np.flatnonzero(info.relabeled):
        env, t, start = int(info.env_indices[i]), int(info.t[i]), int(info.episode_start[i])
        rows = episode_rows(buffer, start, env)
        episode = Episode(
            observations={k: np.concatenate([v[rows[:1], env], buffer.next_observations[k][rows, env]])
                          for k, v in buffer.observations.items()},
            actions=buffer.actions[rows, env], rewards=buffer.rewards[rows, env],
            terminated=(buffer.dones[rows, env] * (1 - buffer.timeouts[rows, env])).astype(bool),
            truncated=(buffer.dones[rows, env] * buffer.timeouts[rows, env]).astype(bool),
        )
        replayed = relabeler.replay(episode, info.goals[i])
        assert samples.rewards[i, 0].item() == pytest.approx(float(replayed.rewards[t]))
        assert bool(samples.dones[i, 0]) == bool(replayed.terminated[t])
        served += 1
    assert served > 100
    rewards = samples.rewards.numpy()
    assert set(np.unique(rewards)) <= {-1.0, 0.0}


def test_a_goal_spec_on_another_scale_than_the_env_is_reported() -> None:
    venv = make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=20, step_reward=-1.0), n_envs=1,
                        seed=0)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=HindsightInstructionReplayBuffer,
                **small(buffer_size=5000))  # no env handed over: the default "exact" spec, 0/1 rewards
    with pytest.warns(UserWarning, match="recorded rewards differ from the goal spec's"):
        model.learn(100)


def test_final_selection_for_one_goal_instructions_and_refused_for_more() -> None:
    venv = make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=1, time_limit=20), n_envs=2, seed=0)
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=HindsightInstructionReplayBuffer,
                replay_buffer_kwargs=dict(hindsight_goals="all", goal_selection_strategy=GoalSelectionStrategy.FINAL),
                **small(buffer_size=5000))
    model.learn(300)
    buffer = model.replay_buffer
    buffer.sample(256)
    info = buffer.last_sample_info
    checked = 0
    for i in np.flatnonzero(info.relabeled):
        env, t, start = int(info.env_indices[i]), int(info.t[i]), int(info.episode_start[i])
        rows = episode_rows(buffer, start, env)
        achieved = buffer.next_observations["achieved"][rows, env].reshape(len(rows), -1)
        goal = info.goals[i, 0]
        own = buffer.observations["goals"][start, env, 0]
        if np.array_equal(goal, own):
            continue  # the recorded goal, kept where the episode reached it ("all" adds none)
        np.testing.assert_array_equal(goal, achieved[-1])  # the episode's final achieved cell
        first = int(np.flatnonzero((achieved == goal).all(axis=1))[0]) + 1
        assert first > t  # admissible: the final cell is first reached after the transition
        checked += 1
    assert checked > 50
    space = make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=20)).observation_space
    with pytest.raises(ValueError, match="goal_step 'final' is for one-goal instructions"):
        HindsightInstructionReplayBuffer(100, space, venv.action_space, goal_selection_strategy="final")


def test_a_radius_kept_on_the_envs_task_is_found_as_panda_gym_keeps_it() -> None:
    class Task:
        distance_threshold = 0.25

    class TaskRadius(gym.Env):  # panda-gym's RobotTaskEnv: the radius lives on env.task, no compute_terminated
        def __init__(self) -> None:
            self.point, self.task = PointReachEnv(), Task()  # terminates on success, reports is_success
            self.observation_space, self.action_space = self.point.observation_space, self.point.action_space

        def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
            return self.point.compute_reward(achieved_goal, desired_goal, info)

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            super().reset(seed=seed)
            return self.point.reset(seed=seed, options=options)

        def step(self, action: Any):
            return self.point.step(action)

    venv = VecNormalize(make_vec_env(lambda: gym.wrappers.TimeLimit(TaskRadius(), 12), n_envs=2, seed=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "cannot find where a goal is first reached" warning
        buffer = Buffer(100, venv.observation_space, venv.action_space, env=venv, terminate_on_success=True)
    assert isinstance(buffer.goal_spec, ToleranceGoalSpec) and buffer.goal_spec.tolerance == 0.25
    assert buffer.terminates_on_success  # the radius lets relabeled reaches be found, so they can terminate


def test_float_goals_without_a_success_radius_are_served_hers_dones_with_a_warning() -> None:
    class NoRadius(PointGoalEnv):
        distance_threshold = None  # over PointReachEnv's property: still reaches within 0.25, no longer says so

    venv = make_vec_env(lambda: gym.wrappers.TimeLimit(NoRadius(), 12), n_envs=1, seed=0)
    with pytest.warns(UserWarning, match="cannot find where a relabeled goal is first reached"):
        buffer = Buffer(100, venv.observation_space, venv.action_space, env=venv, terminate_on_success=True)
    assert buffer.terminate_on_success is False and not buffer.terminates_on_success
    radius = dict(goals_key="desired_goal", achieved_key="achieved_goal")
    given = Buffer(100, venv.observation_space, venv.action_space, env=venv, terminate_on_success=True,
                   goal_spec=ToleranceGoalSpec(tolerance=0.25, **radius))
    assert given.terminates_on_success  # compute_terminated says so, and reaches can be found
