"""GoalEnv mode's checks of the env's ``compute_reward`` at its first use, and the GoalEnv space errors.

Every env here is a real gymnasium GoalEnv trained by SB3's DQN with ``sb3_hir.HerReplayBuffer``, as a HER user
writes it: broken ones must fail (or warn) once, naming the env's class, what was expected and what came back; correct
ones must not warn at all.
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import SubprocVecEnv, VecNormalize

from sb3_hir import HerReplayBuffer, HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv

SETTINGS = dict(learning_starts=50, train_freq=4, gradient_steps=1, batch_size=32, buffer_size=1000,
                policy_kwargs=dict(net_arch=[16]), seed=0, device="cpu")


class Reach(gym.Env):
    """A point moved by steps of 0.3 in ``[-1, 1]^2``; reward -1 until it is within 0.25 of the goal (0, terminal).

    No ``compute_reward``: the subclasses give theirs, right or wrong. ``step()`` rewards with :meth:`reward`.
    """

    distance_threshold = 0.25
    MOVES = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.float32)

    def __init__(self) -> None:
        box = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Discrete(4)

    def reward(self, achieved_goal: Any, desired_goal: Any) -> np.ndarray:
        distance = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(distance > self.distance_threshold).astype(np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action: Any):
        self.pos = np.clip(self.pos + 0.3 * self.MOVES[int(action)], -1, 1).astype(np.float32)
        reward = float(self.reward(self.pos, self.goal))
        return self._obs(), self.step_reward(reward), reward == 0.0, False, {"scale": 1.0}

    def step_reward(self, reward: float) -> float:
        return reward


class GoodReach(Reach):
    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        return self.reward(achieved_goal, desired_goal)


class FloatReward(Reach):
    """Written for one goal: a batch gets one Python float."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> float:
        return -float(np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal)) > self.distance_threshold)


class ScalarArrayReward(Reach):
    """A numpy scalar for a batch (a mean), which SB3's HER would broadcast over the batch."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.float32:
        return np.float32(self.reward(achieved_goal, desired_goal).mean())


class ShortReward(Reach):
    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        return self.reward(achieved_goal, desired_goal)[:-1]


class PerCoordinateReward(Reach):
    """Forgets to reduce over the goal's coordinates: ``(B, 2)``."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        return -(np.abs(np.asarray(achieved_goal) - np.asarray(desired_goal)) > self.distance_threshold).astype(
            np.float32
        )


class ColumnReward(Reach):
    """``(B, 1)``: SB3's HER takes it (it reshapes to a column), so the drop-in does."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        return self.reward(achieved_goal, desired_goal)[:, None]


class BranchingReward(Reach):
    """A Python ``if`` on the distance: fine for one goal, numpy's ambiguous-truth error for a batch."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> float:
        if np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1) > self.distance_threshold:
            return -1.0
        return 0.0


class SuccessRewardStep(GoodReach):
    """The common silent bug: ``step()`` pays 1 on success and 0 else, ``compute_reward`` -1 / 0."""

    def step_reward(self, reward: float) -> float:
        return reward + 1.0


class InfoScaledReach(Reach):
    """Rewards scaled by ``info["scale"]`` in ``step()`` and in ``compute_reward``, which needs the stored infos."""

    def step(self, action: Any):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, 3.0 * reward, terminated, truncated, {"scale": 3.0}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        scale = np.array([i.get("scale", 1.0) for i in info], dtype=np.float32)
        return self.reward(achieved_goal, desired_goal) * scale


def venv_of(env_class: type[gym.Env], n_envs: int = 1, wrapper: Any = None, **kwargs: Any) -> Any:
    def make() -> gym.Env:
        env = gym.wrappers.TimeLimit(env_class(), 10)
        return env if wrapper is None else wrapper(env)

    return make_vec_env(make, n_envs=n_envs, seed=0, **kwargs)


def train(venv: Any, steps: int = 200, **buffer_kwargs: Any) -> DQN:
    model = DQN("MultiInputPolicy", venv, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=buffer_kwargs,
                **SETTINGS)
    model.learn(steps)
    return model


# ------------------------------------------------------------------------------------------ exists, vectorized
def test_a_goal_env_without_compute_reward_is_named() -> None:
    with pytest.raises(AttributeError) as error:
        train(venv_of(Reach))
    message = str(error.value)
    assert message.startswith("Reach has no compute_reward")  # the env's class, not Monitor's or TimeLimit's
    assert "compute_reward(achieved_goal, desired_goal, info)" in message and "Monitor" not in message


def test_a_subproc_env_without_compute_reward_is_named_and_its_workers_live() -> None:
    venv = venv_of(Reach, n_envs=2, vec_env_cls=SubprocVecEnv)
    try:
        with pytest.raises(AttributeError, match=r"^Reach has no compute_reward"):
            train(venv)
        assert len(venv.reset()["achieved_goal"]) == 2  # the check asked, it did not crash a worker
    finally:
        venv.close()


@pytest.mark.parametrize(
    ("env_class", "error", "returned"),
    [
        (FloatReward, TypeError, "it returned float -1.0"),
        (ScalarArrayReward, TypeError, "it returned numpy.float32 -"),
        (ShortReward, ValueError, r"it returned an array of shape \(31,\) \(float32\)"),
        (PerCoordinateReward, ValueError, r"it returned an array of shape \(32, 2\) \(float32\)"),
    ],
)
def test_a_compute_reward_that_is_not_vectorized_is_one_error_naming_the_env(
    env_class: type[Reach], error: type[Exception], returned: str
) -> None:
    # relabel_ratio=1: the first relabeled batch is the whole batch of 32.
    with pytest.raises(error) as caught:
        train(venv_of(env_class), relabel_ratio=1.0)
    message = str(caught.value)
    assert message.startswith(f"{env_class.__name__}.compute_reward must be vectorized: called with a batch of 32 ")
    assert "(achieved_goal and desired_goal of shape (32, 2), info a list of 32 dicts)" in message
    assert "it must return an array of 32 rewards" in message
    assert re.search(returned, message), message
    assert caught.value.__cause__ is None and caught.value.__context__ is None  # one exception, not a chain


def test_an_exception_of_a_non_vectorized_compute_reward_says_it_got_a_batch() -> None:
    with pytest.raises(ValueError, match="truth value of an array") as caught:
        train(venv_of(BranchingReward), relabel_ratio=1.0)
    if sys.version_info >= (3, 11):  # exception notes
        notes = " ".join(getattr(caught.value, "__notes__", []))
        assert "BranchingReward.compute_reward was called with a batch of 32" in notes
        assert "must be vectorized" in notes


def test_a_column_of_rewards_is_taken_as_by_sb3s_her() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = train(venv_of(ColumnReward))
    samples = model.replay_buffer.sample(64)
    assert samples.rewards.shape == (64, 1)


# ------------------------------------------------------------------------------------- agrees with step()
def recorded_and_computed(message: str) -> tuple[int, int, int, float, float]:
    found = re.search(
        r"step (\d+) of an episode \(buffer row (\d+), sub-env (\d+)\) was recorded with reward (\S+), "
        r"compute_reward\(achieved_goal, desired_goal, info\) with its next achieved_goal and its desired_goal "
        r"gives (\S+) ",
        message,
    )
    assert found, message
    step, row, env = (int(found.group(i)) for i in (1, 2, 3))
    return step, row, env, float(found.group(4)), float(found.group(5))


def test_rewards_that_disagree_with_step_warn_once_naming_the_first_disagreeing_step() -> None:
    venv = venv_of(SuccessRewardStep)
    with pytest.warns(UserWarning, match=r"^SuccessRewardStep\.compute_reward disagrees with the rewards its step\(\) "
                      "returned") as record:
        model = train(venv)
    ours = [w for w in record if "disagrees" in str(w.message)]
    assert len(ours) == 1  # once per buffer, though the model sampled ~40 batches
    message = str(ours[0].message)
    assert "A wrapper may scale rewards on purpose" in message
    assert "compute_reward was given empty infos (copy_info_dict=False, as HER): pass copy_info_dict=True" in message
    # The step named is a real recorded transition of the buffer, with the values the message gives.
    buffer = model.replay_buffer
    step, row, env, recorded, computed = recorded_and_computed(message)
    assert buffer.rewards[row, env] == recorded and recorded - computed == 1.0
    want = GoodReach().reward(buffer.next_observations["achieved_goal"][row, env],
                              buffer.observations["desired_goal"][row, env])
    assert computed == float(want)
    start = row - step
    assert start >= 0 and not buffer.dones[start:row, env].any()  # step counts from its episode's first row
    assert start == 0 or buffer.dones[start - 1, env]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buffer.sample(64)  # checked once: the sample path pays nothing more


def test_a_wrapper_scaling_rewards_is_reported() -> None:
    venv = venv_of(GoodReach, wrapper=lambda env: gym.wrappers.TransformReward(env, lambda r: 10.0 * r))
    with pytest.warns(UserWarning, match=r"^GoodReach\.compute_reward disagrees") as record:
        train(venv)
    message = next(str(w.message) for w in record if "disagrees" in str(w.message))
    _, _, _, recorded, computed = recorded_and_computed(message)
    assert (recorded, computed) == (-10.0, -1.0)


def test_infos_are_passed_to_the_check_as_to_relabeling() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(venv_of(InfoScaledReach), copy_info_dict=True)  # the stored infos: rewards agree
    # Without them, as HER passes empty dicts, compute_reward gives the unscaled reward, and the warning says why.
    with pytest.warns(UserWarning, match=r"given empty infos \(copy_info_dict=False, as HER\)"):
        train(venv_of(InfoScaledReach))


@pytest.mark.parametrize("venv_name", ["reach", "bitflipping", "vecnormalize", "two-envs"])
def test_a_correct_env_does_not_warn(venv_name: str) -> None:
    venvs = {
        "reach": lambda: venv_of(GoodReach),
        "bitflipping": lambda: make_vec_env(lambda: BitFlippingEnv(n_bits=4), n_envs=1, seed=0),
        # Served rewards are normalized, stored ones raw: the check compares raw with raw.
        "vecnormalize": lambda: VecNormalize(venv_of(GoodReach), norm_obs=False, norm_reward=True),
        "two-envs": lambda: venv_of(GoodReach, n_envs=2),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = train(venvs[venv_name](), steps=300)
    buffer = model.replay_buffer
    assert buffer._serving.reward_checked and model.logger.name_to_value["train/n_updates"] > 0


# ------------------------------------------------------------------------------------------------- spaces
BOX = spaces.Box(-1.0, 1.0, (2,), np.float32)
GOAL_ENV_KEYS = "a gymnasium.spaces.Dict with keys 'observation', 'achieved_goal' and 'desired_goal'"


@pytest.mark.parametrize(
    ("space", "got"),
    [
        (BOX, "got Box(-1.0, 1.0, (2,), float32)"),
        (spaces.Dict({"observation": BOX, "achieved_goal": BOX}),
         "got a Dict with keys ['achieved_goal', 'observation'], missing 'desired_goal'"),
        (spaces.Dict({"observation": BOX, "desired_goal": BOX}),
         "got a Dict with keys ['desired_goal', 'observation'], missing 'achieved_goal'"),
        (spaces.Dict({"obs": BOX}), "got a Dict with keys ['obs'], missing 'achieved_goal' and 'desired_goal'"),
    ],
)
def test_the_drop_in_on_a_space_that_is_not_a_goal_envs_asks_for_a_goal_env(space: spaces.Space, got: str) -> None:
    with pytest.raises(ValueError) as caught:
        HerReplayBuffer(100, space, spaces.Discrete(4))
    message = str(caught.value)
    assert message.startswith(f"observation_space must be a GoalEnv's for HerReplayBuffer: {GOAL_ENV_KEYS}")
    assert message.endswith(got)


def test_the_drop_in_through_sb3_names_the_env_of_a_partial_goal_env_space() -> None:
    class HalfGoalEnv(GoodReach):
        def __init__(self) -> None:
            super().__init__()
            self.observation_space = spaces.Dict({"observation": BOX, "achieved_goal": BOX})

    with pytest.raises(ValueError, match=r"missing 'desired_goal' \(the env: HalfGoalEnv\)$"):
        DQN("MultiInputPolicy", venv_of(HalfGoalEnv), replay_buffer_class=HerReplayBuffer, **SETTINGS)


def test_the_instruction_buffer_keeps_its_message_unless_the_space_is_a_partial_goal_env() -> None:
    action = spaces.Discrete(4)
    with pytest.raises(ValueError, match=r"^observation_space must be a gymnasium\.spaces\.Dict with keys 'goals'"):
        HindsightInstructionReplayBuffer(100, BOX, action)
    with pytest.raises(ValueError, match=r"^observation_space is missing the goal spec's keys \['goals', 'achieved'\]"):
        HindsightInstructionReplayBuffer(100, spaces.Dict({"obs": BOX}), action)
    partial = spaces.Dict({"observation": BOX, "desired_goal": BOX})
    with pytest.raises(ValueError) as caught:
        HindsightInstructionReplayBuffer(100, partial, action)
    assert str(caught.value).startswith(
        f"observation_space must be a GoalEnv's for HindsightInstructionReplayBuffer: {GOAL_ENV_KEYS} (or an "
        "instruction env's, with the goal spec's keys 'goals' and 'achieved'); got a Dict with keys "
        "['desired_goal', 'observation'], missing 'achieved_goal'"
    )


def test_the_drop_in_still_takes_instruction_envs() -> None:
    venv = make_vec_env(lambda: MazeRunnerEnv(maze_dim=5, num_goals=2, time_limit=20), n_envs=1, seed=0)
    buffer = HerReplayBuffer(100, venv.observation_space, venv.action_space, env=venv)
    assert not buffer.goal_env and buffer.num_goals == 2
