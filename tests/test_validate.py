"""The shared argument checks of ``sb3_hir._validate``: one wording for every caller."""

from __future__ import annotations

import pytest

from sb3_hir._validate import check_choice


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
