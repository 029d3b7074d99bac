"""The moonshot: AMAGO's MazeRunner (11x11, k = 3, time limit 250) from sparse reward in one hour on 2 CPU cores.

No expert: SB3's DQN, unchanged, learns from the env's own reward with sb3-hir's components only:
:class:`~sb3_hir.history.HistoryWrapper` (goal-free memory in the observation),
:class:`~sb3_hir.extractors.HistoryExtractor` (encodes it) and
:class:`~sb3_hir.buffers.HindsightInstructionReplayBuffer` (a fresh hindsight instruction per sampled
transition). Training stops after ``--minutes`` of wall time, evaluations included; every ``--eval-minutes`` the
deterministic policy plays ``--eval-episodes`` held-out episodes. The curve (success rate and goals reached against
wall time and env steps) goes to ``--out`` as JSON and PNG, and each evaluation is printed as it happens.

Target (issue 12): >= 50 % full-instruction success within the hour.

The learner lives in :mod:`research.moonshot` (``moonshot_seeds.py`` and ``bench_controls.py`` run it
too).

Usage: ``python benchmarks/moonshot_mazerunner.py [--minutes 60] [--history 16] [--out moonshot]``;
``--replot DIR`` redraws ``DIR/curve.png`` from ``DIR/curve.json`` without training.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from research.moonshot import make_parser, save, train
from research.relaxed import RelaxedReachBuffer


def main() -> None:
    parser = make_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--replot", metavar="DIR", help="redraw DIR/curve.png from DIR/curve.json and exit")
    args = parser.parse_args()
    if args.replot:
        data = json.loads((Path(args.replot) / "curve.json").read_text())
        save(data["curve"], argparse.Namespace(**data["config"]), Path(args.replot))
        return
    clock = train(args, Path(args.out), RelaxedReachBuffer if args.relaxed_draw else None)
    best = max(clock.curve, key=lambda p: p["success_rate"])
    print(f"{'PASS' if best['success_rate'] >= 0.5 else 'MISS'}  >= 50 % success within {args.minutes:.0f} min: "
          f"best {best['success_rate']:.3f} at {best['minutes']:.1f} min ({best['timesteps']} steps); last "
          f"{clock.curve[-1]['success_rate']:.3f}")


if __name__ == "__main__":
    main()
