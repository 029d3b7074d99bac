"""Instructions of varying length (``pad_value``) and goals reached in any order within a group (``groups_key``).

The episode relabeler, both draw backends and both layouts are held to a plain per-step oracle
(:func:`sb3_hir.testing.served_rows.simulate`) that knows padding and groups; the counterfactual tests show what the
same episodes become when the spec is not told.
"""

from __future__ import annotations

import numpy as np
import pytest

from sb3_hir.buffers import compiled
from sb3_hir.goals import ExactGoalSpec, indexable_by_value
from sb3_hir.reach import instruction_end, reach_in_groups, slot_groups
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.testing.served_rows import (
    GRID,
    Stream,
    check_sample,
    make_buffer,
    make_space,
    random_path,
    simulate,
    stream_episodes,
)

# One profile runs these (tests/conftest.py): the buffer runs on numpy, numba, torch and SB3, the same
# releases in both; gymnasium reaches it through spaces. The drop-in tests against SB3's run in both.
pytestmark = pytest.mark.once("dagger")

PAD = -4
NOTHING = -3
WILDCARD = -2
KEY = "goal_steps"
JIT = [pytest.param(True, marks=pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not importable here")),
       False]


def padded_spec(**kwargs) -> ExactGoalSpec:
    return ExactGoalSpec(pad_value=PAD, groups_key=KEY, **kwargs)


def babyai_like_spec() -> ExactGoalSpec:
    return padded_spec(nothing_value=NOTHING, wildcard_value=WILDCARD, description_levels=[(True, True), (False, True)],
                       same_step_goals=True)


def random_instruction(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    """1..k goals (the rest padding) in random adjacent groups."""
    length = int(rng.integers(1, k + 1))
    goals = np.full((k, 2), PAD, np.int32)
    goals[:length] = rng.integers(0, GRID, size=(length, 2))
    groups = np.full(k, PAD, np.int32)
    group = 0
    for j in range(length):
        group += int(j > 0 and rng.random() < 0.5)
        groups[j] = group
    return goals, groups


def event_path(rng: np.random.Generator, length: int, spec: ExactGoalSpec) -> np.ndarray:
    path = random_path(rng, length)
    if spec.nothing_value is not None:
        nothing = rng.random(len(path)) < 0.4
        nothing[0] = False
        path[nothing] = NOTHING
    return path


def stream_into(buffer, spec, rng: np.random.Generator, steps: int, k: int, fall_rate: float = 0.2
                ) -> tuple[Stream, dict]:
    def new():
        goals, groups = random_instruction(rng, k)
        fall = bool(rng.random() < fall_rate)
        return simulate(event_path(rng, int(rng.integers(2, 12)), spec), goals, fall, spec, groups=groups), fall

    return stream_episodes(buffer, steps, new)


# -- the spec ---------------------------------------------------------------------------------------------------------
def test_padding_and_groups_are_declared_checked_and_leave_the_ordered_case_alone():
    spec = padded_spec()
    assert spec.is_padding(np.array([[PAD, PAD], [1, PAD], [1, 2]])).tolist() == [True, False, False]
    goals = np.array([[-1, -1], [PAD, PAD]])
    assert bool(spec.is_complete(goals)) and not bool(spec.is_complete(np.array([[1, 1], [PAD, PAD]])))
    assert not spec.ordered and ExactGoalSpec().ordered
    assert "pad_value=-4" in repr(spec) and "groups_key='goal_steps'" in repr(spec)
    assert "pad_value" not in repr(ExactGoalSpec())
    assert not ExactGoalSpec().is_padding(goals).any()
    assert not indexable_by_value(spec, make_space(2, groups_key=KEY))  # the index finds goals in slot order only
    for bad, match in ((dict(pad_value=-1), "pad_value must differ"), (dict(pad_value=np.nan), "finite number"),
                       (dict(pad_value=True), "finite number"), (dict(groups_key="goals"), "groups_key must be"),
                       (dict(groups_key=""), "groups_key must be")):
        with pytest.raises(ValueError, match=match):
            ExactGoalSpec(**bad)
    with pytest.raises(ValueError, match="missing the goal spec's groups_key 'goal_steps'"):
        spec.validate_space(make_space(2))
    wrong = make_space(3, groups_key=KEY)
    wrong.spaces[KEY] = make_space(2, groups_key=KEY)[KEY]
    with pytest.raises(ValueError, match=r"must be an integer array of shape \(k,\) = \(3,\)"):
        spec.validate_space(wrong)


def test_reach_in_groups_latches_a_groups_goals_in_any_order_and_never_reaches_padding():
    # goals A (slot 0) and B (slot 1) in group 0, C (slot 2) in group 1, slot 3 padding; hits over 6 steps
    hits = np.zeros((1, 6, 4), bool)
    hits[0, 0, 1] = True  # B at step 1
    hits[0, 1, 2] = True  # C at step 2: its group is not active yet
    hits[0, 3, 0] = True  # A at step 4: group 0 complete
    hits[0, 4, 2] = True  # C at step 5
    hits[0, :, 3] = True  # a padding slot's hits never count (slot_groups gives it -1)
    real = np.array([[True, True, True, False]])
    groups = slot_groups(np.array([[0, 0, 1, PAD]]), real)
    reach = reach_in_groups(hits & real[:, None], groups, same_step=False)
    assert reach.tolist() == [[4, 1, 5, -1]]
    assert instruction_end(reach, real).tolist() == [5]
    ordered = reach_in_groups(hits & real[:, None], slot_groups(None, real), same_step=False)
    assert ordered.tolist() == [[4, -1, -1, -1]]  # in slot order B counts only after A, and it is not seen again
    assert instruction_end(ordered, real).tolist() == [-1]
    hits[0, 3, 2] = True  # C also at step 4, the step that completes group 0
    assert reach_in_groups(hits & real[:, None], groups, same_step=True).tolist() == [[4, 1, 4, -1]]


@pytest.mark.parametrize("spec", [padded_spec(), babyai_like_spec()], ids=["padded", "babyai-like"])
def test_the_episode_relabeler_replays_and_relabels_as_the_per_step_oracle(spec):
    rng = np.random.default_rng(0)
    k = 4
    for strategy in ("some", "all"):
        relabeler = HindsightInstructionRelabeler(k, strategy, spec)
        drawn = 0
        for _ in range(150):
            goals, groups = random_instruction(rng, k)
            path = event_path(rng, int(rng.integers(2, 14)), spec)
            rec = simulate(path, goals, spec=spec, groups=groups)
            replayed = relabeler.replay(rec.episode, goals)
            for field in ("rewards", "terminated", "truncated"):
                np.testing.assert_array_equal(getattr(replayed, field), getattr(rec.episode, field))
            np.testing.assert_array_equal(replayed.observations["goals"], rec.episode.observations["goals"])
            new = relabeler.relabel_goals(rec.episode, rng)
            if new is None:
                continue
            drawn += 1
            # "some"/"all" keep the episode's own length: padding stays where it was, real goals stay real
            np.testing.assert_array_equal(spec.is_padding(new), spec.is_padding(goals))
            oracle = simulate(path[: len(rec.episode) + 1], new, spec=spec, groups=groups).episode
            replayed = relabeler.replay(rec.episode, new)
            np.testing.assert_array_equal(replayed.rewards, oracle.rewards)
            np.testing.assert_array_equal(replayed.observations["goals"], oracle.observations["goals"])
        assert drawn > 50


@pytest.mark.parametrize("jit", JIT, ids=["compiled", "numpy"])
@pytest.mark.parametrize("spec", [padded_spec(), babyai_like_spec()], ids=["padded", "babyai-like"])
@pytest.mark.parametrize("strategy", ["some", "all"])
@pytest.mark.parametrize("n_steps,layout", [(1, "full"), (3, "compact")])
def test_every_served_row_is_its_episodes_replay_under_padding_and_groups(jit, spec, strategy, n_steps, layout):
    k = 4
    buffer = make_buffer(k, size=80, n_envs=2, goal_spec=spec, hindsight_goals=strategy, n_steps=n_steps, gamma=0.9,
                         memory_layout=layout, relabel_ratio=0.8, seed=1)
    buffer.jit = jit
    stream, falls = stream_into(buffer, spec, np.random.default_rng(4), 120, k)
    relabeled = 0
    for _ in range(15):
        mask = check_sample(stream, 32, spec, falls)  # every row against the plain per-step oracle
        info = buffer.last_sample_info
        relabeled += int(mask.sum())
        # a relabeled instruction keeps its episode's padding (its length)
        for b in np.flatnonzero(mask):
            rec, _ = stream.owner[(int(info.rows[b]), int(info.env_indices[b]))]
            own = rec.episode.observations["goals"][0]
            np.testing.assert_array_equal(spec.is_padding(info.goals[b]), spec.is_padding(own))
    assert relabeled > 250


@pytest.mark.filterwarnings("ignore:the env's recorded rewards differ")  # the buffer warns of the mismatch, rightly
@pytest.mark.parametrize("jit", JIT, ids=["compiled", "numpy"])
def test_without_the_declarations_padded_instructions_never_complete(jit):
    """The counterfactual: the same padded episodes, the spec not told its padding value. A padding goal is then a goal
    like any other that no step reaches, so no relabeled row of a padded instruction is ever terminal (the episodes
    never fall: only goals end them), where with the declaration many are."""
    k = 4
    rng_seed = 4

    def terminal_padded(spec) -> int:
        buffer = make_buffer(k, size=80, n_envs=2, goal_spec=spec, hindsight_goals="all", seed=1)
        buffer.jit = jit
        stream_into(buffer, padded_spec(), np.random.default_rng(rng_seed), 120, k, fall_rate=0.0)
        count = 0
        for _ in range(15):
            sample = buffer.sample(32)
            info = buffer.last_sample_info
            padded = (info.goals == PAD).all(axis=-1).any(axis=1)
            count += int((sample.dones.numpy()[:, 0] > 0)[info.relabeled & padded].sum())
        return count

    assert terminal_padded(padded_spec()) > 20
    assert terminal_padded(ExactGoalSpec(groups_key=KEY)) == 0


@pytest.mark.filterwarnings("ignore:the env's recorded rewards differ")  # the buffer warns of the mismatch, rightly
@pytest.mark.parametrize("jit", JIT, ids=["compiled", "numpy"])
def test_without_the_groups_declared_an_and_reached_out_of_order_is_served_in_slot_order(jit):
    """The counterfactual: the same observations (groups key included), the spec not told it holds the groups. The
    buffer then serves slot order, which the oracle of the env (goals of a group in any order) catches."""
    from gymnasium import spaces

    from sb3_hir.buffers import HindsightInstructionReplayBuffer

    k, spec = 3, padded_spec()
    undeclared = HindsightInstructionReplayBuffer(80, make_space(k, groups_key=KEY), spaces.Discrete(5), device="cpu",
                                                  n_envs=2, goal_spec=ExactGoalSpec(pad_value=PAD),
                                                  hindsight_goals="all", relabel_ratio=1.0, seed=1)
    undeclared.jit = jit
    stream, falls = stream_into(undeclared, spec, np.random.default_rng(4), 120, k)
    with pytest.raises(AssertionError):
        for _ in range(10):
            check_sample(stream, 32, spec, falls)


def test_strategies_that_index_goals_in_slot_order_refuse_groups_and_padding(research):
    with pytest.raises(ValueError, match=r"'exact-index' finds each goal after the previous slot's; .* 'window'"):
        make_buffer(3, goal_spec=padded_spec(), draw="exact-index")
    assert type(make_buffer(3, goal_spec=padded_spec())._draws).__name__ == "WindowDraw"
    RelaxedDraw = research("relaxed").RelaxedDraw

    with pytest.raises(ValueError, match=r"RelaxedDraw ends an instruction at its last slot's reach; .* 'window'"):
        make_buffer(3, goal_spec=padded_spec(), draw=RelaxedDraw)
    make_buffer(3, goal_spec=ExactGoalSpec(), draw=RelaxedDraw)  # ordered: served as before


def test_reach_steps_refuses_a_groups_spec_without_the_groups_rather_than_reaching_in_slot_order():
    relabeler = HindsightInstructionRelabeler(2, goal_spec=padded_spec())
    achieved = np.array([[0, 0], [2, 2], [1, 1]])  # the second slot's goal first, then the first's
    goals = np.array([[1, 1], [2, 2]])
    with pytest.raises(ValueError, match=r"groups must be the episode's \(2,\) goal groups .* groups_key 'goal_steps'"):
        relabeler.reach_steps(achieved, goals)
    assert relabeler.reach_steps(achieved, goals, np.array([0, 0])).tolist() == [2, 1]  # one group: any order
    assert relabeler.reach_steps(achieved, goals, np.array([0, 1])).tolist() == [2, -1]  # two: in order
    assert HindsightInstructionRelabeler(2).reach_steps(achieved, goals).tolist() == [2, -1]  # ordered spec: no groups


class TwoArgumentRelabeler(HindsightInstructionRelabeler):
    """A plugin relabeler written before groups existed: its ``reach_steps`` takes no groups."""

    def reach_steps(self, achieved, goals):  # type: ignore[override]
        return super().reach_steps(achieved, goals, None if self.goal_spec.groups_key is None else [0] * len(goals))


def test_a_relabeler_that_cannot_take_groups_is_refused_at_construction_under_a_groups_spec():
    with pytest.raises(ValueError, match=r"relabeler: TwoArgumentRelabeler.reach_steps takes no groups, but its goal "
                                         r"spec declares groups_key 'goal_steps'"):
        make_buffer(2, goal_spec=padded_spec(), relabeler=TwoArgumentRelabeler)
    buffer = make_buffer(2, goal_spec=ExactGoalSpec(), relabeler=TwoArgumentRelabeler)  # ordered: accepted
    assert type(buffer.relabeler).__name__ == "TwoArgumentRelabeler"


@pytest.mark.parametrize("spec", [padded_spec(), babyai_like_spec()], ids=["padded", "babyai-like"])
def test_compiled_and_numpy_window_reaches_serve_the_same_batches(spec):
    """The compiled window reach (one scan per goal from its group's start) gives the numpy comparison's reach steps,
    so both backends serve identical batches from identical buffers."""
    from instruction_oracle import assert_serves_the_same

    if not compiled.AVAILABLE:
        pytest.skip("numba is not importable here")
    buffers = [make_buffer(4, size=80, n_envs=2, goal_spec=spec, hindsight_goals="some", n_steps=3, gamma=0.9, seed=3)
               for _ in range(2)]
    for buffer, jit in zip(buffers, (True, False), strict=True):
        buffer.jit = jit
        stream_into(buffer, spec, np.random.default_rng(6), 150, 4)
    assert_serves_the_same(*buffers)
