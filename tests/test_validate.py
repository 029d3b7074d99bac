"""The shared argument checks of ``sb3_hir._validate``: one wording for every caller."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from sb3_hir._validate import check_choice, check_space_values


def test_check_choice_returns_the_value_and_names_the_argument_the_choices_and_the_hint() -> None:
    assert check_choice("b", "mode", ("a", "b")) == "b"
    with pytest.raises(ValueError, match=r"^mode must be one of 'a', 'b'; got 'c'$"):
        check_choice("c", "mode", ("a", "b"))
    with pytest.raises(ValueError, match=r"^mode must be one of 'a', 'b'; got 'c' \(or a Mode\)$"):
        check_choice("c", "mode", iter(("a", "b")), hint="or a Mode")


def test_check_choice_refuses_a_bool_that_compares_equal_to_a_choice() -> None:
    with pytest.raises(ValueError, match=r"^n must be one of 1, 2; got True$"):
        check_choice(True, "n", (1, 2))


@pytest.mark.parametrize(("keys", "match"), [
    ((), "keys must be one or more str observation keys"),
    ((1,), "keys must be one or more str observation keys"),
    (("obs", "obs"), "keys must not repeat a key"),
    (("obs", "nope"), r"keys \['nope'\] are not in the observation space; available keys: \['obs', 'goals'\]"),
])
def test_check_keys_names_the_argument_and_what_is_accepted(keys, match):
    from sb3_hir._validate import check_keys

    with pytest.raises(ValueError, match=match):
        check_keys(keys, ["obs", "goals"])
    assert check_keys("goals", ["obs", "goals"]) == ["goals"]


@pytest.mark.parametrize(("values", "space", "bounds", "match"), [
    ([[0.5, 3.0]], spaces.Box(-2, 2, (2,)), True, r"^a must hold values in \[-2, 2\] of Box.*got 3\.0 at \[0\]"),
    ([[0.5]], spaces.MultiBinary(1), False, r"^a must hold integers \(the space stores int8\) of MultiBinary\(1\)"),
    ([[2]], spaces.MultiBinary(1), False, r"^a must hold values in \[0, 1\] of MultiBinary\(1\); got 2"),
    ([[np.nan]], spaces.Box(-np.inf, np.inf, (1,)), False, r"^a must hold finite values of Box.*got nan"),
    ([0, 5], spaces.Discrete(3), True, r"^a must hold values in \[0, 2\] of Discrete\(3\); got 5 at \[1\]"),
    ([[300.0]], spaces.Box(-1, 1, (1,), dtype=np.int8), False, r"^a must hold values in \[-128, 127\] of Box"),
    ([["x"]], spaces.Box(-1, 1, (1,)), True, r"^a must hold numbers of Box.*dtype <U1"),
])
def test_check_space_values_names_the_argument_the_space_and_the_first_bad_value(values, space, bounds, match):
    with pytest.raises(ValueError, match=match):
        check_space_values(np.array(values), space, "a", bounds=bounds)


def test_check_space_values_passes_values_the_space_holds_and_loose_observation_bounds() -> None:
    values = np.array([[0.5, 100.0]])
    assert check_space_values(values, spaces.Box(-1, 1, (2,)), "obs", bounds=False) is values
    check_space_values(np.array([[1, 3]]), spaces.MultiDiscrete([2, 4]), "a")
    check_space_values(np.array([3]), spaces.Discrete(2, start=2), "a")


@pytest.mark.parametrize(("check", "args", "detail"), [
    ("check_int", (0, "n_steps", 1), "must be an int >= 1; got 0"),
    ("check_number", (2.0, "relabel_ratio", 0.0, 1.0), "must be a number in [0, 1]; got 2.0"),
    ("check_choice", ("x", "memory_layout", ["full", "compact"]), "must be one of 'full', 'compact'; got 'x'"),
])
def test_a_refused_argument_is_named_on_the_error_not_only_in_its_message(check, args, detail) -> None:
    from sb3_hir import _validate

    with pytest.raises(_validate.ArgumentError) as exc:
        getattr(_validate, check)(*args)
    assert isinstance(exc.value, ValueError)
    assert (exc.value.argument, exc.value.detail) == (args[1], detail)
    assert str(exc.value) == f"{args[1]} {detail}"


def test_the_cli_names_its_option_from_the_error_s_argument_not_from_the_message() -> None:
    from sb3_hir._validate import ArgumentError
    from sb3_hir.cli.train import usage_error

    assert str(usage_error(ArgumentError("relabel_ratio", "must be a number in [0, 1]; got 2.0"), "dqn-some")) == (
        "--relabel-ratio must be a number in [0, 1]; got 2.0")
    # a message that merely starts with an option's name is not about that argument
    assert str(usage_error(ValueError("n_steps of the env and gamma disagree"), "dqn-some")) == (
        "cannot build dqn-some: n_steps of the env and gamma disagree")
    assert str(usage_error(ArgumentError("gamma", "must be a number in [0, 1]; got 2"), "dqn-some")) == (
        "cannot build dqn-some: gamma must be a number in [0, 1]; got 2")
