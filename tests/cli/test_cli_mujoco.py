"""``sb3-hir train`` on a MuJoCo env without a display: the run keeps its results and draws its picture or warns once.

In both profiles (unlike the rest of the command line's tests): MuJoCo's rendering goes through the profile's
gymnasium and gymnasium-robotics.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_a_headless_mujoco_run_keeps_its_results_and_draws_or_warns_once(tmp_path):
    pytest.importorskip("sb3_hir_robotics")
    hidden = ("DISPLAY", "MUJOCO_GL", "PYOPENGL_PLATFORM", "WAYLAND_DISPLAY")
    env = {key: value for key, value in os.environ.items() if key not in hidden} | {"OMP_NUM_THREADS": "1"}
    out = tmp_path / "run"
    argv = ["train", "--env", "pointmaze-instruction", "--env-kwarg", "max_episode_steps=15", "--env-kwarg",
            "num_goals=1", "--algo", "sac", "--relabel", "some", "--timesteps", "60", "--n-envs", "1",
            "--eval-episodes", "1", "--eval-freq", "60", "--no-progress", "--out", str(out)]
    # a real interpreter: MuJoCo's GL backend is chosen from the environment when it is imported
    proc = subprocess.run([sys.executable, "-m", "sb3_hir.cli", *argv], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "results.md").is_file() and (out / "sac-some" / "model.zip").is_file()
    warnings_ = [line for line in proc.stderr.splitlines() if line.startswith("warning: no episode picture")]
    assert (out / "sac-some" / "episode.png").is_file() or len(warnings_) == 1
    assert "Traceback" not in proc.stderr
