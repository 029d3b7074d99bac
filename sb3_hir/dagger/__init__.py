"""DAgger as a VecEnv wrapper and trainers with imitation's API, whose update step is imitation's ``bc.BC``.

One concept per module: :mod:`.trajectory` (what an episode records), :mod:`.storage` (round files),
:mod:`.policy_runner` (policies with per-sub-env memory), :mod:`.collector` (the VecEnv wrapper),
:mod:`.checkpoint` (data-only checkpoints), :mod:`.trainer` (rounds, BC, resume) and :mod:`.checks` (argument
checks). Every public name of ``imitation.algorithms.dagger`` is importable from here, so switching an imitation
script is a change of its import line.
"""

from sb3_hir.extras import require

require("imitation", "sb3_hir.dagger")  # one line naming the 'dagger' extra, not a traceback from deep inside

from imitation.algorithms.dagger import (  # noqa: E402
    BetaSchedule,
    ExponentialBetaSchedule,
    LinearBetaSchedule,
    NeedsDemosException,
)

from sb3_hir.dagger.checkpoint import ALLOWED_CLASSES, CHECKPOINT_FORMAT, reconstruct_policy  # noqa: E402
from sb3_hir.dagger.collector import DAggerCollector  # noqa: E402
from sb3_hir.dagger.policy_runner import PolicyRunner  # noqa: E402
from sb3_hir.dagger.storage import (  # noqa: E402
    ROUND_FILE_FORMAT,
    CorruptRoundFileError,
    load_round_dir,
    load_trajectories,
    round_files,
    save_trajectories,
)
from sb3_hir.dagger.trainer import (  # noqa: E402
    DAggerTrainer,
    NeedsDemosError,
    SimpleDAggerTrainer,
    reconstruct_trainer,
)
from sb3_hir.dagger.trajectory import (  # noqa: E402
    DAggerTrajectory,
    TrajectoryRelabeling,
    relabel_trajectory,
    trajectory_fingerprint,
)

#: imitation's name for the collector: ours takes the same arguments (``venv, get_robot_acts, beta, save_dir,
#: rng``) and is driven the same way.
InteractiveTrajectoryCollector = DAggerCollector

__all__ = [
    "ALLOWED_CLASSES",
    "CHECKPOINT_FORMAT",
    "ROUND_FILE_FORMAT",
    "BetaSchedule",
    "CorruptRoundFileError",
    "DAggerCollector",
    "DAggerTrainer",
    "DAggerTrajectory",
    "ExponentialBetaSchedule",
    "InteractiveTrajectoryCollector",
    "LinearBetaSchedule",
    "NeedsDemosError",
    "NeedsDemosException",
    "PolicyRunner",
    "SimpleDAggerTrainer",
    "TrajectoryRelabeling",
    "load_round_dir",
    "load_trajectories",
    "reconstruct_policy",
    "reconstruct_trainer",
    "relabel_trajectory",
    "round_files",
    "save_trajectories",
    "trajectory_fingerprint",
]
