"""MazeRunner tests: the issue's semantics, checked against small independent reference computations.

References used here are deliberately naive (per-cell loops, a numpy flood fill by repeated dilation, a per-step
model of the goal logic) so that they share no code with the env's vectorised tables.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import sb3_hir.envs
from sb3_hir.envs import MazeRunnerEnv, mazerunner
from sb3_hir.envs.mazerunner import (
    ACTION_DIRECTIONS,
    make_maze,
    min_reachable_goal_cells,
    random_maze,
    reachable_cells,
    wall_distances,
)

SB3_SHAPE_WARNING = "ignore:Your observation .* has an unconventional shape:UserWarning"
NO_SPEC_WARNING = "ignore:.*Not able to test alternative render modes:UserWarning"


def brute_wall_distances(maze: np.ndarray, row: int, col: int) -> list[int]:
    """Walk from (row, col) in each direction, counting free cells until a wall."""
    out = []
    for dr, dc in ACTION_DIRECTIONS[:4]:
        r, c, count = row + dr, col + dc, 0
        while not maze[r, c]:
            count += 1
            r, c = r + dr, c + dc
        out.append(count)
    return out


def dilation_reachable(maze: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Reachable free cells by repeated 4-neighbour dilation: bool (n, n)."""
    free = ~maze
    reach = np.zeros_like(free)
    reach[start] = True
    while True:
        grown = reach.copy()
        grown[1:] |= reach[:-1]
        grown[:-1] |= reach[1:]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown &= free
        if (grown == reach).all():
            return reach
        reach = grown


def random_episode(env: MazeRunnerEnv, seed: int, steps: int) -> list[tuple]:
    """(obs, reward, terminated, truncated, info) of a seeded random-action episode, stopping at its end."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        action = rng.uniform(-1, 1, 2).astype(np.float32) if env.continuous else int(rng.integers(5))
        result = env.step(action)
        out.append(result)
        if result[2] or result[3]:
            break
    return out


# ---------------------------------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"maze_dim": 4}, "maze_dim"),
        ({"maze_dim": 0}, "maze_dim"),
        ({"maze_dim": 11.0}, "maze_dim"),
        ({"maze_dim": True}, "maze_dim"),
        ({"num_goals": 0}, "num_goals"),
        ({"maze_dim": 5, "num_goals": 3}, "num_goals"),
        ({"maze_dim": 7, "num_goals": 14}, "num_goals"),
        ({"maze_dim": 11, "num_goals": 30}, "num_goals"),
        ({"time_limit": 0}, "time_limit"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MazeRunnerEnv(**kwargs)


def test_largest_valid_num_goals_always_fits() -> None:
    for n in (5, 7, 9, 11, 13):
        assert min_reachable_goal_cells(n) == (2 if n == 5 else 4 * n - 15)
    env = MazeRunnerEnv(maze_dim=7, num_goals=13)
    for seed in range(20):
        env.reset(seed=seed)
        assert len({tuple(g) for g in env.goal_positions.tolist()}) == 13


@pytest.mark.parametrize("maze_dim, match", [
    (10, r"maze_dim must be an odd int in \[5, 501\].*got 10; use 9 or 11"),
    (10**4, r"maze_dim must be an odd int in \[5, 501\].*larger mazes outgrow memory.*got 10000"),
])
def test_even_or_huge_maze_dim_is_rejected_not_changed(maze_dim, match) -> None:
    with pytest.raises(ValueError, match=match):
        MazeRunnerEnv(maze_dim=maze_dim)
    with pytest.raises(ValueError, match=match):
        gymnasium.make("sb3_hir/MazeRunner-v0", maze_dim=maze_dim)


def test_spaces_follow_the_maze_size() -> None:
    env = MazeRunnerEnv(maze_dim=11, num_goals=4)
    obs, _ = env.reset(seed=0)
    assert env.maze_dim == 11 and env.maze.shape == (11, 11)
    assert env.observation_space["goals"].shape == (4, 2)
    assert obs["obs"].dtype == np.float32 and obs["obs"].shape == (7,)
    assert obs["goals"].dtype == np.int32 and obs["goals"].shape == (4, 2)
    assert obs["achieved"].dtype == np.int32 and obs["achieved"].shape == (1, 2)
    assert env.action_space == gymnasium.spaces.Discrete(5)
    assert MazeRunnerEnv(continuous=True).action_space == gymnasium.spaces.Box(-1, 1, (2,), np.float32)


# ---------------------------------------------------------------------------------------------------- checkers
@pytest.mark.filterwarnings(SB3_SHAPE_WARNING, NO_SPEC_WARNING)
@pytest.mark.parametrize("continuous", [False, True])
def test_gymnasium_and_sb3_env_checkers_pass(continuous: bool) -> None:
    for render_mode in (None, "rgb_array", "ansi"):
        gymnasium_check_env(MazeRunnerEnv(continuous=continuous, render_mode=render_mode, randomized_actions=True))
        sb3_check_env(MazeRunnerEnv(continuous=continuous, render_mode=render_mode), warn=True)
    # Through the registry: also exercises every declared render mode via the spec.
    made = gymnasium.make("sb3_hir/MazeRunner-v0", maze_dim=7, num_goals=2, continuous=continuous)
    gymnasium_check_env(made.unwrapped)


def test_registration_is_idempotent_and_make_passes_kwargs() -> None:
    importlib.reload(sb3_hir.envs)  # registering twice must not raise
    env = gymnasium.make("sb3_hir/MazeRunner-v0", maze_dim=9, num_goals=5, time_limit=7)
    obs, info = env.reset(seed=1)
    assert env.unwrapped.maze_dim == 9 and obs["goals"].shape == (5, 2)
    assert info == {"is_success": False, "goals_reached": 0}


def test_gym_make_works_in_a_fresh_interpreter_in_the_documented_forms() -> None:
    """pyproject.toml's comment: the module-prefixed id works on every gymnasium, the bare id on 0.29 only."""
    code = (
        "import sys, gymnasium\n"
        "assert 'sb3_hir.envs.mazerunner' not in sys.modules\n"
        "try:\n"
        "    gymnasium.make('sb3_hir/MazeRunner-v0')\n"
        "    print('bare id works')\n"
        "except gymnasium.error.NamespaceNotFound:\n"
        "    print('bare id needs import')\n"
        "env = gymnasium.make('sb3_hir:sb3_hir/MazeRunner-v0', maze_dim=7)\n"
        "assert env.unwrapped.maze_dim == 7\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    expected = "bare id works" if gymnasium.__version__.startswith("0.") else "bare id needs import"
    assert expected in out


# ---------------------------------------------------------------------------------------------------- maze
@pytest.mark.parametrize("n", [5, 7, 11, 15, 21])
def test_maze_layout_spawn_area_and_border(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(10):
        maze = make_maze(n, rng)
        assert maze.shape == (n, n) and maze.dtype == bool
        assert maze[0].all() and maze[-1].all() and maze[:, 0].all() and maze[:, -1].all()
        spawn = maze[max(1, n - 5) : n - 1, 1 : n - 1].copy()
        expected = np.zeros_like(spawn)
        # walls in columns n//2 - 1 and n//2 + 1 on rows n-4..n-2 (spawn rows start at max(1, n-5))
        first = n - 4 - max(1, n - 5)
        expected[first:, n // 2 - 2] = True
        expected[first:, n // 2] = True
        np.testing.assert_array_equal(spawn, expected)
        assert not maze[n - 2, n // 2]


def test_random_maze_is_a_real_maze_and_seeded() -> None:
    a = random_maze(11, np.random.default_rng(5))
    b = random_maze(11, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert 0.2 < a[1:-1, 1:-1].mean() < 0.8  # interior neither empty nor solid
    assert any(not np.array_equal(a, random_maze(11, np.random.default_rng(s))) for s in range(6, 9))
    with pytest.raises(ValueError, match="size"):
        random_maze(10, np.random.default_rng(0))


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    maze_dim=st.integers(2, 10).map(lambda half: 2 * half + 1),  # odd sizes 5..21
    num_goals=st.integers(1, 12),
    randomized=st.booleans(),
)
def test_goals_distinct_free_reachable_not_start(seed: int, maze_dim: int, num_goals: int, randomized: bool) -> None:
    n = maze_dim + 1 - maze_dim % 2
    k = min(num_goals, min_reachable_goal_cells(n))
    env = MazeRunnerEnv(maze_dim=maze_dim, num_goals=k, randomized_actions=randomized)
    obs, _ = env.reset(seed=seed)
    goals = env.goal_positions
    assert goals.shape == (k, 2)
    np.testing.assert_array_equal(obs["goals"], goals)
    assert len({tuple(g) for g in goals.tolist()}) == k
    reach = dilation_reachable(env.maze, env.start)
    for r, c in goals.tolist():
        assert (r, c) != env.start
        assert not env.maze[r, c]
        assert reach[r, c]
    expected_reachable = np.flatnonzero(reach.ravel())
    np.testing.assert_array_equal(reachable_cells(env.maze, env.start), expected_reachable)
    assert sorted(env.action_permutation.tolist()) == [0, 1, 2, 3, 4]


def test_goals_avoid_free_cells_the_start_cannot_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random-walk generator grows walls as a forest, so its free cells are all connected; a generator that
    encloses a pocket must still never get goals placed inside it."""
    n = 11
    pocket_maze = np.zeros((n, n), dtype=np.uint8)
    pocket_maze[[0, -1]] = 1
    pocket_maze[:, [0, -1]] = 1
    pocket_maze[1:4, 3] = 1
    pocket_maze[3, 1:3] = 1  # encloses (1..2, 1..2)
    monkeypatch.setattr(mazerunner, "_random_maze_flat", lambda n_, rng, c, d: bytearray(pocket_maze.tobytes()))
    env = MazeRunnerEnv(maze_dim=n, num_goals=min_reachable_goal_cells(n))
    seen = set()
    for seed in range(30):
        env.reset(seed=seed)
        assert env.maze[1:4, 3].all()
        seen |= {tuple(g) for g in env.goal_positions.tolist()}
    pocket = {(1, 1), (1, 2), (2, 1), (2, 2)}
    assert not seen & pocket
    reachable_free = {tuple(x) for x in np.argwhere(dilation_reachable(env.maze, env.start))} - {env.start}
    assert seen <= reachable_free and len(seen) > 0.9 * len(reachable_free)


# ---------------------------------------------------------------------------------------------------- sensors
@pytest.mark.parametrize("n", [5, 7, 9, 13, 17])
def test_wall_distance_table_matches_brute_force(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    for _ in range(5):
        maze = make_maze(n, rng)
        table = wall_distances(maze)
        for r, c in zip(*np.nonzero(~maze), strict=True):
            assert table[r, c].tolist() == brute_wall_distances(maze, r, c)


@pytest.mark.parametrize("randomized", [False, True])
def test_observations_along_trajectories_match_brute_force(randomized: bool) -> None:
    env = MazeRunnerEnv(maze_dim=11, num_goals=3, time_limit=120, randomized_actions=randomized)
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        trajectory = [(obs, 0)] + [(step[0], t + 1) for t, step in enumerate(random_episode(env, seed, 200))]
        for o, t in trajectory:
            r, c = o["achieved"][0].tolist()
            n = env.maze_dim
            assert not env.maze[r, c]
            expected = [r / n, c / n] + [d / n for d in brute_wall_distances(env.maze, r, c)] + [t / env.time_limit]
            np.testing.assert_array_equal(o["obs"], np.array(expected, dtype=np.float32))
            assert o["obs"] in env.observation_space["obs"]


# ---------------------------------------------------------------------------------------------------- dynamics
@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("randomized", [False, True])
def test_moves_follow_permuted_directions_and_walls_block(continuous: bool, randomized: bool) -> None:
    env = MazeRunnerEnv(maze_dim=9, num_goals=2, time_limit=300, randomized_actions=randomized, continuous=continuous)
    rng = np.random.default_rng(0)
    permutations = set()
    for seed in range(8):
        env.reset(seed=seed)
        permutations.add(tuple(env.action_permutation.tolist()))
        for _ in range(60):
            before = env.agent_pos
            action = rng.uniform(-1, 1, 2).astype(np.float32) if continuous else int(rng.integers(5))
            dr, dc = ACTION_DIRECTIONS[int(env.action_permutation[env.action_index(action)])]
            target = (before[0] + dr, before[1] + dc)
            obs, *_, terminated, truncated, _ = env.step(action)
            expected = before if env.maze[target] else target
            assert env.agent_pos == expected == tuple(obs["achieved"][0].tolist())
            if terminated or truncated:
                break
    assert (len(permutations) > 1) == randomized


def test_continuous_mapping_dead_zone_and_axis() -> None:
    env = MazeRunnerEnv(continuous=True)
    env.reset(seed=0)
    cases = {
        (0.0, 0.0): 4,
        (0.3, -0.32): 4,
        (1 / 3, 0.0): 2,
        (-0.5, 0.4): 0,
        (0.1, -0.9): 1,
        (0.2, 0.34): 3,
        (0.6, -0.6): 2,  # tie goes to the x (column) axis
        (-1.0, 1.0): 0,
    }
    for (x, y), index in cases.items():
        assert env.action_index(np.array([x, y], dtype=np.float32)) == index
    for bad in ([0.5], [0.5, 0.1, 0.0], [np.nan, 0.0], [np.inf, 0.0]):
        with pytest.raises(ValueError, match="action"):
            env.step(np.array(bad, dtype=np.float32))


def test_discrete_action_forms_and_bad_actions() -> None:
    env = MazeRunnerEnv(time_limit=100)
    env.reset(seed=0)
    for good in (1, np.int64(1), np.array(1), np.array([1])):
        env.step(good)
    for bad in (5, -1, 2.5, np.array([1, 2]), "1"):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)


def test_goal_logic_matches_reference_model() -> None:
    """Reward 1 only on the active goal, one goal per step, goals masked as reached, termination at k."""
    for n, k, steps in ((5, 2, 60), (7, 3, 200), (7, 6, 300)):
        env = MazeRunnerEnv(maze_dim=n, num_goals=k, time_limit=steps)
        for seed in range(15):
            obs, _ = env.reset(seed=seed)
            goals = [tuple(g) for g in env.goal_positions.tolist()]
            reached = 0
            for obs, reward, terminated, _truncated, info in random_episode(env, seed, steps):
                pos = tuple(obs["achieved"][0].tolist())
                hit = reached < k and pos == goals[reached]
                reached += hit
                assert reward == float(hit)
                assert info == {"is_success": reached == k, "goals_reached": reached}
                assert terminated == (reached == k)
                expected_goals = np.array(goals, dtype=np.int32)
                expected_goals[:reached] = -1
                np.testing.assert_array_equal(obs["goals"], expected_goals)
                assert obs in env.observation_space


def test_passing_a_later_goal_first_does_not_count() -> None:
    """In a 5x5 maze the only free column is (1..3, 2); with goals [(1, 2), (2, 2)] going north passes goal 2."""
    env = MazeRunnerEnv(maze_dim=5, num_goals=2, time_limit=10)
    for seed in range(100):
        env.reset(seed=seed)
        if env.goal_positions.tolist() == [[1, 2], [2, 2]]:
            break
    else:
        pytest.fail("no seed gave goal order [(1, 2), (2, 2)]")
    north, south = 1, 3  # identity permutation
    _, r1, *_ = env.step(north)  # stands on goal 2 while goal 1 is active
    _, r2, *_ = env.step(north)  # goal 1
    obs, r3, terminated, truncated, info = env.step(south)  # goal 2, now active
    assert (r1, r2, r3) == (0.0, 1.0, 1.0)
    assert terminated and not truncated and info == {"is_success": True, "goals_reached": 2}
    np.testing.assert_array_equal(obs["goals"], [[-1, -1], [-1, -1]])
    with pytest.raises(RuntimeError, match="reset"):
        env.step(north)


def test_truncation_and_step_without_reset() -> None:
    env = MazeRunnerEnv(time_limit=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(4)
    env.reset(seed=0)
    stay = int(np.flatnonzero(env.action_permutation == 4)[0])
    results = [env.step(stay) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert not any(r[2] for r in results)
    assert results[-1][4] == {"is_success": False, "goals_reached": 0}
    assert results[-1][0]["obs"][6] == 1.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(stay)
    env.reset()
    env.step(stay)  # a reset makes stepping legal again


def test_observation_arrays_are_safe_to_keep() -> None:
    env = MazeRunnerEnv()
    first, _ = env.reset(seed=0)
    kept = {key: value.copy() for key, value in first.items()}
    for value in first.values():  # every array is fresh every step: writing one is harmless
        value[...] = 3
    second, *_ = env.step(4)  # stay: same cell, so the same sensors and goals as before the writes
    assert not any(np.shares_memory(a, b) for a in first.values() for b in second.values())
    np.testing.assert_array_equal(second["obs"][:6], kept["obs"][:6])
    np.testing.assert_array_equal(second["goals"], kept["goals"])
    np.testing.assert_array_equal(second["achieved"], kept["achieved"])


# ---------------------------------------------------------------------------------------------------- seeding
@pytest.mark.parametrize("continuous", [False, True])
def test_same_seed_same_maze_goals_permutation_and_trajectory(continuous: bool) -> None:
    def run(seed: int) -> tuple:
        env = MazeRunnerEnv(maze_dim=13, num_goals=4, randomized_actions=True, continuous=continuous)
        obs, _ = env.reset(seed=seed)
        state = (env.maze.copy(), env.goal_positions.copy(), env.action_permutation.copy())
        episode = random_episode(env, 99, 100)
        second, _ = env.reset()  # unseeded reset continues the seeded stream
        return state, obs, episode, (env.maze.copy(), env.goal_positions.copy(), second)

    a, b, c = run(7), run(7), run(8)
    for x, y in zip(a[0], b[0], strict=True):
        np.testing.assert_array_equal(x, y)
    for key in a[1]:
        np.testing.assert_array_equal(a[1][key], b[1][key])
    assert len(a[2]) == len(b[2])
    for (o1, *rest1), (o2, *rest2) in zip(a[2], b[2], strict=True):
        assert rest1 == rest2
        for key in o1:
            np.testing.assert_array_equal(o1[key], o2[key])
    np.testing.assert_array_equal(a[3][0], b[3][0])
    np.testing.assert_array_equal(a[3][1], b[3][1])
    assert not (np.array_equal(a[0][0], c[0][0]) and np.array_equal(a[0][1], c[0][1]))
    assert not np.array_equal(a[0][0], a[3][0])  # the next episode gets a new maze


# ---------------------------------------------------------------------------------------------------- render
def test_rgb_render_shows_walls_goals_agent_and_dims_reached_goals() -> None:
    env = MazeRunnerEnv(maze_dim=7, num_goals=3, time_limit=200, render_mode="rgb_array")
    env.reset(seed=3)
    px = env.cell_pixels
    image = env.render()
    assert image.dtype == np.uint8 and image.shape == (7 * px, 7 * px, 3)

    def corner(r: int, c: int) -> tuple[int, ...]:  # a pixel off the digit and the agent disc
        return tuple(image[r * px, c * px].tolist())

    wall_colour = corner(0, 0)
    assert all(corner(r, c) == wall_colour for r, c in zip(*np.nonzero(env.maze), strict=True))
    goal_colours = [corner(r, c) for r, c in env.goal_positions.tolist()]
    assert len(set(goal_colours)) == 3 and wall_colour not in goal_colours
    r, c = env.agent_pos
    centre = tuple(image[r * px + px // 2, c * px + px // 2].tolist())
    assert centre not in goal_colours and centre != wall_colour and centre != corner(r, c)
    for (gr, gc), colour in zip(env.goal_positions.tolist(), goal_colours, strict=True):
        cell = image[gr * px : (gr + 1) * px, gc * px : (gc + 1) * px].reshape(-1, 3)
        assert (cell != colour).any(axis=1).sum() > 4  # a digit is stamped on the goal

    while env.goals_reached == 0:
        env.step(env.expert_action())
    image = env.render()
    first = tuple(env.goal_positions[0].tolist())
    assert corner(*first) != goal_colours[0]  # dimmed once reached
    assert corner(*env.goal_positions[1].tolist()) == goal_colours[1]


def test_ansi_render_text_grid() -> None:
    env = MazeRunnerEnv(maze_dim=7, num_goals=2, render_mode="ansi")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    env.reset(seed=0)
    lines = env.render().splitlines()
    grid = lines[1:]
    assert len(grid) == 7 and all(len(line) == 7 for line in grid)
    assert grid[5][3] == "@"
    for label, (r, c) in zip("12", env.goal_positions.tolist(), strict=True):
        assert grid[r][c] == label
    walls = np.array([[ch == "#" for ch in line] for line in grid])
    np.testing.assert_array_equal(walls, env.maze)
    env.step(4)
    assert env.render().splitlines()[0].startswith("t=1/")


def test_render_without_mode_warns_and_returns_none() -> None:
    env = MazeRunnerEnv()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None
