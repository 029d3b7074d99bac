"""A drop-in SB3 replay buffer for hindsight instruction relabeling (HIR).

HIR generalises HER from one goal to an instruction of ``k`` goals reached in order (AMAGO,
arXiv 2310.09971, App. B). :class:`HindsightInstructionReplayBuffer` is a SB3
:class:`~stable_baselines3.common.buffers.DictReplayBuffer`, so DQN, QR-DQN, SAC, TQC, TD3 and DDPG use
it unchanged through ``replay_buffer_class``.

Design: a fresh hindsight instruction for every sampled transition, as HER draws a fresh goal per sample.

* ``add()`` stores the transition exactly as ``DictReplayBuffer`` does, plus a few integers per row in the episode
  index, which is completed once, in O(T), when the episode ends (``episode_index``).
* ``sample()`` draws ``Binomial(batch_size, relabel_ratio)`` transitions to serve relabeled, the rest as
  ``DictReplayBuffer`` serves them. Each relabeled transition gets its own instruction from the draw strategy chosen
  when the buffer was built (``draws``): admissible pairs only, so relabeled transitions are uniform over the
  admissible (transition, instruction) pairs and ``relabel_ratio`` is the share actually served relabeled. What still
  fails (only when the buffer holds almost no finished episode) is served as recorded. The batch is then served as
  the relabeled episodes' replay gives it (``serving``).
* GoalEnv mode (a GoalEnv's ``observation`` / ``achieved_goal`` / ``desired_goal``, as SB3's ``HerReplayBuffer``
  takes them; use our :class:`HerReplayBuffer`, which SB3 hands the env) is the ``k = 1`` case of the same core,
  with HER's draw, the desired goal unmasked and the env's own reward (``draws.her``, ``serving``).

The buffer never scans its storage: ``add()`` costs O(1) per step plus O(T) once per episode, and ``sample()`` costs
O(batch) in the buffer size. An episode whose first row was overwritten by the circular buffer can no longer be
relabeled; its remaining rows are still served as recorded, as ``DictReplayBuffer`` serves them. When ``learn()`` is
called again and resets the env mid-episode, the next ``add()`` sees an observation that does not continue the stored
episode and closes that episode as truncated (HER's ``truncate_last_trajectory``), so no episode is relabeled across
the splice.

Recommended setup (the policy sees the observation and the instruction; "achieved" is only for
relabeling)::

    from stable_baselines3 import DQN
    from sb3_hir.buffers import HindsightInstructionReplayBuffer
    from sb3_hir.extractors import KeySelectExtractor

    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HindsightInstructionReplayBuffer,
        replay_buffer_kwargs=dict(hindsight_goals="some", relabel_ratio=0.8),
        policy_kwargs=dict(
            features_extractor_class=KeySelectExtractor,
            features_extractor_kwargs=dict(keys=["obs", "goals"]),
        ),
    )
"""

from __future__ import annotations

import math
import warnings
from operator import attrgetter
from typing import Any, ClassVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from stable_baselines3.her.goal_selection_strategy import KEY_TO_GOAL_STRATEGY, GoalSelectionStrategy

from sb3_hir._validate import check_int, describe
from sb3_hir.buffers.demonstrations import Demonstrations, DemonstrationSource, as_episodes
from sb3_hir.buffers.draws import DrawStrategy, FirstReachDraw, HerDraw, Relabeled, StoredDraws
from sb3_hir.buffers.legacy import upgrade
from sb3_hir.buffers.mixture import Mixture
from sb3_hir.buffers.options import (
    BufferOptions,
    choose_serving,
    draw_strategy_for,
    renamed_arguments,
    resolve_options,
    resolve_terminate_on_success,
)
from sb3_hir.buffers.reward_checks import GoalEnvRewards
from sb3_hir.buffers.serving import SampleInfo
from sb3_hir.buffers.source import SourceBuilder
from sb3_hir.buffers.storage import Cursor
from sb3_hir.contract import INFO_GOAL_SPEC
from sb3_hir.goals import GoalSpec
from sb3_hir.relabel import InstructionRelabeler
from sb3_hir.resolvers import resolve_goal_spec

__all__ = ["HindsightInstructionReplayBuffer", "SampleInfo"]

#: The relabeled pairs' type under its earlier name, which buffers pickled before the layout by concept reference.
_Relabeled = Relabeled


def _mixture_counter(name: str, doc: str) -> property:
    """A count the mixture keeps, as a settable attribute of the buffer."""

    def get(self: Any) -> int:
        return getattr(self._mixture, name)

    def set(self: Any, value: int) -> None:
        setattr(self._mixture, name, check_int(value, name, 0))

    return property(get, set, doc=doc)


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
      arguments. HER's recorded ``dones`` by default; the env's terminations on relabeled successes with
      ``terminate_on_success=None`` (decide from the env) or True.
    * **Instruction mode** (the goal spec's keys, ``k`` goals): rewards and terminations from the goal spec.

    :param buffer_size: max number of transitions (split over ``n_envs`` as in SB3).
    :param observation_space: a GoalEnv's Dict space, or a Dict space carrying the goal spec's goals and achieved
        keys.
    :param action_space: action space.
    :param env: the training VecEnv, handed over by SB3 (as to ``HerReplayBuffer``); GoalEnv mode calls its
        ``compute_reward``. Not pickled: SB3 calls ``set_env`` when it loads a saved buffer.
    :param device: PyTorch device of the sampled tensors.
    :param n_envs: number of parallel environments.
    :param optimize_memory_usage: store each observation once instead of twice (``layout.CompactLayout``), as SB3's
        ``ReplayBuffer`` offers and its ``DictReplayBuffer`` and ``HerReplayBuffer`` refuse. The served rows are
        identical; it saves nearly half the memory with large observations (images), at a small cost per sample.
    :param handle_timeout_termination: serve recorded time-limit truncations as non-terminal (SB3's default).
    :param n_sampled_goal: HER's name for ``relabel_ratio``: ``n_sampled_goal / (n_sampled_goal + 1)`` of the served
        transitions are relabeled. Giving both with different values is an error.
    :param goal_selection_strategy: HER's name for ``goal_step``: ``"future"``, ``"final"``, ``"episode"`` or
        SB3's :class:`~stable_baselines3.her.GoalSelectionStrategy`.
    :param copy_info_dict: store each transition's ``info`` and pass it to ``compute_reward`` (GoalEnv mode), as
        HER does; costs a Python object per row.
    :param terminate_on_success: GoalEnv mode only. Whether a relabeled transition whose next achieved goal reaches
        its goal is terminal. False (default) serves the recorded ``dones``, HER's behaviour exactly: picked by a grid
        of DQN settings against HER (``bench_her_dropin.py --suite grid``), the only choice never below HER there
        (DQN at its default learning rate on BitFlipping-12: 0.81 against HER's 0.74, where the env's terminations
        score 0.58). None decides from the env, which wins with fast learners (SB3's HER test: 1.00 against HER's
        0.70 and 0.79 with HER's dones; target update 1000: 0.93 against 0.76): for discrete actions the env's
        ``compute_terminated(g, g, {})`` when it has one (gymnasium-robotics), else the recorded episodes (True
        until a recorded episode goes on after reaching its own goal); for continuous actions False, since SAC's
        and TQC's entropy bonus at ``ent_coef="auto"`` makes a terminal success worth less than going on early in
        training (PandaReach-v3 at 5k steps: 0.02 with terminations, HER 0.70). True serves the env's terminations
        (TD3, DDPG, or SAC with a small initial ``ent_coef``).
    :param relabeler: relabeler plugin name (e.g. ``"hindsight-instruction"``) or a relabeler instance
        (then ``hindsight_goals``, ``goal_spec`` and ``relabeler_kwargs`` are not used and its goal spec applies).
        Instruction mode only.
    :param hindsight_goals: how many of an instruction's goals are hindsight ones (``"some"``, ``"all"`` or
        ``"none"``), passed to a named relabeler as its ``strategy`` argument (unless ``relabeler_kwargs`` sets it);
        None keeps the relabeler's own default (``"some"`` for
        ``"hindsight-instruction"``; ``"all"``, HER's rule, in GoalEnv mode). With one goal, ``"all"`` is HER's
        ``future`` rule; ``"some"`` keeps the recorded instruction in half of the draws.
    :param goal_spec: goal spec plugin name (``"exact"``, ``"tolerance"``) or a :class:`~sb3_hir.goals.GoalSpec`.
        None: in instruction mode the one the env declares (``env.goal_spec``) when the buffer is given ``env``
        (built by hand, or as the drop-in :class:`~sb3_hir.HerReplayBuffer`), else ``"exact"``. Under SB3's
        off-policy algorithms (DQN, SAC, ...) this buffer never sees the env, so pass
        ``replay_buffer_kwargs=dict(goal_spec=env.goal_spec)``; an env that returns its spec in ``info["goal_spec"]``
        has the first ``add`` refused when the default differs from it, rather than relabeled by the wrong one. In
        GoalEnv mode the success test used to find where a goal is first
        reached (only needed when successes terminate): exact equality for integer goals, else the env's
        ``distance_threshold`` as a tolerance.
    :param relabel_ratio: share of sampled transitions served under a hindsight draw (HER's
        ``n_sampled_goal / (n_sampled_goal + 1)``: 0.8 is ``n_sampled_goal=4``, the default); a draw that keeps the
        recorded instruction (``"some"`` drawing no extra goal) counts as one.
    :param goal_step: which step the goal completing the instruction comes from: ``"future"`` (at or after the
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
    :param memory_layout: ``"compact"`` is ``optimize_memory_usage=True`` under a name no algorithm passes itself:
        SBX's SAC, TQC, CrossQ and TD3 hand the buffer ``optimize_memory_usage=False`` and take no such argument, so
        ``replay_buffer_kwargs=dict(memory_layout="compact")`` is how their users store observations once.
        ``"full"`` stores them twice; None (default) follows ``optimize_memory_usage``.
    :param draw: how relabeled transitions get their hindsight instructions: a draw-strategy plugin name
        (``"first-reach"``, ``"her"``, ``"exact-index"``, ``"window"``, ``"stored"`` or a plugin's), a
        :class:`~sb3_hir.buffers.draws.DrawStrategy` subclass, or an instance of one, which each source of rows (the
        online rows, the demonstrations) copies (see "Write your own draw strategy" in the docs). None (default)
        picks the built-in one that fits the mode, the relabeler and the goal spec.
    :param draw_kwargs: keyword arguments of a named or class ``draw``.
    :param demo_ratio: share of each sampled batch served from the demonstrations added with
        :meth:`add_demonstrations` (0: stored, not served). While the online storage is still empty every row comes
        from them, so a model can be trained on demonstrations alone.
    :param renamed: the 0.1 names of four arguments, deprecated (a ``DeprecationWarning``) and removed in 0.3:
        ``strategy`` (now ``hindsight_goals``), ``goal_selection`` (``goal_step``), ``draw_strategy`` (``draw``) and
        ``draw_strategy_kwargs`` (``draw_kwargs``); giving an old name with its new one is an error
        (``options.RENAMED_ARGUMENTS``).
    """

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
        terminate_on_success: bool | None = False,
        relabeler: str | InstructionRelabeler = "hindsight-instruction",
        hindsight_goals: str | None = None,
        goal_spec: str | GoalSpec | None = None,
        relabel_ratio: float | None = None,
        goal_step: str | None = None,
        n_steps: int = 1,
        gamma: float = 0.99,
        relabeler_kwargs: dict[str, Any] | None = None,
        seed: int | None = None,
        draws_per_episode: int = 4,
        max_redraws: int = 8,
        demo_ratio: float = 0.0,
        memory_layout: str | None = None,
        draw: str | type[DrawStrategy] | DrawStrategy | None = None,
        draw_kwargs: dict[str, Any] | None = None,
        **renamed: Any,
    ) -> None:
        new = renamed_arguments(type(self).__name__, renamed, hindsight_goals=hindsight_goals, goal_step=goal_step,
                                draw=draw, draw_kwargs=draw_kwargs)
        options = resolve_options(
            observation_space, env, type(self).__name__, self._her_drop_in, buffer_size=buffer_size, n_envs=n_envs,
            optimize_memory_usage=optimize_memory_usage, memory_layout=memory_layout,
            handle_timeout_termination=handle_timeout_termination,
            n_sampled_goal=n_sampled_goal, goal_selection_strategy=goal_selection_strategy,
            copy_info_dict=copy_info_dict, terminate_on_success=terminate_on_success, relabeler=relabeler,
            hindsight_goals=new["hindsight_goals"], goal_spec=goal_spec, relabel_ratio=relabel_ratio,
            goal_step=new["goal_step"],
            n_steps=n_steps, gamma=gamma, relabeler_kwargs=relabeler_kwargs, draws_per_episode=draws_per_episode,
            max_redraws=max_redraws,
        )
        DictReplayBuffer.__init__(self, buffer_size, observation_space, action_space, device=device, n_envs=n_envs,
                                  handle_timeout_termination=options.handle_timeout_termination)
        self.optimize_memory_usage = options.compact
        #: the constructor's arguments as the buffer's parts use them, decided once (``options.BufferOptions``).
        self.options = options
        #: the seed of the online rows' generator (relabeled rows and their draws); None draws it from ``np.random``.
        self.seed = int(np.random.randint(0, 2**31 - 1)) if seed is None else seed
        self._build(options, env, terminate_on_success, new["draw"], new["draw_kwargs"], demo_ratio)
        #: whether the first ``add`` still has to compare the spec with the one the env returns in its infos (the
        #: spec was neither given nor read from an env: SB3 builds buffers without it).
        self._spec_unconfirmed = goal_spec is None and env is None and not isinstance(relabeler, InstructionRelabeler)

    def _build(self, options: BufferOptions, env: VecEnv | None, terminate_on_success: bool | None,
               draw: Any, draw_kwargs: dict[str, Any] | None, demo_ratio: float) -> None:
        """The parts, each built from the options: the env's rewards, the sources (online rows and demonstrations,
        built in one place) and the mixture that samples them."""
        #: per-row infos for compute_reward (HER's ``copy_info_dict``); None when not copied.
        self.infos = np.empty((self.buffer_size, self.n_envs), dtype=object) if options.copy_info_dict else None
        #: the env and its ``compute_reward`` (GoalEnv mode), apart from the buffer so the serving never holds it.
        self._env = GoalEnvRewards(env, options.copy_info_dict, type(self).__name__)
        rng = np.random.default_rng(self.seed)
        termination = resolve_terminate_on_success(terminate_on_success, options, self.action_space, env,
                                                   self.observation_space)
        draws = draw_strategy_for(options, draw, draw_kwargs)
        #: builds every source of rows with these settings (``source.SourceBuilder``).
        self._sources = SourceBuilder(options, self.observation_space, self.action_space, self.device, draws,
                                      termination)
        online = self._sources.online(self, self.infos, self._cursor, rng)
        serving = choose_serving(options, self.device, self._env, type(self).__name__)
        #: ``sample()`` over the online rows and the demonstrations (``mixture``).
        self._mixture = Mixture(online, Demonstrations(demo_ratio, self._sources), serving, options.relabel_ratio)

    # The parts, under the names the buffer's tests and diagnostics read.
    _online = property(attrgetter("_mixture.online"))
    _serving = property(attrgetter("_mixture.serving"))
    _storage = property(attrgetter("_mixture.online.storage"))
    _index = property(attrgetter("_mixture.online.index"))
    _draws = property(attrgetter("_mixture.online.draws"))
    _view = property(attrgetter("_mixture.online.view"))
    demonstrations = property(attrgetter("_mixture.demonstrations"),
                              doc="The demonstrations: a second source, apart from the circular storage.")

    # The options, under the names SB3's HER and earlier versions of this buffer give them (read-only: the parts were
    # built from them).
    goal_env = property(attrgetter("options.goal_env"), doc="GoalEnv mode (see the module docstring).")
    relabeler = property(attrgetter("options.relabeler"))
    goal_spec = property(attrgetter("options.relabeler.goal_spec"))
    num_goals = property(attrgetter("options.num_goals"))
    goal_shape = property(attrgetter("options.goal_shape"))
    goal_step = property(attrgetter("options.goal_selection"), doc="Which step a relabeled goal comes from.")
    goal_selection = property(attrgetter("options.goal_selection"), doc="``goal_step`` under its HER-like name.")
    n_steps = property(attrgetter("options.n_steps"))
    gamma = property(attrgetter("options.gamma"))
    draws_per_episode = property(attrgetter("options.draws_per_episode"))
    max_redraws = property(attrgetter("options.max_redraws"))
    has_success_test = property(attrgetter("options.has_success_test"))
    copy_info_dict = property(attrgetter("options.copy_info_dict"))
    num_served = _mixture_counter("num_served", "Transitions served so far (settable, e.g. to 0).")
    num_served_relabeled = _mixture_counter("num_served_relabeled", "Of them, those served under a hindsight draw.")
    num_served_demos = _mixture_counter("num_served_demos", "Of them, those served from the demonstrations.")

    @property
    def relabel_ratio(self) -> float:
        """Share of sampled transitions served under a hindsight draw (settable)."""
        return self._mixture.relabel_ratio

    @relabel_ratio.setter
    def relabel_ratio(self, value: float) -> None:
        self._mixture.relabel_ratio = value

    @property
    def her_ratio(self) -> float:
        """HER's name for ``relabel_ratio``."""
        return self._mixture.relabel_ratio

    @property
    def n_sampled_goal(self) -> int | None:
        """HER's argument for ``relabel_ratio``: ``relabel_ratio / (1 - relabel_ratio)`` (None at 1)."""
        ratio = self._mixture.relabel_ratio
        return None if ratio >= 1.0 else round(ratio / (1.0 - ratio))

    @property
    def hindsight_goals(self) -> str | None:
        """How many of an instruction's goals are hindsight ones: the relabeler's ``strategy`` (None without one)."""
        return getattr(self.options.relabeler, "strategy", None)

    @property
    def goal_selection_strategy(self) -> GoalSelectionStrategy:
        """HER's :class:`~stable_baselines3.her.GoalSelectionStrategy` for ``goal_step``."""
        return KEY_TO_GOAL_STRATEGY[self.options.goal_selection]

    @property
    def rng(self) -> np.random.Generator:
        """The online rows' generator (seeded by ``seed``): every relabeled row's draw comes from it."""
        return self._mixture.online.view.rng

    @rng.setter
    def rng(self, generator: np.random.Generator) -> None:
        if not isinstance(generator, np.random.Generator):
            raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)); got {generator!r}")
        self._mixture.online.view.rng = generator

    @property
    def env(self) -> VecEnv | None:
        """The training VecEnv (HER's attribute): GoalEnv mode calls its ``compute_reward``."""
        return self._env.env

    @property
    def terminate_on_success(self) -> bool | None:
        """GoalEnv mode: True or False, or None to decide from the recorded episodes (settable)."""
        return self._sources.termination.setting if self._sources.termination is not None else None

    @terminate_on_success.setter
    def terminate_on_success(self, value: bool | None) -> None:
        assert self._sources.termination is not None
        self._sources.termination.setting = value

    @property
    def draw_strategy(self) -> DrawStrategy:
        """The draw strategy serving the online rows (read-only): the object chosen or built from ``draw``,
        so users can see which one the defaults picked and read its state (e.g. ``admitted``)."""
        return self._mixture.online.draws

    def _demonstration_buffer(self, capacity: int, seed: int) -> Any:
        """The region builder that buffers pickled by sb3-hir 0.1 name (so they unpickle); loading drops it."""
        return self._sources.demonstrations(capacity, seed)

    # SB3's write cursor, held by the storage (``storage.Cursor``): ``DictReplayBuffer.add`` advances it here.
    @property
    def pos(self) -> int:  # type: ignore[override]
        return self._cursor.pos

    @pos.setter
    def pos(self, value: int) -> None:
        if "_cursor" not in self.__dict__:  # SB3's BaseBuffer.__init__ sets it first
            self._cursor = Cursor()
        self._cursor.pos = value

    @property
    def full(self) -> bool:  # type: ignore[override]
        return self._cursor.full

    @full.setter
    def full(self, value: bool) -> None:
        if "_cursor" not in self.__dict__:
            self._cursor = Cursor()
        self._cursor.full = value

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the env (VecEnvs often cannot be pickled: ``GoalEnvRewards`` drops it)."""
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A state pickled by an earlier version is made today's first (``legacy.upgrade``); the env is given back
        by ``set_env``, as for HER."""
        if "options" not in state:
            state = upgrade(type(self).__name__, state)
        self.__dict__.update(state)
        self._serving.env_changed()  # the env given back may not be the one checked

    def set_env(self, env: VecEnv) -> None:
        """Give a loaded buffer its env back (HER's API; SB3's ``load_replay_buffer`` calls it for
        :class:`HerReplayBuffer`)."""
        if self.env is not None:
            raise ValueError("Trying to set env of already initialized environment.")
        if env is not None and not isinstance(env, VecEnv):
            raise ValueError(f"env must be a VecEnv (the training env, as SB3 passes it); got {type(env).__name__}")
        self._env.set_env(env)
        self._serving.env_changed()

    @property
    def served_relabeled_share(self) -> float:
        """Share of all transitions served so far under a hindsight draw (``relabel_ratio`` when healthy)."""
        return self.num_served_relabeled / self.num_served if self.num_served else 0.0

    @property
    def demo_ratio(self) -> float:
        """Share of each sampled batch served from the demonstrations (settable, e.g. to anneal it)."""
        return self.demonstrations.ratio

    @demo_ratio.setter
    def demo_ratio(self, value: float) -> None:
        self.demonstrations.ratio = value

    @property
    def served_demo_share(self) -> float:
        """Share of all transitions served so far from the demonstrations (``demo_ratio`` once there are some)."""
        return self.num_served_demos / self.num_served if self.num_served else 0.0

    def reset(self) -> None:
        """Empty the online storage, as SB3's ``reset``; the demonstrations stay."""
        super().reset()
        self._index.restart(self.n_envs)
        self._storage.reset()
        self._mixture.reset_counts()

    def add_demonstrations(self, demonstrations: DemonstrationSource) -> int:
        """Store whole demonstration episodes apart from the circular storage; returns how many were added.

        Online data never overwrites them; they are relabeled and served as online episodes are, as ``demo_ratio``
        of each batch. They must be observed as the training env is (the buffer's keys and shapes, the achieved
        goals included) and carry their rewards; one that does not raises ``ValueError`` and nothing is added: the
        call stores all its episodes or none. Box actions are given in the env's units and stored as SB3 stores
        online ones, scaled to [-1, 1] by the action space's bounds.

        :param demonstrations: an :class:`~sb3_hir.episodes.Episode`, an imitation ``TrajectoryWithRew`` (Dict
            observations), a DAgger round file, round directory or scratch directory (every round), or a list of
            these. DAgger episodes are stored with the actions executed, not the expert's labels.
        """
        episodes = as_episodes(demonstrations)
        if not episodes:
            warnings.warn("add_demonstrations got no episodes: nothing was added", UserWarning, stacklevel=2)
            return 0
        self.demonstrations.add(episodes, self.rng)
        if self.demo_ratio == 0.0:
            warnings.warn("demo_ratio is 0: the demonstrations are stored but not served; set demo_ratio "
                          "(replay_buffer_kwargs or buffer.demo_ratio)", UserWarning, stacklevel=2)
        return len(episodes)

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
        self._check_add(obs, next_obs, action, reward, done, infos)
        if getattr(self, "_spec_unconfirmed", False):
            self._confirm_spec(infos)
        if self._online.index.num_adds and not self._continues(obs):
            self._close_spliced_episodes(obs)
        online = self._mixture.online
        online.before_write(obs, infos)
        DictReplayBuffer.add(self, obs, next_obs, action, reward, done, infos)
        online.after_write(next_obs, done)

    def _check_add(self, obs: dict[str, np.ndarray], next_obs: dict[str, np.ndarray], action: np.ndarray,
                   reward: np.ndarray, done: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Refuse a transition that does not fit before anything is written: ``DictReplayBuffer.add`` broadcasts a
        wrong shape silently or fails after some rows and the episode index were written.

        Sizes, infos and finite rewards, not values: about 5 us of ``add()``'s 17-20 us on a MazeRunner-shaped buffer
        (1 or 8 envs), and a rejected transition leaves no trace.
        """
        n = self.n_envs
        for name, value in (("obs", obs), ("next_obs", next_obs)):
            if not isinstance(value, dict) or value.keys() != self.obs_shape.keys():
                got = list(value) if isinstance(value, dict) else type(value).__name__
                raise ValueError(f"add(): {name} must be a dict with the keys {list(self.obs_shape)}; got {got}")
            for key, shape in self.obs_shape.items():
                if _size(value[key]) != n * math.prod(shape):
                    raise ValueError(f"add(): {name}[{key!r}] must hold (n_envs, *{tuple(shape)}) = "
                                     f"{(n, *shape)} values; got shape {np.shape(value[key])}")
        if _size(action) != n * self.action_dim:
            raise ValueError(f"add(): action must hold (n_envs, {self.action_dim}) values of "
                             f"{describe(self.action_space)}; got shape {np.shape(action)}")
        for name, per_env in (("reward", reward), ("done", done)):
            if _size(per_env) != n:
                raise ValueError(f"add(): {name} must hold one value per env (n_envs={n}); got shape "
                                 f"{np.shape(per_env)}")
        if not _finite(reward):
            raise ValueError(f"add(): reward must be finite; got {np.asarray(reward).tolist()}")
        if not isinstance(infos, (list, tuple)) or len(infos) != n or not all(isinstance(i, dict) for i in infos):
            raise ValueError(f"add(): infos must be a list of n_envs={n} dicts (as a VecEnv returns them); got "
                             f"{infos!r:.80}")

    def _confirm_spec(self, infos: list[dict[str, Any]]) -> None:
        """Refuse, before anything is stored, an env whose infos name another goal spec than the buffer's default
        (``sb3_hir.contract.INFO_GOAL_SPEC``); checked at the first ``add`` only."""
        self._spec_unconfirmed = False
        declared = infos[0].get(INFO_GOAL_SPEC) if infos else None
        if declared is None or self.goal_env:
            return
        spec = resolve_goal_spec(declared)
        if repr(spec) != repr(self.goal_spec):
            self._spec_unconfirmed = True  # still refused at the next add
            raise ValueError(
                f"the env declares the goal spec {spec!r} (info[{INFO_GOAL_SPEC!r}]), but this buffer relabels by "
                f"{self.goal_spec!r}: SB3 builds replay buffers without the env, so the buffer cannot read "
                "env.goal_spec. Pass replay_buffer_kwargs=dict(goal_spec=env.goal_spec) (or use "
                "sb3_hir.HerReplayBuffer, which SB3 hands the env)")

    def _continues(self, obs: dict[str, np.ndarray]) -> bool:
        """Whether every sub-env's new observation equals the stored last next observation (the usual case).

        Compared in the stored dtype, so an env returning float64 for a float32 space is not seen as a splice.
        """
        storage = self._storage
        for key in storage.obs_keys():
            last = storage.last_next(key)  # bytes: the cheapest exact comparison of a few values
            if np.asarray(obs[key], dtype=last.dtype).tobytes() != last.tobytes():
                return False
        return True

    def _close_spliced_episodes(self, obs: dict[str, np.ndarray]) -> None:
        """Close running episodes whose new observation does not continue them (``learn()`` reset the env)."""
        prev = (self.pos - 1) % self.buffer_size
        running = self._index.running()
        if not running.any():
            return
        spliced = np.zeros(self.n_envs, dtype=bool)
        storage = self._storage
        for key in storage.obs_keys():
            last = storage.last_next(key)
            new = np.asarray(obs[key], dtype=last.dtype).reshape(self.n_envs, -1)
            spliced |= (new != last.reshape(self.n_envs, -1)).any(axis=1)
        spliced &= running
        for env_idx in np.flatnonzero(spliced):
            # Not an actual time-out, but it ends the episode without a termination, as HER's
            # truncate_last_trajectory does.
            self.dones[prev, env_idx] = 1.0
            self.timeouts[prev, env_idx] = 1.0
            storage.close(int(env_idx))
            self._online.end_episode(int(env_idx))

    def truncate_last_trajectory(self) -> None:
        """Close every running episode as truncated (HER's API, which SB3's ``load_replay_buffer`` calls).

        ``add()`` also detects a reset by itself; this warns as HER does, so code that checks HER's warning holds.
        """
        prev = (self.pos - 1) % self.buffer_size
        running = np.flatnonzero(self._index.running()).tolist()
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
            self._storage.close(env_idx)
            self._online.end_episode(env_idx)

    # -- sampling ---------------------------------------------------------------------------------
    def sample(self, batch_size: int, env: VecNormalize | None = None) -> DictReplayBufferSamples:  # type: ignore[override]
        """A batch from the two sources: the online rows first, then ``demo_ratio`` of it from the demonstrations
        (if any), both relabeled and served alike (``mixture``)."""
        return self._mixture.sample(batch_size, env)

    def _get_samples(  # type: ignore[override]
        self,
        batch_inds: np.ndarray,
        env: VecNormalize | None = None,
    ) -> DictReplayBufferSamples:
        """Rows ``batch_inds`` served as recorded (with random sub-envs), as ``DictReplayBuffer`` serves them."""
        return self._mixture.sample_recorded(batch_inds, env)

    @property
    def last_sample_info(self) -> SampleInfo | None:
        """What the last ``sample()`` served from the online storage (built on access: sampling itself does not pay
        for it); :attr:`last_demonstration_info` tells the demonstrations' rows."""
        last = self._mixture.last_online
        return None if last is None else last.info(self.num_goals, self.goal_shape, self.n_envs)

    @property
    def last_demonstration_info(self) -> SampleInfo | None:
        """What the last ``sample()`` served from the demonstrations (rows of their one-env region)."""
        last = self._mixture.last_demonstrations
        return None if last is None else last.info(self.num_goals, self.goal_shape, 1)

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, infos: Any) -> np.ndarray:
        """The env's ``compute_reward`` on a batch (HER's call: the first sub-env's method), as float32."""
        return self._env.compute_reward(achieved_goal, desired_goal, infos)

    @property
    def jit(self) -> bool:
        """Whether the draw (and the 1-step serving's rewrite, and the recorded rows' draw) runs compiled
        (``buffers.compiled``; identical rows, fewer array calls). Set it to switch the backend; a loaded buffer takes
        ``SB3_HIR_JIT`` and numba's presence where it is loaded."""
        return self._draws.compiled

    @jit.setter
    def jit(self, on: bool) -> None:
        if not isinstance(on, (bool, np.bool_)):
            raise ValueError(f"jit must be a bool; got {on!r}")
        self._draws.use_compiled(on)
        self._serving.use_compiled(on)
        self._mixture.recorded_rows.use_compiled(on)
        if self.demonstrations.source is not None:
            self.demonstrations.source.draws.use_compiled(on)

    @property
    def batched_draws(self) -> bool:
        """Whether the relabeler draws per sample (``draw_goal_steps``), not from draws stored at episode ends."""
        return not isinstance(self._draws, StoredDraws)

    @property
    def exact_index(self) -> bool:
        """Whether reaches are found through an index of exact integer goal values (else by comparing values)."""
        return self._draws.exact_values

    @property
    def single_index(self) -> bool:
        """Whether one-goal draws come without rejection (the first-reach index, or HER's draw for GoalEnvs)."""
        return isinstance(self._draws, (FirstReachDraw, HerDraw))

    @property
    def terminates_on_success(self) -> bool:
        """Whether a relabeled success is served as terminal (GoalEnv mode; see ``terminate_on_success`` and
        ``termination``)."""
        return self._sources.termination is not None and self._sources.termination.terminates

    #: GoalEnv mode: recorded episodes that ended on their own goal's first reach, and that went on after reaching it
    #: (counted by the episode index when they end).
    episodes_ending_at_goal = property(attrgetter("_index.episodes_ending_at_goal"))
    episodes_going_on_after_goal = property(attrgetter("_index.episodes_going_on_after_goal"))


def _size(value: Any) -> int:
    """``np.size(value)``; an array's own ``size`` where it is one (``add()`` checks a dozen sizes per step)."""
    return value.size if isinstance(value, np.ndarray) else int(np.size(value))


def _finite(values: Any) -> bool:
    """Whether every value is finite; one env's reward without two ufunc calls."""
    if isinstance(values, np.ndarray) and values.size == 1 and values.dtype.kind in "fiub":
        return math.isfinite(values.item())
    return bool(np.isfinite(values).all())
