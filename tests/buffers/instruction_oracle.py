"""The oracle of the buffer tests: the library's served-rows oracle (:mod:`sb3_hir.testing.served_rows`, which plugin
authors use too), and the check that two buffers serve the same batches."""

from __future__ import annotations

import numpy as np

from sb3_hir.testing.served_rows import (  # noqa: F401  (re-exported for the buffer tests)
    GRID,
    MASK,
    MOVES,
    Recorded,
    Stream,
    add_episode,
    add_step,
    check_sample,
    check_served,
    demo_stream,
    make_buffer,
    make_space,
    random_path,
    simulate,
)


def assert_serves_the_same(buffer, other, seed: int = 11, batches: int = 3) -> None:
    """``buffer`` and ``other`` serve identical batches from the same global seed (each with its own generator)."""
    import torch as th

    for _ in range(batches):
        np.random.seed(seed)
        a = buffer.sample(16)
        np.random.seed(seed)
        b = other.sample(16)
        for key in a.observations:
            assert th.equal(a.observations[key], b.observations[key])
        assert th.equal(a.actions, b.actions) and th.equal(a.rewards, b.rewards) and th.equal(a.dones, b.dones)
