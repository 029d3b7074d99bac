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

Cost: a batch is gathered once per array, recorded and relabeled rows together, and the relabeled rows are rewritten
in the gathered arrays, which torch then shares; a 256-row batch costs about what ``DictReplayBuffer``'s gather of
the same rows costs. The rewrite is some twenty array calls of a few microseconds each in numpy; with numba (1-step
windows, goals in slot order) the recorded rows' rewards and dones and the relabeled rows' rewrite are one kernel
call, :func:`serve_one_step` (:func:`rewrite_one_step` for the relabeled rows), which writes the same bits
(``tests/buffers/test_serving_kernel.py``). Like the draws' kernels it is chosen where the buffer is built or loaded
(``SB3_HIR_JIT``); the buffer's ``jit`` switches it with the draw.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch as th
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws import Relabeled
from sb3_hir.buffers.goal_env import ACHIEVED_GOAL, DESIRED_GOAL
from sb3_hir.buffers.reward_checks import check_recorded_rewards, require_compute_reward
from sb3_hir.buffers.storage import Storage
from sb3_hir.goals import padding_mask
from sb3_hir.protocols import GoalSpecProtocol
from sb3_hir.reach import instruction_end

__all__ = [
    "EnvRewards", "GoalEnvServing", "NSteps", "OneStep", "SampleInfo", "Served", "Serving", "rewrite_one_step",
    "serve_one_step",
]


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
    :param reach: ``(B, k)`` the reach steps the draw strategy returned with the goals (-1: never reached; -1 where
        not relabeled), which serving rewarded and terminated by.
    """

    rows: np.ndarray
    env_indices: np.ndarray
    relabeled: np.ndarray
    goals: np.ndarray
    t: np.ndarray
    episode_start: np.ndarray
    window: np.ndarray
    reach: np.ndarray | None = None


class Served(NamedTuple):
    """What a batch was made of, kept as gathered: :meth:`info` builds the :class:`SampleInfo` only when asked."""

    flat: np.ndarray  # flat row of each sample: the recorded ones first, then the relabeled ones
    num_recorded: int
    recorded_goals: np.ndarray
    relabeled: Relabeled | None
    window: np.ndarray | None  # transitions per served window; None: one each (1-step serving allocates nothing)

    def info(self, num_goals: int, goal_shape: tuple[int, ...], n_envs: int) -> SampleInfo:
        flat, num_rec, recorded_goals, relabeled = self.flat, self.num_recorded, self.recorded_goals, self.relabeled
        batch = len(flat)
        goals = np.empty((batch, num_goals, *goal_shape), dtype=recorded_goals.dtype)
        goals[:num_rec] = recorded_goals.reshape(-1, num_goals, *goal_shape)
        t_all = np.full(batch, -1, dtype=np.int64)
        start_all = np.full(batch, -1, dtype=np.int64)
        reach = np.full((batch, num_goals), -1, dtype=np.int64)
        if relabeled is not None:
            goals[num_rec:] = relabeled.goals
            t_all[num_rec:] = relabeled.t
            start_all[num_rec:] = relabeled.start
            reach[num_rec:] = relabeled.reach
        return SampleInfo(
            rows=flat // n_envs,
            env_indices=flat % n_envs,
            relabeled=np.arange(batch) >= num_rec,
            goals=goals,
            t=t_all,
            episode_start=start_all,
            window=np.ones(batch, dtype=np.int64) if self.window is None else self.window,
            reach=reach,
        )


class OneStep:
    """1-step serving: each row's window is its own transition (``DictReplayBuffer``'s samples, no discounts)."""

    n_steps = 1

    def recorded(self, storage: Storage, flat: np.ndarray, num_recorded: int, env: VecNormalize | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """``(rewards, dones, window, last_flat)`` of the batch ``flat`` served as ``DictReplayBuffer`` serves it;
        serving rewrites the relabeled rows (from ``num_recorded`` on) after.

        Every row is gathered at once, relabeled ones too: one ``take`` per array and no slice to fill beats
        sparing the few rows rewritten. ``window`` None: every window is one transition; each row's next
        observation is its own (``last_flat`` is ``flat``)."""
        rewards = storage.take(storage.rewards, flat)
        if env is not None:
            rewards[:] = DictReplayBuffer._normalize_reward(rewards, env)
        dones = storage.take(storage.dones, flat) * (1 - storage.take(storage.timeouts, flat))
        return rewards, dones, None, flat

    def relabeled(self, storage: Storage, r: Relabeled, end: np.ndarray, window: np.ndarray | None,
                  last_flat: np.ndarray, num_recorded: int) -> tuple[np.ndarray | None, np.ndarray]:
        """``(m, t_end)`` of each relabeled row's window: the transition itself (``end > t`` always), ``m`` None
        for one transition each; ``window`` and ``last_flat`` (past ``num_recorded``) stay as they are."""
        return None, r.t + 1

    def goal_rewards(self, spec: GoalSpecProtocol, r: Relabeled, m: np.ndarray | None, in_window: np.ndarray,
                     rewards: np.ndarray) -> None:
        """``goal_reward`` per goal reached in the window (at ``t + 1``: ``in_window``), undiscounted."""
        # One goal: the mask itself (a bool times the reward is the count's product), no reduction.
        hits = in_window[:, 0] if in_window.shape[1] == 1 else in_window.sum(axis=1)
        rewards[:] = spec.goal_reward * hits
        if spec.step_reward:
            rewards += np.float64(spec.step_reward)

    def window_rows(self, storage: Storage, r: Relabeled, m: np.ndarray | None) -> np.ndarray:
        """The flat rows of each relabeled window, ``(B * n,)``."""
        return r.flat

    def sum_window(self, rewards: np.ndarray, m: np.ndarray | None) -> np.ndarray:
        return rewards

    def discounts(self, window: np.ndarray | None) -> np.ndarray | None:
        return None


class NSteps(OneStep):
    """n-step serving (SB3's ``NStepReplayBuffer`` semantics, which SB3 refuses for Dict observations): the
    discounted reward sum over up to ``n_steps`` transitions, cut at the episode's (relabeled) end.

    :param n_steps: transitions per window (> 1).
    :param gamma: the algorithm's discount.
    """

    def __init__(self, n_steps: int, gamma: float) -> None:
        self.n_steps = n_steps
        self.gamma = gamma

    def recorded(self, storage: Storage, flat: np.ndarray, num_recorded: int, env: VecNormalize | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """The recorded rows by ``NStepReplayBuffer``'s rule; the relabeled ones are left for serving to fill (a
        window over ``n_steps`` rows is worth sparing)."""
        batch = len(flat)
        window = np.ones(batch, dtype=np.int64)
        rewards = np.empty(batch, dtype=np.float32)
        dones = np.empty(batch, dtype=np.float32)
        last_flat = flat.copy()
        if not num_recorded:
            return rewards, dones, window, last_flat
        size, n_envs, n = storage.buffer_size, storage.n_envs, self.n_steps
        rec = flat[:num_recorded]
        rows, envs = rec // n_envs, rec % n_envs
        seq_rows = (rows[:, None] + np.arange(n)) % size
        seq_flat = seq_rows * n_envs + envs[:, None]
        # A window stops at an episode end, and at the newest row (the next one holds older data).
        stop = (storage.take(storage.dones, seq_flat) > 0) | (storage.take(storage.timeouts, seq_flat) > 0)
        stop |= seq_rows == storage.newest_row
        last = np.where(stop.any(axis=1), stop.argmax(axis=1), n - 1)
        steps = np.arange(n)
        mask = steps <= last[:, None]
        seq_rewards = DictReplayBuffer._normalize_reward(storage.take(storage.rewards, seq_flat), env)
        rewards[:num_recorded] = (seq_rewards * (self.gamma ** steps) * mask).sum(axis=1)
        end_flat = seq_flat[np.arange(num_recorded), last]
        dones[:num_recorded] = storage.take(storage.dones, end_flat) * (1 - storage.take(storage.timeouts, end_flat))
        window[:num_recorded] = last + 1
        last_flat[:num_recorded] = end_flat
        return rewards, dones, window, last_flat

    def relabeled(self, storage: Storage, r: Relabeled, end: np.ndarray, window: np.ndarray | None,
                  last_flat: np.ndarray, num_recorded: int) -> tuple[np.ndarray | None, np.ndarray]:
        assert window is not None
        m = np.minimum(self.n_steps, end - r.t)
        window[num_recorded:] = m
        last_flat[num_recorded:] = ((r.start + r.t + m - 1) % storage.buffer_size) * storage.n_envs + r.env
        return m, r.t + m

    def goal_rewards(self, spec: GoalSpecProtocol, r: Relabeled, m: np.ndarray | None, in_window: np.ndarray,
                     rewards: np.ndarray) -> None:
        """``goal_reward`` per goal reached in the window, ``step_reward`` per step, discounted within it."""
        reach, t, gamma = r.reach, r.t, self.gamma
        assert m is not None
        powers = gamma ** np.maximum(reach - t[:, None] - 1, 0)
        rewards[:] = spec.goal_reward * (in_window * powers).sum(axis=1)
        if spec.step_reward:
            steps = np.arange(self.n_steps)
            rewards += spec.step_reward * ((gamma ** steps) * (steps < m[:, None])).sum(axis=1)

    def window_rows(self, storage: Storage, r: Relabeled, m: np.ndarray | None) -> np.ndarray:
        assert m is not None
        within = np.minimum(np.arange(self.n_steps), m[:, None] - 1)  # (B, n): the last step repeated past m
        return ((((r.start + r.t)[:, None] + within) % storage.buffer_size) * storage.n_envs
                + r.env[:, None]).reshape(-1)

    def sum_window(self, rewards: np.ndarray, m: np.ndarray | None) -> np.ndarray:
        assert m is not None
        offsets = np.arange(self.n_steps)
        return (rewards.reshape(-1, self.n_steps) * (self.gamma**offsets) * (offsets < m[:, None])).sum(axis=1)

    def discounts(self, window: np.ndarray | None) -> np.ndarray | None:
        assert window is not None
        return (self.gamma ** window).astype(np.float32).reshape(-1, 1)


class Serving:
    """Instruction mode: rewards, masks and terminations from the goal spec (module docstring).

    :param goal_spec: the goal spec: keys, mask value and rewards.
    :param num_goals: goals per instruction.
    :param goal_shape: shape of one goal.
    :param windows: :class:`OneStep` or :class:`NSteps`.
    :param device: the device of the served tensors.
    """

    #: class default, for servings pickled before padding and groups.
    ordered: bool = True

    def __init__(self, goal_spec: GoalSpecProtocol, num_goals: int, goal_shape: tuple[int, ...], windows: OneStep,
                 device: th.device) -> None:
        self.goal_spec = goal_spec
        self.windows = windows
        self.device = device
        #: every instruction is k goals in slot order (else: padding or groups, whose instruction ends at its last
        #: real goal's reach).
        self.ordered = bool(goal_spec.ordered)
        self._use_kernel()

    def _use_kernel(self) -> None:
        """Whether the batch's rewards and dones and the relabeled rows' goals are written by :func:`serve_one_step`
        (the same rows in one call, where the numpy code takes some twenty array calls): numba enabled where the
        buffer is built or loaded (``SB3_HIR_JIT``, as the draws), 1-step windows, goals in slot order."""
        self.use_compiled(compiled.enabled())
        #: kernels called (the first call may compile; ``compiled.call``).
        self.warm: set[str] = set()
        #: the kernel's constants, settled at its first use: ``(key, k, (fill, table))``, or ``(key, k, None)`` where
        #: the numpy code must serve (``_kernel_constants``).
        self._constants: tuple[tuple[Any, ...], int, tuple[np.ndarray, np.ndarray] | None] | None = None

    def use_compiled(self, on: bool) -> None:
        """Rewrite the relabeled rows with the kernel where it serves (the buffer's ``jit`` switches it with the
        draws); a serving pickled before it took its settings has no windows (the upgrade replaces it)."""
        self.jit = bool(on) and self.ordered and type(self.__dict__.get("windows")) is OneStep

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("jit", "warm", "_constants"):  # decided where the buffer is loaded
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._use_kernel()

    def env_changed(self) -> None:
        """The buffer got a (new) env: nothing to redo in instruction mode."""

    def serve(self, storage: Storage, recorded_flat: np.ndarray, relabeled: Relabeled | None,
              env: VecNormalize | None) -> tuple[DictReplayBufferSamples, Served]:
        """Gather the batch (recorded rows first, then relabeled ones) and rewrite the relabeled part in place.

        Each array is gathered once for the whole batch and handed to torch as it is: the relabeled rows are
        rewritten in the gathered arrays, not assembled from parts."""
        if relabeled is not None and not len(relabeled.flat):
            relabeled = None
        num_rec = len(recorded_flat)
        flat = recorded_flat if relabeled is None else np.concatenate((recorded_flat, relabeled.flat))
        # The relabeled rows' instructions are rewritten below, before and after the transition: not read.
        obs = storage.obs_batch(flat, None if relabeled is None else num_rec)
        actions = storage.take(storage.actions, flat)
        goals = obs[self.goal_spec.goals_key]
        one_call = self._serve_compiled(storage, flat, num_rec, relabeled, goals, env) if self.jit else None
        window: np.ndarray | None = None
        if one_call is not None:
            next_obs, rewards, dones = one_call
        else:
            # Window m and the flat row whose next observation ends it, per sample (None: one transition, its own).
            rewards, dones, window, last_flat = self.windows.recorded(storage, flat, num_rec, env)
            if relabeled is None:
                next_obs = storage.next_batch(last_flat)
            else:
                next_obs = self._relabel(storage, relabeled, num_rec, goals, rewards, dones, window, last_flat, env)
        samples = self._tensors(obs, actions, next_obs, dones, rewards, window, env)
        return samples, Served(flat, num_rec, goals[:num_rec], relabeled, window)

    def _serve_compiled(self, storage: Storage, flat: np.ndarray, num_rec: int, r: Relabeled | None,
                        goals: np.ndarray, env: VecNormalize | None
                        ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None:
        """The batch's next observations, rewards and dones by :func:`serve_one_step`, one call for the recorded and
        the relabeled rows (the goals rewritten in place); None where the numpy code serves: no relabeled row, or
        constants the kernel cannot write (``_kernel_constants``)."""
        if r is None or not goals.flags.c_contiguous:  # the goals are rewritten through a reshaped view
            return None
        constants = self._kernel_constants(r, goals)
        dones_dtype = storage.dones.dtype
        if constants is None or storage.timeouts.dtype != dones_dtype:
            return None
        next_obs = storage.next_batch(flat, num_rec)
        key = self.goal_spec.goals_key
        next_goals = next_obs[key] = np.ascontiguousarray(next_obs[key])  # a copy only where a layout gave a view
        batch, fill, table = len(flat), *constants
        rewards = np.empty(batch, dtype=storage.rewards.dtype)
        dones = np.empty(batch, dtype=dones_dtype)
        compiled.call(self.warm, serve_one_step, flat[:num_rec], storage.flat_rows(storage.rewards),
                      storage.flat_rows(storage.dones), storage.flat_rows(storage.timeouts), r.reach, r.t, r.length,
                      r.other_end, r.goals.reshape(len(r.t), -1), fill, table, dones, rewards,
                      goals.reshape(batch, -1), next_goals.reshape(batch, -1))
        if env is not None:
            rewards[:] = DictReplayBuffer._normalize_reward(rewards, env)
        return next_obs, rewards, dones

    def _relabel(self, storage: Storage, r: Relabeled, num_rec: int, goals: np.ndarray, rewards: np.ndarray,
                 dones: np.ndarray, window: np.ndarray | None, last_flat: np.ndarray, env: VecNormalize | None
                 ) -> dict[str, np.ndarray]:
        """The relabeled rows (from ``num_rec`` on) rewritten in place, and the batch's next observations.

        Each window ends at the relabeled episode's end (its last goal's reach), terminal there if the goals or a
        recorded termination they did not cause end it."""
        # Padding or groups: complete at the last real goal's reach (sb3_hir.reach).
        last = r.reach[:, -1] if self.ordered else instruction_end(r.reach, ~padding_mask(self.goal_spec, r.goals))
        completed = last > 0
        end = np.where(completed, last, r.length)  # last step of the relabeled episode
        m, t_end = self.windows.relabeled(storage, r, end, window, last_flat, num_rec)
        dones[num_rec:] = (t_end == end) & (completed | r.other_end)
        next_obs = storage.next_batch(last_flat, num_rec)
        key = self.goal_spec.goals_key
        in_window = self._relabeled_goals(r, t_end, goals[num_rec:], next_obs[key][num_rec:])
        rel_rewards = rewards[num_rec:]
        self._relabeled_rewards(storage, r, m, in_window, next_obs, num_rec, rel_rewards)
        if env is not None:
            rel_rewards[:] = DictReplayBuffer._normalize_reward(rel_rewards, env)
        return next_obs

    def _kernel_constants(self, r: Relabeled, goals: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(fill, table)`` for :func:`rewrite_one_step`: the value a masked goal is served as, and the reward of a
        row reaching ``c`` goals in its window at ``table[c]``, each computed by the numpy code's own expressions
        (``np.where`` with the mask value, ``goal_reward`` times the count, then ``step_reward``), so the kernel
        writes the same bits. None where the drawn goals' dtype or the mask's promotion differs from the served
        goals' (the numpy code serves those). Settled once per buffer."""
        spec, drawn, k = self.goal_spec, r.goals, r.reach.shape[1]
        key = (goals.dtype, drawn.dtype, spec.mask_value, spec.goal_reward, spec.step_reward)
        cached = self._constants
        if (cached is not None and cached[1] == k and cached[0][0] is key[0] and cached[0][1] is key[1]
                and cached[0][2] is key[2] and cached[0][3] is key[3] and cached[0][4] is key[4]):
            return cached[2]  # identity: no array compares, and a changed setting is seen
        constants: tuple[np.ndarray, np.ndarray] | None = None
        probe = np.where(True, spec.mask_value, drawn.reshape(-1)[:1])
        if drawn.dtype == goals.dtype and probe.dtype == goals.dtype and probe.size:
            counts = np.arange(k + 1) if k > 1 else np.array([False, True])  # as OneStep.goal_rewards counts
            table = np.empty(k + 1, dtype=np.float32)
            table[:] = spec.goal_reward * counts
            if spec.step_reward:
                table += np.float64(spec.step_reward)
            constants = (probe.astype(goals.dtype), table)
        self._constants = (key, k, constants)
        return constants

    def _relabeled_goals(self, r: Relabeled, t_end: np.ndarray, goals: np.ndarray, next_goals: np.ndarray
                         ) -> np.ndarray | None:
        """The relabeled instruction in the observations, each goal masked from its reach on; returns ``(B, k)``
        whether each goal is reached in the window (after ``t``, by ``t_end``), which the rewards count.

        A goal's own reach decides its mask, in slot order or not: in slot order the goals reached by a step are the
        first ones (reach steps ascend, -1 from the first miss on), as a padding slot is never reached."""
        reach = r.reach
        reached = reach > 0
        now = reached & (reach <= r.t[:, None])
        then = reached & (reach <= t_end[:, None])
        shape = (*reach.shape, *(1,) * (r.goals.ndim - 2))
        mask_value = self.goal_spec.mask_value
        goals[:] = np.where(now.reshape(shape), mask_value, r.goals)
        next_goals[:] = np.where(then.reshape(shape), mask_value, r.goals)
        return then ^ now  # now implies then: reached in (t, t_end]

    def _relabeled_rewards(self, storage: Storage, r: Relabeled, m: np.ndarray | None, in_window: np.ndarray | None,
                           next_obs: dict[str, np.ndarray], num_rec: int, rewards: np.ndarray) -> None:
        """The goal spec's rewards, in place."""
        assert in_window is not None
        self.windows.goal_rewards(self.goal_spec, r, m, in_window, rewards)

    def _tensors(self, obs: dict[str, np.ndarray], actions: np.ndarray, next_obs: dict[str, np.ndarray],
                 dones: np.ndarray, rewards: np.ndarray, window: np.ndarray | None, env: VecNormalize | None
                 ) -> DictReplayBufferSamples:
        """The samples as tensors; ``discounts`` ``gamma ** m`` for n-step returns.

        SB3's ``to_torch`` without its defensive copy: every served array is freshly gathered, so on CPU the tensor
        shares its memory (other devices copy once, per array)."""
        if env is not None:
            obs_ = DictReplayBuffer._normalize_obs(obs, env)
            next_obs_ = DictReplayBuffer._normalize_obs(next_obs, env)
            assert isinstance(obs_, dict) and isinstance(next_obs_, dict)
            obs, next_obs = obs_, next_obs_
        device = self.device
        tensor: Callable[[np.ndarray], th.Tensor] = (
            th.from_numpy if device.type == "cpu" else partial(th.as_tensor, device=device))
        discounts = self.windows.discounts(window)
        return DictReplayBufferSamples(
            observations={key: tensor(value) for key, value in obs.items()},
            actions=tensor(actions),
            next_observations={key: tensor(value) for key, value in next_obs.items()},
            dones=tensor(dones.reshape(-1, 1)),
            rewards=tensor(rewards.reshape(-1, 1)),
            discounts=None if discounts is None else tensor(discounts),
        )


@compiled.kernel
def serve_one_step(recorded: np.ndarray, stored_rewards: np.ndarray, stored_dones: np.ndarray,
                   stored_timeouts: np.ndarray, reach: np.ndarray, t: np.ndarray, length: np.ndarray,
                   other_end: np.ndarray, drawn: np.ndarray, fill: np.ndarray, table: np.ndarray, dones: np.ndarray,
                   rewards: np.ndarray, goals: np.ndarray, next_goals: np.ndarray) -> None:
    """1-step serving in one call: the batch's first rows, ``recorded`` (their flat rows in the storage's flat
    ``stored_*`` arrays), as ``OneStep.recorded`` serves them (the stored reward; done unless a time-out, as
    ``dones * (1 - timeouts)`` in the stored dtype), then the relabeled rows by :func:`rewrite_one_step`. One call
    in place of three gathers, two array operations and the rewrite's own: 0.92x of ``sample(256)`` at k = 1
    (``benchmarks/results/bench_compare_serving.txt``)."""
    num_rec = len(recorded)
    for i in range(num_rec):
        row = recorded[i]
        rewards[i] = stored_rewards[row]
        dones[i] = stored_dones[row] * (np.float32(1.0) - stored_timeouts[row])  # numpy's dtype: no float64 step
    rewrite_one_step(reach, t, length, other_end, drawn, fill, table, dones[num_rec:], rewards[num_rec:],
                     goals[num_rec:], next_goals[num_rec:])


@compiled.kernel
def rewrite_one_step(reach: np.ndarray, t: np.ndarray, length: np.ndarray, other_end: np.ndarray, drawn: np.ndarray,
                     fill: np.ndarray, table: np.ndarray, dones: np.ndarray, rewards: np.ndarray, goals: np.ndarray,
                     next_goals: np.ndarray) -> None:
    """``Serving._relabel`` for 1-step windows and goals in slot order, in one call: for each relabeled row ``b``
    (``reach`` ``(B, k)``, ``drawn`` its goals ``(B, k * D)``), done when its transition ends the relabeled episode
    (its last goal's reach, else its length) and the goals or a recorded termination end it; each goal served as
    ``fill[0]`` from its reach on (``goals`` before the transition, ``next_goals`` after it); reward
    ``table[goals reached at t + 1]``. Writes ``dones``, ``rewards``, ``goals`` and ``next_goals`` (``(B, k * D)``
    views of the served arrays)."""
    batch, k = reach.shape
    width = drawn.shape[1] // k
    mask = fill[0]  # read once: in the loop it is loaded again after every store (the outputs might alias it)
    # Every goal as drawn, then the reached ones masked (few are): a select per value and the mask read in the
    # loop cost 2.8x this (benchmarks/bench_kernel_costs.py).
    goals[:] = drawn
    next_goals[:] = drawn
    for b in range(batch):
        last = reach[b, k - 1]
        end = last if last > 0 else length[b]
        now_step = t[b]
        next_step = now_step + 1
        dones[b] = 1.0 if next_step == end and (last > 0 or other_end[b]) else 0.0
        hits = 0
        for j in range(k):
            step = reach[b, j]
            if step <= 0 or step > next_step:
                continue  # not reached by the next observation: drawn in both
            if step <= now_step:
                for d in range(j * width, (j + 1) * width):
                    goals[b, d] = mask
            else:
                hits += 1  # reached at t + 1
            for d in range(j * width, (j + 1) * width):
                next_goals[b, d] = mask
        rewards[b] = table[hits]


class EnvRewards(Protocol):
    """What GoalEnv serving reads of its owner: the env's batched ``compute_reward`` (HER's call), the env itself
    for the checks at its first use, and whether infos are stored."""

    env: VecEnv | None
    copy_info_dict: bool

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, infos: Any) -> np.ndarray: ...


class GoalEnvServing(Serving):
    """GoalEnv mode: the drawn goal as the desired goal, rewards from the env's ``compute_reward`` (module
    docstring).

    :param env_rewards: the buffer, as what it is to serving: :class:`EnvRewards`.
    :param owner: the buffer's class name, for the messages of the checks.
    """

    def __init__(self, goal_spec: GoalSpecProtocol, windows: OneStep, device: th.device, env_rewards: EnvRewards,
                 owner: str) -> None:
        super().__init__(goal_spec, 1, (), windows, device)
        self.env_rewards = env_rewards
        self.owner = owner
        #: the env's compute_reward checked: made once, at its first use (a new env is checked again).
        self.reward_checked = False

    def use_compiled(self, on: bool) -> None:
        self.jit = False  # the env's compute_reward rewards the rows: nothing for the kernel

    def env_changed(self) -> None:
        self.reward_checked = False

    def _relabeled_goals(self, r: Relabeled, t_end: np.ndarray, goals: np.ndarray, next_goals: np.ndarray
                         ) -> np.ndarray | None:
        goals[:] = r.goals[:, 0]  # a GoalEnv's desired goal stays as it is once reached
        next_goals[:] = r.goals[:, 0]
        return None  # the env rewards: no goal is counted

    def _relabeled_rewards(self, storage: Storage, r: Relabeled, m: np.ndarray | None, in_window: np.ndarray | None,
                           next_obs: dict[str, np.ndarray], num_rec: int, rewards: np.ndarray) -> None:
        # One step: the achieved goal after t is the served next observation's (no second gather).
        achieved = next_obs[ACHIEVED_GOAL][num_rec:] if m is None else None
        rewards[:] = self._env_rewards(storage, r, m, achieved)

    def _env_rewards(self, storage: Storage, r: Relabeled, m: np.ndarray | None, achieved: np.ndarray | None
                     ) -> np.ndarray:
        """Discounted sums of the env's ``compute_reward`` over each relabeled window: one call per batch.

        The reward of transition ``t`` is ``compute_reward(achieved_goal after t, goal, info_t)``, as in HER.
        ``achieved``: those achieved goals, when the caller has gathered them already (1-step windows).
        """
        n = self.windows.n_steps
        win_flat = self.windows.window_rows(storage, r, m)
        if achieved is None:
            achieved = storage.take(storage.achieved, win_flat)
        desired = np.repeat(r.goals[:, 0], n, axis=0) if n > 1 else r.goals[:, 0]
        if not self.reward_checked:
            self._first_reward_use(storage, r)
        rewards = self.env_rewards.compute_reward(achieved, desired, _infos(storage, win_flat))
        return self.windows.sum_window(rewards, m)

    def _first_reward_use(self, storage: Storage, relabeled: Relabeled) -> None:
        """Check the env's ``compute_reward`` once: it exists, is vectorized and gives the relabeled rows' recorded
        rewards under their own goals (``reward_checks``); later samples pay one attribute test."""
        owner = self.env_rewards
        if owner.env is not None:  # else compute_reward says that it needs one
            require_compute_reward(owner.env, self.owner)
        flat = relabeled.flat
        achieved = storage.take(storage.achieved, flat)
        desired = storage.obs_rows(DESIRED_GOAL, flat)  # the goal step() was rewarded under
        computed = owner.compute_reward(achieved, desired, _infos(storage, flat))
        self.reward_checked = True  # before warning: a warning turned into an error is not repeated every sample
        # Raw with raw: the buffer stores rewards before VecNormalize, and sample() normalizes after this.
        check_recorded_rewards(owner.env, computed, storage.take(storage.rewards, flat), flat // storage.n_envs,
                               flat % storage.n_envs, relabeled.t, owner.copy_info_dict, stacklevel=7)


def _infos(storage: Storage, flat: np.ndarray) -> Any:
    """The stored infos of rows ``flat`` for ``compute_reward`` (copies, as HER passes them), else empty dicts."""
    if storage.infos is not None:
        return copy.deepcopy(storage.infos.reshape(-1)[flat])
    return [{} for _ in range(len(flat))]
