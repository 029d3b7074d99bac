"""The kernels' bounded draw (``rng_box.below``) consumes the generator exactly as NumPy's ``integers`` does.

The compiled draws call ``below`` where the numpy code calls ``rng.integers(0, upper, size=n)``; the served rows are
identical only if every value and the generator's state after them are. The bounds cover each branch of NumPy's
bounded draw: nothing drawn (``upper == 1``), Lemire's rejection on buffered 32-bit draws, a full 32-bit draw
(``upper == 2**32``) and the 64-bit rejection, mixed with float draws that must see the same 32-bit buffer.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sb3_hir.buffers import compiled

pytestmark = [pytest.mark.once("dagger"),
              pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")]

_BOUNDS = st.one_of(st.sampled_from([1, 2, 3, 7, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**62 + 3]),
                    st.integers(1, 2**63 - 1))


@pytest.fixture(scope="module")
def draws():  # type: ignore[no-untyped-def]
    import numba

    from sb3_hir.buffers import rng_box

    below = rng_box.below

    @numba.njit
    def run(rng, uppers, floats_after):  # type: ignore[no-untyped-def]
        out = np.empty(len(uppers), np.int64)
        tail = np.empty(floats_after)
        for i in range(len(uppers)):
            out[i] = below(rng, uppers[i])
        for i in range(floats_after):
            tail[i] = rng.random()
        return out, tail

    return run


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), upper=_BOUNDS, count=st.integers(1, 40), floats=st.integers(0, 3))
def test_below_draws_numpys_integers(draws, seed: int, upper: int, count: int, floats: int) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    values, tail = draws(ours, np.full(count, upper, np.int64), floats)
    expected = theirs.integers(0, upper, size=count)
    np.testing.assert_array_equal(values, expected)
    np.testing.assert_array_equal(tail, theirs.random(floats))
    assert ours.bit_generator.state == theirs.bit_generator.state


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), uppers=st.lists(_BOUNDS, min_size=1, max_size=30))
def test_below_mixed_bounds_match_scalar_integers(draws, seed: int, uppers: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Bounds that change from draw to draw, as a round's rows then sub-envs: one ``integers`` call each."""
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    values, _ = draws(ours, np.array(uppers, np.int64), 0)
    np.testing.assert_array_equal(values, [theirs.integers(0, upper) for upper in uppers])
    assert ours.bit_generator.state == theirs.bit_generator.state


def test_below_refuses_an_empty_range(draws) -> None:  # type: ignore[no-untyped-def]
    """As ``integers(0, 0)`` does: nothing to draw from is an error, not a value."""
    with pytest.raises(ValueError, match="upper must be >= 1"):
        draws(np.random.default_rng(0), np.array([0], np.int64), 0)


def test_kernels_draw_through_below() -> None:
    """Once kernels compile, ``compiled.below`` is the numba function (a plain call would allocate per draw)."""
    from sb3_hir.buffers import rng_box

    compiled.draw_goal_steps(np.random.default_rng(0), np.full((1, 1), -1, np.int64), np.array([3]), np.array([0]),
                             2, True)
    assert compiled.below is rng_box.below


def _legacy_pair(seed: int) -> tuple[np.random.RandomState, np.random.MT19937]:
    """``np.random``'s kind of generator seeded with ``seed`` (SB3's ``np.random.seed``), and a bit generator in the
    same state for the kernel."""
    theirs = np.random.RandomState(np.random.MT19937())
    theirs.seed(seed)
    ours = np.random.MT19937()
    np.random.RandomState(ours).seed(seed)
    return theirs, ours


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       upper=st.one_of(st.sampled_from([1, 2, 3, 7, 100_001, 2**20 + 1, 10**6, 3 * 2**24 + 1, 2**31, 2**32 - 1,
                                        2**32]), st.integers(1, 2**32)),
       count=st.integers(0, 40), n_envs=st.sampled_from([1, 2, 3, 5, 64]))
def test_legacy_rows_draw_np_random_randint(seed: int, upper: int, count: int, n_envs: int) -> None:
    """The recorded rows as ``DictReplayBuffer`` draws them: ``randint`` rows, then ``randint`` sub-envs (none for one
    sub-env), each value and the bit generator's state after them. The bounds cover NumPy's legacy masked draw:
    nothing drawn (``upper == 1``), masks of every width (buffer sizes whose largest row has few bits set), and a full
    32-bit draw (``upper == 2**32``)."""
    from sb3_hir.buffers import rng_box

    theirs, ours = _legacy_pair(seed)
    rows = rng_box.legacy_rows(rng_box.box(np.random.Generator(ours)), upper, count, n_envs)
    expected = theirs.randint(0, upper, size=count)
    if n_envs > 1:
        expected = expected * n_envs + theirs.randint(0, high=n_envs, size=(count,))
    np.testing.assert_array_equal(rows, expected)
    after = theirs.get_state(legacy=False)["state"]
    np.testing.assert_array_equal(ours.state["state"]["key"], after["key"])
    assert ours.state["state"]["pos"] == after["pos"]


def test_recorded_rows_past_32_bits_are_numpys() -> None:
    """Above 2**32 rows NumPy's legacy draw is 64-bit, which the kernel does not draw: the buffer asks NumPy."""
    from sb3_hir.buffers.recorded_rows import RecordedRows

    recorded_rows = RecordedRows(jit=True)
    assert recorded_rows.jit
    upper = 2**32 + 3
    np.random.seed(11)
    expected = np.random.randint(0, upper, size=20)
    np.random.seed(11)
    np.testing.assert_array_equal(recorded_rows(upper, 20, 1), expected)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize(("upper", "count", "n_envs"), [(0, 4, 1), (10, -1, 1), (10, 4, 0)])
def test_recorded_rows_refuse_an_empty_range_naming_the_arguments_and_draw_nothing(jit: bool, upper: int, count: int,
                                                                                  n_envs: int) -> None:
    from sb3_hir.buffers.recorded_rows import RecordedRows

    np.random.seed(3)
    before = np.random.get_state(legacy=False)["state"]["key"].copy()
    with pytest.raises(ValueError, match=r"upper \(the rows filled\) and n_envs must be >= 1 and count >= 0; got "
                                         rf"upper={upper}, count={count}, n_envs={n_envs}"):
        RecordedRows(jit=jit)(upper, count, n_envs)
    np.testing.assert_array_equal(np.random.get_state(legacy=False)["state"]["key"], before)


@pytest.mark.parametrize(("upper", "n_envs"), [(0, 1), (2**32 + 1, 1), (5, 0), (5, 2**32 + 1)])
def test_legacy_rows_refuse_what_they_cannot_draw(upper: int, n_envs: int) -> None:
    """Above 2**32 NumPy draws 64 bits: the kernel refuses rather than truncate its 32-bit mask."""
    from sb3_hir.buffers import rng_box

    with pytest.raises(ValueError, match=r"upper and n_envs must be in \[1, 2\*\*32\]"):
        rng_box.legacy_rows(rng_box.box(np.random.Generator(np.random.MT19937(0))), upper, 3, n_envs)
