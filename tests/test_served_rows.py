"""sample() serves exactly the rows the numpy implementation served before the compiled kernels (fixed seeds).

``tests/data/served_rows.npz`` was written by ``tests/served_rows.py`` from the buffer before any sampling kernel
was compiled; every sampling path (k = 3 exact index, k = 2 tolerance window, k = 1 first-reach index, GoalEnv
continuing and terminating, n-step, every goal selection, a wrapped circular buffer) must serve the same draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from served_rows import CASES, GOLDEN, filled_buffer, served


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("name", sorted(CASES))
def test_served_rows_equal_the_numpy_implementations(name: str, golden: dict[str, np.ndarray]) -> None:
    expected = {key.split("/", 1)[1]: value for key, value in golden.items() if key.split("/", 1)[0] == name}
    got = served(filled_buffer(name))
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=f"{name}: {key}")
