"""The drop-in serves what SB3's ``HerReplayBuffer`` serves: one distribution of batches on the same data.

``benchmarks/bench_her_served_distribution.py`` feeds SB3's HER, the drop-in and a control (the drop-in with the
``first-reach`` draw, not HER's rule) the same transitions of a real ``BitFlippingEnv`` whose states recur within an
episode, and compares the served rows with a chi-square test of homogeneity. The drop-in must not be told apart from
HER (p > 0.001) under any goal selection strategy, and the test must tell the control apart (p < 0.001): else it
could not fail.
"""

from __future__ import annotations

import argparse

import pytest
from benchmark_module import load_benchmark

# The drop-in's semantics do not depend on the profile: numpy, torch and SB3 are the same releases in both.
pytestmark = pytest.mark.once("current")

ALPHA = 1e-3


@pytest.mark.parametrize("strategy", ["future", "episode", "final"])
def test_the_drop_in_serves_hers_batches(strategy: str) -> None:
    bench = load_benchmark("bench_her_served_distribution")
    args = argparse.Namespace(n_bits=4, max_steps=16, n_envs=2, steps=8000, batches=400)
    result = bench.compare(strategy, 0, args)
    assert result["p_drop_in"] > ALPHA, f"the drop-in's batches differ from SB3's HER's ({strategy}): {result}"
    assert result["p_control"] < ALPHA, f"the test cannot tell first-reach draws from HER's ({strategy}): {result}"
    shares = result["rewarded"]
    assert abs(shares["drop-in"] - shares["HER"]) < 0.01, shares
