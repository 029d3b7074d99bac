"""Per-action features: the generic effect table, MazeRunner's move belief, their wrapper and its contract."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from buffer_fill import filled_by_random_actions
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir import ActionEffectWrapper, ActionFeaturesWrapper
from sb3_hir.action_features import EffectTable
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.envs.mazerunner import ACTION_DIRECTIONS
from sb3_hir.envs.move_belief import MoveBelief
from sb3_hir.extractors import HistoryExtractor
from sb3_hir.history import HistoryWrapper
from sb3_hir.testing import check_instruction_env


def maze(time_limit: int = 40, randomized_actions: bool = True, **kwargs) -> ActionEffectWrapper:
    env = MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=time_limit, randomized_actions=randomized_actions)
    return ActionEffectWrapper(env, **kwargs)


def test_table_keeps_each_actions_last_effect_through_blocked_tries_and_restarts_at_reset():
    env = maze()
    assert env.observation_space["effects"].shape == (5, 10)  # 7 obs columns + taken, effect known, no effect
    rng = np.random.default_rng(0)
    blocked_after_a_move = 0
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        np.testing.assert_array_equal(obs["effects"], np.zeros((5, 10), np.float32))
        expected = np.zeros((5, 10), np.float32)
        done = False
        while not done:
            action = int(rng.integers(5))
            before = obs["obs"]
            obs, _, terminated, truncated, _ = env.step(action)
            change = obs["obs"] - before
            expected[action, 7] = 1.0
            if np.abs(change[:2]).max() > 0:  # MazeRunner declares its row and column as the effect columns
                expected[action, :7] = change
                expected[action, 8] = 1.0
            else:
                blocked_after_a_move += expected[action, 8] == 1.0
                expected[action, 9] = 1.0
            np.testing.assert_array_equal(obs["effects"], expected)
            assert obs in env.observation_space
            done = terminated or truncated
    assert blocked_after_a_move >= 5  # the case the first version erased


def test_table_reveals_the_episodes_action_permutation():
    """Every action seen to move shows the direction the episode's permutation gives it, even after wall bumps."""
    env = maze(time_limit=60)
    checked, permuted = 0, 0
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        permutation = env.unwrapped.action_permutation
        permuted += not np.array_equal(permutation, np.arange(5))
        for _ in range(60):
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(5)))
            if terminated or truncated:
                break
        table = obs["effects"]
        for action in range(5):
            if table[action, 8] == 0.0:
                continue
            moved = np.rint(table[action, :2] * env.unwrapped.maze_dim).astype(int)  # (d_row, d_col)
            np.testing.assert_array_equal(moved, ACTION_DIRECTIONS[permutation[action]])
            checked += 1
    assert checked >= 12 and permuted >= 4


def test_table_does_not_depend_on_the_instruction_and_the_buffer_keeps_it():
    check_instruction_env(HistoryWrapper(maze(time_limit=25), length=3), n_episodes=3)
    buffer = filled_by_random_actions(lambda: maze(time_limit=12), steps=150)
    samples = buffer.sample(256)
    info = buffer.last_sample_info
    assert info.relabeled.any()
    np.testing.assert_array_equal(samples.observations["effects"].numpy(),
                                  buffer.observations["effects"][info.rows, info.env_indices])
    np.testing.assert_array_equal(samples.next_observations["effects"].numpy(),
                                  buffer.next_observations["effects"][info.rows, info.env_indices])


def test_unchanged_dqn_with_the_table_in_its_extractor_trains_on_it():
    venv = make_vec_env(lambda: HistoryWrapper(maze(time_limit=15), length=4), n_envs=2, seed=0)
    model = DQN("MultiInputPolicy", venv, buffer_size=2_000, learning_starts=100, batch_size=32,
                replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(hindsight_goals="some"),
                policy_kwargs=dict(features_extractor_class=HistoryExtractor, net_arch=[32],
                                   features_extractor_kwargs=dict(keys=["obs", "goals", "effects"], hidden_size=16)),
                seed=0)
    extractor = model.policy.q_net.features_extractor
    obs = venv.reset()
    tensors = {k: th.as_tensor(v) for k, v in obs.items()}
    changed = {**tensors, "effects": tensors["effects"] + 1.0}
    with th.no_grad():
        assert not th.equal(extractor(tensors), extractor(changed))  # the policy sees the table
    model.learn(300)
    action, _ = model.predict(venv.reset(), deterministic=True)
    assert action.shape == (2,)


@pytest.mark.parametrize("kwargs,match", [
    (dict(keys=("goals",)), "must not include the instruction key"),
    (dict(keys=("nope",)), r"keys \['nope'\] are not in the observation space"),
    (dict(keys=()), "keys must be one or more"),
    (dict(key="obs"), "key must be a str not already in the observation space"),
])
def test_wrapper_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        maze(**kwargs)


def test_wrapper_needs_discrete_actions_box_keys_and_a_reset():
    with pytest.raises(ValueError, match=r"env\.action_space must be Discrete"):
        ActionEffectWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, continuous=True))
    with pytest.raises(ValueError, match="Dict observation space"):
        ActionEffectWrapper(gym.make("CartPole-v1"))

    class DiscreteKey(gym.ObservationWrapper):
        def __init__(self, env: gym.Env) -> None:
            super().__init__(env)
            self.observation_space = gym.spaces.Dict({**env.observation_space.spaces, "room": gym.spaces.Discrete(3)})

        def observation(self, obs):
            return {**obs, "room": 0}

    with pytest.raises(ValueError, match="keys must name Box observation keys; 'room'"):
        ActionEffectWrapper(DiscreteKey(MazeRunnerEnv(maze_dim=7, num_goals=2)), keys=("obs", "room"))
    with pytest.raises(RuntimeError, match="before reset"):
        maze().step(0)


# ---------------------------------------------------------------------------------------------------- MoveBelief
def belief_maze(time_limit: int = 60, randomized_actions: bool = True) -> ActionFeaturesWrapper:
    env = MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=time_limit, randomized_actions=randomized_actions)
    return ActionFeaturesWrapper(env, "env")


def test_move_belief_always_holds_the_true_move_and_settles_the_controls():
    env = belief_maze()
    settled = []
    for seed in range(8):
        obs, _ = env.reset(seed=seed)
        assert obs["action_features"].shape == (5, 6)
        np.testing.assert_array_equal(obs["action_features"][:, :5], np.ones((5, 5), np.float32))
        permutation = env.unwrapped.action_permutation
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(int(rng.integers(5)))
            belief = obs["action_features"][:, :5].astype(bool)
            assert belief[np.arange(5), permutation].all()  # the true move is never ruled out
            done = terminated or truncated
        settled.append(int((belief.sum(axis=1) == 1).sum()))
    assert sum(n == 5 for n in settled) >= 5  # in most episodes, random steps on 7x7 identify every control


def test_move_belief_rules_out_open_moves_after_a_blocked_try_and_a_taken_move_for_the_others():
    from sb3_hir.envs.move_belief import MoveBelief

    n = 7
    belief = MoveBelief(n)
    cell = np.array([3 / n, 3 / n, 0, 2 / n, 1 / n, 0, 0], np.float32)  # walls west and south; north, east open
    table = belief.reset({"obs": cell})
    table = belief.update(2, {"obs": cell})  # action 2 did not move: stay, west or south
    np.testing.assert_array_equal(table[2], [1, 0, 0, 1, 1, 1])
    moved = cell.copy()
    moved[0] -= 1 / n  # action 0 moved north
    table = belief.update(0, {"obs": moved})
    np.testing.assert_array_equal(table[0], [0, 1, 0, 0, 0, 1])
    assert not table[[1, 2, 3, 4], 1].any()  # north is action 0's, so no other action's


class NumpyMoveBelief:
    """The first MoveBelief, on boolean arrays: the oracle of the bit-mask one (same rows, step by step)."""

    moves = ((0, -1), (-1, 0), (0, 1), (1, 0), (0, 0))

    def __init__(self, maze_dim: int) -> None:
        self.n = maze_dim
        self.possible = np.ones((5, 5), dtype=bool)
        self.taken = np.zeros(5, dtype=bool)

    def observe(self, obs):
        o = np.asarray(obs["obs"], dtype=np.float64)
        self.cell = (round(o[0] * self.n), round(o[1] * self.n))
        self.open = np.append(o[2:6] > 0.5 / self.n, False)

    def table(self):
        return np.concatenate([self.possible, self.taken[:, None]], axis=1).astype(np.float32)

    def reset(self, obs):
        self.possible[:] = True
        self.taken[:] = False
        self.observe(obs)
        return self.table()

    def update(self, action, obs):
        before, was_open = self.cell, self.open
        self.observe(obs)
        moved = (self.cell[0] - before[0], self.cell[1] - before[1])
        self.taken[action] = True
        if moved != (0, 0):
            self.possible[action] = [m == moved for m in self.moves]
        else:
            self.possible[action] &= ~was_open
        possible = self.possible
        while True:
            before = possible.copy()
            for a in np.flatnonzero(possible.sum(axis=1) == 1):
                possible[np.arange(5) != a] &= ~possible[a]
            for m in np.flatnonzero(possible.sum(axis=0) == 1):
                a = int(np.flatnonzero(possible[:, m])[0])
                possible[a] = False
                possible[a, m] = True
            if np.array_equal(before, possible) or not possible.any(axis=1).all():
                return self.table()


@pytest.mark.parametrize("randomized_actions", [True, False])
def test_move_belief_gives_the_numpy_beliefs_rows_step_by_step(randomized_actions):
    env = MazeRunnerEnv(maze_dim=9, num_goals=2, time_limit=80, randomized_actions=randomized_actions)
    for seed in range(12):
        obs, _ = env.reset(seed=seed)
        belief, oracle = MoveBelief(9), NumpyMoveBelief(9)
        np.testing.assert_array_equal(belief.reset(obs), oracle.reset(obs))
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            action = int(rng.integers(5))
            obs, _, terminated, truncated, _ = env.step(action)
            table = belief.update(action, obs)
            assert table.dtype == np.float32 and table.shape == (5, 6)
            np.testing.assert_array_equal(table, oracle.update(action, obs), err_msg=f"seed {seed}")
            done = terminated or truncated


def test_features_hold_only_the_agents_own_observations_and_actions():
    """Replaying the recorded obs and actions into a fresh tracker rebuilds the table: nothing else enters."""
    for wrapped in (belief_maze(time_limit=30), maze(time_limit=30)):
        obs, _ = wrapped.reset(seed=3)
        tracker = type(wrapped.features)(wrapped.unwrapped.maze_dim) if wrapped.key == "action_features" else \
            EffectTable(wrapped.unwrapped)
        bare = {k: v for k, v in obs.items() if k != wrapped.key}
        np.testing.assert_array_equal(tracker.reset({"obs": bare["obs"]}), obs[wrapped.key])
        rng = np.random.default_rng(1)
        done = False
        while not done:
            action = int(rng.integers(5))
            obs, _, terminated, truncated, _ = wrapped.step(action)
            np.testing.assert_array_equal(tracker.update(action, {"obs": obs["obs"]}), obs[wrapped.key])
            done = terminated or truncated


def test_check_instruction_env_passes_with_the_envs_features():
    check_instruction_env(HistoryWrapper(belief_maze(time_limit=25), length=3), n_episodes=3)


def test_features_wrapper_bad_input():
    with pytest.raises(ValueError, match="features must be one of"):
        ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2), "oracle")
    with pytest.raises(ValueError, match="features='env': CartPoleDict declares no action_features"):
        ActionFeaturesWrapper(CartPoleDict(), "env")
    with pytest.raises(ValueError, match="action_features needs Discrete actions"):
        ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, continuous=True), "env")
    with pytest.raises(TypeError, match="features must give an ActionFeatures"):
        ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2), lambda env: object())
    with pytest.raises(ValueError, match="key must be a str not already in the observation space"):
        ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2), "env", key="goals")
    with pytest.raises(ValueError, match="columns must be one or more int indices into the 7 flattened columns"):
        ActionEffectWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2), columns=[7])
    with pytest.raises(RuntimeError, match="before reset"):
        belief_maze().step(0)


class CartPoleDict(gym.Env):
    """A Dict env with Discrete actions that declares no features of its own."""

    observation_space = gym.spaces.Dict({"obs": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"obs": np.zeros(2, np.float32)}, {}

    def step(self, action):
        return {"obs": np.full(2, float(action), np.float32)}, 0.0, False, False, {}


def test_generic_table_works_on_an_env_without_declarations():
    env = ActionEffectWrapper(CartPoleDict())
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)  # no change: taken, seen without effect
    np.testing.assert_array_equal(obs["effects"][0], [0, 0, 1, 0, 1])
    obs, *_ = env.step(1)  # (0, 0) -> (1, 1)
    np.testing.assert_array_equal(obs["effects"][1], [1, 1, 1, 1, 0])
    obs, *_ = env.step(1)  # no change again: the effect stays known
    np.testing.assert_array_equal(obs["effects"][1], [1, 1, 1, 1, 1])


def snapshot(tracker) -> bytes:
    """Every attribute of a tracker, pickled, to assert that a refused call changed nothing."""
    return pickle.dumps(tracker)


def assert_unchanged(tracker, before: bytes) -> None:
    assert pickle.dumps(tracker) == before


def test_move_belief_on_an_env_that_is_no_mazerunner_names_the_missing_obs_key():
    from stable_baselines3.common.envs import BitFlippingEnv

    env = ActionFeaturesWrapper(BitFlippingEnv(n_bits=5), lambda env: MoveBelief(7))
    belief = env.features
    before = snapshot(belief)
    with pytest.raises(ValueError, match=r"MoveBelief needs MazeRunner's observation, a dict with an 'obs' key .*"
                                         r"got keys \['observation', 'achieved_goal', 'desired_goal'\]"):
        env.reset(seed=0)
    assert_unchanged(belief, before)
    with pytest.raises(RuntimeError, match="before reset"):  # the wrapper did not start either
        env.step(0)
    with pytest.raises(ValueError, match=r"a dict with an 'obs' key .*got a ndarray"):
        belief.reset(np.zeros(7, np.float32))
    with pytest.raises(ValueError, match=r"obs\['obs'\] must be MazeRunner's.*got shape \(2, 7\)"):
        belief.reset({"obs": np.zeros((2, 7), np.float32)})
    with pytest.raises(ValueError, match=r"obs\['obs'\] must be MazeRunner's.*got shape \(7,\), dtype <U1"):
        belief.reset({"obs": np.array(list("abcdefg"))})
    assert_unchanged(belief, before)


def test_move_belief_of_another_maze_size_names_the_envs():
    env = ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=9, num_goals=2), lambda env: MoveBelief(7))
    before = snapshot(env.features)
    with pytest.raises(ValueError, match=r"maze_dim=7 does not match the env's maze: obs\['obs'\]\[:6\] \* 7 = "
                                         r"\[5\.444, .*not cells of a 7x7 maze; it fits maze_dim=9"):
        env.reset(seed=0)
    assert_unchanged(env.features, before)
    # a multiple of the env's side fits every position; the first move (3 of its cells) gives it away
    env = MazeRunnerEnv(maze_dim=5, num_goals=2, randomized_actions=False)
    obs, _ = env.reset(seed=0)
    belief = MoveBelief(15)
    belief.reset(obs)
    north = 1  # the spawn area of a 5x5 maze is open to the north
    obs, *_ = env.step(north)
    before = snapshot(belief)
    with pytest.raises(ValueError, match=r"maze_dim=15 does not match the env's maze: action 1 moved the agent by "
                                         r"\(-3, 0\) cells, and MazeRunner's moves are one cell"):
        belief.update(north, obs)
    assert_unchanged(belief, before)
    right = MoveBelief(5)
    right.reset(env.reset(seed=0)[0])
    assert right.update(north, env.step(north)[0])[north].tolist() == [0, 1, 0, 0, 0, 1]


@pytest.mark.parametrize(("args", "match"), [
    ((7.0,), r"maze_dim must be an int >= 5; got 7\.0 \(the env's maze_dim\)"),
    ((3,), r"maze_dim must be an int >= 5; got 3"),
    ((True,), r"maze_dim must be an int >= 5; got True"),
    ((8,), r"maze_dim must be odd, as MazeRunner's are"),
    ((7, 5.0), r"n_actions must be 5 \(MazeRunner's moves\); got 5\.0"),
    ((7, 4), r"n_actions must be 5 \(MazeRunner's moves\); got 4"),
])
def test_move_belief_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        MoveBelief(*args)


def test_move_belief_update_refuses_a_bad_action_or_a_missing_key_and_changes_nothing():
    env = MazeRunnerEnv(maze_dim=7, num_goals=2)
    obs, _ = env.reset(seed=0)
    belief = MoveBelief(7)
    with pytest.raises(RuntimeError, match=r"MoveBelief\.update\(\) was called before reset\(\)"):
        belief.update(0, obs)
    belief.reset(obs)
    obs, *_ = env.step(1)
    before = snapshot(belief)
    for action in (5, -1, 1.0, True, "1", None):
        with pytest.raises(ValueError, match=r"action must be an int in \[0, 5\); got"):
            belief.update(action, obs)
        assert_unchanged(belief, before)
    with pytest.raises(ValueError, match=r"MoveBelief needs MazeRunner's observation, a dict with an 'obs' key; got "
                                         r"\['goals'\]"):
        belief.update(1, {"goals": obs["goals"]})
    assert_unchanged(belief, before)
    assert belief.update(np.int64(1), obs)[1, -1] == 1.0  # numpy ints are ints


# ---------------------------------------------------------------------------------------------------- clock columns
class AmagoMazeRunner(MazeRunnerEnv):
    """MazeRunner as AMAGO ships it: ``timer / time_limit`` in ``obs[6]`` and no declared effect columns."""

    effect_columns = None


def test_effect_table_leaves_a_clock_out_and_reads_a_blocked_try_as_without_effect():
    """Without declared columns the clock in obs[6] moved on every step, so a wall bump read as an effect and
    overwrote the action's known move; found as a clock, it leaves the table that declared columns give."""
    env = ActionEffectWrapper(AmagoMazeRunner(maze_dim=7, num_goals=2, time_limit=40, randomized_actions=True))
    declared_columns = EffectTable(env.unwrapped, columns=range(6))  # row, column and the four wall sensors
    every_column = EffectTable(env.unwrapped, columns=range(7))  # the table before: the clock counts
    rng = np.random.default_rng(0)
    found_at, blocked_after_a_move, differs = None, 0, 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for episode in range(4):
            obs, _ = env.reset(seed=episode)
            declared_columns.reset(obs)
            every_column.reset(obs)
            done, step = False, 0
            while not done:
                action = int(rng.integers(5))
                before, row = obs["obs"], obs["effects"][action].copy()
                row_is_clean = bool(env.features.clock_columns)  # built without the clock
                obs, _, terminated, truncated, _ = env.step(action)
                expected = declared_columns.update(action, obs)
                differs += not np.array_equal(every_column.update(action, obs), expected)
                step += 1
                if found_at is None and env.features.clock_columns:
                    found_at = (episode, step)
                if found_at is not None:
                    np.testing.assert_array_equal(obs["effects"], expected)
                    # a known move, then a bump: seen without effect, the move kept
                    if row_is_clean and row[8] == 1.0 and np.array_equal(obs["obs"][:6], before[:6]):
                        assert obs["effects"][action, 9] == 1.0
                        np.testing.assert_array_equal(obs["effects"][action, :9], row[:9])
                        blocked_after_a_move += 1
                done = terminated or truncated
    assert found_at == (0, 8)  # the first CLOCK_STEPS steps
    assert env.features.clock_columns == (6,)
    clock_warnings = [w for w in caught if "a clock, not an effect" in str(w.message)]
    assert len(clock_warnings) == 1
    assert "columns [6] of keys ['obs'] changed by the same amount on each of the first 8 steps" in \
        str(clock_warnings[0].message)
    assert blocked_after_a_move >= 5 and differs >= 5  # the case, and the fault it had without the search


def test_effect_table_finds_no_clock_where_none_is_and_stays_as_it_was():
    """The achieved cell has no clock: after the search every column still counts, byte for byte as given."""
    env = ActionEffectWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=30, randomized_actions=True),
                              keys=("achieved",))
    given = EffectTable(env.unwrapped, keys=("achieved",), columns=[0, 1])
    rng = np.random.default_rng(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for episode in range(2):
            obs, _ = env.reset(seed=episode)
            np.testing.assert_array_equal(given.reset(obs), obs["effects"])
            done = False
            while not done:
                action = int(rng.integers(5))
                obs, _, terminated, truncated, _ = env.step(action)
                np.testing.assert_array_equal(given.update(action, obs), obs["effects"])
                done = terminated or truncated
    assert env.features.clock_columns == () and env.features.columns.tolist() == [0, 1]
    env = ActionEffectWrapper(AmagoMazeRunner(maze_dim=7, num_goals=2), columns=[0, 1])  # columns given: no search
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for action in [0, 1, 2, 3, 4] * 4:
            env.step(action)
    assert env.features.clock_columns == ()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(columns=[[0, 1]]), ValueError, r"columns must be one or more int indices into the 7 flattened columns"),
    (dict(columns=3), ValueError, r"columns must be one or more int indices.*got 3"),
    (dict(columns="01"), ValueError, r"columns must be one or more int indices.*got '01'"),
    (dict(columns=[0.0, 1.0]), ValueError, r"columns must be one or more int indices"),
    (dict(columns=[True, False]), ValueError, r"columns must be one or more int indices"),
    (dict(atol=-1.0), ValueError, r"atol must be a finite number >= 0; got -1\.0"),
    (dict(atol=True), ValueError, r"atol must be a finite number >= 0; got True"),
    (dict(atol=float("inf")), ValueError, r"atol must be a finite number >= 0; got inf"),
])
def test_effect_table_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        EffectTable(MazeRunnerEnv(maze_dim=7, num_goals=2), **kwargs)


def test_effect_table_reset_and_update_refuse_bad_input_and_change_nothing():
    env = MazeRunnerEnv(maze_dim=7, num_goals=2)
    table = EffectTable(env)
    obs, _ = env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"EffectTable\.update\(\) was called before reset\(\)"):
        table.update(0, obs)
    table.reset(obs)
    obs, *_ = env.step(1)
    table.update(1, obs)
    before = snapshot(table)
    for bad in ({"goals": obs["goals"]}, {"obs": np.zeros(3, np.float32)}, np.zeros(7, np.float32)):
        with pytest.raises(ValueError, match=r"obs must be a dict holding the keys \['obs'\] with 7 numbers in all"):
            table.reset(bad)
        assert_unchanged(table, before)
    with pytest.raises(ValueError, match=r"with 7 numbers in all, as the env's observation space gave them; got 1 "
                                         r"numbers"):
        table.update(0, {"obs": np.zeros(1, np.float32)})  # broadcast silently before
    for action in (5, -1, 1.0, True, "1"):
        with pytest.raises(ValueError, match=r"action must be an int in \[0, 5\) \(the env's Discrete actions\)"):
            table.update(action, obs)
    assert_unchanged(table, before)
    assert table.update(np.int64(1), obs)[1, 7] == 1.0
    with pytest.raises(TypeError, match=r"env must be a gymnasium\.Env; got str"):
        EffectTable("MazeRunner-v0")


def test_features_wrapper_refuses_a_table_that_does_not_fit_the_env():
    with pytest.raises(TypeError, match=r"env must be a gymnasium\.Env; got DummyVecEnv"):
        ActionEffectWrapper(make_vec_env(lambda: MazeRunnerEnv(maze_dim=7, num_goals=2), n_envs=1))
    with pytest.raises(ValueError, match=r"features gave a table of shape \(5, 6\), whose 5 rows must be the env's 2 "
                                         r"actions \(Discrete\(2\)\)"):
        ActionFeaturesWrapper(CartPoleDict(), lambda env: MoveBelief(7))
    with pytest.raises(ValueError, match=r"env\.action_space must be Discrete to keep one row per action; got Box"):
        ActionFeaturesWrapper(MazeRunnerEnv(maze_dim=7, num_goals=2, continuous=True), lambda env: MoveBelief(7))
