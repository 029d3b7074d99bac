"""Pictures of training runs: learning curves and recorded evaluation episodes.

Figures are built on :class:`matplotlib.figure.Figure` directly (the Agg canvas), never through ``pyplot``, so
these helpers work headless and leave a user's interactive backend alone. Every file is written to a temporary
name and moved into place, so a crash never leaves half a PNG behind::

    from sb3_hir.plots import plot_learning_curves, record_episode, save_episode_gif

    plot_learning_curves({"HIR some": eval_callback.history}, "curve.png", num_goals=3)
    episode = record_episode(model, MazeRunnerEnv(render_mode="rgb_array"), seed=0)
    save_episode_gif(episode.frames, "episode.gif")
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sb3_hir.atomic import atomic_path
from sb3_hir.callbacks import EvalHistory

__all__ = [
    "RecordedEpisode",
    "plot_learning_curves",
    "record_episode",
    "save_episode_gif",
    "save_episode_png",
]


def _save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=Path(path).suffix.lstrip(".") or "png", dpi=110)
    return Path(path)


def plot_learning_curves(
    curves: Mapping[str, EvalHistory],
    path: str | os.PathLike[str],
    *,
    num_goals: int | None = None,
    title: str | None = None,
    xlabel: str = "timesteps",
) -> Path:
    """Success rate and mean goals reached against timesteps, one line per run.

    :param curves: run label -> its evaluation history (e.g. ``InstructionEvalCallback.history``).
    :param path: where to write the picture (PNG unless the suffix says otherwise).
    :param num_goals: instruction length ``k``; sets the goals axis to ``[0, k]``.
    :param title: figure title.
    :param xlabel: what ``EvalHistory.timesteps`` counts (e.g. ``"round"`` for DAgger).
    """
    from matplotlib.figure import Figure

    if not curves:
        raise ValueError("curves must hold at least one run (label -> EvalHistory)")
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_success, ax_goals = fig.subplots(1, 2)
    for label, history in curves.items():
        ax_success.plot(history.timesteps, history.success_rate, marker="o", markersize=3, label=label)
        ax_goals.plot(history.timesteps, history.goals_reached, marker="o", markersize=3, label=label)
    ax_success.set_ylim(-0.02, 1.02)
    ax_success.set_ylabel("success rate (all goals in order)")
    ax_goals.set_ylabel("goals reached (mean per episode)")
    if num_goals is not None:
        ax_goals.set_ylim(-0.05, num_goals + 0.05)
    for ax in (ax_success, ax_goals):
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
    if title:
        fig.suptitle(title)
    return _save_figure(fig, path)


@dataclass
class RecordedEpisode:
    """Frames of one rendered episode and how it ended."""

    frames: list[np.ndarray] = field(default_factory=list)
    reward: float = 0.0
    length: int = 0
    is_success: bool = False
    goals_reached: int | None = None
    seed: int | None = None


def record_episode(
    model: Any,
    env: Any,
    *,
    seed: int | None = None,
    deterministic: bool = True,
    max_steps: int = 100_000,
) -> RecordedEpisode:
    """Play one episode of ``model`` in ``env`` (a gymnasium env with ``render_mode="rgb_array"``), keeping frames.

    ``model`` is anything with SB3's ``predict(obs, state, episode_start, deterministic)``; recurrent policies get
    their state carried along.
    """
    if getattr(env, "render_mode", None) != "rgb_array":
        raise ValueError(f"env must be created with render_mode='rgb_array'; got {getattr(env, 'render_mode', None)!r}")
    obs, info = env.reset(seed=seed)
    episode = RecordedEpisode(frames=[np.asarray(env.render())], seed=seed)
    state = None
    start = np.ones((1,), dtype=bool)
    for _ in range(max_steps):
        action, state = model.predict(obs, state=state, episode_start=start, deterministic=deterministic)
        start = np.zeros((1,), dtype=bool)
        obs, reward, terminated, truncated, info = env.step(action)
        episode.frames.append(np.asarray(env.render()))
        episode.reward += float(reward)
        episode.length += 1
        if terminated or truncated:
            break
    episode.is_success = bool(info.get("is_success", False))
    if "goals_reached" in info:
        episode.goals_reached = int(info["goals_reached"])
    return episode


def _check_frames(frames: Sequence[np.ndarray]) -> list[np.ndarray]:
    if len(frames) == 0:
        raise ValueError("frames must hold at least one rgb frame")
    out = [np.asarray(frame) for frame in frames]
    bad = [frame.shape for frame in out if frame.ndim != 3 or frame.shape[-1] not in (3, 4)]
    if bad:
        raise ValueError(f"frames must be (H, W, 3) or (H, W, 4) rgb arrays; got shapes like {bad[0]}")
    return out


def save_episode_gif(frames: Sequence[np.ndarray], path: str | os.PathLike[str], *, fps: float = 8.0,
                     scale: int = 2) -> Path:
    """Animated GIF of the frames (through Pillow, which matplotlib depends on); the last frame is held 2 s."""
    from PIL import Image

    images = [
        Image.fromarray(np.repeat(np.repeat(frame[..., :3].astype(np.uint8), scale, 0), scale, 1))
        for frame in _check_frames(frames)
    ]
    step_ms = max(20, round(1000 / fps))
    durations = [step_ms] * (len(images) - 1) + [2000]
    with atomic_path(path) as tmp:
        images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0)
    return Path(path)


def save_episode_png(
    frames: Sequence[np.ndarray],
    path: str | os.PathLike[str],
    *,
    max_frames: int = 8,
    title: str | None = None,
) -> Path:
    """A strip of up to ``max_frames`` evenly spaced frames, first and last included, labelled by step."""
    from matplotlib.figure import Figure

    checked = _check_frames(frames)
    if max_frames < 1:
        raise ValueError(f"max_frames must be >= 1; got {max_frames!r}")
    picks = np.unique(np.linspace(0, len(checked) - 1, num=min(max_frames, len(checked))).round().astype(int))
    cols = min(4, len(picks))
    rows = math.ceil(len(picks) / cols)
    fig = Figure(figsize=(2.6 * cols, 2.6 * rows + (0.4 if title else 0)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax, t in zip(axes, picks, strict=False):
        ax.imshow(checked[t])
        ax.set_title(f"t = {t}", fontsize=9)
    for ax in axes:
        ax.set_axis_off()
    if title:
        fig.suptitle(title)
    return _save_figure(fig, path)


def plot_sweep_curves(curves: Mapping[str, Sequence[np.ndarray]], path: str | os.PathLike[str], *,
                      title: str = "") -> Path:
    """Success rate and goals reached against timesteps: per configuration, the mean over seeds and a ±1 std band.

    :param curves: configuration -> one ``(evaluations, 3)`` array per seed: timesteps, success rate, goals reached.
        Seeds are aligned on the timesteps all of them evaluated at.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, runs in curves.items():
        common = sorted(set.intersection(*(set(np.asarray(run)[:, 0].tolist()) for run in runs)))
        if not common:
            continue
        stacked = np.stack([np.asarray([row for row in np.asarray(run) if row[0] in common]) for run in runs])
        for ax, column in zip(axes, (1, 2), strict=True):
            mean, std = stacked[:, :, column].mean(axis=0), stacked[:, :, column].std(axis=0)
            ax.plot(common, mean, label=f"{label} ({len(runs)} seeds)")
            ax.fill_between(common, mean - std, mean + std, alpha=0.2)
    for ax, name in zip(axes, ("success rate", "goals reached"), strict=True):
        ax.set_xlabel("timesteps")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save_figure(fig, path)
