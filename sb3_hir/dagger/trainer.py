"""DAgger trainers with imitation's API, whose update step is imitation's ``bc.BC``, unchanged.

The round files (``scratch_dir/demos/round-NNN/``) and a data-only checkpoint (:mod:`.checkpoint`) are the whole
state, so a killed run continues in another process with :func:`reconstruct_trainer`. A new trainer never
writes into a directory that holds an earlier run unless told to continue it (``resume=True``), and a resumed
round never stores an episode twice (:attr:`DAggerCollector.skipped_duplicates`). The check is made where the
trainer would first use the directory (:meth:`DAggerTrainer.create_trajectory_collector`,
:meth:`~DAggerTrainer.extend_and_update`, :meth:`~DAggerTrainer.save_trainer`), not when it is built: building
writes nothing, so a trainer built beside a run (imitation's tests build one to compare fresh weights) is harmless.
"""

from __future__ import annotations

import logging
import os
import pathlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch as th
from imitation.algorithms import base as algo_base
from imitation.algorithms import bc
from imitation.algorithms import dagger as imitation_dagger
from imitation.data import rollout, types
from imitation.util import logger as imit_logger
from stable_baselines3.common import utils as sb3_utils
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import VecEnv

from sb3_hir import resolvers
from sb3_hir.dagger import checkpoint as ckpt
from sb3_hir.dagger.checks import (
    RelabelLabels,
    UnfinishedPolicy,
    check_beta,
    check_episodes_per_file,
    check_policy_spaces,
    check_rng,
    check_unfinished,
)
from sb3_hir.dagger.collector import DAggerCollector
from sb3_hir.dagger.policy_runner import PolicyRunner
from sb3_hir.dagger.storage import (
    file_index,
    load_round_dir,
    new_round_file,
    next_file_index,
    round_files,
    save_trajectories,
    stored_fingerprints,
)
from sb3_hir.dagger.trajectory import (
    DAggerTrajectory,
    TrajectoryRelabeling,
    as_dagger_trajectory,
    trajectory_fingerprint,
)

__all__ = ["DAggerTrainer", "NeedsDemosError", "SimpleDAggerTrainer", "reconstruct_trainer"]

logger = logging.getLogger(__name__)


class NeedsDemosError(imitation_dagger.NeedsDemosException, ValueError):
    """Training was asked for before the current round has demonstrations."""


class _Batches:
    """Re-iterable shuffled minibatches of flattened transitions for ``bc.BC`` (one pass = one epoch).

    imitation's default path wraps ``Transitions`` in a torch DataLoader that builds every sample as its own
    dict (and DictObs) and collates them again; slicing whole batches with one fancy index gives BC the same
    ``{"obs", "acts"}`` batches at a fraction of the cost.
    """

    def __init__(self, transitions: types.TransitionsMinimal, batch_size: int, rng: np.random.Generator) -> None:
        self.obs = transitions.obs
        self.acts = transitions.acts
        self.batch_size = batch_size
        self.rng = rng

    def __len__(self) -> int:
        return len(self.acts) // self.batch_size

    def __iter__(self) -> Iterator[types.TransitionMapping]:
        perm = self.rng.permutation(len(self.acts))
        for begin in range(0, len(perm) - self.batch_size + 1, self.batch_size):
            idx = perm[begin : begin + self.batch_size]
            yield {"obs": self.obs[idx], "acts": self.acts[idx]}


def _has_run(scratch_dir: pathlib.Path) -> bool:
    demos = scratch_dir / "demos"
    return ckpt.has_checkpoint(scratch_dir) or (
        demos.is_dir() and any(round_files(d) for d in demos.iterdir())
    )


def _last_round_with_files(scratch_dir: pathlib.Path) -> int:
    demos = scratch_dir / "demos"
    rounds = [int(d.name[6:]) for d in demos.glob("round-[0-9]*") if d.name[6:].isdigit() and round_files(d)]
    return max(rounds, default=0)


class DAggerTrainer(algo_base.BaseImitationAlgorithm):
    """DAgger in rounds, with imitation's API; every round's data lives in ``scratch_dir/demos/round-NNN/``.

    Keeps imitation's API, so scripts switch by their import line, while adding plugin names for experts and beta
    schedules, resume across processes and checkpoints that load without unpickling.

    A round: :meth:`create_trajectory_collector` (once or several times), step it with expert actions,
    ``collector.finish_round()``, then :meth:`extend_and_update` (BC on all rounds so far) and
    :meth:`save_trainer`. Because the round files and the checkpoint are the whole state, another process
    (e.g. a human labeller tomorrow) continues with :func:`reconstruct_trainer`.

    :param beta_schedule: a ``beta_schedule`` plugin name (``"linear"``, ``"exponential"``, ...) or a callable
        ``round -> beta``; None is imitation's default, linear over 15 rounds.
    :param beta_schedule_kwargs: arguments of the named schedule.
    :param deterministic_learner: the learner executes its most likely action; by default it samples, as in
        imitation.
    :param episodes_per_file: see :class:`DAggerCollector` (default 1: each episode on disk as it ends).
    :param fsync: flush round files to the disk as they are written (see :class:`DAggerCollector`).
    :param relabeler: relabel the loaded episodes for goal-conditioned BC (plugin name or object).
    :param skip_corrupt: load the readable round files and warn about corrupt ones instead of raising.
    :param resume: continue the run already in ``scratch_dir`` (e.g. one killed before its first checkpoint):
        its round files are kept and count, and its episodes are not stored again. Without it, a
        ``scratch_dir`` that holds a run is refused at the trainer's first collection, update or save (never at
        construction), so two runs never mix by accident.
    """

    DEFAULT_N_EPOCHS: int = 4

    def __init__(
        self,
        *,
        venv: VecEnv,
        scratch_dir: str | os.PathLike[str],
        rng: np.random.Generator,
        beta_schedule: str | Callable[[int], float] | None = None,
        bc_trainer: bc.BC,
        custom_logger: imit_logger.HierarchicalLogger | None = None,
        beta_schedule_kwargs: Mapping[str, Any] | None = None,
        deterministic_learner: bool = False,
        episodes_per_file: int = 1,
        relabeler: Any = None,
        relabeler_kwargs: Mapping[str, Any] | None = None,
        relabel_labels: RelabelLabels = "auto",
        skip_corrupt: bool = False,
        resume: bool = False,
        fsync: bool = False,
    ) -> None:
        super().__init__(custom_logger=custom_logger)
        self.rng = check_rng(rng)
        if not isinstance(bc_trainer, bc.BC):
            raise ValueError(f"bc_trainer must be an imitation.algorithms.bc.BC; got {type(bc_trainer).__name__}")
        self.venv = venv
        self.scratch_dir = pathlib.Path(scratch_dir)
        #: True once this trainer owns ``scratch_dir``: resumed, or checked free at its first write.
        self._claimed = bool(resume)
        if beta_schedule is None:
            beta_schedule = "linear"  # imitation's default: linear over 15 rounds
        if not isinstance(beta_schedule, str) and beta_schedule_kwargs:
            raise ValueError("beta_schedule_kwargs is only used with a beta_schedule plugin name")
        self.beta_schedule = resolvers.resolve_beta_schedule(beta_schedule, **dict(beta_schedule_kwargs or {}))
        self._beta_spec = ckpt.beta_schedule_spec(
            self.beta_schedule, beta_schedule if isinstance(beta_schedule, str) else None, beta_schedule_kwargs
        )
        self._relabeler_spec = ckpt.named_spec(relabeler, relabeler_kwargs) if isinstance(relabeler, str) else None
        self.relabeler = None if relabeler is None else resolvers.resolve_relabeler(
            relabeler, venv.observation_space, **dict(relabeler_kwargs or {})
        )
        self._relabeling = TrajectoryRelabeling(self.relabeler, relabel_labels)
        self.relabel_labels = self._relabeling.labels
        self.deterministic_learner = bool(deterministic_learner)
        self.episodes_per_file = check_episodes_per_file(episodes_per_file)
        self.skip_corrupt = bool(skip_corrupt)
        self.fsync = bool(fsync)
        self.round_num = _last_round_with_files(self.scratch_dir) if resume else 0
        self._last_loaded_round = -1
        self._all_demos: list[types.TrajectoryWithRew] = []
        #: This round's collectors: all of them are finished (and so count) before BC.
        self._collectors: list[DAggerCollector] = []
        self._stored_round = -1
        self._stored: set[str] = set()
        sb3_utils.check_for_correct_spaces(venv, bc_trainer.observation_space, bc_trainer.action_space)
        self.bc_trainer = bc_trainer
        self.bc_trainer.logger = self.logger

    # -- imitation's accessors --------------------------------------------------------------------------------
    @property
    def logger(self) -> imit_logger.HierarchicalLogger:
        return super().logger

    @logger.setter
    def logger(self, value: imit_logger.HierarchicalLogger) -> None:
        self._logger = value
        self.bc_trainer.logger = value

    @property
    def policy(self) -> BasePolicy:
        return self.bc_trainer.policy

    @property
    def batch_size(self) -> int:
        return self.bc_trainer.batch_size

    def _demo_dir_path_for_round(self, round_num: int | None = None) -> pathlib.Path:
        return self.scratch_dir / "demos" / f"round-{self.round_num if round_num is None else round_num:03d}"

    def beta_for_round(self, round_num: int | None = None) -> float:
        """The schedule's beta for a round, checked to be a probability."""
        round_num = self.round_num if round_num is None else round_num
        return check_beta(self.beta_schedule(round_num), f"beta_schedule({round_num}) (beta of round {round_num})")

    def _claim_scratch_dir(self) -> None:
        """Refuse a ``scratch_dir`` holding another run, where this trainer would first write to or train from it.

        Called by collection, :meth:`extend_and_update` and :meth:`save_trainer` rather than by the constructor,
        which writes nothing and so never mixes two runs.
        """
        if self._claimed:
            return
        if _has_run(self.scratch_dir):
            raise ValueError(
                f"scratch_dir {str(self.scratch_dir)!r} already holds a DAgger run (round files or a checkpoint) "
                "that this trainer did not write; continue it with reconstruct_trainer(scratch_dir, venv) or "
                "resume=True, or choose an empty scratch_dir (a second run there would train on both runs' demos)"
            )
        self._claimed = True
        self._on_claim()

    def _on_claim(self) -> None:
        """Hook: the first write into ``scratch_dir`` is allowed (a subclass stores what it held back)."""

    # -- rounds -----------------------------------------------------------------------------------------------
    def _stored_fingerprints(self) -> set[str]:
        """Episodes an earlier process stored in this round (read once per round; empty for a fresh round)."""
        if self._stored_round != self.round_num:
            self._stored = stored_fingerprints(self._demo_dir_path_for_round(), skip_corrupt=True)
            self._stored_round = self.round_num
        return self._stored

    def create_trajectory_collector(self) -> DAggerCollector:
        """A collector for the current round: its beta, the current learner, this round's directory.

        Several collectors of one round may run side by side; :meth:`extend_and_update` finishes them all.
        Raises ``ValueError`` when ``scratch_dir`` holds another run (see :meth:`_claim_scratch_dir`).
        """
        self._claim_scratch_dir()
        collector = DAggerCollector(
            self.venv,
            self.bc_trainer.policy,
            self.beta_for_round(),
            self._demo_dir_path_for_round(),
            self.rng,
            deterministic_learner=self.deterministic_learner,
            episodes_per_file=self.episodes_per_file,
            skip_fingerprints=self._stored_fingerprints(),
            fsync=self.fsync,
        )
        self._collectors.append(collector)
        return collector

    def load_demos(self, rounds: Sequence[int] | None = None) -> list[DAggerTrajectory]:
        """Raw episodes of the given rounds (default: every round up to the current one), from the files."""
        rounds = range(self.round_num + 1) if rounds is None else rounds
        out: list[DAggerTrajectory] = []
        for r in rounds:
            out.extend(load_round_dir(self._demo_dir_path_for_round(r), skip_corrupt=self.skip_corrupt))
        return out

    def _try_load_demos(self) -> None:
        demo_dir = self._demo_dir_path_for_round()
        if not round_files(demo_dir):
            raise NeedsDemosError(
                f"no demonstrations for round {self.round_num} in {str(demo_dir)!r}: collect a round first "
                "(collector = trainer.create_trajectory_collector(); obs = collector.reset(); step it with expert "
                "actions; collector.finish_round(...)), then call extend_and_update()"
            )
        if self._last_loaded_round >= self.round_num:
            return
        new = self.load_demos(range(self._last_loaded_round + 1, self.round_num + 1))
        new = [self._relabeling(t, self.rng) for t in new]
        if not new and not self._all_demos:
            raise NeedsDemosError(
                f"every round file up to round {self.round_num} was skipped as corrupt; collect a round first"
            )
        self._all_demos.extend(new)
        transitions = rollout.flatten_trajectories(self._all_demos)
        if len(transitions) < self.batch_size:
            raise ValueError(  # imitation's sentence first, for code that matches it
                f"Not enough transitions to form a single batch: self.batch_size={self.batch_size} > "
                f"len(transitions)={len(transitions)}; collect more steps this round (rollout_round_min_timesteps) "
                "or use a smaller BC batch_size"
            )
        self.bc_trainer.set_demonstrations(_Batches(transitions, self.bc_trainer.minibatch_size, self.rng))
        self._last_loaded_round = self.round_num
        logger.info("loaded %d episodes (%d transitions) for round %d", len(self._all_demos), len(transitions),
                    self.round_num)

    def extend_and_update(self, bc_train_kwargs: Mapping[str, Any] | None = None) -> int:
        """Load the new rounds' episodes, train BC on everything so far, advance the round; returns it.

        Every collector of this round that was not finished is finished with ``policy="report"`` (warning) first.
        Keys as in imitation: ``log_rollouts_venv`` defaults to the venv; ``n_epochs`` to
        :attr:`DEFAULT_N_EPOCHS` unless ``n_epochs``/``n_batches`` is given.
        """
        self._claim_scratch_dir()
        kwargs = dict(bc_train_kwargs or {})
        kwargs.setdefault("log_rollouts_venv", self.venv)
        if "n_epochs" not in kwargs and "n_batches" not in kwargs:
            kwargs["n_epochs"] = self.DEFAULT_N_EPOCHS
        for collector in self._collectors:
            if collector.has_unsaved:
                collector.finish_round(policy="report")
        self._try_load_demos()
        self.bc_trainer.train(**kwargs)
        self.round_num += 1
        self._collectors = []
        return self.round_num

    # -- checkpoints (the format: :mod:`.checkpoint`) ---------------------------------------------------------
    def save_trainer(self) -> tuple[pathlib.Path, pathlib.Path]:
        """Snapshot: ``weights-NNN.pt`` (tensors only), then ``checkpoint-NNN.json`` and ``checkpoint-latest.json``,
        then ``policy-latest.pt`` in imitation's format (for ``imitation.algorithms.bc.reconstruct_policy``).

        The JSON is written after the weights, so a crash leaves the previous consistent checkpoint in place.
        Returns ``(checkpoint_path, policy_path)`` as imitation does.
        """
        self._claim_scratch_dir()
        state = ckpt.trainer_state(
            type(self).__name__,
            self.round_num,
            self.rng,
            self.venv,
            self.bc_trainer,
            beta_schedule=self._beta_spec,
            relabeler=self._relabeler_spec,
            relabeler_object=self.relabeler is not None and self._relabeler_spec is None,
            relabel_labels=self.relabel_labels,
            deterministic_learner=self.deterministic_learner,
            episodes_per_file=self.episodes_per_file,
            fsync=self.fsync,
        )
        return ckpt.write_checkpoint(self.scratch_dir, state, self.bc_trainer, self._extend_state)

    def _extend_state(self, state: dict[str, Any]) -> None:
        """Hook for subclasses to add their own checkpoint entries (plain JSON)."""

    @classmethod
    def reconstruct_trainer(
        cls,
        scratch_dir: str | os.PathLike[str],
        venv: VecEnv,
        custom_logger: imit_logger.HierarchicalLogger | None = None,
        device: th.device | str = "auto",
        **overrides: Any,
    ) -> DAggerTrainer:
        """:func:`reconstruct_trainer` as this class (the way to reload a subclass of ours)."""
        scratch_dir = pathlib.Path(scratch_dir)
        return cls._reconstruct(ckpt.Restore(ckpt.read_checkpoint(scratch_dir), scratch_dir, venv, custom_logger,
                                             sb3_utils.get_device(device), dict(overrides)))

    @classmethod
    def _reconstruct(cls, restore: ckpt.Restore) -> DAggerTrainer:
        kwargs = ckpt.trainer_kwargs(restore)
        kwargs = {**kwargs, **cls._reconstruct_kwargs(restore), **restore.overrides, "resume": True}
        trainer = cls(**kwargs)
        trainer.round_num = int(restore.state["round_num"])
        return trainer

    @classmethod
    def _reconstruct_kwargs(cls, restore: ckpt.Restore) -> dict[str, Any]:
        """Hook for subclasses: their own constructor arguments from the checkpoint (``restore.overrides`` win
        over them)."""
        return {}


def reconstruct_trainer(
    scratch_dir: str | os.PathLike[str],
    venv: VecEnv,
    custom_logger: imit_logger.HierarchicalLogger | None = None,
    device: th.device | str = "auto",
    **overrides: Any,
) -> DAggerTrainer:
    """Rebuild the trainer of ``scratch_dir/checkpoint-latest.json`` on ``venv`` (in any process).

    Everything loads with ``torch.load(weights_only=True)``, ``np.load(allow_pickle=False)`` and ``json``; no code
    named in the files is imported (see :mod:`sb3_hir.dagger.checkpoint`). What could not be stored as data is
    passed again as ``overrides``: ``bc_trainer=`` (or ``policy_factory=``) for a policy class that is not
    allow-listed, ``beta_schedule=`` for a lambda, ``relabeler=``, ``expert_policy=``; ``skip_corrupt=True``
    loads the readable round files of a damaged directory. Episodes of the interrupted round stay and are not
    stored twice. Subclasses of the trainers reload with ``TheirClass.reconstruct_trainer(...)``.
    """
    scratch_dir = pathlib.Path(scratch_dir)
    state = ckpt.read_checkpoint(scratch_dir)
    classes: dict[str, type[DAggerTrainer]] = {c.__name__: c for c in (DAggerTrainer, SimpleDAggerTrainer)}
    cls = classes.get(state.get("trainer"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(
            f"checkpoint names trainer {state.get('trainer')!r}; this function rebuilds DAggerTrainer and "
            "SimpleDAggerTrainer (a subclass reloads with YourTrainer.reconstruct_trainer(scratch_dir, venv))"
        )
    return cls._reconstruct(ckpt.Restore(state, scratch_dir, venv, custom_logger, sb3_utils.get_device(device),
                                         dict(overrides)))


class SimpleDAggerTrainer(DAggerTrainer):
    """DAgger with a synthetic expert: :meth:`train` runs the rounds itself.

    For experts that can be queried at any state (scripted, planners, trained policies), where DAgger needs no human in
    the loop; it keeps imitation's class of the same name, so scripts switch by their import line.

    :param expert_policy: an SB3 policy or algorithm, a ``predict``-er, a ``callable(obs) -> actions``, or an
        ``"expert"`` plugin name (e.g. ``"shortest-path"``, built on ``venv``).
    :param expert_kwargs: arguments of the named expert plugin.
    :param expert_trajs: initial demonstrations (imitation ``Trajectory`` or ``TrajectoryWithRew``), written to
        round 0 (once: a resumed run does not store them again).
    :param unfinished: what :meth:`train` does with episodes running when a round's quota is met
        (see :meth:`DAggerCollector.finish_round`).
    """

    def __init__(
        self,
        *,
        venv: VecEnv,
        scratch_dir: str | os.PathLike[str],
        expert_policy: Any,
        rng: np.random.Generator,
        expert_trajs: Sequence[types.Trajectory] | None = None,
        expert_kwargs: Mapping[str, Any] | None = None,
        unfinished: UnfinishedPolicy = "complete",
        **dagger_trainer_kwargs: Any,
    ) -> None:
        super().__init__(venv=venv, scratch_dir=scratch_dir, rng=rng, **dagger_trainer_kwargs)
        self._expert_spec: dict[str, Any] | None = None
        if isinstance(expert_policy, str):
            self._expert_spec = ckpt.named_spec(expert_policy, expert_kwargs)
            expert_policy = resolvers.resolve_expert(expert_policy, venv=venv, **dict(expert_kwargs or {}))
        if isinstance(expert_policy, BaseAlgorithm):
            expert_policy = expert_policy.policy
        check_policy_spaces(expert_policy, venv, "expert_policy")
        if not (callable(getattr(expert_policy, "predict", None)) or callable(expert_policy)):
            raise ValueError(
                "expert_policy must be an SB3 policy/algorithm, an object with predict(), a callable(obs) -> "
                f"actions or an expert plugin name; got {type(expert_policy).__name__}"
            )
        self.unfinished = check_unfinished(unfinished)
        self.expert_policy = expert_policy
        #: Initial demonstrations not written yet: held back while ``scratch_dir`` holds another run.
        self._pending_expert_trajs = [as_dagger_trajectory(t) for t in expert_trajs or ()]
        if self._claimed:  # resumed: round 0 is ours already
            self._store_expert_trajs()
        elif self._pending_expert_trajs and not _has_run(self.scratch_dir):
            self._claim_scratch_dir()  # as imitation: written to round 0 at once

    def _on_claim(self) -> None:
        self._store_expert_trajs()

    def _store_expert_trajs(self) -> None:
        """One file per initial demonstration, named as imitation names them (``initial_data-dagger-demo-*``);
        those round 0 holds already (a resumed run) are not stored again."""
        if not self._pending_expert_trajs:
            return
        round0 = self._demo_dir_path_for_round(0)
        stored = stored_fingerprints(round0, skip_corrupt=True)
        index = next_file_index(round0)
        for traj in self._pending_expert_trajs:
            if trajectory_fingerprint(traj) in stored:
                continue
            path = new_round_file(round0, self.rng, "initial_data", index)
            save_trajectories(path, [traj], meta={"source": "expert_trajs"}, fsync=self.fsync)
            index = file_index(path) + 1
        self._pending_expert_trajs = []

    def _extend_state(self, state: dict[str, Any]) -> None:
        state.update(
            ckpt.simple_trainer_state(self.unfinished, self._expert_spec, self.expert_policy, self.scratch_dir)
        )

    @classmethod
    def _reconstruct_kwargs(cls, restore: ckpt.Restore) -> dict[str, Any]:
        return ckpt.simple_trainer_kwargs(restore)

    def collect_round(
        self,
        collector: DAggerCollector | None = None,
        *,
        min_episodes: int = 3,
        min_timesteps: int = 500,
    ) -> list[types.TrajectoryWithRew]:
        """Drive a collector with the expert until both quotas of finished episodes are met; finish the round."""
        collector = collector or self.create_trajectory_collector()
        expert = PolicyRunner(self.expert_policy, collector.num_envs, deterministic=True)
        obs = collector.reset()
        while collector.round_episodes < min_episodes or collector.round_timesteps < min_timesteps:
            obs, _, dones, _ = collector.step(expert(obs))
            expert.observe_dones(dones)
        trajs = collector.finish_round(policy=self.unfinished, expert=expert)
        if collector.skipped_duplicates:
            warnings.warn(
                f"{collector.skipped_duplicates} episode(s) of round {self.round_num} had been stored by the "
                "interrupted run already and were not stored again; seed the venv afresh to collect new ones",
                RuntimeWarning,
                stacklevel=2,
            )
        return trajs

    def train(
        self,
        total_timesteps: int,
        *,
        rollout_round_min_episodes: int = 3,
        rollout_round_min_timesteps: int = 500,
        bc_train_kwargs: Mapping[str, Any] | None = None,
        save_every_round: bool = True,
        on_round_end: Callable[[int, dict[str, Any]], bool | None] | None = None,
    ) -> None:
        """Rounds of collection and BC until ``total_timesteps`` labelled steps were collected in this call.

        :param save_every_round: checkpoint after each round, so that a killed run resumes with
            :func:`reconstruct_trainer` (imitation's ``train`` never saves).
        :param on_round_end: called after each round's BC update and before its checkpoint (so what it writes is
            never behind the checkpoint) with the round number and ``beta``, ``episodes``, ``timesteps`` (this
            round's) and ``total_timesteps`` (this call's); for progress reports. Returning ``False`` stops after
            this round, as an SB3 callback does.
        """
        total = 0
        while total < total_timesteps:
            round_num, beta = self.round_num, self.beta_for_round()
            trajs = self.collect_round(
                min_episodes=rollout_round_min_episodes,
                min_timesteps=max(rollout_round_min_timesteps, self.batch_size),
            )
            steps = sum(len(t) for t in trajs)
            total += steps
            for traj in trajs:
                self._logger.record_mean("dagger/mean_episode_reward", float(np.sum(traj.rews)))
            self._logger.record("dagger/total_timesteps", total)
            self._logger.record("dagger/round_num", self.round_num)
            self._logger.record("dagger/round_episode_count", len(trajs))
            self._logger.record("dagger/round_timestep_count", steps)
            self.extend_and_update(bc_train_kwargs)
            stats = {"beta": beta, "episodes": len(trajs), "timesteps": steps, "total_timesteps": total}
            go_on = on_round_end is None or on_round_end(round_num, stats) is not False
            if save_every_round:
                self.save_trainer()
            if not go_on:
                break
