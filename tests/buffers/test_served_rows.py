"""sample() serves exactly the rows the numpy implementation served before the compiled kernels (fixed seeds).

``tests/data/served_rows.npz`` was written by ``tests/served_rows.py`` from the buffer before any sampling kernel
was compiled; every sampling path (k = 3 exact index, k = 2 tolerance window, k = 1 first-reach index, GoalEnv
continuing and terminating, n-step, every goal selection, a wrapped circular buffer) must serve the same draws,
with the compiled kernels and with the numpy code they replace.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from served_rows import CASES, GOLDEN, filled_buffer, served

from sb3_hir.buffers import HindsightInstructionReplayBuffer, compiled
from sb3_hir.relabel import HindsightInstructionRelabeler

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("dagger")

needs_numba = pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("jit", [pytest.param(True, marks=needs_numba), False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_served_rows_equal_the_numpy_implementations(name: str, jit: bool, golden: dict[str, np.ndarray]) -> None:
    expected = {key.split("/", 1)[1]: value for key, value in golden.items() if key.split("/", 1)[0] == name}
    buffer = filled_buffer(name)
    buffer.jit = jit
    got = served(buffer)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=f"{name}: {key}")


@needs_numba
@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 4),
    batch=st.integers(0, 40),
    strategy=st.sampled_from(["some", "all", "none"]),
    selection=st.sampled_from(["future", "episode"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_compiled_goal_step_draws_equal_the_relabelers(k: int, batch: int, strategy: str, selection: str,
                                                       seed: int) -> None:
    """Short episodes make clashes (a drawn step equal to an own reach step or an earlier pick) frequent."""
    data = np.random.default_rng(seed)
    length = data.integers(1, 2 * k + 3, size=batch)
    t = (data.random(batch) * length).astype(np.int64)
    own = np.full((batch, k), -1, dtype=np.int64)
    for b in range(batch):  # own reach steps: a strictly increasing prefix within 1..T
        reached = int(data.integers(0, min(k, length[b]) + 1))
        own[b, :reached] = np.sort(data.choice(np.arange(1, length[b] + 1), size=reached, replace=False))
    relabeler = HindsightInstructionRelabeler(k, strategy=strategy)
    expected = relabeler.draw_goal_steps(own, length, t, np.random.default_rng(seed + 1), selection)
    rng = np.random.default_rng(seed + 1)
    got = compiled.draw_goal_steps(rng, own, length, t, compiled.DRAW_MODES[strategy], selection == "future")
    np.testing.assert_array_equal(got, expected)
    # Both consumed the generator equally: the next draw agrees.
    reference = np.random.default_rng(seed + 1)
    relabeler.draw_goal_steps(own, length, t, reference, selection)
    assert rng.random() == reference.random()


@needs_numba
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize(("steps", "size"), [(12, 150), (45, 80), (300, 70)],
                         ids=["first-episodes", "wrapping", "mostly-overwritten"])
def test_compiled_and_numpy_draws_agree_on_other_fills(name: str, steps: int, size: int) -> None:
    """Beyond the golden fills: buffers with few finished episodes, and small ones that overwrite most episodes."""
    batches = []
    for jit in (True, False):
        buffer = filled_buffer(name, steps=steps, size=size)
        buffer.jit = jit
        batches.append(served(buffer))
    assert sorted(batches[0]) == sorted(batches[1])
    for key, value in batches[1].items():
        np.testing.assert_array_equal(batches[0][key], value, err_msg=f"{name}: {key}")


@needs_numba
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_and_numpy_draws_agree_when_sampling_while_adding(name: str) -> None:
    """Sampling from the start, as training does: episodes indexed after a kernel's first draw are drawn as the
    numpy code draws them (what a kernel keeps of the index between draws, such as ``ExactIndexDraw.search_columns``,
    follows it), also once the buffer wraps."""
    batches: list[list[np.ndarray]] = []
    for jit in (True, False):
        got: list[np.ndarray] = []

        def sample_often(buffer: HindsightInstructionReplayBuffer, step: int, jit: bool = jit,
                         got: list[np.ndarray] = got) -> None:
            if step == 0:
                buffer.jit = jit
                np.random.seed(7)
            if step % 9 == 8:
                samples = buffer.sample(32)
                info = buffer.last_sample_info
                assert info is not None
                got += [samples.rewards.numpy(), samples.dones.numpy(), info.rows, info.env_indices, info.t,
                        info.goals, *(value.numpy() for value in samples.next_observations.values())]

        filled_buffer(name, steps=240, size=60, after_add=sample_often)
        batches.append(got)
    assert len(batches[0]) == len(batches[1]) > 0
    for compiled_value, numpy_value in zip(*batches, strict=True):
        np.testing.assert_array_equal(compiled_value, numpy_value, err_msg=name)


@needs_numba
def test_compiled_recorded_rows_follow_np_random_when_its_bit_generator_is_replaced() -> None:
    """The compiled recorded rows draw from the bit generator ``np.random`` has at the time, as ``np.random.randint``
    does: also once ``np.random.set_bit_generator`` replaced the one a first ``sample()`` drew from."""
    original = np.random.get_bit_generator()
    served_rows = []
    try:
        for jit in (True, False):
            buffer = filled_buffer("maze_k3_some_future")
            buffer.jit = jit
            rows = []
            for bit_generator in (np.random.MT19937(1), np.random.PCG64(2)):
                np.random.set_bit_generator(bit_generator)
                buffer.sample(64)
                info = buffer.last_sample_info
                assert info is not None
                rows.append(info.rows[~info.relabeled])
            served_rows.append(rows)
    finally:
        np.random.set_bit_generator(original)
    for compiled_rows, numpy_rows in zip(*served_rows, strict=True):
        assert len(numpy_rows) > 0
        np.testing.assert_array_equal(compiled_rows, numpy_rows)
