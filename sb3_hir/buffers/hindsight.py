"""A drop-in SB3 replay buffer for hindsight instruction relabeling (HIR).

HIR generalises HER from one goal to an instruction of ``k`` goals reached in order (AMAGO,
arXiv 2310.09971, App. B). :class:`HindsightInstructionReplayBuffer` is a SB3
:class:`~stable_baselines3.common.buffers.DictReplayBuffer`, so DQN, QR-DQN, SAC, TQC, TD3 and DDPG use
it unchanged through ``replay_buffer_class``.

Design: a fresh hindsight instruction for every sampled transition, as HER draws a fresh goal per sample.

* ``add()`` stores the transition exactly as ``DictReplayBuffer`` does, plus a few integers per row: the
  episode's id, the transition's index ``t`` in it, and (written once, when the episode ends) its length.
  When an episode ends, per-episode bookkeeping is built once, in O(T), and stored in the episode's own
  rows: the reach steps of its own goals and, for exact goal specs on integer goals, an index of the
  achieved values (steps sorted by value, each step's previous occurrence of its value).
* ``sample()`` draws ``Binomial(batch_size, relabel_ratio)`` transitions to serve relabeled, the rest as
  ``DictReplayBuffer`` serves them. Each relabeled transition gets its own instruction from the relabeler
  (:meth:`~sb3_hir.relabel.HindsightInstructionRelabeler.draw_goal_steps`), and the row is served as
  :meth:`~sb3_hir.relabel.InstructionRelabeler.replay` of its episode under that instruction gives it:
  goals masked by the goals reached before each observation, reward ``goal_reward`` per goal reached,
  terminal when the k-th goal is reached (or on a recorded termination the goals did not cause), never a
  time-out otherwise. Everything derives from the drawn goals' reach steps ``r_1 < ... < r_k``.
* A relabeled transition must lie inside its relabeled episode (the k-th goal not reached before it). Draws
  that fail this, and rows of episodes still running or partly overwritten, are redrawn (row and
  instruction) up to ``max_redraws`` times, so relabeled transitions are uniform over the admissible
  (transition, instruction) pairs and ``relabel_ratio`` is the share actually served relabeled. What still
  fails (only when the buffer holds almost no finished episode) is served as recorded.
* One-goal instructions (``k = 1``, the built-in relabeler, any goal spec) need no rejection: when the episode
  ends, each step's value gets the step it is first reached at, and the steps sorted by it, latest first. The
  steps whose value is first reached after ``t`` are then a prefix of that order, of a length stored per row,
  so a sample draws its goal uniformly from them in O(1): HER's ``future`` rule, conditioned on the relabeled
  episode containing the transition. Transitions admitting no hindsight goal are redrawn, so the transition is
  uniform over those that admit one. The first-reach steps cost O(T log T) per episode for exact integer goals
  and O(T^2) (pairwise comparisons) for other goal specs.
* For ``k > 1``, reach steps cost O(k) per sample with the exact-value index: a drawn goal taken from step ``u`` is
  first reached at ``u`` unless its value occurred since the previous goal's reach, which one lookup of the
  previous occurrence tells; only then a binary search over that value's occurrences runs. Other goal
  specs (tolerance, distance-threshold) compare the episode window: O(k T) per sample, bounded by the
  episode length, independent of the buffer size. Relabelers without a batched ``draw_goal_steps`` (plugins
  that only implement ``relabel_goals``) are called ``draws_per_episode`` times when the episode ends; a
  sample picks one of those draws at random.
* ``n_steps > 1`` serves n-step returns (SB3's ``NStepReplayBuffer`` semantics, which SB3 refuses for Dict
  observations): the discounted reward sum over up to ``n_steps`` transitions, cut at the (relabeled)
  episode's end, the last observation of the window and ``discounts = gamma ** m`` in the samples' field that
  DQN, QR-DQN, SAC, TQC and TD3 read.

GoalEnv mode (a GoalEnv's ``observation`` / ``achieved_goal`` / ``desired_goal``, as SB3's ``HerReplayBuffer`` takes
them; use our :class:`HerReplayBuffer`, which SB3 hands the env) is the ``k = 1`` case of the same core: the same
index, draw and serving code, with the desired goal unmasked and the env's own reward. A relabeled row is the stored
episode replayed under the drawn goal ``g`` by the env itself: observations with ``desired_goal = g``, reward
``compute_reward(achieved_goal after t, g, info_t)`` (one call per batch, as HER calls it, summed over the window
for ``n_steps > 1``), and:

* the goal is drawn as HER draws it, in every case: ``(s_t, a_t, s_{t+1}, g)`` is a transition of the
  goal-conditioned task for any ``g``, whether or not ``g`` was also passed before ``t``;
* where successes terminate (``terminates_on_success``), a relabeled transition is terminal when its next achieved
  goal reaches ``g`` (an n-step window ends at the first such step), and a recorded termination that its own goal's
  reach caused is not kept. An earlier rule drew only goals first reached after ``t``; on looping on-policy data
  (DQN at its default learning rate) half the transitions then had no goal and were never relabeled;
* elsewhere (continuing tasks such as FetchReach) the recorded ``dones`` are served: HER's rows exactly.

HER's ``future`` (a goal from the steps at or after the transition's next observation), ``episode`` and ``final``
rules are the draws; ``n_sampled_goal`` maps to ``relabel_ratio``. ``terminate_on_success=False`` serves HER's
recorded ``dones``.

The buffer never scans its storage: ``add()`` costs O(1) per step plus O(T) once per episode, and
``sample()`` costs O(batch) in the buffer size. An episode whose first row was overwritten by the circular
buffer can no longer be relabeled (its instruction and early steps are gone); its remaining rows are still
served as recorded, as ``DictReplayBuffer`` serves them. When ``learn()`` is called again and resets the env
mid-episode, the next ``add()`` sees an observation that does not continue the stored episode and closes that
episode as truncated (HER's ``truncate_last_trajectory``), so no episode is relabeled across the splice.

Recommended setup (the policy sees the observation and the instruction; "achieved" is only for
relabeling)::

    from stable_baselines3 import DQN
    from sb3_hir.buffers import HindsightInstructionReplayBuffer
    from sb3_hir.extractors import KeySelectExtractor

    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(strategy="some", relabel_ratio=0.8),
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        ),
    )
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from stable_baselines3.her.goal_selection_strategy import KEY_TO_GOAL_STRATEGY, GoalSelectionStrategy

from sb3_hir.buffers import compiled
from sb3_hir.buffers.goal_env import ACHIEVED_GOAL, DESIRED_GOAL
from sb3_hir.buffers.kernels import first_after, take_rows, value_ids
from sb3_hir.buffers.options import resolve_options, resolve_terminate_on_success
from sb3_hir.buffers.reward_checks import (
    batch_rewards,
    check_recorded_rewards,
    note_batch_call,
    require_compute_reward,
)
from sb3_hir.episodes import Episode
from sb3_hir.goals import GoalSpec
from sb3_hir.relabel import HindsightInstructionRelabeler, InstructionRelabeler

__all__ = ["HindsightInstructionReplayBuffer", "SampleInfo"]


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


class _Relabeled(NamedTuple):
    flat: np.ndarray  # flat (row * n_envs + env) index of each transition
    start: np.ndarray  # row of the episode's first transition
    env: np.ndarray
    t: np.ndarray
    length: np.ndarray
    goals: np.ndarray  # (B, k, *goal_shape)
    reach: np.ndarray  # (B, k) reach steps under goals, -1 never
    other_end: np.ndarray  # the recorded episode ended in a termination its goals did not cause


class HindsightInstructionReplayBuffer(DictReplayBuffer):
    """Replay buffer that serves transitions under fresh hindsight instructions (see the module docstring).

    Sparse-reward episodes that miss their instruction still reached some goals; serving them as successes at those
    goals is what lets DQN, SAC and TQC learn multi-goal tasks from sparse reward, with the algorithm unchanged.

    Pass it as ``replay_buffer_class`` of any SB3 / sb3-contrib off-policy algorithm; the extra
    arguments go in ``replay_buffer_kwargs``. For GoalEnvs use :class:`HerReplayBuffer`, this class as SB3
    treats its own ``HerReplayBuffer`` (it hands the buffer the env); this one needs no env, so a model using it loads
    without one, as with ``DictReplayBuffer``.

    Two modes, chosen from ``observation_space``:

    * **GoalEnv mode** (``observation`` / ``achieved_goal`` / ``desired_goal``, as ``HerReplayBuffer`` takes
      them): one goal, relabeled rewards from the env's own ``compute_reward`` (one call per batch), HER's
      arguments. Relabeled successes terminate where the env terminates on success (``terminate_on_success``).
    * **Instruction mode** (the goal spec's keys, ``k`` goals): rewards and terminations from the goal spec.

    :param buffer_size: max number of transitions (split over ``n_envs`` as in SB3).
    :param observation_space: a GoalEnv's Dict space, or a Dict space carrying the goal spec's goals and achieved
        keys.
    :param action_space: action space.
    :param env: the training VecEnv, handed over by SB3 (as to ``HerReplayBuffer``); GoalEnv mode calls its
        ``compute_reward``. Not pickled: SB3 calls ``set_env`` when it loads a saved buffer.
    :param device: PyTorch device of the sampled tensors.
    :param n_envs: number of parallel environments.
    :param optimize_memory_usage: not supported (as for ``DictReplayBuffer``); must be False.
    :param handle_timeout_termination: serve recorded time-limit truncations as non-terminal (SB3's default).
    :param n_sampled_goal: HER's name for ``relabel_ratio``: ``n_sampled_goal / (n_sampled_goal + 1)`` of the served
        transitions are relabeled. Giving both with different values is an error.
    :param goal_selection_strategy: HER's name for ``goal_selection``: ``"future"``, ``"final"``, ``"episode"`` or
        SB3's :class:`~stable_baselines3.her.GoalSelectionStrategy`.
    :param copy_info_dict: store each transition's ``info`` and pass it to ``compute_reward`` (GoalEnv mode), as
        HER does; costs a Python object per row.
    :param terminate_on_success: GoalEnv mode only. Whether a relabeled transition whose next achieved goal reaches
        its goal is terminal.
        None decides, for discrete actions (DQN, QR-DQN), from the env: its ``compute_terminated(g, g, {})`` when
        it has one (gymnasium-robotics), else the recorded episodes: True until a recorded episode goes on after
        reaching its own goal (measured on SB3's HER test: waiting for evidence of termination instead cost
        0.59 -> 0.36 success at 2500 steps; HER's dones score 0.84 where these score 0.95 at 1500). For continuous
        actions None is False: SAC's and TQC's entropy bonus at ``ent_coef="auto"`` makes a terminal success worth
        less than going on early in training (PandaReach-v3 at 5k steps: 0.02 with terminations, HER 0.70); pass
        True there for the env's own terminations (TD3, DDPG, or SAC with a small initial ``ent_coef``).
        False serves the recorded ``dones``, which is HER's behaviour exactly.
    :param relabeler: relabeler plugin name (e.g. ``"hindsight-instruction"``) or a relabeler instance
        (then ``strategy``, ``goal_spec`` and ``relabeler_kwargs`` are not used and its goal spec applies).
        Instruction mode only.
    :param strategy: how many hindsight goals to draw (``"some"``, ``"all"`` or ``"none"``), passed to a named
        relabeler that takes one; None keeps the relabeler's own default (``"some"`` for
        ``"hindsight-instruction"``; ``"all"``, HER's rule, in GoalEnv mode). With one goal, ``"all"`` is HER's
        ``future`` rule; ``"some"`` keeps the recorded instruction in half of the draws.
    :param goal_spec: goal spec plugin name (``"exact"``, ``"tolerance"``) or a :class:`~sb3_hir.goals.GoalSpec`.
        None: in instruction mode the one the env declares (``env.goal_spec``, e.g. MazeRunner's with its
        ``step_reward``), else ``"exact"``; in GoalEnv mode the success test used to find where a goal is first
        reached (only needed when successes terminate): exact equality for integer goals, else the env's
        ``distance_threshold`` as a tolerance.
    :param relabel_ratio: share of sampled transitions served under a hindsight draw (HER's
        ``n_sampled_goal / (n_sampled_goal + 1)``: 0.8 is ``n_sampled_goal=4``, the default); a draw that keeps the
        recorded instruction (``"some"`` drawing no extra goal) counts as one.
    :param goal_selection: ``"future"`` (the goal completing the instruction comes from at or after the
        sampled transition, HER's rule), ``"episode"`` (uniform over the episode, as AMAGO) or ``"final"`` (the
        episode's last achieved value; one goal only).
    :param n_steps: serve n-step returns over up to this many transitions (1: ordinary 1-step samples).
    :param gamma: discount of the n-step returns; must equal the algorithm's ``gamma`` (only used when
        ``n_steps > 1``).
    :param relabeler_kwargs: extra keyword arguments of a named relabeler.
    :param seed: seed of the buffer's generator (relabeled rows and their draws); None draws it from
        ``np.random``, which SB3 seeds from the model's ``seed``.
    :param draws_per_episode: draws stored per episode for relabelers without a batched ``draw_goal_steps``.
    :param max_redraws: rounds of redrawing for relabeled transitions that are not admissible.
    """

    relabeler: InstructionRelabeler
    goal_spec: GoalSpec
    env: VecEnv | None
    #: the drop-in for SB3's ``HerReplayBuffer``, which SB3 hands the env: GoalEnv errors speak HER's terms.
    _her_drop_in: ClassVar[bool] = False

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        env: VecEnv | None = None,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        n_sampled_goal: int | None = None,
        goal_selection_strategy: GoalSelectionStrategy | str | None = None,
        copy_info_dict: bool = False,
        terminate_on_success: bool | None = None,
        relabeler: str | InstructionRelabeler = "hindsight-instruction",
        strategy: str | None = None,
        goal_spec: str | GoalSpec | None = None,
        relabel_ratio: float | None = None,
        goal_selection: str | None = None,
        n_steps: int = 1,
        gamma: float = 0.99,
        relabeler_kwargs: dict[str, Any] | None = None,
        seed: int | None = None,
        draws_per_episode: int = 4,
        max_redraws: int = 8,
    ) -> None:
        options = resolve_options(
            observation_space, env, type(self).__name__, self._her_drop_in, buffer_size=buffer_size, n_envs=n_envs,
            optimize_memory_usage=optimize_memory_usage, handle_timeout_termination=handle_timeout_termination,
            n_sampled_goal=n_sampled_goal, goal_selection_strategy=goal_selection_strategy,
            copy_info_dict=copy_info_dict, terminate_on_success=terminate_on_success, relabeler=relabeler,
            strategy=strategy, goal_spec=goal_spec, relabel_ratio=relabel_ratio, goal_selection=goal_selection,
            n_steps=n_steps, gamma=gamma, relabeler_kwargs=relabeler_kwargs, draws_per_episode=draws_per_episode,
            max_redraws=max_redraws,
        )
        DictReplayBuffer.__init__(
            self,
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            optimize_memory_usage=False,
            handle_timeout_termination=options.handle_timeout_termination,
        )
        self.env = env
        #: the env's compute_reward checked (GoalEnv mode): made once, at its first use (``_first_reward_use``).
        self._reward_checked = False
        #: GoalEnv mode: ``observation`` / ``achieved_goal`` / ``desired_goal`` taken as they come (module docstring).
        self.goal_env = options.goal_env
        self.relabeler = options.relabeler
        self.goal_spec = options.relabeler.goal_spec
        #: GoalEnv mode without a success test (float goals, no ``distance_threshold``): reaches are not searched.
        self.has_success_test = options.has_success_test
        self.num_goals = num_goals = options.num_goals
        self.goal_shape = goal_shape = options.goal_shape
        self.relabel_ratio = relabel_ratio = options.relabel_ratio
        self.goal_selection = options.goal_selection
        self.n_steps = options.n_steps
        self.gamma = options.gamma
        self.draws_per_episode = options.draws_per_episode
        self.max_redraws = options.max_redraws
        self.copy_info_dict = options.copy_info_dict
        # HER's public attributes, for code that reads them (rl-zoo3, users' callbacks).
        self.n_sampled_goal = None if relabel_ratio >= 1.0 else round(relabel_ratio / (1.0 - relabel_ratio))
        self.her_ratio = relabel_ratio
        self.goal_selection_strategy = KEY_TO_GOAL_STRATEGY[options.goal_selection]
        #: per-row infos for compute_reward (HER's ``copy_info_dict``); None when not copied.
        self.infos = np.empty((self.buffer_size, self.n_envs), dtype=object) if self.copy_info_dict else None
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        #: None: decided from the env's compute_terminated probe or the recorded episodes (terminates_on_success).
        self.terminate_on_success = resolve_terminate_on_success(
            terminate_on_success, options, action_space, env, observation_space
        )
        #: recorded episodes that ended on their own goal's first reach / went on after reaching it (GoalEnv mode).
        self.episodes_ending_at_goal = 0
        self.episodes_going_on_after_goal = 0
        #: cached estimate of the admissible share of relabeled draws (sample() oversamples by it).
        self._admitted = 1.0

        spec = self.goal_spec
        goals_dtype = np.dtype(observation_space[spec.goals_key].dtype)
        #: per-sample draws by the relabeler itself (else draws stored when an episode ends).
        self.batched_draws = callable(getattr(self.relabeler, "draw_goal_steps", None))
        #: reach steps from the exact-value index (else the episode window is compared).
        self.exact_index = options.exact_values
        #: the built-in relabeler's batched draw, which the compiled kernel reproduces (``buffers.compiled``).
        self.builtin_draws = (
            self.batched_draws
            and isinstance(self.relabeler, HindsightInstructionRelabeler)
            and type(self.relabeler).draw_goal_steps is HindsightInstructionRelabeler.draw_goal_steps
        )
        self._strategy_code = compiled.DRAW_MODES.get(getattr(self.relabeler, "strategy", "all"), 2)
        #: one-goal instructions of the built-in relabeler: every step's first-reach step, indexed per episode,
        #: gives a draw without rejection (any goal spec; see ``_relabel_single``).
        self.single_index = (
            self.batched_draws
            and num_goals == 1
            and isinstance(self.relabeler, HindsightInstructionRelabeler)
            and type(self.relabeler).draw_goal_steps is HindsightInstructionRelabeler.draw_goal_steps
        )
        # Per-row integers; steps fit in int16 when no episode can be longer than 32767 rows.
        fields = ["id", "t", "len", "end", "own"]
        if not self.batched_draws:
            fields += ["ndraw"]
        if self.single_index and not self.goal_env:  # GoalEnvs draw as HER does: no first-reach index
            fields += ["first", "forder", "fcount", "ffirst"]  # ffirst: first[forder], read with forder
        elif self.exact_index:
            fields += ["prev", "rank", "glo", "order", "olo", "ohi"]
        self._field = {name: i for i, name in enumerate(fields)}  # id, t, len first: add() writes them at once
        meta_dtype = np.int16 if self.buffer_size <= np.iinfo(np.int16).max else np.int32
        self._meta = np.zeros((self.buffer_size, self.n_envs, len(fields)), dtype=meta_dtype)
        # Episode ids wrap; two live episodes of one sub-env cannot collide, as that needs more episodes
        # between them than the buffer holds rows.
        self._id_mask = int(np.iinfo(meta_dtype).max)
        if not self.batched_draws:
            rows = (self.buffer_size, self.n_envs)
            self._draw_goals = np.zeros((*rows, num_goals, *goal_shape), dtype=goals_dtype)
            self._draw_reach = np.zeros((*rows, num_goals), dtype=meta_dtype)
        #: ``(k+1, k, 1, ..., 1)`` bool table: row c masks the goals reached after c of them.
        masks = np.arange(num_goals)[None, :] < np.arange(num_goals + 1)[:, None]
        self._slot_masks = masks.reshape(masks.shape + (1,) * len(goal_shape))
        self._init_episode_bookkeeping()
        self._warned_too_long = False
        self._warned_reward_scale = False  # the recorded rewards' scale is checked until one mismatch is reported
        self._last_sample: tuple | None = None
        #: draw with the compiled kernels (``buffers.compiled``; identical draws, fewer array calls).
        self.jit = compiled.enabled()
        self._single_cfg: np.ndarray | None = None
        self._reach_cfg: np.ndarray | None = None
        self._exact_cfg: np.ndarray | None = None
        #: kernels this buffer has called (their first call may compile; see ``compiled.call``).
        self._warm_kernels: set[str] = set()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the env (VecEnvs often cannot be pickled); ``set_env`` gives it back, as for HER."""
        state = self.__dict__.copy()
        state["env"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("last_sample_info", None)  # an attribute in sb3-hir 0.1.0, a property since
        self.__dict__.update(state)
        self.env = None
        self.__dict__.setdefault("_last_sample", None)
        self.__dict__.setdefault("_single_cfg", None)
        self.__dict__.setdefault("_reach_cfg", None)
        self.__dict__.setdefault("_exact_cfg", None)
        self._reward_checked = False  # the env given back may not be the one checked
        self.jit = compiled.enabled()  # where the buffer is loaded, not where it was saved
        self._warm_kernels = set()  # a new process compiles (or loads) the kernels again

    def set_env(self, env: VecEnv) -> None:
        """Give a loaded buffer its env back (HER's API; SB3's ``load_replay_buffer`` calls it for
        :class:`HerReplayBuffer`)."""
        if self.env is not None:
            raise ValueError("Trying to set env of already initialized environment.")
        self.env = env
        self._reward_checked = False

    def _init_episode_bookkeeping(self) -> None:
        self._num_adds = 0  # a Python int: add() touches it every step
        self._episode_start = np.zeros(self.n_envs, dtype=np.int64)  # value of _num_adds at each episode's start
        # What add() writes in each sub-env's next row: episode id (wrapped), step t, length 0 (running).
        self._row_head = np.zeros((self.n_envs, 3), dtype=self._meta.dtype)
        #: transitions served so far, and how many of them relabeled (see ``served_relabeled_share``).
        self.num_served = 0
        self.num_served_relabeled = 0

    @property
    def served_relabeled_share(self) -> float:
        """Share of all transitions served so far under a hindsight draw (``relabel_ratio`` when healthy)."""
        return self.num_served_relabeled / self.num_served if self.num_served else 0.0

    def reset(self) -> None:
        super().reset()
        self._meta.fill(0)
        self._init_episode_bookkeeping()

    # -- storage ----------------------------------------------------------------------------------
    def add(  # type: ignore[override]
        self,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        if self._num_adds and not self._continues(obs):
            self._close_spliced_episodes(obs)
        self._meta[self.pos, :, :3] = self._row_head
        self._row_head[:, 1] += 1
        if self.infos is not None:
            self.infos[self.pos] = infos
        DictReplayBuffer.add(self, obs, next_obs, action, reward, done, infos)
        self._num_adds += 1
        done = np.asarray(done)
        if np.count_nonzero(done):  # cheaper than done.any() on the per-step path
            for env_idx in np.flatnonzero(done.reshape(self.n_envs)):
                self._end_episode(int(env_idx))

    def _continues(self, obs: dict[str, np.ndarray]) -> bool:
        """Whether every sub-env's new observation equals the stored last next observation (the usual case).

        Compared in the stored dtype, so an env returning float64 for a float32 space is not seen as a splice.
        """
        prev = self.pos - 1 if self.pos else self.buffer_size - 1
        for key, stored in self.next_observations.items():
            last = stored[prev]  # bytes: the cheapest exact comparison of a few values
            if np.asarray(obs[key], dtype=last.dtype).tobytes() != last.tobytes():
                return False
        return True

    def _close_spliced_episodes(self, obs: dict[str, np.ndarray]) -> None:
        """Close running episodes whose new observation does not continue them (``learn()`` reset the env)."""
        prev = (self.pos - 1) % self.buffer_size
        running = self._episode_start != self._num_adds
        if not running.any():
            return
        spliced = np.zeros(self.n_envs, dtype=bool)
        for key, stored in self.next_observations.items():
            new = np.asarray(obs[key], dtype=stored.dtype).reshape(self.n_envs, -1)
            spliced |= (new != stored[prev].reshape(self.n_envs, -1)).any(axis=1)
        spliced &= running
        for env_idx in np.flatnonzero(spliced):
            # Not an actual time-out, but it ends the episode without a termination, as HER's
            # truncate_last_trajectory does.
            self.dones[prev, env_idx] = 1.0
            self.timeouts[prev, env_idx] = 1.0
            self._end_episode(int(env_idx))

    def truncate_last_trajectory(self) -> None:
        """Close every running episode as truncated (HER's API, which SB3's ``load_replay_buffer`` calls).

        ``add()`` also detects a reset by itself; this warns as HER does, so code that checks HER's warning holds.
        """
        prev = (self.pos - 1) % self.buffer_size
        running = [env_idx for env_idx in range(self.n_envs) if self._episode_start[env_idx] != self._num_adds]
        if not running:
            return
        warnings.warn(
            "The last trajectory in the replay buffer will be truncated.\n"
            "If you are in the same episode as when the replay buffer was saved,\n"
            "you should use `truncate_last_trajectory=False` to avoid that issue.",
            stacklevel=2,
        )
        for env_idx in running:
            self.dones[prev, env_idx] = 1.0
            if self.handle_timeout_termination:  # as HER: otherwise the truncation is served as a termination
                self.timeouts[prev, env_idx] = 1.0
            self._end_episode(env_idx)

    def _end_episode(self, env_idx: int) -> None:
        """Close the running episode of sub-env ``env_idx`` (its last transition was just stored)."""
        length = self._num_adds - int(self._episode_start[env_idx])
        self._episode_start[env_idx] = self._num_adds
        head = self._row_head[env_idx]
        head[0] = (int(head[0]) + 1) & self._id_mask
        head[1] = 0
        if length < 1:
            return
        if length > self.buffer_size:
            if not self._warned_too_long:
                warnings.warn(
                    f"an episode of {length} steps is longer than the replay buffer holds per env "
                    f"({self.buffer_size}); such episodes are served as recorded, without relabeling. "
                    "Increase buffer_size to relabel them.",
                    stacklevel=3,
                )
                self._warned_too_long = True
            return
        # pos already points past the last transition of the episode.
        self._index_episode(env_idx, (self.pos - length) % self.buffer_size, length)

    def _index_episode(self, env_idx: int, start: int, length: int) -> None:
        """Per-episode bookkeeping, built once in O(T) and stored in the episode's own rows."""
        rows = (start + np.arange(length)) % self.buffer_size
        spec, k, field = self.goal_spec, self.num_goals, self._field
        achieved = self._achieved_at(rows, env_idx)  # steps 1..T
        first = self.observations[spec.achieved_key][start, env_idx]
        achieved_all = np.concatenate([spec.achieved_values(first[None], self.goal_shape), achieved])
        own_goals = self.observations[spec.goals_key][start, env_idx]
        if self.goal_env:
            own_goals = own_goals.reshape(1, *self.goal_shape)
        own_steps = self.relabeler.reach_steps(achieved_all, own_goals)
        meta = self._meta[rows, env_idx]  # a copy (fancy indexing); written back below
        meta[:, field["len"]] = length
        other_end = bool(self.dones[rows[-1], env_idx]) and not bool(self.timeouts[rows[-1], env_idx])
        if self.goal_env:
            # The recorded termination as it is; sample() decides whether the own goal's reach caused it.
            meta[:, field["end"]] = other_end
            reached_at = int(own_steps[0])
            if self.has_success_test and reached_at > 0:
                if reached_at == length and other_end:
                    self.episodes_ending_at_goal += 1
                elif reached_at < length:
                    self.episodes_going_on_after_goal += 1
        else:
            last_goals = self.next_observations[spec.goals_key][rows[-1], env_idx]
            meta[:, field["end"]] = other_end and not bool(spec.is_masked(last_goals).all())
            if not self._warned_reward_scale:
                self._check_reward_scale(rows, env_idx, own_steps, length)
        slots = min(k, length)
        meta[:slots, field["own"]] = own_steps[:slots]
        if self.single_index and not self.goal_env:
            first = self._first_reach(achieved, own_goals)
            # Sorted by first reach, latest first: the values not yet reached after transition t are the
            # first fcount[t] steps of this order.
            key = np.where(first > 0, first, length + 1)
            meta[:, field["first"]] = first
            forder = np.argsort(-key, kind="stable")
            meta[:, field["forder"]] = forder + 1
            meta[:, field["ffirst"]] = first[forder]  # the drawn step's first reach, in the row that draws it
            meta[:, field["fcount"]] = np.bincount(key, minlength=length + 2)[::-1].cumsum()[::-1][1 : length + 1]
        elif self.exact_index:
            ids, own_ids = value_ids(achieved, own_goals, len(self.goal_shape))
            order = np.argsort(ids, kind="stable")  # positions -> step offset, grouped by value, steps ascending
            sorted_ids = ids[order]
            rank = np.empty(length, dtype=np.int64)
            rank[order] = np.arange(length)
            starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
            group_lo_sorted = starts[np.searchsorted(starts, np.arange(length), side="right") - 1]
            group_lo = group_lo_sorted[rank]
            prev = np.where(rank > group_lo, order[np.maximum(rank - 1, 0)] + 1, 0)
            meta[:, field["prev"]] = prev
            meta[:, field["rank"]] = rank
            meta[:, field["glo"]] = group_lo
            meta[:, field["order"]] = order + 1  # steps are 1-based
            olo = np.searchsorted(sorted_ids, own_ids, side="left")
            ohi = np.searchsorted(sorted_ids, own_ids, side="right")
            meta[:slots, field["olo"]] = olo[:slots]
            meta[:slots, field["ohi"]] = ohi[:slots]
        if not self.batched_draws:
            episode = self._stored_episode(env_idx, rows)
            draws = 0
            for _ in range(min(self.draws_per_episode, length)):
                goals = self.relabeler.relabel_goals(episode, self.rng)
                if goals is None:
                    continue
                self._draw_goals[rows[draws], env_idx] = goals
                self._draw_reach[rows[draws], env_idx] = self.relabeler.reach_steps(achieved_all, goals)
                draws += 1
            meta[:, field["ndraw"]] = draws
        self._meta[rows, env_idx] = meta

    def _check_reward_scale(self, rows: np.ndarray, env_idx: int, own_steps: np.ndarray, length: int) -> None:
        """Warn once when the env's recorded rewards are not the goal spec's: relabeled rows would be served on
        another scale than recorded ones (e.g. an env built with ``step_reward=-1.0`` and the default spec)."""
        spec = self.goal_spec
        counts = self.relabeler.reach_counts(own_steps, length)
        expected = spec.step_reward + spec.goal_reward * np.diff(counts)
        recorded = self.rewards[rows, env_idx]
        wrong = np.flatnonzero(~np.isclose(recorded, expected, atol=1e-5))
        if len(wrong):
            t = int(wrong[0])
            warnings.warn(
                f"the env's recorded rewards differ from the goal spec's (goal_reward={spec.goal_reward}, "
                f"step_reward={spec.step_reward}): step {t} of an episode recorded {float(recorded[t])}, the spec "
                f"gives {float(expected[t])}. Relabeled transitions would be rewarded differently from recorded ones; "
                "pass the env's own spec (goal_spec=env.goal_spec), or use HerReplayBuffer, which reads it",
                stacklevel=4,
            )
            self._warned_reward_scale = True

    def _first_reach(self, achieved: np.ndarray, own_goals: np.ndarray) -> np.ndarray:
        """Step (1..T) at which the value achieved at each step 1..T is first reached, 0 if never.

        O(T log T) for exact integer values; other goal specs compare every pair of steps, O(T^2) once per
        episode (in column blocks, so memory stays O(T))."""
        length = len(achieved)
        if self.exact_index:
            ids, _ = value_ids(achieved, own_goals, len(self.goal_shape))
            _, first_index, inverse = np.unique(ids, return_index=True, return_inverse=True)
            return first_index[inverse.reshape(-1)] + 1
        first = np.zeros(length, dtype=np.int64)
        block = max(1, 2**16 // max(length, 1))
        for lo in range(0, length, block):
            hits = np.asarray(self.goal_spec.reached(achieved[:, None], achieved[None, lo : lo + block]), dtype=bool)
            first[lo : lo + block] = np.where(hits.any(axis=0), hits.argmax(axis=0) + 1, 0)
        return first

    def _achieved_at(self, rows: np.ndarray, env_idx: np.ndarray | int) -> np.ndarray:
        """Achieved values after the transitions in ``rows``, shaped ``(*rows.shape, *goal_shape)``."""
        flat = np.asarray(rows) * self.n_envs + env_idx  # one flat take: faster than 2-d fancy indexing
        values = take_rows(self.next_observations[self.goal_spec.achieved_key], flat.reshape(-1))
        return values.reshape(*np.shape(flat), *self.goal_shape)

    def _stored_episode(self, env_idx: int, rows: np.ndarray) -> Episode:
        """The stored episode, with observations ``[obs_0, next_obs_0, ..., next_obs_{T-1}]``."""
        observations = {
            key: np.concatenate((obs[rows[:1], env_idx], self.next_observations[key][rows, env_idx]))
            for key, obs in self.observations.items()
        }
        timeouts = self.timeouts[rows, env_idx].astype(bool)
        dones = self.dones[rows, env_idx].astype(bool)
        return Episode(
            observations=observations,
            actions=self.actions[rows, env_idx],
            rewards=self.rewards[rows, env_idx],
            terminated=dones & ~timeouts,
            truncated=dones & timeouts,
        )

    # -- sampling ---------------------------------------------------------------------------------
    def sample(self, batch_size: int, env: VecNormalize | None = None) -> DictReplayBufferSamples:  # type: ignore[override]
        upper = self.buffer_size if self.full else self.pos
        if upper == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        num_relabel = int(self.rng.binomial(batch_size, self.relabel_ratio)) if self.relabel_ratio > 0 else 0
        relabeled = self._draw_relabeled(num_relabel, upper) if num_relabel else None
        num_recorded = batch_size - (0 if relabeled is None else len(relabeled.flat))
        # The recorded part draws exactly as DictReplayBuffer does (np.random, seeded by SB3).
        rows = np.random.randint(0, upper, size=num_recorded)
        envs = np.random.randint(0, high=self.n_envs, size=(num_recorded,))
        return self._serve(rows * self.n_envs + envs, relabeled, env)

    def _get_samples(  # type: ignore[override]
        self,
        batch_inds: np.ndarray,
        env: VecNormalize | None = None,
    ) -> DictReplayBufferSamples:
        """Rows ``batch_inds`` served as recorded (with random sub-envs), as ``DictReplayBuffer`` serves them."""
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        return self._serve(np.asarray(batch_inds) * self.n_envs + env_indices, None, env)

    def _draw_relabeled(self, count: int, upper: int) -> _Relabeled | None:
        """``count`` admissible (transition, hindsight instruction) pairs (see the module docstring)."""
        relabeled = self._draw_admissible(count, upper)
        if relabeled is not None and self.goal_env and self.terminates_on_success:
            relabeled = relabeled._replace(reach=self._reach_after_t(relabeled))
        return relabeled

    def _reach_after_t(self, r: _Relabeled) -> np.ndarray:
        """GoalEnv mode, successes terminating: the first step after ``t`` whose achieved goal reaches the drawn
        goal, within the served window (``(B, 1)``; -1 when not in it).

        The replayed episode starts at ``t``: whether the goal was also passed before ``t`` does not matter, since
        ``(s_t, a_t, s_{t+1}, g)`` is a transition of the goal-conditioned task either way (HER's draw). Looking
        only ``n_steps`` ahead keeps it O(batch * n_steps).
        """
        offsets = np.arange(self.n_steps)
        ahead = np.minimum(offsets, (r.length - r.t - 1)[:, None])  # (B, n): the window, cut at the episode's end
        rows = (r.start[:, None] + r.t[:, None] + ahead) % self.buffer_size
        achieved = self._achieved_at(rows, r.env[:, None])  # achieved after each transition of the window
        hits = np.asarray(self.goal_spec.reached(achieved, r.goals), dtype=bool)  # goals (B, 1, *goal_shape)
        hits &= offsets < (r.length - r.t)[:, None]
        return np.where(hits.any(axis=1), r.t + 1 + hits.argmax(axis=1), -1)[:, None]

    def _draw_admissible(self, count: int, upper: int) -> _Relabeled | None:
        """``count`` admissible (transition, hindsight instruction) pairs, by rejection (see module docstring)."""
        if self.single_index and self.jit:
            return self._draw_single_compiled(count, upper)
        if self.exact_index and self.builtin_draws and self.jit:
            return self._draw_exact_compiled(count, upper)
        parts: list[_Relabeled] = []
        missing = count
        # Estimate of the admissible share, kept across calls, so that the first round usually draws enough.
        admitted = self._admitted
        for _ in range(self.max_redraws + 1):
            if missing == 0:
                break
            # Oversample by the expected rejection: every round costs a fixed ~30 numpy calls, so one large
            # round beats several small ones. Extra admissible pairs are dropped, which keeps them uniform.
            draws = min(int(missing / max(admitted, 0.05) * 1.15) + 8, 20 * missing + 8)
            rows = self.rng.integers(0, upper, size=draws)
            envs = self.rng.integers(0, self.n_envs, size=draws)
            part = self._relabel_rows(rows, envs)
            got = 0 if part is None else len(part.flat)
            admitted = max(got / draws, 0.01)
            self._admitted = admitted
            if got:
                if got > missing:
                    part = _Relabeled(*(a[:missing] for a in part))
                parts.append(part)
                missing -= len(part.flat)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return _Relabeled(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)))

    def _draw_single_compiled(self, count: int, upper: int) -> _Relabeled | None:
        """The one-goal draw of ``_draw_relabeled`` in one compiled call (identical draws; ``buffers.compiled``)."""
        spec, field = self.goal_spec, self._field
        flat_rows = self.buffer_size * self.n_envs
        cfg = self._single_cfg
        if cfg is None:
            values = dict(
                size=self.buffer_size, n_envs=self.n_envs, rounds=self.max_redraws, goal_env=int(self.goal_env),
                draw_mode=compiled.DRAW_MODES["all" if self.goal_env else self.relabeler.strategy],
                selection=compiled.SELECTIONS[self.goal_selection],
                **{name: field.get(name[2:], 0) for name in compiled.SINGLE if name.startswith("f_")},
            )
            cfg = self._single_cfg = np.array([values.get(name, 0) for name in compiled.SINGLE], dtype=np.int64)
        cfg[2], cfg[3], cfg[6] = upper, count, int(self.goal_env and self.terminates_on_success)
        own_goals = self.observations[spec.goals_key].reshape(flat_rows, -1)
        flat, start, envs, t, length, goals, reach, other_end, self._admitted = compiled.call(
            self._warm_kernels,
            compiled.draw_single,
            self.rng,
            self._meta.reshape(flat_rows, -1),
            self.next_observations[spec.achieved_key].reshape(flat_rows, -1),
            own_goals,
            own_goals[:0],
            float(self._admitted),
            cfg,
        )
        if not len(flat):
            return None
        goals = goals.reshape(len(flat), 1, *self.goal_shape)
        return _Relabeled(flat, start, envs, t, length, goals, reach[:, None], other_end)

    def _draw_exact_compiled(self, count: int, upper: int) -> _Relabeled | None:
        """The ``k``-goal exact-index draw of ``_draw_relabeled`` in one compiled call (identical draws)."""
        size, n_envs, field = self.buffer_size, self.n_envs, self._field
        cfg = self._exact_cfg
        if cfg is None:
            values = dict(
                size=size, n_envs=n_envs, rounds=self.max_redraws, k=self.num_goals,
                strategy=compiled.DRAW_MODES[self.relabeler.strategy], future=int(self.goal_selection == "future"),
                **{name: field[name[2:]] for name in compiled.EXACT if name.startswith("f_")},
            )
            cfg = self._exact_cfg = np.array([values.get(name, 0) for name in compiled.EXACT], dtype=np.int64)
        cfg[2], cfg[3] = upper, count
        flat, start, envs, t, length, steps, reach, other_end, self._admitted = compiled.call(
            self._warm_kernels, compiled.draw_exact, self.rng, self._meta.reshape(size * n_envs, -1),
            float(self._admitted), cfg,
        )
        if not len(flat):
            return None
        # Goal values of the admitted draws only: achieved at the drawn steps, else the episode's own goals.
        achieved = self._achieved_at((start[:, None] + np.maximum(steps, 1) - 1) % size, envs[:, None])
        own_goals = take_rows(self.observations[self.goal_spec.goals_key], start * n_envs + envs)
        from_step = (steps > 0).reshape(*steps.shape, *(1,) * len(self.goal_shape))
        goals = np.where(from_step, achieved, own_goals).astype(own_goals.dtype, copy=False)
        return _Relabeled(flat, start, envs, t, length, goals, reach, other_end)

    def _relabel_rows(self, rows: np.ndarray, envs: np.ndarray) -> _Relabeled | None:
        """Draw an instruction for each (row, env); keep the admissible ones."""
        size, n_envs, field, k = self.buffer_size, self.n_envs, self._field, self.num_goals
        meta_flat = self._meta.reshape(size * n_envs, -1)
        flat = rows * n_envs + envs
        meta = meta_flat.take(flat, axis=0)
        t = meta[:, field["t"]].astype(np.int64)
        length = meta[:, field["len"]].astype(np.int64)
        start = (rows - t) % size
        start_id = meta_flat[start * n_envs + envs, field["id"]]
        ok = (length > 0) & (start_id == meta[:, field["id"]])
        if not ok.all():
            keep = np.flatnonzero(ok)
            if not len(keep):
                return None
            rows, envs, flat, meta, t, length, start = (a[keep] for a in (rows, envs, flat, meta, t, length, start))
        # Per-episode slots j (own reach steps, own-goal value ranges) live in the episode's rows start + j.
        slots = (start[:, None] + np.arange(k)) % size
        slot_meta = meta_flat.take(slots * n_envs + envs[:, None], axis=0)  # (B, k, F)
        own_steps = np.where(np.arange(k) < length[:, None], slot_meta[..., field["own"]], -1).astype(np.int64)
        own_goals = take_rows(self.observations[self.goal_spec.goals_key], start * n_envs + envs)
        if self.goal_env:
            own_goals = own_goals.reshape(len(start), 1, *self.goal_shape)
        if self.single_index:
            goals, reach, keep = self._relabel_single(own_steps[:, 0], own_goals, meta, t, start, envs, length)
        elif self.batched_draws:
            if self.jit and self.builtin_draws:
                steps = compiled.call(self._warm_kernels, compiled.draw_goal_steps, self.rng, own_steps, length, t,
                                      self._strategy_code, self.goal_selection == "future")
            else:
                steps = self.relabeler.draw_goal_steps(own_steps, length, t, self.rng, self.goal_selection)
            step_rows = (start[:, None] + np.maximum(steps, 1) - 1) % size
            achieved = self._achieved_at(step_rows, envs[:, None])
            from_step = (steps > 0).reshape(*steps.shape, *(1,) * len(self.goal_shape))
            goals = np.where(from_step, achieved, own_goals).astype(own_goals.dtype, copy=False)
            if self.exact_index and self.jit:
                if self._reach_cfg is None:
                    self._reach_cfg = np.array([size, n_envs, *(field[name[2:]] for name in compiled.REACH[2:])],
                                               dtype=np.int64)
                reach = compiled.call(self._warm_kernels, compiled.reach_indexed, meta_flat, steps, start, envs,
                                      length, self._reach_cfg)
            elif self.exact_index:
                reach = self._reach_indexed(steps, step_rows, slot_meta, start, envs, length)
            else:
                reach = self._reach_window(goals, start, envs, length)
        else:
            ndraw = meta[:, field["ndraw"]].astype(np.int64)
            pick = (self.rng.random(len(flat)) * np.maximum(ndraw, 1)).astype(np.int64)
            draw_flat = ((start + pick) % size) * n_envs + envs
            has = ndraw > 0
            goals = np.where(
                has.reshape(-1, *(1,) * (own_goals.ndim - 1)), take_rows(self._draw_goals, draw_flat), own_goals
            )
            reach = np.where(has[:, None], take_rows(self._draw_reach, draw_flat), own_steps).astype(np.int64)
        # Admissible: the transition lies inside the relabeled episode (the k-th goal not reached before it).
        inside = ~((reach[:, -1] > 0) & (reach[:, -1] <= t))
        if self.single_index:
            inside &= keep
        other_end = meta[:, field["end"]] > 0
        if self.goal_env and self.terminates_on_success:
            other_end &= own_steps[:, 0] != length  # the own goal's reach caused it: not under another goal
        part = _Relabeled(flat, start, envs, t, length, goals, reach, other_end)
        if not inside.all():
            part = _Relabeled(*(a[inside] for a in part))
        return part

    def _relabel_single(
        self,
        own_step: np.ndarray,
        own_goals: np.ndarray,
        meta: np.ndarray,
        t: np.ndarray,
        start: np.ndarray,
        envs: np.ndarray,
        length: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One-goal draws, conditioned on admissibility without rejection: O(1).

        Instruction envs end the episode at the reached goal, so the relabeled episode must contain ``t``: its goal
        not reached at or before ``t``. ``"future"`` (steps after ``t``) and ``"episode"`` (the whole episode)
        conditioned on that are both uniform over the steps whose value is first reached after ``t``, the first
        ``fcount[t]`` steps of the episode's ``forder``; ``"final"`` is admissible when the last value is first
        reached after ``t``. With none, the recorded goal is kept. GoalEnvs draw HER's rule exactly, every draw
        admissible (``_reach_after_t`` serves a terminating goal's reach).
        """
        size, n_envs, field = self.buffer_size, self.n_envs, self._field
        meta_flat = self._meta.reshape(size * n_envs, -1)
        batch = len(t)
        if self.goal_env:
            draw = np.ones(batch, dtype=bool)  # HER: every relabeled transition gets a new goal
        else:
            strategy = self.relabeler.strategy
            draw = own_step <= 0
            if strategy == "none":
                draw[:] = False
            elif strategy == "some":  # h uniform in 0..1 free slots
                draw &= self.rng.random(batch) < 0.5
        selection = self.goal_selection
        if self.goal_env:  # HER's draw; where successes terminate, _reach_after_t finds the served reach
            if selection == "future":
                steps = t + 1 + (self.rng.random(batch) * (length - t)).astype(np.int64)
            elif selection == "episode":
                steps = 1 + (self.rng.random(batch) * length).astype(np.int64)
            else:
                steps = length.copy()
            keep = np.ones(batch, dtype=bool)
            step_flat = ((start + steps - 1) % size) * n_envs + envs
            reach_drawn = np.full(batch, -1, dtype=np.int64)
        else:
            if selection == "final":
                steps = length.copy()
            else:
                count = meta[:, field["fcount"]].astype(np.int64)
                pick = (self.rng.random(batch) * np.maximum(count, 1)).astype(np.int64)
                steps = meta_flat[((start + pick) % size) * n_envs + envs, field["forder"]].astype(np.int64)
            step_flat = ((start + steps - 1) % size) * n_envs + envs
            first = meta_flat[step_flat, field["first"]].astype(np.int64)
            keep = ~draw | (first > t)
            reach_drawn = np.where(first > 0, first, -1)
        achieved = self._achieved_at(step_flat // n_envs, step_flat % n_envs)[:, None]
        goals = np.where(draw.reshape(-1, *(1,) * (own_goals.ndim - 1)), achieved, own_goals)
        reach = np.where(draw, reach_drawn, own_step)[:, None]
        return goals.astype(own_goals.dtype, copy=False), reach, keep

    def _reach_indexed(
        self,
        steps: np.ndarray,
        step_rows: np.ndarray,
        slot_meta: np.ndarray,
        start: np.ndarray,
        envs: np.ndarray,
        length: np.ndarray,
    ) -> np.ndarray:
        """Reach steps of goals drawn as achieved steps, from the exact-value index: O(k) per sample, plus
        O(log T) for a goal whose value recurs between the previous goal's reach and its own step."""
        size, n_envs, field = self.buffer_size, self.n_envs, self._field
        meta_flat = self._meta.reshape(size * n_envs, -1)
        batch, k = steps.shape
        at_step = meta_flat.take(step_rows * n_envs + envs[:, None], axis=0)  # (B, k, F)
        reach = np.full((batch, k), -1, dtype=np.int64)
        previous = np.zeros(batch, dtype=np.int64)
        order_col = field["order"]
        for j in range(k):
            alive = previous >= 0
            from_step = steps[:, j] > 0
            # A goal taken from step u: reached at u unless its value occurred after the previous reach.
            prev_occ = at_step[:, j, field["prev"]].astype(np.int64)
            reach_j = np.where(from_step & (prev_occ <= previous), steps[:, j], -1)
            lo = np.where(from_step, at_step[:, j, field["glo"]], slot_meta[:, j, field["olo"]]).astype(np.int64)
            hi = np.where(from_step, at_step[:, j, field["rank"]], slot_meta[:, j, field["ohi"]]).astype(np.int64)
            own_slot = ~from_step & (j < length)
            search = np.flatnonzero(alive & ((from_step & (prev_occ > previous)) | own_slot))
            if len(search):
                found = first_after(
                    meta_flat[:, order_col], start[search], envs[search], lo[search], hi[search],
                    previous[search], size, n_envs,
                )
                reach_j[search] = found
            reach_j = np.where(alive, reach_j, -1)
            reach[:, j] = reach_j
            previous = reach_j
        return reach

    def _reach_window(
        self, goals: np.ndarray, start: np.ndarray, envs: np.ndarray, length: np.ndarray
    ) -> np.ndarray:
        """Reach steps by comparing each goal with the episode's achieved values: O(k T) per sample."""
        batch, k = goals.shape[:2]
        horizon = int(length.max()) if batch else 0
        reach = np.full((batch, k), -1, dtype=np.int64)
        if not horizon:
            return reach
        offsets = np.arange(horizon)
        window_rows = (start[:, None] + np.minimum(offsets, length[:, None] - 1)) % self.buffer_size
        achieved = self._achieved_at(window_rows, envs[:, None])  # (B, H, *goal_shape): steps 1..H
        hits = self.goal_spec.reached(achieved[:, :, None], goals[:, None])  # (B, H, k)
        hits &= (offsets < length[:, None])[:, :, None]
        previous = np.zeros(batch, dtype=np.int64)
        steps = offsets + 1
        for j in range(k):
            candidate = hits[:, :, j] & (steps > previous[:, None])
            first = candidate.argmax(axis=1)
            reach_j = np.where(candidate[np.arange(batch), first] & (previous >= 0), first + 1, -1)
            reach[:, j] = reach_j
            previous = reach_j
        return reach

    def _serve(
        self, recorded_flat: np.ndarray, relabeled: _Relabeled | None, env: VecNormalize | None
    ) -> DictReplayBufferSamples:
        """Gather the batch (recorded rows first, then relabeled ones) and rewrite the relabeled part."""
        n_envs, size, spec = self.n_envs, self.buffer_size, self.goal_spec
        num_rec = len(recorded_flat)
        num_rel = 0 if relabeled is None else len(relabeled.flat)
        flat = recorded_flat if not num_rel else np.concatenate([recorded_flat, relabeled.flat])  # type: ignore[union-attr]
        batch = len(flat)
        rel = slice(num_rec, batch)
        obs = {key: take_rows(arr, flat) for key, arr in self.observations.items()}
        actions = take_rows(self.actions, flat)

        # Window m and the flat row whose next observation ends it, per sample.
        window = np.ones(batch, dtype=np.int64)
        rewards = np.empty(batch, dtype=np.float32)
        dones = np.empty(batch, dtype=np.float32)
        last_flat = flat.copy() if self.n_steps > 1 else flat  # one step: each row's next observation is its own
        if num_rec:
            rec = slice(0, num_rec)
            self._recorded_windows(recorded_flat, env, window[rec], rewards[rec], dones[rec], last_flat[rec])
        recorded_goals = obs[spec.goals_key][:num_rec]
        m = next_counts = None
        if relabeled is not None and num_rel:
            r = relabeled
            reach, t = r.reach, r.t
            completed = reach[:, -1] > 0
            end = np.where(completed, reach[:, -1], r.length)  # last step of the relabeled episode
            one_step = self.n_steps == 1  # then m = 1: the window is the transition itself (end > t always)
            m = np.minimum(self.n_steps, end - t) if not one_step else None
            if not self.goal_env:
                if self.n_steps == 1:  # one step: a goal is in the window when reached at t + 1, undiscounted
                    rewards[rel] = spec.goal_reward * (reach == (t + 1)[:, None]).sum(axis=1)
                    if spec.step_reward:
                        rewards[rel] += np.float64(spec.step_reward)
                else:
                    in_window = (reach > t[:, None]) & (reach <= (t + m)[:, None])
                    powers = self.gamma ** np.maximum(reach - t[:, None] - 1, 0)
                    rewards[rel] = spec.goal_reward * (in_window * powers).sum(axis=1)
                    if spec.step_reward:
                        rewards[rel] += spec.step_reward * ((self.gamma ** np.arange(self.n_steps)) * (
                            np.arange(self.n_steps) < m[:, None])).sum(axis=1)
            t_end = t + 1 if m is None else t + m  # the step the window's next observation follows
            finishes = t_end == end
            dones[rel] = finishes & (completed | r.other_end)
            if not one_step:
                window[rel] = m
                last_flat[rel] = ((r.start + t + m - 1) % size) * n_envs + r.env
            if self.goal_env:  # a GoalEnv's desired goal stays as it is once reached
                obs[spec.goals_key][rel] = r.goals[:, 0]
            else:
                count_now = ((reach > 0) & (reach <= t[:, None])).sum(axis=1)
                next_counts = ((reach > 0) & (reach <= t_end[:, None])).sum(axis=1)
                obs[spec.goals_key][rel] = np.where(self._slot_masks[count_now], spec.mask_value, r.goals)
        next_obs = {key: take_rows(arr, last_flat) for key, arr in self.next_observations.items()}
        if relabeled is not None and num_rel:
            if self.goal_env:
                # One step: the achieved goal after t is the served next observation's (no second gather).
                achieved = next_obs[ACHIEVED_GOAL][rel] if self.n_steps == 1 else None
                rewards[rel] = self._env_rewards(relabeled, m, achieved)
                next_obs[spec.goals_key][rel] = relabeled.goals[:, 0]
            else:
                next_obs[spec.goals_key][rel] = np.where(
                    self._slot_masks[next_counts], spec.mask_value, relabeled.goals
                )
            rewards[rel] = self._normalize_reward(rewards[rel], env)

        self.num_served += batch
        self.num_served_relabeled += num_rel
        self._last_sample = (flat, num_rec, recorded_goals, relabeled if num_rel else None, window)
        obs_ = self._normalize_obs(obs, env)
        next_obs_ = self._normalize_obs(next_obs, env)
        assert isinstance(obs_, dict) and isinstance(next_obs_, dict)
        tensor = self._tensor
        discounts = None
        if self.n_steps > 1:
            discounts = tensor((self.gamma ** window).astype(np.float32).reshape(-1, 1))
        return DictReplayBufferSamples(
            observations={key: tensor(value) for key, value in obs_.items()},
            actions=tensor(actions),
            next_observations={key: tensor(value) for key, value in next_obs_.items()},
            dones=tensor(dones).reshape(-1, 1),
            rewards=tensor(rewards.reshape(-1, 1)),
            discounts=discounts,
        )

    def _tensor(self, array: np.ndarray) -> th.Tensor:
        """``to_torch`` without SB3's defensive copy: every served array is freshly gathered, so the tensor may share
        its memory (on CPU; other devices copy anyway)."""
        if self.device.type == "cpu":
            return th.from_numpy(array)
        return th.as_tensor(array, device=self.device)

    @property
    def last_sample_info(self) -> SampleInfo | None:
        """What the last ``sample()`` served (built on access: sampling itself does not pay for it)."""
        last = self.__dict__.get("_last_sample")
        if last is None:
            return None
        flat, num_rec, recorded_goals, relabeled, window = last
        batch, k, n_envs = len(flat), self.num_goals, self.n_envs
        goals = np.empty((batch, k, *self.goal_shape), dtype=recorded_goals.dtype)
        goals[:num_rec] = recorded_goals.reshape(-1, k, *self.goal_shape)
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
            window=window,
        )

    def _env_rewards(self, relabeled: _Relabeled, m: np.ndarray, achieved: np.ndarray | None = None) -> np.ndarray:
        """Discounted sums of the env's ``compute_reward`` over each relabeled window: one call per batch.

        The reward of transition ``t`` is ``compute_reward(achieved_goal after t, goal, info_t)``, as in HER.
        ``achieved``: those achieved goals, when the caller has gathered them already (``n_steps == 1``).
        """
        r, n, size, n_envs = relabeled, self.n_steps, self.buffer_size, self.n_envs
        offsets = np.arange(n)
        if n == 1:
            win_flat = r.flat
        else:
            within = np.minimum(offsets, m[:, None] - 1)  # (B, n): window steps, the last one repeated past m
            win_flat = ((((r.start + r.t)[:, None] + within) % size) * n_envs + r.env[:, None]).reshape(-1)
        if achieved is None:
            achieved = take_rows(self.next_observations[ACHIEVED_GOAL], win_flat)
        desired = np.repeat(r.goals[:, 0], n, axis=0) if n > 1 else r.goals[:, 0]
        if not self._reward_checked:
            self._first_reward_use(r)
        if self.infos is not None:
            infos: Any = copy.deepcopy(self.infos.reshape(-1)[win_flat])
        else:
            infos = [{} for _ in range(len(win_flat))]
        rewards = self.compute_reward(achieved, desired, infos)
        if n == 1:
            return rewards
        return (rewards.reshape(-1, n) * (self.gamma**offsets) * (offsets < m[:, None])).sum(axis=1)

    def _first_reward_use(self, relabeled: _Relabeled) -> None:
        """Check the env's ``compute_reward`` once: it exists, is vectorized and gives the relabeled rows' recorded
        rewards under their own goals (``reward_checks``); later samples pay one attribute test."""
        if self.env is not None:  # else compute_reward says that it needs one
            require_compute_reward(self.env, type(self).__name__)
        flat = relabeled.flat
        achieved = take_rows(self.next_observations[ACHIEVED_GOAL], flat)
        desired = take_rows(self.observations[DESIRED_GOAL], flat)  # the goal step() was rewarded under
        infos: Any = copy.deepcopy(self.infos.reshape(-1)[flat]) if self.infos is not None else [{} for _ in flat]
        computed = self.compute_reward(achieved, desired, infos)
        self._reward_checked = True  # before warning: a warning turned into an error is not repeated every sample
        # Raw with raw: the buffer stores rewards before VecNormalize, and sample() normalizes after this.
        check_recorded_rewards(self.env, computed, take_rows(self.rewards, flat), flat // self.n_envs,
                               flat % self.n_envs, relabeled.t, self.copy_info_dict, stacklevel=5)

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, infos: Any) -> np.ndarray:
        """The env's ``compute_reward`` on a batch (HER's call: the first sub-env's method), as float32."""
        if self.env is None:
            raise RuntimeError(
                "HindsightInstructionReplayBuffer needs the env to compute rewards for a GoalEnv: SB3 passes it at "
                "construction and load_replay_buffer() calls set_env(env); for a buffer used by hand pass env=... "
                "or call set_env(env)"
            )
        try:
            rewards = self.env.env_method("compute_reward", achieved_goal, desired_goal, infos, indices=[0])[0]
        except Exception as error:
            if not self._reward_checked:  # the env's first call: it may not expect a batch
                note_batch_call(error, self.env, achieved_goal)
            raise
        return batch_rewards(rewards, achieved_goal, self.env)

    @property
    def terminates_on_success(self) -> bool:
        """Whether a relabeled success is served as terminal (GoalEnv mode; see ``terminate_on_success``)."""
        if self.terminate_on_success is not None:
            return bool(self.terminate_on_success)
        # GoalEnvs without compute_terminated (SB3's BitFlippingEnv, highway-env's parking) end on success; one
        # recorded episode that goes on after reaching its own goal shows this one does not, from then on.
        return self.episodes_going_on_after_goal == 0

    def _recorded_windows(
        self,
        flat: np.ndarray,
        env: VecNormalize | None,
        window: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        last_flat: np.ndarray,
    ) -> None:
        """Fill the recorded part in place: 1-step as ``DictReplayBuffer``, else ``NStepReplayBuffer``'s rule."""
        recorded_dones = take_rows(self.dones, flat) * (1 - take_rows(self.timeouts, flat))
        if self.n_steps == 1:
            rewards[:] = self._normalize_reward(take_rows(self.rewards, flat), env)
            dones[:] = recorded_dones
            return
        size, n_envs, n = self.buffer_size, self.n_envs, self.n_steps
        rows, envs = flat // n_envs, flat % n_envs
        seq_rows = (rows[:, None] + np.arange(n)) % size
        seq_flat = seq_rows * n_envs + envs[:, None]
        # A window stops at an episode end, and at the newest row (the next one holds older data).
        stop = (take_rows(self.dones, seq_flat) > 0) | (take_rows(self.timeouts, seq_flat) > 0)
        stop |= seq_rows == (self.pos - 1) % size
        last = np.where(stop.any(axis=1), stop.argmax(axis=1), n - 1)
        steps = np.arange(n)
        mask = steps <= last[:, None]
        seq_rewards = self._normalize_reward(take_rows(self.rewards, seq_flat), env)
        rewards[:] = (seq_rewards * (self.gamma ** steps) * mask).sum(axis=1)
        end_flat = seq_flat[np.arange(len(flat)), last]
        dones[:] = take_rows(self.dones, end_flat) * (1 - take_rows(self.timeouts, end_flat))
        window[:] = last + 1
        last_flat[:] = end_flat
