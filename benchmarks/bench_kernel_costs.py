"""What three of ``sample()``'s costs beyond its loops come to, each against the form it replaced, in one process.

Each line times both forms on the same inputs, interleaved over ``--rounds`` rounds (median), and prints their ratio:

* the serving kernel (``serving.rewrite_one_step``) for a k = 1 batch of 205 relabeled rows, against its earlier form
  (``rewrite_select`` below: the mask value read inside the loop, a select per goal value); both write the same
  bits, which the script checks;
* a kernel returning eight arrays (``draw_rounds`` before) against one returning four (``draw_rounds`` now), with
  nothing drawn: the cost of numba boxing the returned arrays;
* ``np.random.randint(0, 1, size=51)`` (the recorded rows' sub-env draw with one sub-env, which draws nothing)
  against skipping it: the rows themselves are the flat indices (``Mixture``'s recorded rows);
* the recorded rows themselves, ``np.random.randint(0, 100_000, size=51)``, against the same draws in one kernel call
  (``RecordedRows`` compiled: ``rng_box.legacy_rows``); the script checks that both draw the same rows and leave
  ``np.random`` in the same state.

Usage: ``python benchmarks/bench_kernel_costs.py [--rounds 7] [--calls 5000]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numba
import numpy as np

from sb3_hir.buffers.recorded_rows import RecordedRows
from sb3_hir.buffers.serving import rewrite_one_step
from sb3_hir.experiment import markdown_table


@numba.njit(cache=True)
def rewrite_select(reach, t, length, other_end, drawn, fill, table, dones, rewards, goals, next_goals):  # type: ignore[no-untyped-def]
    """``rewrite_one_step`` as it was: ``fill[0]`` read after every store, a select per goal value."""
    batch, k = reach.shape
    width = drawn.shape[1] // k
    for b in range(batch):
        last = reach[b, k - 1]
        end = last if last > 0 else length[b]
        now_step = t[b]
        next_step = now_step + 1
        dones[b] = 1.0 if next_step == end and (last > 0 or other_end[b]) else 0.0
        hits = 0
        for j in range(k):
            step = reach[b, j]
            now = 0 < step <= now_step
            then = 0 < step <= next_step
            if then and not now:
                hits += 1
            for d in range(j * width, (j + 1) * width):
                goals[b, d] = fill[0] if now else drawn[b, d]
                next_goals[b, d] = fill[0] if then else drawn[b, d]
        rewards[b] = table[hits]


@numba.njit(cache=True)
def return_eight(n):  # type: ignore[no-untyped-def]
    rows = np.empty((5, n), np.int64)
    goals = np.empty((n, 2), np.int32)
    return rows[0], rows[1], rows[2], rows[3], rows[4], goals, np.empty((n, 1), np.int64), np.empty(n, np.bool_), 1.0


@numba.njit(cache=True)
def return_four(n):  # type: ignore[no-untyped-def]
    rows = np.empty((5, n), np.int64)
    goals = np.empty((n, 2), np.int32)
    return rows, goals, np.empty((n, 1), np.int64), np.empty(n, np.bool_), 1.0


def rewrite_inputs(seed: int) -> tuple[list[np.ndarray], Callable[[], list[np.ndarray]]]:
    """A k = 1 batch of 205 relabeled rows as serving hands it over: a goal reached after the transition or never
    (admissible pairs), a few reached at t + 1; and a maker of fresh outputs."""
    rng = np.random.default_rng(seed)
    batch = 205
    t = rng.integers(0, 200, batch)
    reach = np.where(rng.random(batch) < 0.6, t + rng.integers(1, 20, batch), -1)[:, None]
    length = np.maximum(t + 1, reach[:, 0]) + rng.integers(0, 30, batch)
    inputs = [reach, t, length, rng.random(batch) < 0.1, rng.integers(0, 11, (batch, 2)).astype(np.int32),
              np.array([-1], np.int32), np.array([0.0, 1.0], np.float32)]

    def outputs() -> list[np.ndarray]:
        return [np.zeros(batch, np.float32), np.zeros(batch, np.float32), np.zeros((batch, 2), np.int32),
                np.zeros((batch, 2), np.int32)]

    return inputs, outputs


def timed(fn: Callable[[], object], calls: int) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls * 1e6

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error(f"--rounds and --calls must be >= 1; got {args.rounds} and {args.calls}")
    inputs, outputs = rewrite_inputs(0)
    old_out, new_out = outputs(), outputs()
    rewrite_select(*inputs, *old_out)
    rewrite_one_step(*inputs, *new_out)
    for old, new in zip(old_out, new_out, strict=True):
        np.testing.assert_array_equal(old, new)
    recorded = RecordedRows(jit=True)
    np.random.seed(1)
    expected, state = np.random.randint(0, 100_000, size=51), np.random.get_state(legacy=False)["state"]["key"].copy()
    np.random.seed(1)
    np.testing.assert_array_equal(recorded(100_000, 51, 1), expected)
    np.testing.assert_array_equal(np.random.get_state(legacy=False)["state"]["key"], state)
    print("self-check: both serving kernels write the same dones, rewards, goals and next goals, and both recorded "
          "row draws the same rows from the same np.random state: OK")
    rows = np.arange(51)
    pairs = {
        "serving kernel, 205 rows (k = 1)": (lambda: rewrite_select(*inputs, *old_out),
                                             lambda: rewrite_one_step(*inputs, *new_out)),
        "kernel returning arrays, nothing drawn": (lambda: return_eight(0), lambda: return_four(0)),
        "one sub-env's recorded-row envs (51 rows)": (
            lambda: rows + np.random.randint(0, high=1, size=(len(rows),)), lambda: rows),
        "the recorded rows (51 of 100k)": (lambda: np.random.randint(0, 100_000, size=51),
                                           lambda: recorded(100_000, 51, 1)),
    }
    for before, after in pairs.values():  # compile and warm up
        before(), after()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in pairs}
    for _ in range(args.rounds):
        for name, (before, after) in pairs.items():
            times[name].append((timed(before, args.calls)(), timed(after, args.calls)()))
    print(f"median of {args.rounds} interleaved rounds of {args.calls} calls")
    table_rows = []
    for name, values in times.items():
        old_us, new_us = np.median([v[0] for v in values]), np.median([v[1] for v in values])
        table_rows.append([name, f"{old_us:.2f}", f"{new_us:.2f}", f"{new_us / old_us:.2f}"])
    print(markdown_table(["cost", "before us", "after us", "after / before"], table_rows, "lrrr"))


if __name__ == "__main__":
    main()
