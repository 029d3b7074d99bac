"""``forked.run`` answers as ``subprocess.run`` does for the commands the suite forks: the same exit code, output,
``sys.argv``, working directory, environment, ``sys.path`` and ``__main__``, judged against a real interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import forked
import pytest

PROBE = textwrap.dedent("""
    import atexit, json, os, sys
    import multiprocessing as mp
    atexit.register(lambda: print("atexit ran"))
    print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "flag": os.environ.get("SB3_HIR_PROBE"),
                      "name": __name__, "path0": sys.path[0], "extra": os.environ["PYTHONPATH"] in sys.path,
                      "process": mp.current_process().name, "parent": mp.parent_process() is None}))
    print("to stderr", file=sys.stderr)
    sys.exit(int(sys.argv[-1]))
""")


def both(args: list[str], **kwargs) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    real = subprocess.run(args, capture_output=True, text=True, **kwargs)
    return real, forked.run(args, **kwargs)


@pytest.mark.parametrize("code", ["0", "3"])
def test_a_script_sees_what_a_real_interpreter_sees(tmp_path, code):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {**os.environ, "SB3_HIR_PROBE": "yes", "PYTHONPATH": str(tmp_path / "extra")}
    real, fork = both([sys.executable, str(script), "--flag", code], cwd=tmp_path, env=env)
    assert (fork.returncode, fork.stdout, fork.stderr) == (real.returncode, real.stdout, real.stderr)
    assert real.returncode == int(code) and '"process": "MainProcess"' in real.stdout and "atexit ran" in real.stdout


def test_a_module_and_code_run_as_main_and_an_exception_is_exit_code_1(tmp_path):
    real, fork = both([sys.executable, "-m", "json.tool", "--help"], cwd=tmp_path)
    assert (fork.returncode, fork.stdout) == (real.returncode, real.stdout) and real.returncode == 0
    real, fork = both([sys.executable, "-c", "import sys; print(__name__, sys.argv); raise ValueError('no')", "x"],
                      cwd=tmp_path)
    assert (fork.returncode, fork.stdout) == (real.returncode, real.stdout) == (1, "__main__ ['-c', 'x']\n")
    assert fork.stderr.strip().splitlines()[-1] == real.stderr.strip().splitlines()[-1] == "ValueError: no"


def test_a_timeout_kills_the_run_and_raises_as_subprocess_does(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        forked.run([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path, timeout=1)


def test_an_interpreter_option_in_the_environment_takes_a_real_interpreter(tmp_path):
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    real, fork = both([sys.executable, "-c", "print(hash('sb3-hir'))"], cwd=tmp_path, env=env)
    assert fork.stdout == real.stdout  # the seed honoured: a forked child would keep its server's hashes
