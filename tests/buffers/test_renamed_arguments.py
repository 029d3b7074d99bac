"""The buffer's arguments renamed in 0.2 (issue 56, item 5): each old name is a deprecated alias of its new one until
0.3, serving exactly the rows the new name serves; an old name with its new one, or an unknown keyword, is refused."""

from __future__ import annotations

import ast
import inspect
import textwrap
import warnings
from typing import Any

import numpy as np
import pytest
from served_rows import filled_buffer, served

from sb3_hir import HerReplayBuffer
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.options import RENAMED_ARGUMENTS

#: old arguments -> (case of ``served_rows``, the same setting under the new names, what the buffer then reports).
CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "strategy": ("maze_k3_some_future", dict(hindsight_goals="all"), dict(hindsight_goals="all")),
    "goal_selection": ("maze_k3_some_future", dict(goal_step="episode"),
                       dict(goal_step="episode", goal_selection="episode")),
    "draw_strategy": ("maze_k1_some_future", dict(draw="window"), {}),
    "draw_strategy_kwargs": ("maze_k3_some_future", dict(draw="stored", draw_kwargs=dict(draws_per_episode=2)), {}),
}


def _old_names(new: dict[str, Any], old: str) -> dict[str, Any]:
    """``new`` with the argument renamed from ``old`` under its old name."""
    return {old if name == RENAMED_ARGUMENTS[old] else name: value for name, value in new.items()}


def test_every_renamed_argument_has_a_case() -> None:
    assert set(CASES) == set(RENAMED_ARGUMENTS)
    assert RENAMED_ARGUMENTS == {"strategy": "hindsight_goals", "goal_selection": "goal_step", "draw_strategy": "draw",
                                 "draw_strategy_kwargs": "draw_kwargs"}


@pytest.mark.parametrize("old", list(CASES))
def test_an_old_name_warns_and_serves_the_rows_of_the_new_one(old: str) -> None:
    case, new, reported = CASES[old]
    new_name = RENAMED_ARGUMENTS[old]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new names warn about nothing
        expected = filled_buffer(case, steps=90, size=60, **new)
    with pytest.warns(FutureWarning, match=rf"argument {old} is renamed {new_name}; {old} is deprecated and will "
                                                r"be removed in 0\.3"):
        buffer = filled_buffer(case, steps=90, size=60, **_old_names(new, old))
    for name, value in reported.items():
        assert getattr(buffer, name) == getattr(expected, name) == value
    assert type(buffer.draw_strategy) is type(expected.draw_strategy)
    if "draw_kwargs" in new:
        assert buffer.draw_strategy.draws_per_episode == 2
    rows, want = served(buffer), served(expected)
    assert rows.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(rows[key], want[key], err_msg=key)
    assert buffer.num_served_relabeled > 0  # the rows compared include relabeled ones


def test_both_old_draw_names_together_serve_the_new_ones() -> None:
    new = dict(draw="stored", draw_kwargs=dict(draws_per_episode=2))
    expected = filled_buffer("maze_k3_some_future", steps=90, size=60, **new)
    with pytest.warns(FutureWarning) as record:
        buffer = filled_buffer("maze_k3_some_future", steps=90, size=60, draw_strategy="stored",
                               draw_strategy_kwargs=dict(draws_per_episode=2))
    renamed = [str(w.message) for w in record if issubclass(w.category, FutureWarning)]
    assert sorted(message.split(": the argument ")[1].split()[0] for message in renamed) == [
        "draw_strategy", "draw_strategy_kwargs"]
    assert buffer.draw_strategy.draws_per_episode == 2
    rows, want = served(buffer), served(expected)
    for key in want:
        np.testing.assert_array_equal(rows[key], want[key], err_msg=key)


def test_the_drop_in_takes_the_old_names_too() -> None:
    with pytest.warns(FutureWarning, match="HerReplayBuffer: the argument goal_selection is renamed goal_step"):
        buffer = filled_buffer("bitflip_future", steps=40, size=40, goal_selection="episode")
    assert buffer.goal_step == "episode" and buffer.goal_selection_strategy.name == "EPISODE"
    expected = filled_buffer("bitflip_future", steps=40, size=40, goal_step="episode")
    rows, want = served(buffer), served(expected)
    for key in want:
        np.testing.assert_array_equal(rows[key], want[key], err_msg=key)


@pytest.mark.parametrize("old", list(CASES))
def test_an_old_name_with_its_new_one_is_refused_naming_both(old: str) -> None:
    case, new, _ = CASES[old]
    new_name = RENAMED_ARGUMENTS[old]
    both = {**new, old: new[new_name]}
    with pytest.raises(ValueError, match=rf"{old} is the deprecated name of {new_name}: give {new_name} only"):
        filled_buffer(case, steps=1, size=10, **both)


@pytest.mark.parametrize("cls", [HindsightInstructionReplayBuffer, HerReplayBuffer])
def test_an_unknown_keyword_is_a_type_error_as_python_raises(cls: type) -> None:
    case = "maze_k1_some_future" if cls is HindsightInstructionReplayBuffer else "bitflip_future"
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\) got an unexpected keyword argument 'x'$"):
        filled_buffer(case, steps=1, size=10, x=1)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'draw_strategy_kwarg'"):
        filled_buffer(case, steps=1, size=10, draw_strategy_kwarg={})


def test_the_new_names_report_what_they_picked() -> None:
    buffer = filled_buffer("maze_k1_some_future", steps=1, size=10)
    assert buffer.hindsight_goals == "some" and buffer.goal_step == buffer.goal_selection == "future"
    goal_env = filled_buffer("bitflip_future", steps=1, size=10)
    assert goal_env.hindsight_goals == "all" and goal_env.goal_step == "future"


def test_the_constructor_stays_short() -> None:
    """The renaming lives in ``options.renamed_arguments``: the constructor stays at most 60 lines."""
    source = textwrap.dedent(inspect.getsource(HindsightInstructionReplayBuffer.__init__))
    node = ast.parse(source).body[0]
    assert node.end_lineno - node.lineno + 1 <= 60
