"""Bad input to the buffers' public entries (``add``, ``sample``, ``set_env``, ``jit``, ``demo_ratio``,
``memory_layout``), on the instruction buffer and the HER drop-in: a named ``ValueError``, and no trace left (the
pickled buffer is byte-identical to before)."""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from instruction_oracle import GRID, add_step, make_buffer, random_path, simulate
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import HerReplayBuffer


def instruction_buffer():
    rng = np.random.default_rng(0)
    buffer = make_buffer(2, size=40, n_envs=1)
    for _ in range(3):
        rec = simulate(random_path(rng, 6), rng.integers(0, GRID, size=(2, 2)))
        for t in range(len(rec.episode)):
            add_step(buffer, [rec], t)
    obs = {key: value[:1] for key, value in rec.episode.observations.items()}
    return buffer, obs


def her_buffer():
    venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=4, continuous=False, max_steps=4)])
    buffer = HerReplayBuffer(40, venv.observation_space, venv.action_space, env=venv, seed=0)
    obs = venv.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(10):
            action = np.array([venv.action_space.sample()])
            nxt, reward, done, infos = venv.step(action)
            buffer.add(obs, nxt, action, reward, done, infos)
            obs = nxt
    return buffer, {key: value.copy() for key, value in obs.items()}


BUFFERS = {"instruction": instruction_buffer, "her drop-in": her_buffer}
OK = dict(action=np.array([[1]]), reward=np.array([0.0], np.float32), done=np.array([False]), infos=[{}])


def add_with(**changes: Any) -> Callable[[Any, dict[str, np.ndarray]], None]:
    def call(buffer, obs) -> None:
        args = {"obs": obs, "next_obs": obs, **OK}
        for name, change in changes.items():
            args[name] = change(obs) if callable(change) else change
        buffer.add(args["obs"], args["next_obs"], args["action"], args["reward"], args["done"], args["infos"])

    return call


def first_key(obs: dict[str, np.ndarray]) -> str:
    return sorted(obs)[0]


CASES = {
    "obs without a key": (add_with(obs=lambda o: {k: v for k, v in o.items() if k != first_key(o)}),
                          r"add\(\): obs must be a dict with the keys"),
    "obs of the wrong shape, which broadcasting hid": (
        add_with(obs=lambda o: {**o, first_key(o): o[first_key(o)][..., :1]}), r"add\(\): obs\['\w+'\] must hold"),
    "next_obs of the wrong shape": (add_with(next_obs=lambda o: {**o, first_key(o): np.concatenate(
        [o[first_key(o)]] * 2, axis=-1)}), r"add\(\): next_obs\['\w+'\] must hold \(n_envs, "),
    "action for two envs": (add_with(action=np.array([[1], [2]])), r"add\(\): action must hold \(n_envs, 1\) values"),
    "reward for two envs": (add_with(reward=np.zeros(2, np.float32)), r"add\(\): reward must hold one value per env"),
    "NaN reward": (add_with(reward=np.array([np.nan], np.float32)), r"add\(\): reward must be finite; got \[nan\]"),
    "done for two envs": (add_with(done=np.zeros(2, bool)), r"add\(\): done must hold one value per env"),
    "infos not dicts": (add_with(infos=["TimeLimit.truncated"]), r"add\(\): infos must be a list of n_envs=1 dicts"),
    "infos for two envs": (add_with(infos=[{}, {}]), r"add\(\): infos must be a list of n_envs=1 dicts"),
    "sample(0)": (lambda b, o: b.sample(0), r"batch_size must be an int >= 1; got 0"),
    "sample(2.5)": (lambda b, o: b.sample(2.5), r"batch_size must be an int >= 1; got 2.5"),
    "jit = 'yes'": (lambda b, o: setattr(b, "jit", "yes"), r"jit must be a bool; got 'yes'"),
    "demo_ratio = 'a'": (lambda b, o: setattr(b, "demo_ratio", "a"), r"demo_ratio must be a number in \[0, 1\]"),
    "add_demonstrations(dict)": (lambda b, o: b.add_demonstrations({"obs": 1}),
                                 r"demonstrations must be Episodes, imitation TrajectoryWithRew objects"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kind", list(BUFFERS))
def test_bad_input_to_a_buffer_is_named_and_leaves_no_trace(kind: str, case: str) -> None:
    buffer, obs = BUFFERS[kind]()
    call, match = CASES[case]
    before = pickle.dumps(buffer)
    with pytest.raises(ValueError, match=match):
        call(buffer, obs)
    assert pickle.dumps(buffer) == before


def test_set_env_takes_a_vec_env_or_none_as_sb3_loads_a_model_without_one() -> None:
    buffer, _ = instruction_buffer()
    with pytest.raises(ValueError, match=r"env must be a VecEnv .*; got BitFlippingEnv"):
        buffer.set_env(BitFlippingEnv(n_bits=4))
    assert buffer.env is None
    buffer.set_env(None)  # SB3's load_replay_buffer on a model loaded without env
    buffer.set_env(DummyVecEnv([lambda: BitFlippingEnv(n_bits=4)]))
    assert isinstance(buffer.env, DummyVecEnv)


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(memory_layout="small"), "memory_layout must be one of 'full', 'compact'; got 'small'"),
    (dict(memory_layout="full", optimize_memory_usage=True), "memory_layout='full' contradicts optimize_memory_usage"),
    (dict(optimize_memory_usage="yes"), "optimize_memory_usage must be a bool; got 'yes'"),
])
def test_memory_layout_arguments_are_checked(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_buffer(2, **kwargs)
    assert make_buffer(2, memory_layout="compact").optimize_memory_usage
