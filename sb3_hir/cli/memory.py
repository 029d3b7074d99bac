"""Memory bounds of a run, computed from the spaces before anything is built, so a run that cannot fit is refused
in one line instead of dying in the middle (``train`` and ``dagger`` check their buffers, envs and networks)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from sb3_hir.action_features import ActionFeaturesWrapper
from sb3_hir.cli.common import UsageError, usage
from sb3_hir.history import window_dtype

#: What one env costs besides its observations (wrappers, the maze, Python objects): a floor, not a measurement.
ENV_OVERHEAD_BYTES = 64 * 1024


def physical_memory() -> int:
    """Bytes of memory this machine has."""
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _space_bytes(space: spaces.Space) -> int:
    if isinstance(space, spaces.Dict):
        return sum(_space_bytes(sub) for sub in space.spaces.values())
    shape = space.shape or (1,)
    return int(np.prod(shape, dtype=np.float64)) * int(np.dtype(space.dtype or np.float32).itemsize)


def _width(space: spaces.Space) -> int:
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    return int(np.prod(space.shape or (1,), dtype=np.float64))


def observation_bytes(env: Any, history: int, features: str = "none", env_name: str = "") -> int:
    """Bytes of one observation of ``env`` once a ``history``-step window (and the per-action table) is added,
    computed from the spaces (building the window first would already cost what the check is there to refuse)."""
    total = _space_bytes(env.observation_space)
    if not history and features == "none":
        return total
    obs = env.observation_space["obs"]
    obs_width = 1 if isinstance(obs, spaces.Discrete) else _width(obs)
    if history:
        itemsize = window_dtype(env).itemsize  # HistoryWrapper's rows: uint8 when every entry fits, else float32
        total += history * (obs_width + _width(env.action_space) + 1) * itemsize
    if features != "none":  # the table's own space (a tracker is cheap to build; its space is what is stored)
        with usage(f"--action-features {features}: env {env_name!r} cannot carry it: "):
            total += _space_bytes(ActionFeaturesWrapper.tracker(env, features).space)
    return total


def _size(n_bytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n_bytes < 1024 or unit == "PiB":
            return f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError  # pragma: no cover


def check_memory(needs: Sequence[tuple[str, float]], obs_bytes: int) -> None:
    """Refuse, in one line, a run whose size options need more memory than the machine has.

    ``needs`` are (options, bytes) terms of a lower-bound estimate; the largest names the options to shrink.
    Without this, a too-large ``--history`` or buffer swaps or hangs for minutes instead of failing.
    """
    total = sum(n_bytes for _, n_bytes in needs)
    available = physical_memory()
    if total <= available:
        return
    options, _ = max(needs, key=lambda need: need[1])
    raise UsageError(f"{options} need at least {_size(total)} of memory ({_size(obs_bytes)} per observation) but "
                     f"this machine has {_size(available)}; choose smaller values")


def env_memory(n_envs: int, obs_bytes: int) -> float:
    """Envs hold a few observations each (current, reset, the VecEnv's buffers) besides their own state."""
    return n_envs * (ENV_OVERHEAD_BYTES + 4 * obs_bytes)


def network_memory(hidden: int, inputs: int) -> float:
    """Two hidden layers of ``hidden`` units, times ~8 copies (target nets, critics, Adam's two moments)."""
    return 8 * 4 * (hidden * hidden + inputs * hidden)
