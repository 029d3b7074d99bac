"""The bad-input battery of issue 55 ("every door answers clearly"), the library's part: each case is an input a user
meets on the newest surfaces (event goals, draw strategies, goal-spec arguments, the uint8 window, the effect table),
and each asserts the named error (the argument and what is accepted) or the one warning, and, where a call is
refused, that it left no trace."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from sb3_hir import ActionEffectWrapper, HistoryWrapper
from sb3_hir.buffers import HindsightInstructionReplayBuffer, compiled
from sb3_hir.buffers.draw_checks import DRY_DRAWS
from sb3_hir.buffers.draws import Candidates, DrawContractError, DrawStrategy, DrawView, Instructions
from sb3_hir.goals import ExactGoalSpec, ToleranceGoalSpec
from sb3_hir.history import HISTORY_KEY
from sb3_hir.testing import check_draw_strategy, check_instruction_env
from sb3_hir.testing.env import _counterfactual_instructions
from sb3_hir.testing.served_rows import (
    GRID,
    fill,
    make_buffer,
    make_space,
    random_path,
    simulate,
    stream_episodes,
)

ROOT = Path(__file__).resolve().parents[1]
NOTHING = -3


# -- 1. event goals: refused where they would be silently wrong --------------------------------------------------------
def event_stream(buffer: HindsightInstructionReplayBuffer, spec: ExactGoalSpec, seed: int = 0) -> Any:
    """Episodes whose achieved value is NOTHING at about half the steps (never at the reset)."""
    rng = np.random.default_rng(seed)

    def new() -> Any:
        path = random_path(rng, int(rng.integers(2, 12)))
        hit = rng.random(len(path)) < 0.5
        hit[0] = False
        path[hit] = NOTHING
        return simulate(path, rng.integers(0, GRID, size=(1, 2)), False, spec), False

    return stream_episodes(buffer, 90, new)


@pytest.mark.parametrize("jit", [pytest.param(True, marks=pytest.mark.skipif(not compiled.AVAILABLE,
                                                                             reason="numba is not importable")),
                                 False], ids=["compiled", "numpy"])
def test_the_buffer_refuses_a_served_goal_outside_the_goals_space_naming_nothing_value(jit: bool) -> None:
    spec = ExactGoalSpec()  # the env forgot nothing_value: -3 lies outside the goals' Box(-1, 10)
    buffer = make_buffer(1, size=60, n_envs=2, goal_spec=spec, hindsight_goals="all", seed=1)
    buffer.jit = jit
    event_stream(buffer, spec)
    served = []
    with pytest.raises(ValueError, match=r"goal \[-3, -3\].*outside observation_space\['goals'\] = "
                                         r"Box\(low=.*-1.*high=.*10.*nothing_value=-3"):
        for _ in range(20):
            served.append(buffer.num_served)
            buffer.sample(32)
    assert buffer.num_served == served[-1]  # the refused batch was neither served nor counted


def test_declared_nothing_value_is_served_without_complaint() -> None:
    spec = ExactGoalSpec(nothing_value=NOTHING)
    buffer = make_buffer(1, size=60, n_envs=2, goal_spec=spec, hindsight_goals="all", seed=1)
    event_stream(buffer, spec)
    for _ in range(20):
        buffer.sample(32)
    assert buffer.served_relabeled_share > 0


class EventCorridor(gym.Env):
    """Cells 0..7 on a line; only even cells are events (achieved ``[0, x]``), an odd cell achieves nothing
    (``[NOTHING, NOTHING]``). Two goals, reached in order; it takes an instruction at reset and, being careful,
    refuses one outside its goals space."""

    accepts_reset_goals = True
    metadata: dict[str, Any] = {}

    def __init__(self, spec: ExactGoalSpec) -> None:
        self.goal_spec = spec
        self.observation_space = spaces.Dict({
            "obs": spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32),
            "goals": spaces.Box(-1, 7, shape=(2, 2), dtype=np.int32),
            "achieved": spaces.Box(NOTHING, 7, shape=(1, 2), dtype=np.int32),
        })
        self.action_space = spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.x, self.t, self.reached = int(self.np_random.integers(0, 8)), 0, 0
        if options and "goals" in options:
            goals = np.asarray(options["goals"], dtype=np.int32)
            if not self.observation_space["goals"].contains(goals):
                raise ValueError(f"goals {goals.tolist()} lie outside the goals space")
            self.goals = goals.copy()
        else:
            self.goals = np.array([[0, c] for c in self.np_random.choice([0, 2, 4, 6], 2, replace=False)], np.int32)
        return self._obs(), {"is_success": False}

    def _achieved(self) -> np.ndarray:
        return np.array([[0, self.x]] if self.x % 2 == 0 else [[NOTHING, NOTHING]], dtype=np.int32)

    def _obs(self) -> dict[str, np.ndarray]:
        goals = self.goals.copy()
        goals[: self.reached] = -1
        return {"obs": np.array([self.x / 8], np.float32), "goals": goals, "achieved": self._achieved()}

    def step(self, action: Any) -> Any:
        self.x = int(np.clip(self.x + int(action) - 1, 0, 7))
        self.t += 1
        reward = 0.0
        if self.reached < 2 and np.array_equal(self._achieved()[0], self.goals[self.reached]):
            reward, self.reached = 1.0, self.reached + 1
        terminated = self.reached == 2
        return self._obs(), reward, terminated, self.t >= 12, {"is_success": terminated}


def test_check_instruction_env_flags_an_achieved_value_outside_the_goals_space_and_suggests_nothing_value() -> None:
    with pytest.raises(AssertionError, match=r"observation\['achieved'\] = .*-3.* lies outside "
                                             r"observation_space\['goals'\].*nothing_value=-3"):
        check_instruction_env(EventCorridor(ExactGoalSpec()), n_episodes=3)


def test_a_careful_event_env_passes_and_counterfactuals_never_hold_the_nothing_value() -> None:
    spec = ExactGoalSpec(nothing_value=NOTHING)
    check_instruction_env(EventCorridor(spec), n_episodes=6, counterfactual=4)
    from sb3_hir.relabel import HindsightInstructionRelabeler

    relabeler = HindsightInstructionRelabeler(2, strategy="none", goal_spec=spec)
    rng = np.random.default_rng(0)
    rec = simulate(np.array([[0, 0], [NOTHING, NOTHING], [0, 2], [NOTHING, NOTHING], [NOTHING, NOTHING], [0, 4]]),
                   np.array([[0, 6], [0, 4]]), spec=spec)
    for _ in range(50):
        for goals in _counterfactual_instructions(relabeler, rec.episode, rng, 2):
            assert not spec.is_nothing(goals).any(), goals


def test_the_events_guide_says_a_nothing_step_never_pays_and_how_goal_spec_reaches_the_buffer() -> None:
    text = (ROOT / "docs" / "guide" / "events.md").read_text()
    assert "never pays" in text
    assert "replay_buffer_kwargs=dict(goal_spec=" in text
    doc = HindsightInstructionReplayBuffer.__init__.__doc__ or HindsightInstructionReplayBuffer.__doc__ or ""
    assert "never sees the env" in " ".join(doc.split())


# -- 2. draw strategies ------------------------------------------------------------------------------------------------
class NextStepDraw(DrawStrategy):
    """The value achieved right after the transition, with its true first reach (a correct one-goal strategy)."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals = view.achieved_at((rows.start + rows.t) % view.buffer_size, rows.env)[:, None]
        offsets = np.arange(int(rows.length.max()))
        window = view.achieved_at((rows.start[:, None] + np.minimum(offsets, rows.length[:, None] - 1))
                                  % view.buffer_size, rows.env[:, None])
        hits = np.asarray(view.goal_spec.reached(window, goals), dtype=bool) & (offsets < rows.length[:, None])
        return Instructions(goals, (hits.argmax(axis=1) + 1)[:, None])


class NaNDraw(NextStepDraw):
    """Every other goal NaN: served, a NaN goal is never reached (reward 0, a success on HER's -1/0 scale)."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals, reach, _ = super().instructions(view, rows)
        goals = goals.astype(np.float32)
        goals[::2] = np.nan
        return Instructions(goals, reach)


class KeepsNothingDraw(NextStepDraw):
    """Drops every draw (keep False): nothing is ever admitted."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals, reach, _ = super().instructions(view, rows)
        return Instructions(goals, reach, np.zeros(len(goals), dtype=bool))


class FinalNothingDraw(NextStepDraw):
    """Draws the nothing value every time, as a 'final' draw on event episodes ending on a nothing step."""

    def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
        goals, _, _ = super().instructions(view, rows)
        return Instructions(np.full_like(goals, NOTHING), np.full((len(goals), 1), -1))


def float_buffer(strategy: Any) -> HindsightInstructionReplayBuffer:
    space = spaces.Dict({
        "obs": spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "goals": spaces.Box(-1, 10, (1, 2), np.float32),
        "achieved": spaces.Box(0, 10, (1, 2), np.float32),
    })
    buffer = HindsightInstructionReplayBuffer(64, space, spaces.Discrete(5), device="cpu", relabel_ratio=1.0,
                                              seed=0, goal_spec=ToleranceGoalSpec(tolerance=0.5),
                                              draw=strategy)
    fill(buffer, np.random.default_rng(0), 40)
    return buffer


def test_the_contract_refuses_non_finite_goals_naming_strategy_field_and_row() -> None:
    buffer = float_buffer(NaNDraw)
    with pytest.raises(DrawContractError, match=r"NaNDraw\.instructions: goals must be finite; got \[\[nan, .*"
                                                r"candidate row 0 \(buffer row \d+, step \d+"):
        buffer.sample(16)
    assert buffer.num_served == 0 and buffer.last_sample_info is None  # nothing served, nothing counted


@pytest.mark.parametrize("strategy,spec,cause", [
    (KeepsNothingDraw, ExactGoalSpec(), "keep False"),
    (FinalNothingDraw, ExactGoalSpec(nothing_value=NOTHING), "nothing_value"),
])
def test_a_strategy_that_admits_nothing_for_a_while_warns_once_naming_it_and_the_cause(
        strategy: type[DrawStrategy], spec: ExactGoalSpec, cause: str) -> None:
    buffer = make_buffer(1, size=64, goal_spec=spec, draw=strategy)
    event_stream(buffer, spec) if spec.nothing_value is not None else fill(buffer, np.random.default_rng(0), 60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2 * DRY_DRAWS + 5):
            buffer.sample(8)
    ours = [w for w in caught if "admitted no relabeled pair" in str(w.message)]
    assert len(ours) == 1
    assert strategy.__name__ in str(ours[0].message) and cause in str(ours[0].message)
    assert buffer.served_relabeled_share == 0.0


def test_a_healthy_strategy_never_warns_of_dry_draws() -> None:
    buffer = make_buffer(1, size=64)
    fill(buffer, np.random.default_rng(0), 60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2 * DRY_DRAWS):
            buffer.sample(8)


def test_no_dry_warning_before_any_episode_ends() -> None:
    """Before the first episode ends nothing can be drawn, and that is no fault of the strategy."""
    buffer = make_buffer(1, size=64)
    obs = {"obs": np.zeros((1, 3), np.float32), "goals": np.full((1, 1, 2), 3, np.int32),
           "achieved": np.zeros((1, 1, 2), np.int32)}
    for _ in range(40):  # one running episode
        buffer.add(obs, obs, np.zeros((1, 1)), np.zeros(1), np.zeros(1), [{}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3 * DRY_DRAWS):
            buffer.sample(8)


@pytest.mark.parametrize("strategy,accepted", [("first-reach", "'exact_values'"), (NextStepDraw, "none")])
def test_draw_kwargs_errors_name_the_argument_and_the_strategy(strategy: Any, accepted: str) -> None:
    name = strategy if isinstance(strategy, str) else strategy.__name__
    with pytest.raises(ValueError, match=rf"draw_kwargs: draw strategy '?{name}'? takes no argument "
                                         rf"'bogus'; it accepts {accepted}"):
        make_buffer(1, draw=strategy, draw_kwargs=dict(bogus=1))


def test_a_buffer_tells_its_draw_strategy_publicly_and_read_only() -> None:
    buffer = make_buffer(2)
    assert isinstance(buffer.draw_strategy, DrawStrategy)
    assert type(buffer.draw_strategy).__name__ == "ExactIndexDraw"
    with pytest.raises(AttributeError):
        setattr(buffer, "draw_strategy", NextStepDraw())  # noqa: B010 (a property: read-only)
    guide = (ROOT / "docs" / "guide" / "draw_strategies.md").read_text()
    assert "replay_buffer.draw_strategy" in guide and "._draws" not in guide


def test_check_draw_strategy_takes_a_goal_spec_for_event_goal_strategies() -> None:
    spec = ExactGoalSpec(nothing_value=NOTHING)
    for name in ("window", "exact-index"):
        check_draw_strategy(name, num_goals=(1, 2), n_steps=(1,), memory_layouts=("full",), goal_spec=spec,
                            batches=4)


def test_check_draw_strategy_names_the_field_row_step_and_drawn_reach() -> None:
    class ClaimsTheTransitionStep(NextStepDraw):
        def instructions(self, view: DrawView, rows: Candidates) -> Instructions:
            goals, _, _ = super().instructions(view, rows)
            return Instructions(goals, (rows.t + 1)[:, None])

    with pytest.raises(AssertionError) as caught:
        check_draw_strategy(ClaimsTheTransitionStep, num_goals=(1,), n_steps=(1,), memory_layouts=("full",),
                            demonstrations=False)
    message = str(caught.value)
    assert re.search(r"served row \d+ \(buffer row \d+, sub-env \d, step \d+, relabeled: goals \[\[.*\]\], drawn "
                     r"reach \[\d+\]\): (reward|done|next observation 'goals'|window|reach)", message), message


# -- 3. goal-spec arguments checked against the goals' dtype and the spec ----------------------------------------------
def test_a_fractional_wildcard_on_integer_goals_is_refused_not_cast() -> None:
    spec = ExactGoalSpec(wildcard_value=2.5)
    with pytest.raises(ValueError, match=r"wildcard_value=2\.5 does not fit observation_space\['goals'\] of dtype "
                                         r"int32.*stored as 2"):
        make_buffer(1, goal_spec=spec)
    with pytest.raises(ValueError, match=r"pad_value=300 does not fit observation_space\['goals'\] of dtype uint8"):
        ExactGoalSpec(mask_value=254, pad_value=300).validate_space(spaces.Dict({
            "goals": spaces.Box(0, 255, (2, 2), np.uint8), "achieved": spaces.Box(0, 255, (2,), np.uint8)}))
    ExactGoalSpec(wildcard_value=9.0).validate_space(make_space(1))  # an integral float is the integer 9


def test_a_spec_that_cannot_honour_a_wildcard_refuses_one_by_name() -> None:
    with pytest.raises(ValueError, match="wildcard_value: ToleranceGoalSpec cannot honour a wildcard"):
        ToleranceGoalSpec(tolerance=0.5, wildcard_value=9)
    assert ExactGoalSpec(wildcard_value=9).wildcard_value == 9


def test_ragged_description_levels_name_the_argument() -> None:
    with pytest.raises(ValueError, match="description_levels must be a non-empty sequence of equal-length bool"):
        ExactGoalSpec(wildcard_value=9, description_levels=[(True, False), (True,)])


# -- 4. the uint8 window -----------------------------------------------------------------------------------------------
class Overflowing(gym.Env):
    """Declares ``obs`` in [0, 10], then returns 300 at its second step."""

    metadata: dict[str, Any] = {}

    def __init__(self) -> None:
        self.observation_space = spaces.Dict({"obs": spaces.Box(0, 10, (2,), np.int64)})
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return {"obs": np.array([1, 2])}, {}

    def step(self, action: Any) -> Any:
        self.t += 1
        return {"obs": np.array([3, 300 if self.t == 2 else 4])}, 0.0, False, False, {}


def test_the_auto_uint8_window_refuses_a_value_past_the_envs_declared_bounds() -> None:
    env = HistoryWrapper(Overflowing(), length=3)
    assert env.dtype == np.uint8
    env.reset(seed=0)
    obs = env.step(0)[0]
    with pytest.raises(ValueError, match=r"observation\['obs'\] holds 300, outside the bounds the env declares for "
                                         r"it \(Box\(0, 10.*stored as 44.*dtype='float32'"):
        env.step(1)
    assert np.array_equal(env._window, obs[HISTORY_KEY])  # the refused step left the window as it was
    assert HistoryWrapper(Overflowing(), length=3, dtype="float32").dtype == np.float32


# -- 5. the effect table -----------------------------------------------------------------------------------------------
class Plain(gym.Env):
    """A Dict env that declares no ``effect_columns``."""

    metadata: dict[str, Any] = {}

    def __init__(self) -> None:
        self.observation_space = spaces.Dict({"obs": spaces.Box(0, 10, (3,), np.float32)})
        self.action_space = spaces.Discrete(2)


def test_the_effect_table_warns_up_front_without_effect_columns() -> None:
    with pytest.warns(UserWarning, match=r"Plain declares no effect_columns.*heuristically.*columns="):
        ActionEffectWrapper(Plain())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ActionEffectWrapper(Plain(), columns=[0, 1])


# -- 6. docs name only public parts ------------------------------------------------------------------------------------
def test_the_plugin_docs_name_draw_strategies_once_and_their_hook() -> None:
    assert "register_draw_strategies" in (ROOT / "docs" / "api" / "plugins.rst").read_text()
    guide = (ROOT / "docs" / "guide" / "plugins.md").read_text()
    rows = [line for line in guide.splitlines() if line.startswith("|") and "register_draw_strategies" in line]
    assert len(rows) == 1, rows
    intro = guide.split("\n## ", 1)[0]
    assert "draw strateg" in intro
    example = (ROOT / "plugins" / "sb3-hir-example" / "README.md").read_text()
    assert "near-future" in example and "register_draw_strategies" in example
    assert "main README" not in example


def test_the_docs_and_readmes_name_no_private_attribute() -> None:
    pages = [ROOT / "README.md", *(ROOT / "plugins").glob("*/README.md"), *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "docs").rglob("*.rst")]
    private = re.compile(r"\b[A-Za-z]\w*(\(\))?\._[a-z]\w*")
    found = [f"{page.relative_to(ROOT)}: {match.group(0)}" for page in pages
             for match in private.finditer(page.read_text()) if "maintainers" not in page.name]
    assert not found, found


def test_candidates_fields_say_what_they_hold() -> None:
    import inspect

    from sb3_hir.buffers.draws import base

    source = inspect.getsource(base.Candidates)
    for field in ("meta", "slot_meta", "own_steps"):
        assert re.search(rf"#:.*\n(.*\n)*?\s+{field}: np\.ndarray", source), field
    assert "-1 where it never did" in source
