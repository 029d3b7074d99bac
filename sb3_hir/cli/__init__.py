"""The ``sb3-hir`` command. The library never imports this module.

``sb3-hir train`` compares relabeling strategies on one env and algorithm (default: MazeRunner + DQN, HIR "some"
against no relabeling); ``sb3-hir dagger`` runs DAgger against the shortest-path expert; ``sb3-hir render MODEL``
draws an episode of a saved model; ``sb3-hir plugins`` lists what is installed. Bad input (unknown names,
incompatible combinations) ends with one ``error:`` line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import os
import secrets
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from sb3_hir import __version__
from sb3_hir import plugins as plugin_registry
from sb3_hir.extras import MissingExtraError, require

#: Exit code of bad command-line input, as argparse uses.
USAGE_EXIT = 2


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2, no traceback."""


# ---------------------------------------------------------------------------------------------------- plugins
def _plugins(args: argparse.Namespace) -> int:
    with warnings.catch_warnings():
        # The listing reports broken plugins itself, with their errors.
        warnings.simplefilter("ignore", plugin_registry.PluginWarning)
        infos = plugin_registry.plugins()
        conflicts = plugin_registry.conflicts()
    if args.json:
        payload = {
            "plugins": [info.as_dict() for info in infos if not info.broken],
            "broken": [info.as_dict() for info in infos if info.broken],
            "conflicts": [
                {"kind": kind, "name": name,
                 "providers": [{"plugin": c.plugin, "distribution": c.distribution} for c in providers]}
                for (kind, name), providers in conflicts.items()
            ],
        }
        print(json.dumps(payload, indent=2))
        return 0
    for info in infos:
        origin = f"{info.distribution} {info.version}" if info.distribution else "in-process"
        if info.broken:
            print(f"{info.name} ({origin}) BROKEN\n    {info.error}")
            continue
        print(f"{info.name} ({origin})")
        for kind, names in info.components.items():
            print(f"    {kind}: {', '.join(names)}")
    for (kind, name), providers in conflicts.items():
        who = ", ".join(f"{c.plugin} ({c.distribution})" if c.distribution else c.plugin for c in providers)
        print(f"CONFLICT {kind} {name!r}: registered by {who}; look-ups of it fail until all but one are blocked "
              "(SB3_HIR_BLOCK_PLUGINS)")
    return 0


# ---------------------------------------------------------------------------------------------------- shared
@dataclass(frozen=True)
class Algo:
    """How the CLI builds one algorithm: where it lives, what actions it takes, its MazeRunner defaults."""

    module: str
    cls: str
    policy: str
    action: str  # "discrete", "continuous" or "any"
    off_policy: bool
    defaults: dict[str, Any]


#: Hyperparameters chosen for MazeRunner on a small CPU budget; `--timesteps` and `--n-envs` adapt the rest.
ALGOS: dict[str, Algo] = {
    "dqn": Algo("stable_baselines3", "DQN", "MultiInputPolicy", "discrete", True, dict(
        learning_rate=5e-4, batch_size=128, gamma=0.97, exploration_fraction=0.3, exploration_final_eps=0.05,
        target_update_interval=2_000, policy_kwargs=dict(net_arch=[256, 256]))),
    "qrdqn": Algo("sb3_contrib", "QRDQN", "MultiInputPolicy", "discrete", True, dict(
        learning_rate=5e-4, batch_size=128, gamma=0.97, exploration_fraction=0.3, exploration_final_eps=0.05,
        target_update_interval=2_000, policy_kwargs=dict(net_arch=[256, 256], n_quantiles=25))),
    "sac": Algo("stable_baselines3", "SAC", "MultiInputPolicy", "continuous", True, dict(
        learning_rate=5e-4, batch_size=128, gamma=0.97, policy_kwargs=dict(net_arch=[256, 256]))),
    "tqc": Algo("sb3_contrib", "TQC", "MultiInputPolicy", "continuous", True, dict(
        learning_rate=5e-4, batch_size=128, gamma=0.97, policy_kwargs=dict(net_arch=[256, 256], n_critics=2))),
    "recurrent-ppo": Algo("sb3_contrib", "RecurrentPPO", "MultiInputLstmPolicy", "any", False, dict(
        learning_rate=3e-4, n_steps=128, batch_size=256, gamma=0.97, ent_coef=0.01,
        policy_kwargs=dict(net_arch=[128], lstm_hidden_size=128))),
}

#: `train`'s defaults: with a 16-step history (conv encoder) DQN + HIR reaches ~2x the goals of the memoryless
#: learner at equal steps; at ~2.6x the cost per step, 30k steps keep the job near 5 minutes (README, "Memory").
TRAIN_HISTORY = 16
TRAIN_TIMESTEPS = 30_000

#: `--relabel` shorthands: the built-in hindsight-instruction relabeler with this strategy.
STRATEGIES = ("some", "all", "none")

#: MazeRunner's options: CLI dest -> (MazeRunnerEnv keyword, `train` default).
MAZE_OPTIONS: dict[str, tuple[str, Any]] = {
    "maze_size": ("maze_dim", 9),
    "goals": ("num_goals", 3),
    "time_limit": ("time_limit", 100),
    "randomized_actions": ("randomized_actions", False),
    "continuous": ("continuous", False),
}


def _one_of(what: str, name: str, valid: Sequence[str]) -> str:
    if name not in valid:
        raise UsageError(f"unknown {what} {name!r}; choose from: {', '.join(valid)}")
    return name


def _check_positive(option: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise UsageError(f"{option} must be >= 1; got {value}")


def _parse_env_kwargs(pairs: Sequence[str], option: str = "--env-kwarg") -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values are Python literals when they parse as one, else strings."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"{option} takes KEY=VALUE with KEY a Python identifier; got {pair!r}")
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of the env factory: MazeRunner options with their defaults, plus ``--env-kwarg``."""
    _one_of("env", args.env, list(plugin_registry.available("env")))
    kwargs: dict[str, Any] = {}
    given = {dest: getattr(args, dest) for dest in MAZE_OPTIONS if getattr(args, dest) not in (None, False)}
    if args.env == "mazerunner":
        for dest, (keyword, default) in MAZE_OPTIONS.items():
            value = getattr(args, dest)
            kwargs[keyword] = default if value is None else value
    elif given:
        flags = ", ".join("--" + dest.replace("_", "-") for dest in given)
        raise UsageError(f"{flags} configure --env mazerunner only; pass options of env {args.env!r} as "
                         "--env-kwarg KEY=VALUE")
    kwargs.update(_parse_env_kwargs(args.env_kwarg))
    return kwargs


def _make_env(name: str, kwargs: dict[str, Any], history: int = 0, **extra: Any) -> Any:
    """The env plugin ``name``; with ``history`` > 0, wrapped in a HistoryWrapper of that many steps."""
    try:
        env = plugin_registry.create("env", name, **kwargs, **extra)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"env {name!r} rejected its options {kwargs}: {exc}") from exc
    if history:
        from sb3_hir.history import HistoryWrapper

        try:
            env = HistoryWrapper(env, length=history)
        except ValueError as exc:
            raise UsageError(f"--history {history}: env {name!r} cannot carry a history window: {exc}") from exc
    return env


def _env_factory(name: str, kwargs: dict[str, Any], history: int = 0) -> Any:
    """A picklable-enough zero-argument factory for ``make_vec_env`` (the checks ran on a probe already)."""

    def env_fn() -> Any:
        env = plugin_registry.create("env", name, **kwargs)
        if history:
            from sb3_hir.history import HistoryWrapper

            env = HistoryWrapper(env, length=history)
        return env

    return env_fn


def _check_instruction_env(env: Any, env_name: str) -> int:
    """The env follows the instruction contract the extractor and the relabelers rely on; returns k."""
    from gymnasium import spaces

    space = env.observation_space
    if not isinstance(space, spaces.Dict) or not {"obs", "goals", "achieved"} <= set(space.spaces):
        raise UsageError(f"env {env_name!r} must have a Dict observation with 'obs', 'goals' and 'achieved' keys; "
                         f"it has {space}")
    return int(space["goals"].shape[0])


def _check_algo_env(algo_name: str, env: Any, env_name: str) -> None:
    """Fail early, in one line, when the algorithm cannot act in the env's action space."""
    from gymnasium import spaces

    algo = ALGOS[algo_name]
    space = env.action_space
    if algo.action == "continuous" and not isinstance(space, spaces.Box):
        hint = " (add --continuous for Box(-1, 1, (2,)) actions)" if env_name == "mazerunner" else ""
        raise UsageError(f"--algo {algo_name} needs continuous (Box) actions but env {env_name!r} has "
                         f"{type(space).__name__} actions{hint}; discrete algorithms: dqn, qrdqn, recurrent-ppo")
    if algo.action == "discrete" and not isinstance(space, spaces.Discrete):
        hint = " (drop --continuous)" if env_name == "mazerunner" else ""
        raise UsageError(f"--algo {algo_name} needs Discrete actions but env {env_name!r} has "
                         f"{type(space).__name__} actions{hint}; continuous algorithms: sac, tqc, recurrent-ppo")


def _algo_class(name: str) -> Any:
    algo = ALGOS[name]
    return getattr(importlib.import_module(algo.module), algo.cls)


def _policy_kwargs(algo: Algo, hidden: int | None = None, history: int = 0, encoder: str = "gru") -> dict[str, Any]:
    from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor

    # The policy sees the observation and the instruction; "achieved" is only there for relabeling.
    policy_kwargs = dict(algo.defaults["policy_kwargs"])
    if hidden is not None:
        policy_kwargs["net_arch"] = [hidden, hidden]
    if history:  # the window is encoded next to the current observation and instruction
        return dict(features_extractor_class=HistoryExtractor,
                    features_extractor_kwargs=dict(keys=["obs", "goals"], encoder=encoder), **policy_kwargs)
    return dict(features_extractor_class=KeySelectExtractor, features_extractor_kwargs=dict(keys=["obs", "goals"]),
                **policy_kwargs)


def _report_evaluations(evaluator: Any, report: Any, run: str) -> Any:
    """An SB3 callback that passes each new evaluation of ``evaluator`` to ``report`` (a sweep's Tune reporter)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class ReportEvaluations(BaseCallback):
        reported = 0

        def _flush(self) -> None:
            history = evaluator.history
            while len(history.timesteps) > self.reported:
                i = self.reported
                report(dict(run=run, timesteps=int(history.timesteps[i]), success_rate=float(history.success_rate[i]),
                            goals_reached=float(history.goals_reached[i])))
                self.reported += 1

        def _on_step(self) -> bool:
            self._flush()
            return True

        def _on_training_end(self) -> None:  # the evaluator's final evaluation comes after the last step
            self._flush()

    return ReportEvaluations()


def _resolve_relabels(algo_name: str, relabels: Sequence[str] | None) -> list[str]:
    if relabels is None:
        return ["some", "none"] if ALGOS[algo_name].off_policy else ["none"]
    valid = [*STRATEGIES, *plugin_registry.available("relabeler")]
    for name in relabels:
        _one_of("relabeler", name, valid)
    if len(set(relabels)) != len(relabels):
        raise UsageError(f"--relabel repeats a name: {' '.join(relabels)}")
    if not ALGOS[algo_name].off_policy and set(relabels) != {"none"}:
        raise UsageError(f"--algo {algo_name} is on-policy and has no replay buffer to relabel; use --relabel none "
                         "or an off-policy algorithm (dqn, qrdqn, sac, tqc)")
    return list(relabels)


def _write_text(path: Path, text: str) -> None:
    from sb3_hir.atomic import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(text)


def _write_csv(path: Path, records: Sequence[dict[str, Any]]) -> None:
    import csv

    from sb3_hir.atomic import atomic_path

    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)


def _format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table, aligned so it also reads well in a terminal."""
    cells = [[str(h) for h in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *[line(row) for row in cells[1:]]])


def _log_formats() -> list[str]:
    """SB3 logger formats of a run directory: CSV, plus TensorBoard when it is installed."""
    if importlib.util.find_spec("tensorboard") is not None:
        return ["csv", "tensorboard"]
    print("note: tensorboard is not installed; writing CSV logs only", file=sys.stderr)
    return ["csv"]


#: Marker file of a run directory: ``--overwrite`` only ever clears a directory that holds one.
RUN_MARKER = ".sb3-hir-run"
#: Lock file held (``flock``) while a process writes into a run directory.
LOCK_FILE = ".sb3-hir.lock"


def _check_seed(seed: int) -> None:
    if not 0 <= seed < 2**32:
        raise UsageError(f"--seed must be an int in [0, 2**32 - 1] (numpy and torch seeds); got {seed}")


def _prepare_out(command: str, out_arg: str | None, overwrite: bool) -> tuple[Path, IO[str]]:
    """The run directory, created and locked: unique by default, never shared by accident.

    The default name has the time, the pid and a random suffix, so two runs started in the same second get
    two directories. An explicit ``--out`` that is not empty is refused unless ``--overwrite`` (which clears it,
    and only if an earlier sb3-hir run made it). A lock held for the process's life makes a second process
    writing into the same directory fail at once. Returns the directory and the open lock file.
    """
    if out_arg is None:
        while True:
            out = Path("runs") / f"{command}-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}-{secrets.token_hex(2)}"
            try:
                out.mkdir(parents=True, exist_ok=False)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise UsageError(f"cannot create the run directory {str(out)!r}: {exc.strerror}") from exc
    else:
        out = Path(out_arg)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {str(out)!r} is an existing file; give a directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create --out {str(out)!r}: {exc.strerror}") from exc
        if not os.access(out, os.W_OK | os.X_OK):
            raise UsageError(f"--out {str(out)!r} is not writable")
    lock = _lock(out)
    if out_arg is not None:
        contents = [path for path in out.iterdir() if path.name != LOCK_FILE]
        if contents and not overwrite:
            lock.close()
            raise UsageError(f"--out {str(out)!r} is not empty; pass --overwrite to replace the run in it, or choose "
                             "another directory")
        if contents:
            if not (out / RUN_MARKER).is_file():
                lock.close()
                raise UsageError(f"--overwrite refuses to clear {str(out)!r}: it was not made by sb3-hir (no "
                                 f"{RUN_MARKER} file)")
            for path in contents:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    (out / RUN_MARKER).write_text(json.dumps({"command": command, "pid": os.getpid()}) + "\n")
    return out, lock


def _lock(out: Path) -> IO[str]:
    """Hold an exclusive ``flock`` on the run directory's lock file (released when the process ends)."""
    import fcntl

    handle = open(out / LOCK_FILE, "a+")  # noqa: SIM115 - held open for the life of the run
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise UsageError(f"another sb3-hir process (pid {holder}) is writing into {str(out)!r}; wait for it or "
                         "choose another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _goal_spec(args: argparse.Namespace, probe: Any, env_name: str) -> tuple[Any, str]:
    """The goal spec relabeling uses: ``--goal-spec``, else the one the env declares, else ``exact``."""
    from sb3_hir.contract import ENV_GOAL_SPEC, declared
    from sb3_hir.goals import GoalSpec

    kwargs = _parse_env_kwargs(args.goal_spec_kwarg, option="--goal-spec-kwarg")
    if args.goal_spec is None:
        if kwargs:
            raise UsageError("--goal-spec-kwarg needs --goal-spec")
        spec = declared(probe, ENV_GOAL_SPEC)
        if spec is None:
            return plugin_registry.create("goal_spec", "exact"), "exact"
        spec = plugin_registry.resolve("goal_spec", spec)
        return spec, f"{type(spec).__name__} (declared by env {env_name!r})"
    _one_of("goal spec", args.goal_spec, list(plugin_registry.available("goal_spec")))
    factory = plugin_registry.get("goal_spec", args.goal_spec)
    with contextlib.suppress(TypeError, ValueError):
        if "env" in inspect.signature(factory).parameters and "env" not in kwargs:
            kwargs["env"] = probe
    try:
        spec = factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"goal spec {args.goal_spec!r} rejected {kwargs}: {exc}") from exc
    if not isinstance(spec, GoalSpec):
        raise UsageError(f"goal spec {args.goal_spec!r} built a {type(spec).__name__}, not a GoalSpec")
    return spec, args.goal_spec


def _check_goal_spec(probe: Any, env_name: str, spec: Any, num_goals: int, label: str) -> None:
    """Relabeled data must be what the env produces: run the instruction-env check with this spec first."""
    from sb3_hir.relabel import HindsightInstructionRelabeler
    from sb3_hir.testing import check_instruction_env

    try:
        relabeler = HindsightInstructionRelabeler(num_goals, strategy="none", goal_spec=spec)
        check_instruction_env(probe, relabeler=relabeler, n_episodes=2, max_steps=300)
    except (AssertionError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise UsageError(f"env {env_name!r} and goal spec {label} disagree, so relabeling would misrepresent the "
                         f"env (pass --goal-spec NAME): {detail}") from exc


def _save_episode_pictures(model: Any, env_name: str, env_kwargs: dict[str, Any], folder: Path, seed: int,
                           stem: str = "episode", gif: bool = True, png: bool = True,
                           best_of: int = 1, history: int = 0) -> tuple[Any, int] | None:
    """Record deterministic episodes (seeds ``seed``, ``seed + 1``, ...) and draw the one that got furthest.

    Up to ``best_of`` episodes are played, stopping at the first success; the picture's title says which one it
    shows, so a good episode is never passed off as a typical one. Returns (the episode drawn, episodes played),
    or None when the env cannot render.
    """
    try:
        return _draw_episode(model, env_name, env_kwargs, folder, seed, stem, gif, png, best_of, history)
    except Exception as exc:  # e.g. no OpenGL on a headless machine: the run and its results matter more
        detail = " ".join(str(exc).split())[:300]
        print(f"warning: no episode picture ({type(exc).__name__}: {detail}); the run's results are kept. On a "
              "headless machine set MUJOCO_GL=egl or MUJOCO_GL=osmesa", file=sys.stderr)
        return None


def _draw_episode(model: Any, env_name: str, env_kwargs: dict[str, Any], folder: Path, seed: int, stem: str,
                  gif: bool, png: bool, best_of: int, history: int = 0) -> tuple[Any, int] | None:
    from sb3_hir.plots import record_episode, save_episode_gif, save_episode_png

    try:
        env = _make_env(env_name, env_kwargs, history=history, render_mode="rgb_array")
    except UsageError:
        print(f"note: env {env_name!r} has no rgb_array render mode; no episode picture", file=sys.stderr)
        return None
    best, played = None, 0
    for episode_seed in range(seed, seed + best_of):
        episode = record_episode(model, env, seed=episode_seed)
        played += 1
        if best is None or (episode.goals_reached or 0, -episode.length) > (best.goals_reached or 0, -best.length):
            best = episode
        if episode.is_success:
            break
    env.close()
    assert best is not None
    goals = "" if best.goals_reached is None else f", {best.goals_reached} goals reached"
    title = f"{'success' if best.is_success else 'no success'} in {best.length} steps{goals} (seed {best.seed}"
    title += f", best of {played} episodes)" if played > 1 else ")"
    if gif:
        save_episode_gif(best.frames, folder / f"{stem}.gif")
    if png:
        save_episode_png(best.frames, folder / f"{stem}.png", title=title)
    return best, played


def _set_threads() -> None:
    import torch

    # imitation internals that say nothing actionable to a CLI user.
    warnings.filterwarnings("ignore", message="trying to unwrap object of type", category=UserWarning)
    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad", category=UserWarning)
    # Small MLPs on a shared CPU: one thread avoids oversubscription and is as fast.
    torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------------- train
def _check_train_args(args: argparse.Namespace) -> tuple[str, dict[str, Any], list[str]]:
    """``train``'s checks that need no env: (algorithm, env kwargs, relabel runs), or a UsageError."""
    algo_name = _one_of("algorithm", args.algo, list(ALGOS))
    for option in ("timesteps", "n_envs", "eval_freq", "eval_episodes", "n_steps", "hidden"):
        _check_positive("--" + option.replace("_", "-"), getattr(args, option))
    _check_history(args)
    if args.learning_rate is not None and not args.learning_rate > 0:
        raise UsageError(f"--learning-rate must be > 0; got {args.learning_rate}")
    if args.n_steps > 1 and not ALGOS[algo_name].off_policy:
        raise UsageError(f"--n-steps applies to off-policy algorithms; --algo {algo_name} is on-policy")
    if not 0.0 <= args.relabel_ratio <= 1.0:
        raise UsageError(f"--relabel-ratio must be in [0, 1]; got {args.relabel_ratio}")
    _check_seed(args.seed)
    return algo_name, _env_kwargs(args), _resolve_relabels(algo_name, args.relabel)


def _train(args: argparse.Namespace, report: Any = None) -> int:
    """``sb3-hir train``; ``report`` (a sweep's reporter) receives every evaluation as a dict."""
    algo_name, env_kwargs, relabels = _check_train_args(args)
    probe = _make_env(args.env, env_kwargs, history=args.history)
    num_goals = _check_instruction_env(probe, args.env)
    _check_algo_env(algo_name, probe, args.env)
    spec, spec_label = _goal_spec(args, probe, args.env)
    if any(relabel != "none" for relabel in relabels):
        _check_goal_spec(probe, args.env, spec, num_goals, spec_label)
    probe.close()

    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import configure as configure_logger

    from sb3_hir.atomic import atomic_path
    from sb3_hir.buffers import HindsightInstructionReplayBuffer
    from sb3_hir.callbacks import InstructionEvalCallback
    from sb3_hir.plots import plot_learning_curves

    _set_threads()
    out, _lock_handle = _prepare_out("train", args.out, args.overwrite)
    algo = ALGOS[algo_name]
    algo_cls = _algo_class(algo_name)
    eval_freq = args.eval_freq or max(args.timesteps // 12, 1)
    eval_seed = args.seed + 10_000
    print(f"sb3-hir train: {algo_name} on {args.env} {env_kwargs}, {args.timesteps} timesteps x {len(relabels)} runs "
          f"({', '.join(relabels)}), goal spec {spec_label}, {_memory_label(args)}, seed {args.seed} -> {out}")
    env_fn = _env_factory(args.env, env_kwargs, args.history)

    curves: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    for relabel in relabels:
        label = f"{algo_name}-{relabel}"
        run_dir = out / label
        run_dir.mkdir(parents=True, exist_ok=True)
        venv = make_vec_env(env_fn, n_envs=args.n_envs, seed=args.seed)
        eval_env = make_vec_env(env_fn, n_envs=min(args.eval_episodes, 10), seed=eval_seed)
        kwargs = {k: v for k, v in algo.defaults.items() if k != "policy_kwargs"}
        if args.learning_rate is not None:
            kwargs["learning_rate"] = args.learning_rate
        if algo.off_policy:
            kwargs.update(buffer_size=min(max(args.timesteps, 1_000), 1_000_000),
                          learning_starts=min(1_000, args.timesteps // 10), train_freq=1,
                          gradient_steps=max(1, args.n_envs // 2))
            if relabel != "none" or args.n_steps > 1:
                # With relabel none and n-step returns: the same buffer serving recorded rows only (SB3's own
                # n-step buffer refuses Dict observations).
                buffer_kwargs: dict[str, Any] = (
                    dict(relabeler="hindsight-instruction", strategy=relabel) if relabel in STRATEGIES
                    else dict(relabeler=relabel))
                if relabel in STRATEGIES:
                    buffer_kwargs["goal_spec"] = spec
                ratio = args.relabel_ratio if relabel != "none" else 0.0
                kwargs.update(replay_buffer_class=HindsightInstructionReplayBuffer, replay_buffer_kwargs=dict(
                    relabel_ratio=ratio, seed=args.seed, n_steps=args.n_steps, gamma=kwargs["gamma"],
                    **buffer_kwargs))
        try:
            model = algo_cls(algo.policy, venv, seed=args.seed, verbose=0, **kwargs,
                             policy_kwargs=_policy_kwargs(algo, args.hidden, args.history, args.history_encoder))
        except ValueError as exc:
            raise UsageError(f"cannot build {label}: {exc}") from exc
        model.set_logger(configure_logger(str(run_dir), _log_formats()))
        callback = InstructionEvalCallback(eval_env, eval_freq=eval_freq, n_eval_episodes=args.eval_episodes,
                                           seed=eval_seed, verbose=1)
        callbacks: list[Any] = [callback]
        if report is not None:
            callbacks.append(_report_evaluations(callback, report, label))
        print(f"== {label}: relabel {relabel!r}, logs in {run_dir}")
        start = time.perf_counter()
        interrupted = False
        try:
            model.learn(args.timesteps, callback=callbacks, progress_bar=not args.no_progress)
        except KeyboardInterrupt:
            interrupted = True  # save what this run has, write the table of the runs so far, then stop
        minutes = (time.perf_counter() - start) / 60
        with atomic_path(run_dir / "model.zip") as tmp:
            model.save(tmp)
        _write_text(run_dir / "run.json", json.dumps(dict(
            algo=algo_name, env=args.env, env_kwargs=env_kwargs, relabel=relabel, goal_spec=spec_label,
            relabel_ratio=args.relabel_ratio, n_steps=args.n_steps, learning_rate=args.learning_rate,
            hidden=args.hidden, history=args.history, history_encoder=args.history_encoder,
            seed=args.seed, timesteps=args.timesteps, timesteps_done=int(model.num_timesteps), n_envs=args.n_envs,
            interrupted=interrupted), indent=2) + "\n")
        history = callback.history
        if interrupted and not history.timesteps:
            venv.close()
            eval_env.close()
            break
        curves[f"relabel {relabel}"] = history
        plot_learning_curves({f"relabel {relabel}": history}, run_dir / "learning_curve.png", num_goals=num_goals,
                             title=f"{algo_name} on {args.env}, relabel {relabel}")
        if not interrupted:
            _save_episode_pictures(model, args.env, env_kwargs, run_dir, seed=eval_seed, best_of=10,
                                   history=args.history)
        venv.close()
        eval_env.close()
        results.append(dict(run=label + (" (interrupted)" if interrupted else ""), relabel=relabel,
                            success_rate=history.success_rate[-1], goals_reached=history.goals_reached[-1],
                            best_success_rate=max(history.success_rate), timesteps=history.timesteps[-1],
                            minutes=round(minutes, 2), interrupted=interrupted))
        if interrupted:
            break

    if curves:
        plot_learning_curves(curves, out / "learning_curve.png", num_goals=num_goals,
                             title=f"{algo_name} on {args.env}: success and goals reached during training")
    rows = [[r["run"], f"{r['success_rate']:.2f}", f"{r['goals_reached']:.2f} / {num_goals}",
             f"{r['best_success_rate']:.2f}", r["timesteps"], f"{r['minutes']:.1f}"] for r in results]
    table = _format_table(["run", "success rate", "goals reached", "best success rate", "timesteps", "minutes"],
                          rows)
    _write_text(out / "results.md", table + "\n")
    _write_text(out / "results.json", json.dumps(results, indent=2) + "\n")
    interrupted = bool(results and results[-1]["interrupted"]) or len(results) < len(relabels)
    which = "Last evaluation before Ctrl-C" if interrupted else "Final evaluation"
    print(f"\n{which} ({args.eval_episodes} episodes, seed {eval_seed}); run directory {out}\n{table}")
    if interrupted:
        raise KeyboardInterrupt
    return 0


# ---------------------------------------------------------------------------------------------------- dagger
#: The options of a ``sb3-hir dagger`` run, stored in its directory so that ``--resume`` continues it unchanged.
DAGGER_OPTIONS_FILE = "dagger-options.json"
#: Options that ``--resume`` takes from the command line instead of the stored run.
_DAGGER_RESUME_OWN = ("rounds", "no_progress", "resume", "out", "overwrite", "func", "command")


def _dagger_resume_options(args: argparse.Namespace) -> Path:
    """``--resume DIR``: the run's stored options replace the command line's (``--rounds`` may extend it)."""
    if args.out is not None or args.overwrite:
        raise UsageError("--resume DIR is the run directory; drop --out / --overwrite")
    out = Path(args.resume)
    stored_path = out / DAGGER_OPTIONS_FILE
    try:
        stored = json.loads(stored_path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {str(out)!r} holds no sb3-hir dagger run ({stored_path.name} unreadable: "
                         f"{exc.strerror if isinstance(exc, OSError) else exc})") from exc
    defaults = vars(build_parser().parse_args(["dagger"]))
    given = [key for key, value in vars(args).items() if key not in _DAGGER_RESUME_OWN and key in stored
             and value != defaults.get(key) and value != stored[key]]
    if given:
        flags = ", ".join(f"--{key.replace('_', '-')} (the run has {stored[key]!r})" for key in given)
        raise UsageError(f"--resume continues {str(out)!r} with its stored options; drop {flags}, or start a new run "
                         "with --out")
    for key, value in stored.items():
        if key not in _DAGGER_RESUME_OWN:
            setattr(args, key, value)
    if args.rounds is None:
        args.rounds = stored.get("rounds", 6)
    return out


def _parse_round_record(row: dict[str, str]) -> dict[str, Any]:
    """A row of ``rounds.csv`` with its numbers back."""
    ints = ("round", "episodes", "timesteps", "demo_timesteps")
    return {k: int(v) if k in ints else float(v) for k, v in row.items()}


def _dagger(args: argparse.Namespace) -> int:
    try:
        require("imitation", "sb3-hir dagger")
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None
    resume_dir = _dagger_resume_options(args) if args.resume is not None else None
    if args.rounds is None:
        args.rounds = 6
    if resume_dir is None and args.out is not None and not args.overwrite and Path(args.out).is_dir() and any(
        path.name != LOCK_FILE for path in Path(args.out).iterdir()
    ):
        raise UsageError(f"--out {args.out!r} is not empty; continue the run in it with --resume {args.out}, "
                         "replace it with --overwrite, or choose another directory")
    for option in ("rounds", "steps_per_round", "n_envs", "eval_episodes", "bc_epochs", "batch_size"):
        _check_positive("--" + option.replace("_", "-"), getattr(args, option))
    _check_history(args)
    _check_seed(args.seed)
    if args.batch_size > args.steps_per_round:
        raise UsageError(f"--batch-size {args.batch_size} is larger than the labelled steps of a round "
                         f"(--steps-per-round {args.steps_per_round}); BC could not fill one batch after round 0")
    _one_of("beta schedule", args.beta_schedule, list(plugin_registry.available("beta_schedule")))
    _one_of("expert", args.expert, list(plugin_registry.available("expert")))
    relabel = _one_of("relabeler", args.relabel, [*STRATEGIES, *plugin_registry.available("relabeler")])
    beta_kwargs = _parse_env_kwargs(args.beta_kwarg, option="--beta-kwarg")
    try:
        schedule = plugin_registry.create("beta_schedule", args.beta_schedule, **beta_kwargs)
        float(schedule(0))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"beta schedule {args.beta_schedule!r} rejected {beta_kwargs}: {exc}") from exc
    env_kwargs = _env_kwargs(args)
    probe = _make_env(args.env, env_kwargs, history=args.history)
    num_goals = _check_instruction_env(probe, args.env)
    spec, spec_label = _goal_spec(args, probe, args.env)
    if relabel != "none":
        _check_goal_spec(probe, args.env, spec, num_goals, spec_label)
    probe.close()
    _check_expert(args.expert, args.env, env_kwargs)

    import numpy as np
    import torch
    from imitation.algorithms import bc
    from imitation.util import logger as imit_logger
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.policies import ActorCriticPolicy
    from tqdm import tqdm

    from sb3_hir.callbacks import EvalHistory, evaluate_instruction_policy
    from sb3_hir.dagger import PolicyRunner, SimpleDAggerTrainer, reconstruct_trainer
    from sb3_hir.extractors import HistoryExtractor, KeySelectExtractor
    from sb3_hir.plots import plot_learning_curves

    _set_threads()
    torch.manual_seed(args.seed)
    if resume_dir is None:
        out, _lock_handle = _prepare_out("dagger", args.out, args.overwrite)
        options = {k: v for k, v in vars(args).items() if k not in ("func", "resume", "out", "overwrite")}
        _write_text(out / DAGGER_OPTIONS_FILE, json.dumps(options, indent=1) + "\n")
    else:
        out, _lock_handle = resume_dir, _lock(resume_dir)
    eval_seed = args.seed + 10_000
    env_fn = _env_factory(args.env, env_kwargs, args.history)
    venv = make_vec_env(env_fn, n_envs=args.n_envs, seed=args.seed)
    eval_env = make_vec_env(env_fn, n_envs=min(args.eval_episodes, 10), seed=eval_seed)
    rng = np.random.default_rng(args.seed)
    extractor: dict[str, Any] = dict(features_extractor_class=KeySelectExtractor,
                                     features_extractor_kwargs=dict(keys=["obs", "goals"]))
    if args.history:
        extractor = dict(features_extractor_class=HistoryExtractor,
                         features_extractor_kwargs=dict(keys=["obs", "goals"], encoder=args.history_encoder))
    policy = ActorCriticPolicy(venv.observation_space, venv.action_space, lr_schedule=lambda _: 0.0,
                               net_arch=[256, 256], **extractor)
    # a resumed run logs beside the killed one's logs (SB3's CSV writer would truncate them)
    log_dir = out / "logs" if resume_dir is None else out / "logs" / f"resumed-{datetime.now():%Y%m%d-%H%M%S}"
    log = imit_logger.configure(log_dir, _log_formats())
    bc_trainer = bc.BC(observation_space=venv.observation_space, action_space=venv.action_space, rng=rng,
                       policy=policy, batch_size=args.batch_size, device="cpu", custom_logger=log)
    relabel_kwargs: dict[str, Any] = {}
    if relabel != "none":
        strategy_kwargs: dict[str, Any] = dict(strategy=relabel)
        if spec_label != "exact":  # the relabeler's default is exact; name it only when it differs
            strategy_kwargs["goal_spec"] = spec
        relabel_kwargs = dict(relabeler="hindsight-instruction" if relabel in STRATEGIES else relabel,
                              relabeler_kwargs=strategy_kwargs if relabel in STRATEGIES else None)
    components = dict(expert_policy=args.expert, beta_schedule=args.beta_schedule,
                      beta_schedule_kwargs=beta_kwargs or None, bc_trainer=bc_trainer, **relabel_kwargs)
    records: list[dict[str, Any]] = []
    if resume_dir is not None and (out / "checkpoint-latest.json").is_file():
        # the options rebuild every component, so nothing but data is read from the run directory
        trainer = reconstruct_trainer(out, venv, custom_logger=log, **components)
    else:  # a fresh run, or one killed before its first checkpoint: its round files are kept
        trainer = SimpleDAggerTrainer(venv=venv, scratch_dir=out, rng=rng, custom_logger=log,
                                      resume=resume_dir is not None, **components)
    if resume_dir is not None:
        if (out / "rounds.csv").is_file():
            import csv

            with open(out / "rounds.csv", newline="") as f:
                records = [_parse_round_record(row) for row in csv.DictReader(f)][: trainer.round_num]
        venv.seed(args.seed + 1_000 * (trainer.round_num + 1))  # new episodes, not the killed run's again
    expert_score = evaluate_instruction_policy(plugin_registry.create("expert", args.expert, venv=eval_env),
                                               eval_env, args.eval_episodes, seed=eval_seed)
    if resume_dir is not None:
        print(f"sb3-hir dagger: resuming {out} at round {trainer.round_num} with its stored options")
    print(f"sb3-hir dagger: {args.rounds} rounds of >= {args.steps_per_round} steps on {args.env} {env_kwargs}, "
          f"beta schedule {args.beta_schedule} {beta_kwargs or ''}, expert {args.expert} (success "
          f"{expert_score.success_rate:.2f}), {_memory_label(args)}, seed {args.seed} -> {out}")

    history = EvalHistory()
    for r in records:
        history.append(r["round"], r["success_rate"], r["goals_reached"], r.get("mean_reward", 0.0))
    demo_steps = records[-1]["demo_timesteps"] if records else 0
    for round_num in range(trainer.round_num, args.rounds):
        beta = trainer.beta_for_round()
        collector = trainer.create_trajectory_collector()
        expert = PolicyRunner(trainer.expert_policy, collector.num_envs, deterministic=True)
        with tqdm(total=args.steps_per_round, desc=f"round {round_num} collect (beta {beta:.2f})", unit="step",
                  disable=args.no_progress, leave=False) as bar:
            obs = collector.reset()
            while collector.round_timesteps < args.steps_per_round:
                obs, _, dones, _ = collector.step(expert(obs))
                expert.observe_dones(dones)
                bar.update(min(collector.num_envs, bar.total - bar.n))
            collector.finish_round(policy=trainer.unfinished, expert=expert)
        trajs = trainer.load_demos([round_num])  # the whole round: a resumed one holds the killed run's episodes too
        steps = sum(len(t) for t in trajs)
        learner_steps = sum(int(np.sum(t.learner_mask)) for t in trajs if t.learner_mask is not None)
        demo_steps += steps
        n_batches = args.bc_epochs * max(1, demo_steps // args.batch_size)
        with tqdm(total=n_batches, desc=f"round {round_num} BC", unit="batch", disable=args.no_progress,
                  leave=False) as bar:
            trainer.extend_and_update(dict(n_epochs=args.bc_epochs, progress_bar=False, log_rollouts_venv=None,
                                           on_batch_end=lambda bar=bar: bar.update(1)))
        score = evaluate_instruction_policy(trainer.policy, eval_env, args.eval_episodes, seed=eval_seed)
        history.append(round_num, score.success_rate, score.goals_reached, score.mean_reward)
        record = dict(round=round_num, beta=beta, episodes=len(trajs), timesteps=steps,
                      learner_share=learner_steps / max(steps, 1), demo_timesteps=demo_steps,
                      success_rate=score.success_rate, goals_reached=score.goals_reached,
                      mean_reward=score.mean_reward)
        records.append(record)
        # the table first, then the checkpoint: a resume keeps the rows of the rounds its checkpoint has
        _write_csv(out / "rounds.csv", records)
        trainer.save_trainer()
        for key, value in record.items():
            log.record(f"dagger/{key}", value)
        log.dump(round_num)
        print(f"round {round_num}: beta {beta:.2f}, {len(trajs)} episodes / {steps} steps "
              f"({record['learner_share']:.0%} learner), success {score.success_rate:.2f}, "
              f"goals reached {score.goals_reached:.2f}")

    expert_history = EvalHistory()
    for r in (0, args.rounds - 1):
        expert_history.append(r, expert_score.success_rate, expert_score.goals_reached, expert_score.mean_reward)
    plot_learning_curves({"DAgger learner (BC)": history, f"expert ({args.expert})": expert_history},
                         out / "learning_curve.png", num_goals=num_goals, xlabel="round",
                         title=f"DAgger on {args.env}, beta schedule {args.beta_schedule}")
    _save_episode_pictures(trainer.policy, args.env, env_kwargs, out, seed=eval_seed, best_of=10,
                           history=args.history)
    rows = [[r["round"], f"{r['beta']:.2f}", r["episodes"], r["timesteps"], f"{r['learner_share']:.0%}",
             r["demo_timesteps"], f"{r['success_rate']:.2f}", f"{r['goals_reached']:.2f} / {num_goals}"]
            for r in records]
    table = _format_table(["round", "beta", "episodes", "timesteps", "learner steps", "demos (steps)", "success rate",
                           "goals reached"], rows)
    expert_line = (f"expert ({args.expert}): success rate {expert_score.success_rate:.2f}, goals reached "
                   f"{expert_score.goals_reached:.2f} / {num_goals}")
    _write_text(out / "rounds.md", f"{table}\n\n{expert_line}\n")
    _write_csv(out / "rounds.csv", records)
    venv.close()
    eval_env.close()
    print(f"\nDAgger learner after each round ({args.eval_episodes} evaluation episodes, seed {eval_seed}); demos "
          f"and checkpoints in {out}\n{table}\n{expert_line}")
    return 0


def _check_history(args: argparse.Namespace) -> None:
    from sb3_hir.extractors import HISTORY_ENCODERS

    if args.history is None or isinstance(args.history, bool) or args.history < 0:
        raise UsageError(f"--history must be an int >= 0 (0: no memory); got {args.history}")
    _one_of("history encoder", args.history_encoder, list(HISTORY_ENCODERS))


def _memory_label(args: argparse.Namespace) -> str:
    return f"history {args.history} ({args.history_encoder})" if args.history else "no history"


def _add_history_options(p: argparse.ArgumentParser, default: int) -> None:
    p.add_argument("--history", type=int, metavar="N", default=default,
                   help="memory: the last N observations and actions enter the observation (HistoryWrapper) and the "
                        f"policy encodes them (HistoryExtractor); 0 for none (default {default})")
    p.add_argument("--history-encoder", default="conv", metavar="NAME",
                   help="how the policy encodes the window: conv or gru (default conv: it learned MazeRunner as well "
                        "as the GRU at 0.8x its cost)")


def _check_expert(name: str, env_name: str, env_kwargs: dict[str, Any]) -> None:
    """An expert that cannot act in the env says so in one line, naming the installed experts that can."""

    def serves(expert_name: str) -> str | None:
        from stable_baselines3.common.vec_env import DummyVecEnv

        venv = DummyVecEnv([lambda: plugin_registry.create("env", env_name, **env_kwargs)])
        try:
            expert = plugin_registry.create("expert", expert_name, venv=venv)
            obs = venv.reset()
            action, _ = expert.predict(obs, deterministic=True)
            venv.step(action)
            return None
        except Exception as exc:
            return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        finally:
            venv.close()

    problem = serves(name)
    if problem is not None:
        able = [other for other in plugin_registry.available("expert") if other != name and serves(other) is None]
        can = ", ".join(able) if able else "none of the installed experts"
        raise UsageError(f"expert {name!r} cannot act in env {env_name!r} ({problem}); experts that can: {can}")


# ---------------------------------------------------------------------------------------------------- render
def _render(args: argparse.Namespace) -> int:
    model_path = Path(args.model)
    _check_positive("--best-of", args.best_of)
    if not model_path.is_file():
        raise UsageError(f"MODEL {str(model_path)!r} is not a file (expected a model .zip saved by sb3-hir train)")
    run_file = model_path.parent / "run.json"
    try:
        run = json.loads(run_file.read_text()) if run_file.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read {run_file} ({exc}); pass --algo and --env to render without it") from exc
    if not isinstance(run, dict):
        raise UsageError(f"{run_file} does not hold a run description (a JSON object); pass --algo and --env")
    algo_name = args.algo or run.get("algo")
    if algo_name is None:
        raise UsageError(f"no run.json next to {model_path}: pass --algo ({', '.join(ALGOS)})")
    _one_of("algorithm", algo_name, list(ALGOS))
    env_name = args.env or run.get("env", "mazerunner")
    _one_of("env", env_name, list(plugin_registry.available("env")))
    env_kwargs = dict(run.get("env_kwargs", {})) if env_name == run.get("env", "mazerunner") else {}
    env_kwargs.update(_parse_env_kwargs(args.env_kwarg))
    out = Path(args.out) if args.out else model_path.with_name(f"{model_path.stem}-episode.gif")
    if out.suffix not in (".gif", ".png"):
        raise UsageError(f"--out must end in .gif or .png; got {str(out)!r}")
    _set_threads()
    try:
        model = _algo_class(algo_name).load(model_path, device="cpu")
    except Exception as exc:  # a zip of another algorithm or not a model at all
        raise UsageError(f"cannot load {model_path} as {algo_name}: {type(exc).__name__}: {exc}") from exc
    history = int(run.get("history") or 0)
    probe = _make_env(env_name, env_kwargs, history=history)
    for what in ("action_space", "observation_space"):  # actions first: with history they shape the window too
        if getattr(probe, what) != getattr(model, what):
            probe.close()
            shown = " ".join(str(getattr(model, what)).split())
            raise UsageError(f"the model was trained with {what} {shown}, but env {env_name!r} {env_kwargs} has "
                             f"{' '.join(str(getattr(probe, what)).split())}; render it with the run's env options")
    probe.close()
    drawn = _save_episode_pictures(model, env_name, env_kwargs, out.parent, seed=args.seed, stem=out.stem,
                                   gif=out.suffix == ".gif" or args.out is None,
                                   png=out.suffix == ".png" or args.out is None, best_of=args.best_of,
                                   history=history)
    if drawn is None:
        raise UsageError(f"env {env_name!r} does not render rgb_array frames")
    episode, played = drawn
    written = [out] if args.out else [out, out.with_suffix(".png")]
    goals = "" if episode.goals_reached is None else f", goals reached {episode.goals_reached}"
    which = f", best of {played} episodes" if played > 1 else ""
    print(f"episode (seed {episode.seed}{which}): success {episode.is_success}, {episode.length} steps{goals}; "
          f"wrote {', '.join(map(str, written))}")
    return 0


# ---------------------------------------------------------------------------------------------------- parser
def _names(kind: str) -> str:
    """Installed names of ``kind``, for --help (a broken plugin never breaks the help)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ", ".join(plugin_registry.available(kind)) or "none installed"
    except Exception as exc:  # pragma: no cover - a conflicting registration reported elsewhere
        return f"unavailable ({type(exc).__name__})"


def _add_goal_spec_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--goal-spec", metavar="NAME",
                   help="goal spec relabeling judges goals by (default: the one the env declares, else exact); "
                        f"installed: {_names('goal_spec')}")
    p.add_argument("--goal-spec-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="goal spec argument (repeatable), e.g. tolerance=0.5")


def _add_run_options(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--out", metavar="DIR",
                   help=f"run directory (default runs/{command}-<time>-<pid>-<random>); refused when not empty")
    p.add_argument("--overwrite", action="store_true",
                   help="clear a non-empty --out made by an earlier sb3-hir run and write the new run there")


def _add_env_options(p: argparse.ArgumentParser, continuous_help: str) -> None:
    g = p.add_argument_group("environment")
    g.add_argument("--env", default="mazerunner", metavar="NAME",
                   help=f"env plugin name (default: mazerunner); installed: {_names('env')}")
    g.add_argument("--maze-size", type=int, metavar="N",
                   help=f"MazeRunner side length (default {MAZE_OPTIONS['maze_size'][1]})")
    g.add_argument("--goals", type=int, metavar="N",
                   help=f"goals per instruction k (default {MAZE_OPTIONS['goals'][1]})")
    g.add_argument("--time-limit", type=int, metavar="N",
                   help=f"steps per episode (default {MAZE_OPTIONS['time_limit'][1]})")
    g.add_argument("--randomized-actions", action="store_true", help="permute MazeRunner's moves every episode")
    g.add_argument("--continuous", action="store_true", help=continuous_help)
    g.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="extra env factory keyword (repeatable), e.g. for other env plugins")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sb3-hir",
        description="Hindsight instruction relabeling and DAgger collection for Stable-Baselines3.",
    )
    parser.add_argument("--version", action="version", version=f"sb3-hir {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="also show what third-party packages print when imported (e.g. gymnasium-robotics)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("plugins", help="list installed plugins, their components and broken plugins")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_plugins)

    p = sub.add_parser(
        "train", help="train with and without hindsight instruction relabeling and compare",
        description="Train one algorithm once per --relabel value (same seed and budget) with periodic evaluation; "
                    "writes TensorBoard/CSV logs, models, learning curves and episode pictures to --out.")
    p.add_argument("--algo", default="dqn", metavar="ALGO", help=f"one of {', '.join(ALGOS)} (default dqn)")
    p.add_argument("--relabel", nargs="+", metavar="NAME",
                   help="runs to compare: some, all, none or relabeler plugin names (default: some none; "
                        f"none for recurrent-ppo); relabelers installed: {_names('relabeler')}")
    p.add_argument("--relabel-ratio", type=float, metavar="X", default=0.8,
                   help="share of relabeled samples (default 0.8)")
    p.add_argument("--n-steps", type=int, metavar="N", default=1,
                   help="n-step returns of the replay buffer (off-policy; default 1)")
    p.add_argument("--learning-rate", type=float, metavar="X", help="learning rate (default: the algorithm's, below)")
    p.add_argument("--hidden", type=int, metavar="N", help="width of the two hidden layers (default 256)")
    _add_history_options(p, TRAIN_HISTORY)
    p.add_argument("--timesteps", type=int, metavar="N", default=TRAIN_TIMESTEPS,
                   help=f"env steps per run (default {TRAIN_TIMESTEPS})")
    p.add_argument("--n-envs", type=int, metavar="N", default=8, help="parallel training envs (default 8)")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="seed of envs, networks and relabeling (default 0)")
    p.add_argument("--eval-freq", type=int, metavar="N", help="evaluate every N timesteps (default timesteps/12)")
    p.add_argument("--eval-episodes", type=int, metavar="N", default=50, help="episodes per evaluation (default 50)")
    _add_run_options(p, "train")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_goal_spec_options(p)
    _add_env_options(p, "Box(-1, 1, (2,)) MazeRunner actions, for sac / tqc / recurrent-ppo")
    p.set_defaults(func=_train)
    train_parser = p

    p = sub.add_parser(
        "dagger", help="DAgger against an expert (default: MazeRunner's shortest-path expert), BC after each round",
        description="Each round collects steps executing the expert's action with probability beta and the "
                    "learner's otherwise (every step labelled by the expert), then trains the learner by behaviour "
                    "cloning on all rounds so far and evaluates it. Writes demos, checkpoints, logs, the per-round "
                    "table (rounds.md, rounds.csv) and a learning curve to --out.")
    p.add_argument("--rounds", type=int, metavar="N", default=None,
                   help="DAgger rounds (default 6; with --resume, the run's own, or more to extend it)")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the interrupted (or finished) dagger run in DIR with its stored options: rounds "
                        "already done are kept and the table covers all rounds")
    p.add_argument("--beta-schedule", default="exponential", metavar="NAME",
                   help="beta_schedule plugin name (default exponential: beta = 0.5 ** round); installed: "
                        f"{_names('beta_schedule')}")
    p.add_argument("--beta-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="beta schedule argument (repeatable), e.g. rampdown_rounds=4 for linear")
    p.add_argument("--expert", default="shortest-path", metavar="NAME",
                   help=f"expert plugin name (default shortest-path); installed: {_names('expert')}")
    p.add_argument("--relabel", default="none", metavar="NAME",
                   help="relabel demos for goal-conditioned BC: none (default), some, all or a relabeler plugin "
                        f"({_names('relabeler')})")
    p.add_argument("--steps-per-round", type=int, metavar="N", default=4_000,
                   help="labelled steps per round (default 4000)")
    p.add_argument("--bc-epochs", type=int, metavar="N", default=4,
                   help="BC epochs over all demos after each round (default 4)")
    p.add_argument("--batch-size", type=int, metavar="N", default=256, help="BC batch size (default 256)")
    _add_history_options(p, 0)
    p.add_argument("--n-envs", type=int, metavar="N", default=8, help="parallel envs (default 8)")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="seed (default 0)")
    p.add_argument("--eval-episodes", type=int, metavar="N", default=50,
                   help="evaluation episodes after each round (default 50)")
    _add_run_options(p, "dagger")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    _add_goal_spec_options(p)
    _add_env_options(p, "Box(-1, 1, (2,)) MazeRunner actions (the learner's and the expert's)")
    p.set_defaults(func=_dagger)

    p = sub.add_parser("render", help="write a GIF/PNG of one episode of a saved model",
                       description="Play one deterministic episode of MODEL (a model.zip from sb3-hir train; its "
                                   "run.json supplies algorithm and env options) and draw it.")
    p.add_argument("model", metavar="MODEL", help="path of the saved model .zip")
    p.add_argument("--algo", metavar="ALGO", help="algorithm of MODEL when there is no run.json next to it")
    p.add_argument("--env", metavar="NAME", help="env plugin name (default: the run's env)")
    p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help="override an env option")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="episode seed (default 0)")
    p.add_argument("--best-of", type=int, default=1, metavar="N",
                   help="play seeds SEED..SEED+N-1 and draw the episode that reached most goals (default 1)")
    p.add_argument("--out", metavar="FILE",
                   help="output .gif or .png (default: MODEL-episode.gif and .png beside MODEL)")
    p.set_defaults(func=_render)

    from sb3_hir.cli import sweep

    sweep.add_parser(sub, train_parser, UsageError)
    return parser


def _headless_gl() -> None:
    """Without a display, MuJoCo renders through EGL unless the user chose a backend (read at mujoco's import)."""
    if not os.environ.get("MUJOCO_GL") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


@contextlib.contextmanager
def _quiet_imports(verbose: bool) -> Iterator[None]:
    """Keep what third-party packages print when imported (gymnasium loads every env plugin, and
    gymnasium-robotics prints a notice about Adroit envs) off the CLI's output, unless ``--verbose``."""
    if verbose:
        yield
        return
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(captured):
        yield


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _headless_gl()
    with _quiet_imports("--verbose" in argv):
        import gymnasium  # noqa: F401  (loads gymnasium's env plugins now, quietly)

        parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"sb3-hir {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    except KeyboardInterrupt:
        print(f"sb3-hir {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
