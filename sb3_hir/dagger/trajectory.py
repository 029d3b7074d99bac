"""What DAgger records per episode: imitation's ``TrajectoryWithRew`` plus executed actions and who acted.

The labels (``acts``) are always the expert's; ``executed_acts`` and ``learner_mask`` say what was actually sent
to the env, which goal relabeling needs (see :func:`relabel_trajectory`). Any imitation
trajectory converts losslessly with :func:`as_dagger_trajectory`, so every reader and writer handles one type.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
from imitation.data import types

from sb3_hir.dagger.checks import RelabelLabels, check_relabel_labels
from sb3_hir.episodes import Episode
from sb3_hir.protocols import RelabelerProtocol

__all__ = [
    "TERMINAL_OBS_KEY",
    "TIMEOUT_KEY",
    "DAggerTrajectory",
    "TrajectoryRelabeling",
    "as_dagger_trajectory",
    "relabel_trajectory",
    "trajectory_fingerprint",
]

#: SB3 VecEnv info keys.
TIMEOUT_KEY = "TimeLimit.truncated"
TERMINAL_OBS_KEY = "terminal_observation"


@dataclasses.dataclass(frozen=True, eq=False)
class DAggerTrajectory(types.TrajectoryWithRew):
    """imitation's ``TrajectoryWithRew`` (``acts`` are the expert labels) plus what DAgger knows besides.

    Keeps what imitation's type drops (executed actions, who acted, truncation), so relabeling and resume see each
    episode as it happened, while imitation's BC still consumes it unchanged.

    ``terminal`` means terminated; a time-limit cut is ``truncated`` instead, and an episode still running
    when its round ended (reported, not completed) has ``complete=False`` and neither flag.
    """

    truncated: bool = False
    complete: bool = True
    #: Actions actually sent to the env (expert's or learner's), shape of ``acts``.
    executed_acts: np.ndarray | None = None
    #: bool (T,): True where the learner's action was executed.
    learner_mask: np.ndarray | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("executed_acts", "learner_mask"):
            value = getattr(self, name)
            if value is not None and len(value) != len(self.acts):
                raise ValueError(f"{name} must have one entry per action ({len(self.acts)}), got {len(value)}")


def as_dagger_trajectory(traj: types.Trajectory) -> DAggerTrajectory:
    """Any imitation trajectory as a :class:`DAggerTrajectory`; a plain ``Trajectory`` gets zero rewards.

    imitation's ``SimpleDAggerTrainer`` accepts plain ``Trajectory`` demonstrations (BC never reads rewards), so
    ours does too; the executed actions of a demonstration are its labels.
    """
    if isinstance(traj, DAggerTrajectory):
        return traj
    if not isinstance(traj, types.Trajectory):
        raise ValueError(f"trajectories must be imitation Trajectory objects, got {type(traj).__name__}")
    rews = traj.rews if isinstance(traj, types.TrajectoryWithRew) else np.zeros(len(traj.acts), dtype=np.float32)
    timeout = bool(traj.infos is not None and len(traj.infos) and traj.infos[-1].get(TIMEOUT_KEY, False))
    return DAggerTrajectory(
        obs=traj.obs,
        acts=traj.acts,
        infos=traj.infos,
        terminal=bool(traj.terminal) and not timeout,
        rews=rews,
        truncated=timeout,
        complete=bool(traj.terminal) or timeout,
        executed_acts=traj.acts,
        learner_mask=np.zeros(len(traj.acts), dtype=bool),
    )


def trajectory_fingerprint(traj: types.Trajectory) -> str:
    """A content hash of observations and labels, to check that an episode is stored exactly once."""
    digest = hashlib.sha1()
    obs = traj.obs
    parts = [obs.get(k) for k in sorted(obs.keys())] if isinstance(obs, types.DictObs) else [obs]
    for part in [*parts, traj.acts]:
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()


class TrajectoryRelabeling:
    """A relabeler and where relabeled episodes take their labels from: :func:`relabel_trajectory`, configured once.

    Whoever relabels many episodes (the collector) builds one from its ``relabeler`` and ``relabel_labels``, so
    ``relabel_labels`` is checked here, once, when that owner is built: a typo fails before any step, and no episode
    checks it again.

    :param relabeler: a resolved relabeler; ``None`` relabels nothing (``labels`` is still checked, so a typo is
        never silent).
    :param labels: ``"auto"``, ``"expert"`` or ``"executed"``, as in :func:`relabel_trajectory`.
    :param argument: the argument an error names.
    """

    def __init__(
        self, relabeler: RelabelerProtocol | None, labels: RelabelLabels = "auto", argument: str = "relabel_labels"
    ) -> None:
        self.relabeler = relabeler
        self.labels: RelabelLabels = check_relabel_labels(labels, argument)

    def __call__(self, traj: types.TrajectoryWithRew, rng: np.random.Generator) -> types.TrajectoryWithRew:
        relabeler, labels = self.relabeler, self.labels
        if relabeler is None:
            return traj
        episode = Episode.from_trajectory(traj)
        goals_key = getattr(getattr(relabeler, "goal_spec", None), "goals_key", "goals")
        goals = relabeler.relabel_goals(episode, rng)
        executed = getattr(traj, "executed_acts", None)
        if goals is None or (labels == "auto" and np.array_equal(goals, episode.observations[goals_key][0])):
            if labels != "executed" or executed is None:
                return traj
            return dataclasses.replace(traj, acts=executed)
        if labels != "expert" and executed is not None:
            episode = dataclasses.replace(episode, actions=executed)
        return relabeler.replay(episode, goals).to_trajectory()


def relabel_trajectory(
    traj: types.TrajectoryWithRew,
    relabeler: RelabelerProtocol,
    rng: np.random.Generator,
    labels: RelabelLabels = "auto",
) -> types.TrajectoryWithRew:
    """Relabel one Dict-observation trajectory's instruction for goal-conditioned BC (DAgger's demos).

    The expert's labels point at the *original* instruction, so once the instruction changes they no longer
    fit the observations. ``labels="auto"`` therefore keeps expert labels for episodes whose instruction is
    unchanged and uses the executed actions (``traj.executed_acts``, which did reach the new goals, as in GCSL)
    for relabeled ones; ``"expert"`` / ``"executed"`` force one source. For many episodes, build a
    :class:`~sb3_hir.dagger.TrajectoryRelabeling` once.
    """
    return TrajectoryRelabeling(relabeler, labels, argument="labels")(traj, rng)
