"""The one place that runs independent training runs: in this process, or as Ray Tune trials.

Why: a multi-seed benchmark is a loop of independent training runs, and ``sb3-hir sweep`` is one too; Ray Tune
schedules them over the cores of one machine or the nodes of a cluster (``address="auto"`` or ``"ray://..."``)
without a home-made process pool. Both go through this module: :func:`ray_session` starts (and stops) Ray the same
way for both, :func:`tune_run_config` and :func:`trial_error` read trials alike, and :func:`run_all` runs a
benchmark's ``fn(config) -> dict`` per config, sequentially or with :func:`run_as_trials`, results in config order.

Workers import ``fn`` by module name, with the directory of the script run as ``__main__`` on their
``PYTHONPATH``. On a cluster the same paths must exist on every node (a shared checkout). Ray is the optional
``sweep`` extra: it is imported only when trials run, through :func:`sb3_hir.extras.require`.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sb3_hir.extras import require

__all__ = ["INDEX", "ray_session", "run_all", "run_as_trials", "trial_error", "tune_run_config"]

#: The key under which each config carries its position in ``configs`` (removed before ``fn`` sees it).
INDEX = "_trial_index"


def _reference(fn: Callable[[dict], dict]) -> tuple[str, str, str | None]:
    """``(module, qualname, directory to put on the workers' path)`` for a module-level function.

    The directory is the one ``module`` is imported from (a test module, a script's directory).

    A function of the script run as ``__main__`` is referred to by the script's file name, so that workers import
    the script as a module (its top-level code, such as gymnasium registrations, runs there too) instead of
    receiving a pickled copy of the function without it.
    """
    module, qualname = fn.__module__, fn.__qualname__
    if "<" in qualname:
        raise ValueError(f"run_as_trials needs a module-level function, not {qualname!r}")
    if module != "__main__":
        file = getattr(sys.modules.get(module), "__file__", None)
        if file is None:
            return module, qualname, None
        root = Path(file).resolve().parent
        for _ in range(module.count(".") + (Path(file).stem == "__init__")):
            root = root.parent
        return module, qualname, str(root)
    main_file = getattr(sys.modules["__main__"], "__file__", None)
    if main_file is None:
        raise ValueError(f"{qualname!r} is defined in an interactive __main__ that Ray workers cannot import")
    path = Path(main_file).resolve()
    return path.stem, qualname, str(path.parent)


@contextmanager
def ray_session(address: str | None = None, *, feature: str = "Ray trials", **init: Any) -> Iterator[Any]:
    """Ray, initialised for the block and shut down after it, unless it was running already (the caller's then).

    ``address=None`` starts a private local instance (``"local"``): without an address ``ray.init`` would join
    any cluster another process runs on this machine, and that one may be stopped under us.

    :param feature: what needs Ray, for the missing-extra message.
    :param init: further ``ray.init`` arguments (``runtime_env``, ``log_to_driver``).
    """
    ray = require("ray", feature)
    started = not ray.is_initialized()
    if started:
        ray.init(address=address or "local", include_dashboard=False, logging_level=logging.ERROR, **init)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def tune_run_config(storage_path: str | os.PathLike[str], name: str, *, fail_fast: bool = False) -> Any:
    """Tune's run configuration for our trials: no retries (a failing run fails again), quiet console."""
    tune = require("ray.tune", "Ray trials")
    return tune.RunConfig(storage_path=str(storage_path), name=name, verbose=0,
                          failure_config=tune.FailureConfig(max_failures=0, fail_fast=fail_fast))


def trial_error(error: BaseException | str) -> str:
    """The last non-empty line of a failed trial's error: the trial's own exception, not Ray's wrapping of it."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def _trainable(params: dict[str, Any]) -> None:
    """One trial: import ``fn`` by name, call it on the config with one torch thread, report its results."""
    import torch
    from ray import tune

    torch.set_num_threads(1)
    module, qualname = params["fn"]
    fn: Any = importlib.import_module(module)
    for name in qualname.split("."):
        fn = getattr(fn, name)
    config = {k: v for k, v in params["config"].items() if k != INDEX}
    tune.report({"results": fn(config)})


def run_as_trials(
    fn: Callable[[dict], dict],
    configs: list[dict],
    *,
    cpus_per_trial: float = 1,
    address: str | None = None,
    name: str = "benchmark",
    storage_path: str | None = None,
) -> list[dict]:
    """``[fn(config) for config in configs]``, each call a Ray Tune trial reserving ``cpus_per_trial`` CPUs.

    :param fn: a module-level function taking a plain dict and returning a picklable (JSON-like) dict.
    :param configs: one plain dict per trial.
    :param cpus_per_trial: CPUs reserved per trial (trials still use one torch thread each); Ray accepts fractions.
    :param address: ``None`` starts a private local Ray instance (``"local"``: never one that another process
        started with ``ray start`` and may stop under us); ``"auto"`` (``RAY_ADDRESS``, else the cluster of
        ``ray start``) or ``"ray://host:port"`` joins a cluster. Ignored if Ray is already initialised (its caller
        then makes ``fn``'s module importable by the workers).
    :param name: the Tune experiment name.
    :param storage_path: where Tune keeps its trial directories; by default a temporary directory removed at the
        end.
    :returns: ``fn``'s results in the order of ``configs``.
    :raises RuntimeError: naming the configs whose trials failed, with their errors.
    """
    if not configs:
        return []
    tune = require("ray.tune", "Ray trials")
    module, qualname, directory = _reference(fn)
    pythonpath = _workers_path(directory)
    temporary = storage_path is None
    storage = tempfile.mkdtemp(prefix="ray_trials_") if storage_path is None else str(Path(storage_path).resolve())
    session = ray_session(address, runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
    try:
        with session, _quiet_tune():
            grid = _tuner(tune, (module, qualname), configs, cpus_per_trial, storage, name).fit()
        return _ordered_results(grid, configs)
    finally:
        if temporary:
            shutil.rmtree(storage, ignore_errors=True)


def _workers_path(directory: str | None) -> str:
    """The workers' ``PYTHONPATH``: the directory ``fn``'s module is imported from, then this process's own."""
    paths = [directory] if directory is not None else []
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(paths)


def _tuner(tune: Any, reference: tuple[str, str], configs: list[dict], cpus_per_trial: float, storage: str,
           name: str) -> Any:
    """A Tune grid of one trial per config, each tagged with its position (:data:`INDEX`) and calling the function
    named by ``reference`` (module, qualname) through :func:`_trainable`."""
    return tune.Tuner(
        tune.with_resources(_trainable, {"cpu": cpus_per_trial}),
        param_space={
            "fn": reference,
            "config": tune.grid_search([{**config, INDEX: i} for i, config in enumerate(configs)]),
        },
        tune_config=tune.TuneConfig(num_samples=1, reuse_actors=False, trial_name_creator=_trial_name,
                                    trial_dirname_creator=_trial_name),
        run_config=tune_run_config(storage, name),
    )


def _ordered_results(grid: Any, configs: list[dict]) -> list[dict]:
    """The trials' results in the order of ``configs``; a RuntimeError naming every config whose trial failed,
    reported nothing or did not run."""
    results: dict[int, dict] = {}
    errors: dict[int, str] = {}
    for result in grid:
        index = result.config["config"][INDEX]
        if result.error is not None:
            errors[index] = trial_error(result.error)
        elif "results" not in (result.metrics or {}):
            errors[index] = "the trial reported no results"
        else:
            results[index] = result.metrics["results"]
    for index in range(len(configs)):
        if index not in results and index not in errors:
            errors[index] = "no trial ran"
    if errors:
        lines = [f"  config {i} {configs[i]}: {errors[i]}" for i in sorted(errors)]
        raise RuntimeError(f"{len(errors)} of {len(configs)} Ray Tune trials failed:\n" + "\n".join(lines))
    return [results[i] for i in range(len(configs))]


def run_all(fn: Callable[[dict], dict], configs: list[dict], *, use_ray: bool, cpus_per_trial: float = 1,
            address: str | None = None, name: str = "benchmark") -> Iterator[dict]:
    """Each config's result, in the order of ``configs``: as Ray Tune trials (``use_ray``), or one after another
    in this process, yielded as each run finishes, so a benchmark prints the same lines either way."""
    if use_ray:
        yield from run_as_trials(fn, configs, cpus_per_trial=cpus_per_trial, address=address, name=name)
    else:
        for config in configs:
            yield fn(config)


def _trial_name(trial: Any) -> str:
    return f"trial_{trial.config['config'][INDEX]:04d}"


@contextmanager
def _quiet_tune() -> Iterator[None]:
    """Tune's console reporter without its banner (the legacy one honours ``verbose=0``), and no result loggers.

    Tune reads both settings from the environment only; the trial directories are temporary by default, and the
    results come back in memory, so the CSV/JSON/TensorBoard files would be written for nothing.
    """
    settings = {"RAY_AIR_NEW_OUTPUT": "0", "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1"}
    saved = {key: os.environ.get(key) for key in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
