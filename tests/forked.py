"""Fresh Python processes without paying torch's import each time: ``run`` is ``subprocess.run`` for a command of
the form ``[sys.executable, script | "-m" module | "-c" code, *args]``, forked from a server that imported torch,
gymnasium and SB3 once.

Importing torch costs about 3 CPU-seconds, and the suite starts about a hundred command lines and benchmark scripts:
forking from a warm server keeps each run a process of its own (its own ``sys.argv``, working directory, environment
and exit code, nothing shared with pytest's) at a fraction of the cost. ``sb3_hir`` itself is not preloaded, so
plugin discovery and every module of the package run fresh in each child, as a user's command does.

Commands whose environment changes the interpreter itself (a ``PYTHON*`` variable other than ``PYTHONPATH``), and
any other command form, run as real subprocesses. Tests of the installed console script and of signals keep
``subprocess`` directly.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Imported once by the server; everything else is imported by each child.
PRELOAD = ["numpy", "torch", "gymnasium", "stable_baselines3"]

_state: dict[str, Any] = {}
_lock = threading.Lock()


def start() -> None:
    """Start the server now, before anything else starts multiprocessing's one forkserver (SB3's
    ``SubprocVecEnv`` does): a server started without the preload would serve every run cold. ``tests/conftest.py``
    calls it when the session starts."""
    _context()


def _context() -> Any:
    with _lock:
        return _start()


def _start() -> Any:
    if "ctx" not in _state:
        from multiprocessing import forkserver

        server = forkserver._forkserver  # type: ignore[attr-defined]
        if server._forkserver_pid is not None and server._preload_modules != PRELOAD:
            warnings.warn("multiprocessing's forkserver was started before forked.start(), without torch preloaded: "
                          "forked runs pay their imports", stacklevel=3)
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        server.ensure_running()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        probe = subprocess.run([sys.executable, "-c", "import sys, json; print(json.dumps(sys.path[1:]))"],
                               capture_output=True, text=True, env=env, check=True, cwd=tempfile.gettempdir())
        _state["base_path"] = json.loads(probe.stdout)
        _state["ctx"] = ctx
    return _state["ctx"]


def _interpreter_env_differs(env: Mapping[str, str]) -> bool:
    keys = {k for k in (*env, *os.environ) if k.startswith("PYTHON") and k != "PYTHONPATH"}
    return any(env.get(k) != os.environ.get(k) for k in keys)


def _child(argv: list[str], cwd: str, env: dict[str, str], out: str, err: str, base_path: list[str]) -> None:
    import multiprocessing.process as mp_process

    # A fresh interpreter's view: the main process, with no parent and no children of its own yet.
    me = mp_process.current_process()
    me._identity, me._name, me._parent_pid, me._parent_name = (), "MainProcess", None, None  # type: ignore[attr-defined]
    mp_process._parent_process = None  # type: ignore[attr-defined]
    mp_process._children = set()  # type: ignore[attr-defined]
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    code = 0
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[:] = [cwd, *extra, *base_path]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[:] = ["", *extra, *base_path]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            script = str(Path(cwd, argv[0]))
            sys.argv = [argv[0], *argv[1:]]
            sys.path[:] = [str(Path(script).parent), *extra, *base_path]
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def run(args: Sequence[str], *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(args, capture_output=True, text=True, cwd=, env=, timeout=)``, forked from the warm server."""
    args = [str(a) for a in args]
    env = dict(os.environ if env is None else env)
    if (len(args) < 2 or args[0] != sys.executable or (args[1] in ("-m", "-c") and len(args) < 3)
            or (args[1].startswith("-") and args[1] not in ("-m", "-c")) or _interpreter_env_differs(env)):
        return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
    ctx = _context()
    with tempfile.TemporaryDirectory() as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        Path(out).touch()
        Path(err).touch()
        proc = ctx.Process(target=_child, args=(args[1:], str(Path(cwd or os.getcwd()).resolve()), env, out, err,
                                                _state["base_path"]))
        proc.start()
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join()
            raise subprocess.TimeoutExpired(args, timeout or 0, Path(out).read_text(), Path(err).read_text())
        return subprocess.CompletedProcess(args, proc.exitcode, Path(out).read_text(), Path(err).read_text())
