"""BudgetCallback evaluates once per budget inside one real DQN run, with the library's evaluator."""

from __future__ import annotations

from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_hir.envs import MazeRunnerEnv
from sb3_hir.experiment import BudgetCallback, eval_seed, instruction_evaluator

ENV_KWARGS = dict(maze_dim=7, num_goals=2, time_limit=20)


def make_env(n_envs: int = 2, seed: int = 0):
    return make_vec_env(MazeRunnerEnv, n_envs=n_envs, seed=seed, env_kwargs=ENV_KWARGS)


def tiny_dqn(env) -> DQN:
    return DQN("MultiInputPolicy", env, learning_starts=10**6, buffer_size=1_000, seed=0)


def test_each_budget_is_evaluated_once_at_the_first_step_reaching_it():
    seen: list[int] = []
    model = tiny_dqn(make_env(n_envs=3))

    def evaluate(m: DQN) -> dict[str, float]:
        seen.append(m.num_timesteps)
        return {"steps": float(m.num_timesteps)}

    callback = BudgetCallback([60, 31, 90, 500], evaluate)
    model.learn(90, callback=callback)
    # 3 envs: 31 is passed at 33 (a vectorised step jumps over it), 60 and 90 are hit exactly; 500 is never reached.
    assert list(callback.results) == [31, 60, 90]
    assert seen == [33, 60, 90]
    assert callback.results[31] == {"steps": 33.0}


def test_a_budget_reached_only_by_the_last_step_is_evaluated_at_training_end():
    model = tiny_dqn(make_env(n_envs=2))
    callback = BudgetCallback([10, 20], lambda m: {"steps": float(m.num_timesteps)})
    model.learn(20, callback=callback)
    assert callback.results == {10: {"steps": 10.0}, 20: {"steps": 20.0}}
    model.learn(4, callback=callback, reset_num_timesteps=False)  # a second learn adds no evaluation
    assert list(callback.results) == [10, 20]


def test_the_instruction_evaluator_scores_the_same_episodes_each_time():
    model = tiny_dqn(make_env())
    evaluate = instruction_evaluator(lambda: make_env(n_envs=2, seed=99), 6, eval_seed(0))
    first, second = evaluate(model), evaluate(model)
    assert set(first) == {"goals_reached", "success_rate"}
    assert first == second
    assert 0.0 <= first["success_rate"] <= 1.0
    assert 0.0 <= first["goals_reached"] <= 2.0


def test_eval_seeds_are_apart_from_training_seeds():
    assert eval_seed(0) == 10_000
    assert eval_seed(3) == 10_003


def test_demo_seeds_are_apart_from_training_and_eval_seeds():
    from sb3_hir.experiment.seeds import demo_seed

    seeds = range(100)
    assert demo_seed(0) == 20_000  # sb3-hir train --demos collects in seed + 20_000
    assert not {demo_seed(s) for s in seeds} & ({*seeds} | {eval_seed(s) for s in seeds})


def test_the_wall_clock_stops_training_at_its_limit_and_records_each_evaluation():
    from sb3_hir.experiment import WallClockCallback

    model = tiny_dqn(make_env())
    reported: list[int] = []
    clock = WallClockCallback(0.2, 1.0, lambda m: {"steps": float(m.num_timesteps)},
                              lambda curve: reported.append(len(curve)))
    model.learn(10**6, callback=clock)
    assert model.num_timesteps < 10**6  # stopped by the clock, not by the step budget
    assert len(clock.curve) >= 2 and reported == list(range(1, len(clock.curve) + 1))
    point = clock.curve[-1]
    assert set(point) == {"minutes", "timesteps", "steps", "load_average"}
    assert point["steps"] == point["timesteps"] <= model.num_timesteps
    assert [p["timesteps"] for p in clock.curve] == sorted(p["timesteps"] for p in clock.curve)
    assert all(p["minutes"] <= 1.0 / 60 + 0.01 for p in clock.curve)


def test_a_stop_rule_ends_training_after_the_evaluation_that_meets_it():
    model = tiny_dqn(make_env(n_envs=1))
    callback = BudgetCallback(range(10, 101, 10), lambda m: {"steps": float(m.num_timesteps)},
                              stop=lambda metrics: metrics["steps"] >= 30)
    model.learn(100, callback=callback)
    assert list(callback.results) == [10, 20, 30]
    assert model.num_timesteps == 30
    seconds = list(callback.training_seconds.values())
    assert list(callback.training_seconds) == [10, 20, 30]
    assert 0 < seconds[0] <= seconds[1] <= seconds[2]


def test_training_seconds_leave_the_evaluations_out():
    import time

    model = tiny_dqn(make_env(n_envs=1))

    def slow(m: DQN) -> dict[str, float]:
        time.sleep(0.3)
        return {}

    callback = BudgetCallback([5, 10], slow)
    start = time.perf_counter()
    model.learn(10, callback=callback)
    wall = time.perf_counter() - start
    assert wall >= 0.6
    assert callback.training_seconds[10] < wall - 0.5  # both sleeps are off the training clock


def test_the_episode_evaluator_seeds_each_episode_and_reads_the_last_or_any_step():
    from stable_baselines3.common.envs import BitFlippingEnv

    from sb3_hir.experiment import episode_evaluator

    env = make_vec_env(lambda: BitFlippingEnv(n_bits=4, continuous=False), n_envs=1)
    model = DQN("MultiInputPolicy", env, learning_starts=10**6, seed=0)
    flips = {"bits": lambda info: float(info.get("is_success", False))}
    last = episode_evaluator(lambda: BitFlippingEnv(n_bits=4, continuous=False), 5, seed=0)
    assert set(last(model)) == {"success_rate"}
    assert last(model) == last(model)  # the same seeded episodes each time
    at_last = episode_evaluator(lambda: BitFlippingEnv(n_bits=4, continuous=False), 5, 0, metrics=flips)(model)
    at_any = episode_evaluator(lambda: BitFlippingEnv(n_bits=4, continuous=False), 5, 0, metrics=flips,
                               any_step=True)(model)
    # BitFlipping ends at success, so success at some step is success at the last step.
    assert at_any == at_last
    steps = episode_evaluator(lambda: BitFlippingEnv(n_bits=4, continuous=False), 3, 0,
                              metrics={"one": lambda info: 1.0, "never": lambda info: 0.0}, any_step=True)(model)
    assert steps == {"one": 1.0, "never": 0.0}


def test_a_cpu_clock_counts_this_processs_cpu_time_and_keeps_the_wall_time_beside_it():
    import time

    import pytest

    from sb3_hir.experiment import WallClockCallback

    model = tiny_dqn(make_env())
    cpu0 = time.process_time()  # before the clock starts counting: it stops on 0.6 CPU seconds from its start
    clock = WallClockCallback(0.2, 0.6, lambda m: {"steps": float(m.num_timesteps)}, clock="cpu")
    time.sleep(0.7)  # wall time the CPU clock must not count
    model.learn(10**6, callback=clock)
    assert model.num_timesteps < 10**6
    assert time.process_time() - cpu0 >= 0.6  # it stopped on 0.6 CPU seconds of training, not on the sleep
    point = clock.curve[-1]
    assert set(point) == {"minutes", "timesteps", "steps", "load_average", "wall_minutes"}
    assert point["wall_minutes"] >= point["minutes"] + 0.7 / 60 - 0.005
    with pytest.raises(ValueError, match="clock must be 'wall' or 'cpu'"):
        WallClockCallback(1, 1, lambda m: {}, clock="gpu")


def test_the_uniform_random_policy_acts_uniformly_and_is_scored_like_a_model():
    import numpy as np
    import pytest
    from gymnasium import spaces

    from sb3_hir.experiment.baselines import UniformRandomPolicy

    policy = UniformRandomPolicy(spaces.Discrete(4, start=1), seed=0)
    actions, state = policy.predict({"obs": np.zeros((4000, 3))})
    assert state is None and actions.shape == (4000,)
    assert set(np.unique(actions).tolist()) == {1, 2, 3, 4}
    assert np.allclose(np.bincount(actions)[1:] / 4000, 0.25, atol=0.03)
    box, _ = UniformRandomPolicy(spaces.Box(-2, 1, (2,), np.float32), seed=0).predict(np.zeros((500, 5)))
    assert box.shape == (500, 2) and box.dtype == np.float32 and box.min() >= -2 and box.max() <= 1
    again, _ = UniformRandomPolicy(spaces.Discrete(4, start=1), seed=0).predict({"obs": np.zeros((4000, 3))})
    np.testing.assert_array_equal(actions, again)
    score = instruction_evaluator(lambda: make_env(n_envs=2, seed=99), 6, eval_seed(0))(
        UniformRandomPolicy(make_env().action_space, seed=0))
    assert 0.0 <= score["success_rate"] <= 1.0
    with pytest.raises(ValueError, match="bounded Box"):
        UniformRandomPolicy(spaces.Box(-np.inf, np.inf, (1,))).predict(np.zeros((2, 1)))
    with pytest.raises(TypeError, match="action_space must be a gymnasium Space"):
        UniformRandomPolicy("Discrete(2)")  # type: ignore[arg-type]


def test_epsilon_greedy_keeps_the_greedy_action_or_draws_a_uniform_one():
    import numpy as np
    import pytest

    from sb3_hir.experiment.baselines import EpsilonGreedy

    env = make_env(n_envs=2)
    model = tiny_dqn(env)
    obs = env.reset()
    batch = {key: np.repeat(value[:1], 2000, axis=0) for key, value in obs.items()}
    greedy, _ = model.predict(batch, deterministic=True)
    same, _ = EpsilonGreedy(model, env.action_space, 0.0, seed=0).predict(batch)
    np.testing.assert_array_equal(same, greedy)
    noisy, _ = EpsilonGreedy(model, env.action_space, 0.3, seed=0).predict(batch)
    changed = (noisy != greedy).mean()  # a uniform draw equals the greedy action 1/n of the time
    assert abs(changed - 0.3 * (1 - 1 / env.action_space.n)) < 0.04
    with pytest.raises(ValueError, match=r"epsilon must be in \[0, 1\]"):
        EpsilonGreedy(model, env.action_space, 1.5)


def test_training_episodes_are_counted_as_sb3_s_monitor_counts_them_with_their_success():
    """The clock's count of finished training episodes and their smoothed success, against SB3's own ``Monitor``
    records of the same run (every sub-env wrapped by ``make_vec_env``)."""

    from sb3_hir.experiment import TrainingEpisodes, WallClockCallback

    env = make_env(n_envs=2)
    model = tiny_dqn(env)
    counter = TrainingEpisodes(window=5, target=0.99)
    clock = WallClockCallback(1000, 1000, lambda m: {}, training_episodes=counter)
    model.learn(600, callback=clock)
    clock.record()
    monitored = sum(len(lengths) for lengths in env.get_attr("episode_lengths"))
    assert counter.episodes == monitored > 5
    point = clock.curve[-1]
    assert point["episodes"] == monitored
    assert 0.0 <= point["train_success"] <= 1.0 and len(counter.recent) == 5


def test_the_episodes_to_target_are_the_first_count_where_the_last_window_succeeded():
    import numpy as np
    import pytest

    from sb3_hir.experiment import TrainingEpisodes

    counter = TrainingEpisodes(window=3, target=0.99)
    outcomes = [True, False, True, True, True, False, True]  # the last 3 first all succeed at episode 5
    for i in range(0, len(outcomes), 2):  # two sub-envs, both done at each vector step
        pair = outcomes[i:i + 2]
        counter.update(np.ones(len(pair), dtype=bool), [{"is_success": o} for o in pair])
        if i == 0:
            assert np.isnan(counter.metrics()["train_success"])  # fewer than a window
    assert counter.reached_at == 5
    assert counter.metrics() == dict(episodes=7.0, train_success=pytest.approx(2 / 3), episodes_to_target=5.0)
    counter.update(np.array([False, True]), [{"is_success": True}, {}])  # an info without is_success: a failure
    assert counter.episodes == 8 and list(counter.recent) == [False, True, False]
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        TrainingEpisodes(window=0)
    with pytest.raises(ValueError, match=r"target must be in \(0, 1\]"):
        TrainingEpisodes(target=1.5)
