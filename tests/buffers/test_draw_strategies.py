"""The public draw-strategy interface: strategies by name, class or object, built-ins registered as plugins are,
the contract checked where it can be (shapes, reach form) and by the served-rows oracle where it cannot."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from sb3_hir import plugins
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.draws import (
    Candidates,
    DrawContractError,
    DrawStrategy,
    DrawView,
    ExactIndexDraw,
    FirstReachDraw,
    HerDraw,
    Instructions,
    StoredDraws,
    WindowDraw,
)
from sb3_hir.testing import check_draw_strategy
from sb3_hir.testing.served_rows import fill, make_buffer

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("dagger")


class NextStepDraw(DrawStrategy):
    """A correct one-goal strategy: the value achieved right after the transition, with its true first reach."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals = view.achieved_at((rows.start + rows.t) % view.buffer_size, rows.env)[:, None]
        offsets = np.arange(int(rows.length.max()))
        window = view.achieved_at((rows.start[:, None] + np.minimum(offsets, rows.length[:, None] - 1))
                                  % view.buffer_size, rows.env[:, None])
        hits = np.asarray(view.goal_spec.reached(window, goals), dtype=bool) & (offsets < rows.length[:, None])
        return Instructions(goals, (hits.argmax(axis=1) + 1)[:, None])


class ClaimsTheTransitionStepDraw(NextStepDraw):
    """Wrong reach: says the goal is first reached right after the transition, also where it was reached before."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals, _, _ = super().instructions(view, rows)
        return Instructions(goals, (rows.t + 1)[:, None])


class NeverReachedDraw(NextStepDraw):
    """Wrong reach: says the goal is never reached, so its success is never served."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals, reach, _ = super().instructions(view, rows)
        return Instructions(goals, np.full_like(reach, -1))


def test_builtins_are_registered_as_plugins_and_chosen_by_name():
    available = plugins.available("draw_strategy")
    assert {"first-reach", "her", "exact-index", "window", "stored"} <= set(available)
    assert all(available[name].plugin == "builtin" for name in ("first-reach", "exact-index", "window", "stored"))
    expected = {"first-reach": FirstReachDraw, "exact-index": ExactIndexDraw, "window": WindowDraw,
                "stored": StoredDraws}
    for name, cls in expected.items():
        buffer = make_buffer(1, draw=name)
        assert type(buffer._draws) is cls
    assert type(make_buffer(1)._draws) is FirstReachDraw  # the default, resolved by name as well
    assert type(make_buffer(2)._draws) is ExactIndexDraw


@pytest.mark.parametrize("name,k", [("first-reach", (1,)), ("exact-index", (1, 2, 3)), ("window", (1, 2, 3)),
                                    ("stored", (1, 2))])
def test_builtin_strategies_pass_the_served_rows_oracle(name: str, k: tuple[int, ...]):
    check_draw_strategy(name, num_goals=k, batches=6)


def test_a_third_party_strategy_by_class_and_by_object_passes_the_oracle():
    check_draw_strategy(NextStepDraw, num_goals=(1,))
    check_draw_strategy(NextStepDraw(), num_goals=(1,), n_steps=(2,), memory_layouts=("compact",))


@pytest.mark.parametrize("broken", [ClaimsTheTransitionStepDraw, NeverReachedDraw])
def test_the_oracle_catches_a_strategy_with_wrong_reach_steps(broken: type[DrawStrategy]):
    """Counterfactual: the same draw with wrong reach steps serves rows that are not replays, and the check says so."""
    with pytest.raises(AssertionError, match=f"check_draw_strategy: {broken.__qualname__} with k=1"):
        check_draw_strategy(broken, num_goals=(1,), demonstrations=False, memory_layouts=("full",), n_steps=(1,))


def test_the_oracle_catches_the_her_draw_in_instruction_mode_which_setup_now_refuses():
    """HER's draw serves goals also passed before the transition: right for GoalEnvs, wrong for instruction envs."""
    with pytest.raises(ValueError, match="'her' is GoalEnv mode's draw"):
        make_buffer(1, draw="her")

    class InstructionHer(HerDraw):
        def setup(self, view: DrawView) -> None:  # the check removed: the oracle must still catch it
            pass

    with pytest.raises(AssertionError, match=r"served row \d+ .*drawn reach .*: .*the replay gives"):
        check_draw_strategy(InstructionHer, num_goals=(1,), demonstrations=False, memory_layouts=("full",),
                            n_steps=(1,))


@pytest.mark.parametrize("returned,words", [
    (lambda g, r: (g[:, :, :1], r, None), "goals must be an array of shape"),
    (lambda g, r: (g.astype(np.float64), r, None), "goals must be of the buffer's goals dtype int32"),
    (lambda g, r: (g, r.astype(np.float32), None), "reach must be an integer array of shape"),
    (lambda g, r: (g, r[:, 0], None), "reach must be an integer array of shape"),
    (lambda g, r: (g, r, np.ones(len(r), np.int64)), "keep must be None or a bool array"),
    (lambda g, r: (g, np.zeros_like(r), None), "reach\\[b, j\\] must be the step"),
    (lambda g, r: (g, r + 100, None), "reach\\[b, j\\] must be the step"),
    (lambda g, r: g, "must return Instructions"),
])
def test_a_strategy_returning_what_serving_cannot_use_gets_a_named_error(returned, words: str):
    class Bad(NextStepDraw):
        def instructions(self, view: DrawView, rows: Candidates):
            goals, reach, _ = super().instructions(view, rows)
            return returned(goals, reach)

    buffer = make_buffer(1, draw=Bad)
    fill(buffer, np.random.default_rng(0), 40)
    with pytest.raises(DrawContractError, match=f"Bad.instructions.*{words}|{words}"):
        buffer.sample(16)


def test_reach_steps_out_of_order_are_refused():
    class OutOfOrder(DrawStrategy):
        def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
            reach = np.stack([np.full(len(rows.t), 3), np.full(len(rows.t), 2)], axis=1)
            return Instructions(rows.own_goals, np.minimum(reach, rows.length[:, None]))

    buffer = make_buffer(2, draw=OutOfOrder)
    fill(buffer, np.random.default_rng(0), 60)
    with pytest.raises(DrawContractError, match="after goal j-1's"):
        buffer.sample(16)


def test_bad_draw_strategy_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match=r"draw: .*nope"):
        make_buffer(1, draw="nope")
    with pytest.raises(ValueError, match="draw must be a draw-strategy plugin name"):
        make_buffer(1, draw=object())
    with pytest.raises(ValueError, match="draw_kwargs builds a named or class draw;"):
        make_buffer(1, draw=NextStepDraw(), draw_kwargs=dict(x=1))
    with pytest.raises(ValueError, match="draw_kwargs needs draw"):
        make_buffer(1, draw_kwargs=dict(x=1))
    with pytest.raises(ValueError, match="'first-reach' draws one-goal instructions"):
        make_buffer(2, draw="first-reach")
    with pytest.raises(ValueError, match="'exact-index' finds reaches by exact integer values"):
        make_buffer(1, draw="exact-index", goal_spec="tolerance")
    with pytest.raises(ValueError, match="draws_per_episode"):
        make_buffer(1, draw="stored", draw_kwargs=dict(draws_per_episode=0))


def test_a_strategy_object_is_a_template_each_source_copies():
    """Per-buffer state (the admitted share, compiled configurations) never leaks between buffers or sources."""
    strategy = NextStepDraw()
    a, b = make_buffer(1, draw=strategy), make_buffer(1, draw=strategy)
    assert type(a._draws) is NextStepDraw and a._draws is not strategy and a._draws is not b._draws
    assert not strategy.bound and a._draws.bound
    with pytest.raises(ValueError, match="already serves another buffer"):
        a._draws.bind(b._view)


def test_a_strategy_object_with_demonstrations_and_pickling_keeps_serving_its_rule():
    """The demonstrations' region gets its own copy; a pickled buffer keeps the strategy and serves the same."""
    import pickle

    from instruction_oracle import assert_serves_the_same

    buffer = make_buffer(1, size=60, n_envs=2, draw=NextStepDraw(), demo_ratio=0.25)
    rng = np.random.default_rng(3)
    stream, _ = fill(buffer, rng, 50)
    buffer.add_demonstrations([rec.episode for rec, _ in (stream.owner[(0, 0)],)])
    assert type(buffer.demonstrations.source.draws) is NextStepDraw
    assert buffer.demonstrations.source.draws is not buffer._draws
    clone = pickle.loads(pickle.dumps(buffer))
    assert type(clone._draws) is NextStepDraw
    assert_serves_the_same(buffer, clone)


def test_her_drop_in_takes_a_draw_strategy_in_goal_env_mode():
    from stable_baselines3.common.envs import BitFlippingEnv
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_hir import HerReplayBuffer

    venv = DummyVecEnv([lambda: BitFlippingEnv(n_bits=4, continuous=False, max_steps=4)])
    space = venv.observation_space
    assert isinstance(space, spaces.Dict)
    buffer = HerReplayBuffer(100, space, venv.action_space, env=venv, draw="her")
    assert type(buffer._draws) is HerDraw
    with pytest.raises(ValueError, match="'exact-index' finds reaches by exact integer values"):
        HerReplayBuffer(100, space, venv.action_space, env=venv, draw="exact-index",
                        goal_spec="tolerance")


def test_buffers_take_draw_strategies_as_keyword_only_extras():
    """``draw`` is the last keyword (before the deprecated names): SB3's positional arguments keep their places."""
    import inspect

    names = list(inspect.signature(HindsightInstructionReplayBuffer).parameters)
    assert names[-3:] == ["draw", "draw_kwargs", "renamed"]


def test_goal_env_strategies_are_checked_in_goal_env_mode():
    """HER's draw refuses instruction envs; its plugin check holds it to GoalEnv mode's contract instead: every
    relabeled reward is the env's compute_reward over the served window, 1-step and 3-step."""
    from sb3_hir.testing.draw_strategy import check_goal_env_draw_strategy

    check_goal_env_draw_strategy("her")
    with pytest.raises(ValueError, match="'near-future' draws one-goal instructions for instruction envs"):
        check_goal_env_draw_strategy("near-future")  # an instruction-env strategy refuses GoalEnv mode by name


@pytest.mark.parametrize("kwargs,match", [
    (dict(batches=0), "batches must be"), (dict(seed=-1), "seed must be"), (dict(num_goals=()), "num_goals must be"),
    (dict(num_goals=2), "num_goals must be"), (dict(num_goals=(0,)), "num_goals must be"),
    (dict(n_steps=[]), "n_steps must be"), (dict(memory_layouts="full"), "memory_layouts must be"),
    (dict(memory_layouts=("dense",)), "memory_layouts must be"),
])
def test_check_draw_strategy_names_a_bad_argument_instead_of_checking_nothing(kwargs, match):
    from sb3_hir.testing import check_draw_strategy

    with pytest.raises(ValueError, match=match):
        check_draw_strategy("window", **kwargs)


def test_check_goal_env_draw_strategy_names_a_bad_count():
    from sb3_hir.testing.draw_strategy import check_goal_env_draw_strategy

    with pytest.raises(ValueError, match="batches must be"):
        check_goal_env_draw_strategy("her", batches=0)
