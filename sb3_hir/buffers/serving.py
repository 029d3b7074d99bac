"""Serving: a batch of recorded and relabeled rows, as the algorithm reads it.

A recorded row is served as ``DictReplayBuffer`` serves it. A relabeled row is served as
:meth:`~sb3_hir.relabel.InstructionRelabeler.replay` of its episode under its drawn instruction gives it: goals masked
by the goals reached before each observation, reward ``goal_reward`` per goal reached, terminal when the k-th goal is
reached (or on a recorded termination the goals did not cause), never a time-out otherwise. Everything derives from the
drawn goals' reach steps ``r_1 < ... < r_k``.

``n_steps > 1`` serves n-step returns (SB3's ``NStepReplayBuffer`` semantics, which SB3 refuses for Dict
observations): the discounted reward sum over up to ``n_steps`` transitions, cut at the (relabeled) episode's end, the
last observation of the window and ``discounts = gamma ** m`` in the samples' field that DQN, QR-DQN, SAC, TQC and TD3
read.

GoalEnv mode (:class:`GoalEnvServing`) serves a relabeled row as the stored episode replayed under the drawn goal ``g``
by the env itself: observations with ``desired_goal = g`` (it stays once reached), reward ``compute_reward(achieved_goal
after t, g, info_t)`` (one call per batch, as HER calls it, summed over the window for ``n_steps > 1``), and the
recorded ``dones`` unless successes terminate (see :mod:`~sb3_hir.buffers.draws.her`).
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_hir.buffers.draws import Relabeled
from sb3_hir.buffers.goal_env import ACHIEVED_GOAL, DESIRED_GOAL
from sb3_hir.buffers.reward_checks import check_recorded_rewards, require_compute_reward
from sb3_hir.buffers.storage import Storage, take_rows

__all__ = ["GoalEnvServing", "SampleInfo", "Served", "Serving", "recorded_windows"]


class SampleInfo(NamedTuple):
    """What the last ``sample()`` served, for tests, benchmarks and diagnostics (numpy, batch order).

    :param rows: buffer row of each sampled transition.
    :param env_indices: sub-env of each sampled transition.
    :param relabeled: whether it was served under a hindsight draw.
    :param goals: ``(B, k, *goal_shape)`` instruction it was served under (the recorded one when not relabeled;
        only meaningful where ``relabeled``).
    :param t: its index in its episode (-1 when not relabeled).
    :param episode_start: row of its episode's first transition (-1 when not relabeled).
    :param window: number of transitions summed into the served reward (1 unless ``n_steps > 1``).
    """

    rows: np.ndarray
    env_indices: np.ndarray
    relabeled: np.ndarray
    goals: np.ndarray
    t: np.ndarray
    episode_start: np.ndarray
    window: np.ndarray


class Served(NamedTuple):
    """What a batch was made of, kept as gathered: :meth:`info` builds the :class:`SampleInfo` only when asked."""

    flat: np.ndarray  # flat row of each sample: the recorded ones first, then the relabeled ones
    num_recorded: int
    recorded_goals: np.ndarray
    relabeled: Relabeled | None
    window: np.ndarray

    def info(self, num_goals: int, goal_shape: tuple[int, ...], n_envs: int) -> SampleInfo:
        flat, num_rec, recorded_goals, relabeled = self.flat, self.num_recorded, self.recorded_goals, self.relabeled
        batch = len(flat)
        goals = np.empty((batch, num_goals, *goal_shape), dtype=recorded_goals.dtype)
        goals[:num_rec] = recorded_goals.reshape(-1, num_goals, *goal_shape)
        t_all = np.full(batch, -1, dtype=np.int64)
        start_all = np.full(batch, -1, dtype=np.int64)
        if relabeled is not None:
            goals[num_rec:] = relabeled.goals
            t_all[num_rec:] = relabeled.t
            start_all[num_rec:] = relabeled.start
        return SampleInfo(
            rows=flat // n_envs,
            env_indices=flat % n_envs,
            relabeled=np.arange(batch) >= num_rec,
            goals=goals,
            t=t_all,
            episode_start=start_all,
            window=self.window,
        )


class _Window(NamedTuple):
    """A relabeled row's served window: ``m`` transitions (None: one), the next observation after step ``t_end``."""

    m: np.ndarray | None
    t_end: np.ndarray


class Serving:
    """Instruction mode: rewards, masks and terminations from the goal spec (module docstring).

    :param num_goals: goals per instruction.
    :param goal_shape: shape of one goal.
    """

    def __init__(self, num_goals: int, goal_shape: tuple[int, ...]) -> None:
        #: ``(k+1, k, 1, ..., 1)`` bool table: row c masks the goals reached after c of them.
        masks = np.arange(num_goals)[None, :] < np.arange(num_goals + 1)[:, None]
        self.slot_masks = masks.reshape(masks.shape + (1,) * len(goal_shape))

    def serve(self, buffer: Storage, recorded_flat: np.ndarray, relabeled: Relabeled | None,
              env: VecNormalize | None) -> tuple[DictReplayBufferSamples, Served]:
        """Gather the batch (recorded rows first, then relabeled ones) and rewrite the relabeled part."""
        goals_key = buffer.goal_spec.goals_key
        num_rec = len(recorded_flat)
        num_rel = 0 if relabeled is None else len(relabeled.flat)
        flat = recorded_flat if not num_rel else np.concatenate([recorded_flat, relabeled.flat])  # type: ignore[union-attr]
        batch = len(flat)
        layout = buffer._layout
        obs = layout.obs_batch(buffer, flat)
        actions = take_rows(buffer.actions, flat)
        # Window m and the flat row whose next observation ends it, per sample.
        window = np.ones(batch, dtype=np.int64)
        rewards = np.empty(batch, dtype=np.float32)
        dones = np.empty(batch, dtype=np.float32)
        last_flat = flat.copy() if buffer.n_steps > 1 else flat  # one step: each row's next observation is its own
        if num_rec:
            rec = slice(0, num_rec)
            recorded_windows(buffer, recorded_flat, env, window[rec], rewards[rec], dones[rec], last_flat[rec])
        recorded_goals = obs[goals_key][:num_rec]
        rel = slice(num_rec, batch)
        if relabeled is not None and num_rel:
            served = self._relabeled_windows(buffer, relabeled, window[rel], dones[rel], last_flat[rel])
        next_obs = layout.next_batch(buffer, last_flat)
        if relabeled is not None and num_rel:
            self._relabeled_goals(buffer, relabeled, served, obs[goals_key][rel], next_obs[goals_key][rel])
            self._relabeled_rewards(buffer, relabeled, served, next_obs, rel, rewards[rel])
            rewards[rel] = buffer._normalize_reward(rewards[rel], env)
        samples = self._tensors(buffer, obs, actions, next_obs, dones, rewards, window, env)
        return samples, Served(flat, num_rec, recorded_goals, relabeled if num_rel else None, window)

    @staticmethod
    def _relabeled_windows(buffer: Storage, r: Relabeled, window: np.ndarray, dones: np.ndarray,
                           last_flat: np.ndarray) -> _Window:
        """The relabeled part's windows, in place: each ends at the relabeled episode's end (its k-th goal's reach),
        terminal there if the goals or a recorded termination they did not cause end it."""
        n_steps = buffer.n_steps
        reach, t = r.reach, r.t
        completed = reach[:, -1] > 0
        end = np.where(completed, reach[:, -1], r.length)  # last step of the relabeled episode
        one_step = n_steps == 1  # then m = 1: the window is the transition itself (end > t always)
        m = np.minimum(n_steps, end - t) if not one_step else None
        t_end = t + 1 if m is None else t + m  # the step the window's next observation follows
        dones[:] = (t_end == end) & (completed | r.other_end)
        if m is not None:
            window[:] = m
            last_flat[:] = ((r.start + t + m - 1) % buffer.buffer_size) * buffer.n_envs + r.env
        return _Window(m, t_end)

    def _relabeled_goals(self, buffer: Storage, r: Relabeled, served: _Window, goals: np.ndarray,
                         next_goals: np.ndarray) -> None:
        """The relabeled instruction in the observations, goals reached before each of them masked."""
        spec, reach = buffer.goal_spec, r.reach
        count_now = ((reach > 0) & (reach <= r.t[:, None])).sum(axis=1)
        next_counts = ((reach > 0) & (reach <= served.t_end[:, None])).sum(axis=1)
        goals[:] = np.where(self.slot_masks[count_now], spec.mask_value, r.goals)
        next_goals[:] = np.where(self.slot_masks[next_counts], spec.mask_value, r.goals)

    @staticmethod
    def _relabeled_rewards(buffer: Storage, r: Relabeled, served: _Window, next_obs: dict[str, np.ndarray],
                           rel: slice, rewards: np.ndarray) -> None:
        """The goal spec's rewards, in place: ``goal_reward`` per goal reached in the window, ``step_reward`` per
        step, discounted within the window."""
        spec, reach, t, m, n_steps, gamma = buffer.goal_spec, r.reach, r.t, served.m, buffer.n_steps, buffer.gamma
        if m is None:  # one step: a goal is in the window when reached at t + 1, undiscounted
            rewards[:] = spec.goal_reward * (reach == (t + 1)[:, None]).sum(axis=1)
            if spec.step_reward:
                rewards += np.float64(spec.step_reward)
            return
        in_window = (reach > t[:, None]) & (reach <= (t + m)[:, None])
        powers = gamma ** np.maximum(reach - t[:, None] - 1, 0)
        rewards[:] = spec.goal_reward * (in_window * powers).sum(axis=1)
        if spec.step_reward:
            steps = np.arange(n_steps)
            rewards += spec.step_reward * ((gamma ** steps) * (steps < m[:, None])).sum(axis=1)

    @staticmethod
    def _tensors(buffer: Storage, obs: dict[str, np.ndarray], actions: np.ndarray, next_obs: dict[str, np.ndarray],
                 dones: np.ndarray, rewards: np.ndarray, window: np.ndarray, env: VecNormalize | None
                 ) -> DictReplayBufferSamples:
        """The samples as tensors; ``discounts`` ``gamma ** m`` for n-step returns."""
        obs_ = buffer._normalize_obs(obs, env)
        next_obs_ = buffer._normalize_obs(next_obs, env)
        assert isinstance(obs_, dict) and isinstance(next_obs_, dict)
        device = buffer.device

        def tensor(array: np.ndarray) -> th.Tensor:
            # SB3's to_torch without its defensive copy: every served array is freshly gathered, so the tensor may
            # share its memory (on CPU; other devices copy anyway).
            return th.from_numpy(array) if device.type == "cpu" else th.as_tensor(array, device=device)

        discounts = None
        if buffer.n_steps > 1:
            discounts = tensor((buffer.gamma ** window).astype(np.float32).reshape(-1, 1))
        return DictReplayBufferSamples(
            observations={key: tensor(value) for key, value in obs_.items()},
            actions=tensor(actions),
            next_observations={key: tensor(value) for key, value in next_obs_.items()},
            dones=tensor(dones).reshape(-1, 1),
            rewards=tensor(rewards.reshape(-1, 1)),
            discounts=discounts,
        )


class GoalEnvServing(Serving):
    """GoalEnv mode: the drawn goal as the desired goal, rewards from the env's ``compute_reward`` (module
    docstring)."""

    def __init__(self) -> None:
        super().__init__(1, ())

    def _relabeled_goals(self, buffer: Storage, r: Relabeled, served: _Window, goals: np.ndarray,
                         next_goals: np.ndarray) -> None:
        goals[:] = r.goals[:, 0]  # a GoalEnv's desired goal stays as it is once reached
        next_goals[:] = r.goals[:, 0]

    def _relabeled_rewards(self, buffer: Storage, r: Relabeled, served: _Window,  # type: ignore[override]
                           next_obs: dict[str, np.ndarray], rel: slice, rewards: np.ndarray) -> None:
        # One step: the achieved goal after t is the served next observation's (no second gather).
        achieved = next_obs[ACHIEVED_GOAL][rel] if buffer.n_steps == 1 else None
        rewards[:] = self._env_rewards(buffer, r, served.m, achieved)

    def _env_rewards(self, buffer: Storage, r: Relabeled, m: np.ndarray | None, achieved: np.ndarray | None
                     ) -> np.ndarray:
        """Discounted sums of the env's ``compute_reward`` over each relabeled window: one call per batch.

        The reward of transition ``t`` is ``compute_reward(achieved_goal after t, goal, info_t)``, as in HER.
        ``achieved``: those achieved goals, when the caller has gathered them already (``n_steps == 1``).
        """
        n, size, n_envs = buffer.n_steps, buffer.buffer_size, buffer.n_envs
        offsets = np.arange(n)
        if m is None:
            win_flat = r.flat
        else:
            within = np.minimum(offsets, m[:, None] - 1)  # (B, n): window steps, the last one repeated past m
            win_flat = ((((r.start + r.t)[:, None] + within) % size) * n_envs + r.env[:, None]).reshape(-1)
        if achieved is None:
            achieved = take_rows(buffer.next_observations[ACHIEVED_GOAL], win_flat)
        desired = np.repeat(r.goals[:, 0], n, axis=0) if n > 1 else r.goals[:, 0]
        if not buffer._reward_checked:
            self._first_reward_use(buffer, r)
        rewards = buffer.compute_reward(achieved, desired, _infos(buffer, win_flat))
        if m is None:
            return rewards
        return (rewards.reshape(-1, n) * (buffer.gamma**offsets) * (offsets < m[:, None])).sum(axis=1)

    @staticmethod
    def _first_reward_use(buffer: Storage, relabeled: Relabeled) -> None:
        """Check the env's ``compute_reward`` once: it exists, is vectorized and gives the relabeled rows' recorded
        rewards under their own goals (``reward_checks``); later samples pay one attribute test."""
        if buffer.env is not None:  # else compute_reward says that it needs one
            require_compute_reward(buffer.env, type(buffer).__name__)
        flat = relabeled.flat
        achieved = take_rows(buffer.next_observations[ACHIEVED_GOAL], flat)
        desired = take_rows(buffer.observations[DESIRED_GOAL], flat)  # the goal step() was rewarded under
        computed = buffer.compute_reward(achieved, desired, _infos(buffer, flat))
        buffer._reward_checked = True  # before warning: a warning turned into an error is not repeated every sample
        # Raw with raw: the buffer stores rewards before VecNormalize, and sample() normalizes after this.
        check_recorded_rewards(buffer.env, computed, take_rows(buffer.rewards, flat), flat // buffer.n_envs,
                               flat % buffer.n_envs, relabeled.t, buffer.copy_info_dict, stacklevel=7)


def _infos(buffer: Storage, flat: np.ndarray) -> Any:
    """The stored infos of rows ``flat`` for ``compute_reward`` (copies, as HER passes them), else empty dicts."""
    if buffer.infos is not None:
        return copy.deepcopy(buffer.infos.reshape(-1)[flat])
    return [{} for _ in range(len(flat))]


def recorded_windows(buffer: Storage, flat: np.ndarray, env: VecNormalize | None, window: np.ndarray,
                     rewards: np.ndarray, dones: np.ndarray, last_flat: np.ndarray) -> None:
    """Fill the recorded part in place: 1-step as ``DictReplayBuffer``, else ``NStepReplayBuffer``'s rule."""
    if buffer.n_steps == 1:
        rewards[:] = buffer._normalize_reward(take_rows(buffer.rewards, flat), env)
        dones[:] = take_rows(buffer.dones, flat) * (1 - take_rows(buffer.timeouts, flat))
        return
    size, n_envs, n = buffer.buffer_size, buffer.n_envs, buffer.n_steps
    rows, envs = flat // n_envs, flat % n_envs
    seq_rows = (rows[:, None] + np.arange(n)) % size
    seq_flat = seq_rows * n_envs + envs[:, None]
    # A window stops at an episode end, and at the newest row (the next one holds older data).
    stop = (take_rows(buffer.dones, seq_flat) > 0) | (take_rows(buffer.timeouts, seq_flat) > 0)
    stop |= seq_rows == (buffer.pos - 1) % size
    last = np.where(stop.any(axis=1), stop.argmax(axis=1), n - 1)
    steps = np.arange(n)
    mask = steps <= last[:, None]
    seq_rewards = buffer._normalize_reward(take_rows(buffer.rewards, seq_flat), env)
    rewards[:] = (seq_rewards * (buffer.gamma ** steps) * mask).sum(axis=1)
    end_flat = seq_flat[np.arange(len(flat)), last]
    dones[:] = take_rows(buffer.dones, end_flat) * (1 - take_rows(buffer.timeouts, end_flat))
    window[:] = last + 1
    last_flat[:] = end_flat
