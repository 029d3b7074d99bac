"""Shortest-path expert: optimal inside the env, and usable as an SB3/imitation policy over VecEnvs."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from sb3_hir.envs import MazeRunnerEnv, ShortestPathExpert
from sb3_hir.extras import has

if has("imitation"):  # the 'dagger' extra; tests using it are marked dagger
    from imitation.data import rollout
    from imitation.data.wrappers import RolloutInfoWrapper



def bfs_distance(maze: np.ndarray, source: tuple[int, int], target: tuple[int, int]) -> int:
    """Moves from source to target by repeated 4-neighbour dilation of the free cells (independent of the env)."""
    free = ~maze
    frontier = np.zeros_like(free)
    frontier[source] = True
    steps = 0
    while not frontier[target]:
        grown = frontier.copy()
        grown[1:] |= frontier[:-1]
        grown[:-1] |= frontier[1:]
        grown[:, 1:] |= frontier[:, :-1]
        grown[:, :-1] |= frontier[:, 1:]
        grown &= free
        if (grown == frontier).all():
            raise AssertionError(f"{target} unreachable from {source}")
        frontier = grown
        steps += 1
    return steps


def run_expert_episode(env: MazeRunnerEnv, seed: int) -> tuple[list[int], list[int], dict, bool, bool]:
    """Step the env with its own expert: (steps taken per goal, optimal steps per goal, last info, term, trunc)."""
    env.reset(seed=seed)
    goals = [tuple(g) for g in env.goal_positions.tolist()]
    position = env.start
    optimal = []
    for goal in goals:
        optimal.append(bfs_distance(env.maze, position, goal))
        position = goal
    taken, last_hit = [], 0
    while True:
        _, reward, terminated, truncated, info = env.step(env.expert_action())
        if reward:
            taken.append(env.t - last_hit)
            last_hit = env.t
        if terminated or truncated:
            return taken, optimal, info, terminated, truncated


@pytest.mark.parametrize("randomized", [False, True])
def test_expert_reaches_all_goals_optimally_on_200_mazes(randomized: bool) -> None:
    rng = np.random.default_rng(1234 + randomized)
    for i in range(200):
        maze_dim = int(rng.integers(3, 8)) * 2 + 1  # odd sizes 7..15
        k = int(rng.integers(1, 6))
        env = MazeRunnerEnv(maze_dim=maze_dim, num_goals=k, time_limit=k * maze_dim**2,
                            randomized_actions=randomized)
        taken, optimal, info, terminated, truncated = run_expert_episode(env, seed=i)
        assert terminated and not truncated, f"maze {i}: expert failed"
        assert info == {"is_success": True, "goals_reached": k}
        assert taken == optimal, f"maze {i}: expert took {taken}, shortest paths are {optimal}"


def test_continuous_expert_reaches_all_goals_optimally() -> None:
    for seed in range(30):
        env = MazeRunnerEnv(maze_dim=11, num_goals=3, time_limit=400, continuous=True, randomized_actions=True)
        taken, optimal, info, terminated, _ = run_expert_episode(env, seed)
        assert terminated and info["is_success"] and taken == optimal


def test_expert_action_before_reset_and_after_success() -> None:
    env = MazeRunnerEnv(maze_dim=7, num_goals=1, time_limit=100, randomized_actions=True)
    with pytest.raises(RuntimeError, match="reset"):
        env.expert_action()
    run_expert_episode(env, seed=0)
    action = env.expert_action()  # all goals reached: stay
    assert env.action_permutation[action] == 4


def test_predict_over_dummy_vec_env_with_two_envs() -> None:
    n_envs, k = 2, 3
    venv = DummyVecEnv([lambda: MazeRunnerEnv(num_goals=k, time_limit=300, randomized_actions=True)] * n_envs)
    venv.seed(0)
    expert = ShortestPathExpert(venv)
    assert isinstance(expert, BasePolicy)
    # What imitation's DAgger checks before accepting an expert_policy:
    assert expert.observation_space == venv.observation_space and expert.action_space == venv.action_space
    obs = venv.reset()
    episodes = np.zeros(n_envs, dtype=int)
    returns = np.zeros(n_envs)
    for _ in range(400):
        actions, state = expert.predict(obs, state=None, episode_start=None, deterministic=True)
        assert state is None and actions.shape == (n_envs,) and actions.dtype == np.int64
        assert all(venv.action_space.contains(a) for a in actions)
        obs, rewards, dones, infos = venv.step(actions)
        returns += rewards
        for i in np.flatnonzero(dones):
            assert infos[i]["is_success"] and returns[i] == k  # auto-reset envs keep being solved
            assert not infos[i]["TimeLimit.truncated"]
            returns[i] = 0
            episodes[i] += 1
    assert (episodes >= 2).all()


def test_predict_continuous_actions() -> None:
    venv = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=9, continuous=True, time_limit=200)] * 2)
    venv.seed(3)
    obs = venv.reset()
    expert = ShortestPathExpert(venv)
    successes = 0
    for _ in range(120):
        actions, _ = expert.predict(obs)
        assert actions.shape == (2, 2) and actions.dtype == np.float32
        assert all(venv.action_space.contains(a) for a in actions)
        obs, _, dones, infos = venv.step(actions)
        successes += sum(info["is_success"] for info, done in zip(infos, dones, strict=True) if done)
    assert successes >= 2


@pytest.mark.dagger
def test_imitation_rollout_with_expert() -> None:
    k = 2
    venv = DummyVecEnv([lambda: RolloutInfoWrapper(MazeRunnerEnv(maze_dim=9, num_goals=k, time_limit=200))] * 2)
    venv.seed(5)
    expert = ShortestPathExpert(venv)
    trajectories = rollout.rollout(
        expert, venv, rollout.make_sample_until(min_episodes=4), rng=np.random.default_rng(0), exclude_infos=False
    )
    assert len(trajectories) >= 4
    for trajectory in trajectories:
        assert trajectory.terminal
        assert trajectory.rews.sum() == k
        assert trajectory.infos[-1]["is_success"]
        assert len(trajectory.acts) == len(trajectory.rews) < 200


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_predict_through_subproc_vec_env() -> None:
    venv = SubprocVecEnv([lambda: MazeRunnerEnv(maze_dim=7, num_goals=2, time_limit=100)] * 2, start_method="fork")
    try:
        venv.seed(11)
        obs = venv.reset()
        expert = ShortestPathExpert(venv)
        successes = 0
        for _ in range(60):
            actions, _ = expert.predict(obs)
            np.testing.assert_array_equal(actions, venv.env_method("expert_action"))
            obs, _, dones, infos = venv.step(actions)
            successes += sum(info["is_success"] for info, done in zip(infos, dones, strict=True) if done)
        assert successes >= 2
    finally:
        venv.close()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="venv"):
        ShortestPathExpert(MazeRunnerEnv())  # type: ignore[arg-type]
    single = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=7)])
    with pytest.raises(ValueError, match="method_name"):
        ShortestPathExpert(single, method_name="")
    expert = ShortestPathExpert(single)
    obs = single.reset()
    unbatched = {key: value[0] for key, value in obs.items()}
    action, _ = expert.predict(unbatched)
    assert np.ndim(action) == 0 and action == single.env_method("expert_action")[0]
    pair = DummyVecEnv([lambda: MazeRunnerEnv(maze_dim=7)] * 2)
    pair_obs = pair.reset()
    pair_expert = ShortestPathExpert(pair)
    with pytest.raises(ValueError, match="observation"):
        pair_expert.predict({key: np.concatenate([value] * 2) for key, value in pair_obs.items()})
    with pytest.raises(ValueError, match="unbatched"):
        pair_expert.predict({key: value[0] for key, value in pair_obs.items()})
