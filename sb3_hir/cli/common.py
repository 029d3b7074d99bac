"""What the ``sb3-hir`` commands share: the algorithm registry, env building, run directories, locks, tables.

Their shared options are in :mod:`.options`.

Bad input ends as a :class:`UsageError` (one ``error:`` line, exit code 2). Options are validated where they are
used: a library object's ``ValueError`` becomes the one line through :func:`usage`, so a rule is written once.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import fcntl
import importlib
import importlib.util
import inspect
import io
import json
import os
import secrets
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_hir import plugins as plugin_registry
from sb3_hir import resolvers
from sb3_hir._validate import check_int
from sb3_hir.action_features import ACTION_FEATURES_KEY, EFFECTS_KEY, ActionEffectWrapper, ActionFeaturesWrapper
from sb3_hir.atomic import atomic_path
from sb3_hir.contract import ENV_GOAL_SPEC, declared
from sb3_hir.env_experts import with_expert_labels
from sb3_hir.extractors import HISTORY_ENCODERS, HistoryExtractor, KeySelectExtractor
from sb3_hir.extras import MissingExtraError, require
from sb3_hir.goals import GoalSpec
from sb3_hir.history import HistoryWrapper
from sb3_hir.plots import record_episode, save_episode_gif, save_episode_png
from sb3_hir.relabel import HindsightInstructionRelabeler
from sb3_hir.testing import check_instruction_env

T = TypeVar("T")

#: Exit code of bad command-line input, as argparse uses.
USAGE_EXIT = 2
#: Show what third-party packages print while the CLI imports them or builds envs (``--verbose``).
VERBOSE = False


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2, no traceback."""


@contextlib.contextmanager
def usage(what: str = "") -> Iterator[None]:
    """Turn a library ``ValueError`` into a :class:`UsageError` (prefixed by ``what``), so a rule lives once."""
    try:
        yield
    except ValueError as exc:
        detail = " ".join(str(exc).split())
        raise UsageError(f"{what}{detail}") from exc


def checked_int(value: Any, option: str, minimum: int | None = None, maximum: int | None = None,
                hint: str = "") -> int:
    """A range check the CLI owns (no library object takes the option), worded as :mod:`sb3_hir._validate`."""
    with usage():
        return check_int(value, option, minimum, maximum, hint)


@contextlib.contextmanager
def quiet_output() -> Iterator[None]:
    """Keep what third-party code prints while imported (gymnasium loads every env plugin, gymnasium-robotics
    prints a notice about Adroit envs at its first import) off the CLI's output; ``--verbose`` shows it."""
    if VERBOSE:
        yield
        return
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(captured):
        yield


# ---------------------------------------------------------------------------------------------------- algorithms
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


def one_of(what: str, name: str, valid: Sequence[str], hint: str = "") -> str:
    """``name`` if it is one of ``valid``; the error lists them (the names are the CLI's vocabulary)."""
    if name not in valid:
        raise UsageError(f"unknown {what} {name!r}; choose from: {', '.join(valid)}" + (f"; {hint}" if hint else ""))
    return name


def installed(kind: str, name: str, what: str | None = None, also: Sequence[str] = ()) -> str:
    """``name`` if an installed plugin provides it as ``kind`` (or it is one of ``also``, the CLI's shorthands);
    else the error lists the installed names and, for a name a known plugin or extra provides, what to install."""
    valid = [*also, *plugin_registry.available(kind)]
    if name in valid:
        return name
    return one_of(what or kind.replace("_", " "), name, valid, plugin_registry.provider_hint(kind, name))


def require_extra(module: str, feature: str) -> None:
    """``module`` is installed, or one ``error:`` line names ``feature`` (the command or the flag needing it) and
    the install command; :func:`sb3_hir.extras.require` words it, so the CLI and the library say the same."""
    try:
        require(module, feature)
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None


def algo_class(name: str) -> Any:
    algo = ALGOS[name]
    return getattr(importlib.import_module(algo.module), algo.cls)


def check_seed(seed: int, option: str = "--seed") -> int:
    """numpy and torch take 32-bit seeds."""
    with usage():
        return check_int(seed, option, 0, 2**32 - 1, hint="numpy and torch seeds")


def seed_everything(seed: int) -> None:
    """Seed what SB3's ``set_random_seed`` does not reach before a model exists (env building, torch's
    initial weights of a policy built outside an algorithm), so equal seeds give equal runs."""
    np.random.seed(seed)
    torch.manual_seed(seed)


def set_threads() -> None:
    # imitation internals that say nothing actionable to a CLI user.
    warnings.filterwarnings("ignore", message="trying to unwrap object of type", category=UserWarning)
    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad", category=UserWarning)
    # Small MLPs on a shared CPU: one thread avoids oversubscription and is as fast; it also keeps float sums in
    # one order, so runs repeat exactly.
    torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------------- envs
def parse_kwargs(pairs: Sequence[str], option: str = "--env-kwarg") -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values are Python literals when they parse as one, else strings."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"{option} takes KEY=VALUE with KEY a Python identifier; got {pair!r}")
        out[key] = literal(raw)
    return out


def literal(raw: str) -> Any:
    """``raw`` as the Python literal it spells, else the string itself (``5`` -> 5, ``soft`` -> 'soft')."""
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of the env factory: MazeRunner options with their defaults, plus ``--env-kwarg``."""
    installed("env", args.env)
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
    kwargs.update(parse_kwargs(args.env_kwarg))
    return kwargs


def make_env(name: str, kwargs: dict[str, Any], history: int = 0, features: str = "none", **extra: Any) -> Any:
    """The env plugin ``name``; with ``history`` > 0, wrapped in a HistoryWrapper of that many steps (and with
    per-action ``features`` first, see :func:`add_history`)."""
    try:
        with quiet_output():  # the first build of a plugin's env may import its third-party package
            env = resolvers.resolve_env(name, **kwargs, **extra)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"env {name!r} rejected its options {kwargs}: {exc}") from exc
    return add_history(env, name, history, features)


#: ``--action-features`` values: none, the generic effect table, or the env's own features (the contract).
ACTION_FEATURE_CHOICES = ("none", "effects", "env")
#: ``--q-head`` values.
Q_HEADS = ("standard", "per-action")


def features_key(features: str) -> str | None:
    """The observation key a ``--action-features`` table goes under (None for none)."""
    return {"none": None, "effects": EFFECTS_KEY, "env": ACTION_FEATURES_KEY}[features]


def add_history(env: Any, name: str, history: int, features: str = "none") -> Any:
    """``env`` with the memory asked for: the per-action table (``--action-features``), then the window."""
    if features != "none":
        with usage(f"--action-features {features}: env {name!r} cannot carry it: "):
            env = ActionEffectWrapper(env) if features == "effects" else ActionFeaturesWrapper(env, "env")
    if not history:
        return env
    with usage(f"--history {history}: env {name!r} cannot carry a history window: "):
        return HistoryWrapper(env, length=history)


def env_factory(name: str, kwargs: dict[str, Any], history: int = 0, features: str = "none") -> Callable[[], Any]:
    """A zero-argument factory for ``make_vec_env`` (the checks ran on a probe already)."""

    def env_fn() -> Any:
        return add_history(resolvers.resolve_env(name, **kwargs), name, history, features)

    return env_fn


def check_instruction_env_space(env: Any, env_name: str) -> int:
    """The env follows the instruction contract the extractor and the relabelers rely on; returns k."""
    space = env.observation_space
    if not isinstance(space, spaces.Dict) or not {"obs", "goals", "achieved"} <= set(space.spaces):
        raise UsageError(f"env {env_name!r} must have a Dict observation with 'obs', 'goals' and 'achieved' keys; "
                         f"it has {space}")
    goals_shape = space["goals"].shape
    assert goals_shape is not None, f"env {env_name!r}: its 'goals' space has no shape"
    return int(goals_shape[0])


def check_algo_env(algo_name: str, env: Any, env_name: str) -> None:
    """Fail early, in one line, when the algorithm cannot act in the env's action space."""
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


def extractor_kwargs(history: int, encoder: str, features: str = "none", q_head: str = "standard",
                     instruction_keys: Sequence[str] = ()) -> dict[str, Any]:
    """The policy sees the observation and the instruction ("achieved" is only there for relabeling), and the
    per-action table when there is one (the per-action head reads it row by row instead); a history window is
    encoded next to them. ``instruction_keys``: more keys of the instruction (a goal spec's ``groups_key``: which
    goals may be reached in either order)."""
    table = features_key(features)
    keys = ["obs", "goals", table] if table and q_head == "standard" else ["obs", "goals"]
    keys += [key for key in instruction_keys if key not in keys]
    if history:
        return dict(features_extractor_class=HistoryExtractor,
                    features_extractor_kwargs=dict(keys=keys, encoder=encoder))
    return dict(features_extractor_class=KeySelectExtractor, features_extractor_kwargs=dict(keys=keys))


def policy_kwargs(algo: Algo, hidden: int | None = None, history: int = 0, encoder: str = "gru",
                  features: str = "none", q_head: str = "standard", instruction_keys: Sequence[str] = ()
                  ) -> dict[str, Any]:
    kwargs = dict(algo.defaults["policy_kwargs"])
    if hidden is not None:
        kwargs["net_arch"] = [hidden, hidden]
    if q_head == "per-action":
        kwargs["action_key"] = features_key(features)
    return {**extractor_kwargs(history, encoder, features, q_head, instruction_keys), **kwargs}


def actor_critic_policy(head: str = "standard") -> Any:
    """SB3's ``ActorCriticPolicy``, or the per-action head of :mod:`sb3_hir.policies` (``--policy-head``)."""
    from stable_baselines3.common.policies import ActorCriticPolicy

    from sb3_hir.policies import PerActionActorCriticPolicy

    return PerActionActorCriticPolicy if head == "per-action" else ActorCriticPolicy


def policy_class(algo_name: str, q_head: str = "standard") -> Any:
    """The algorithm's policy: its own ``MultiInputPolicy``, or the per-action Q head of :mod:`sb3_hir.policies`."""
    if q_head == "standard":
        return ALGOS[algo_name].policy
    from sb3_hir.policies import PerActionDQNPolicy, PerActionQRDQNPolicy

    return {"dqn": PerActionDQNPolicy, "qrdqn": PerActionQRDQNPolicy}[algo_name]


def check_head(option: str, head: str, features: str) -> None:
    """A head is a known one, and the per-action head has a per-action table to read."""
    one_of(option, head, list(Q_HEADS))
    if head == "per-action" and features == "none":
        raise UsageError(f"{option} per-action scores each action from its row of the per-action table: add "
                         "--action-features effects or --action-features env")


def check_q_head(args: argparse.Namespace, algo_names: list[str]) -> None:
    """``--q-head per-action`` needs a Q-learning algorithm and a per-action table to read."""
    check_head("--q-head", args.q_head, args.action_features)
    if args.q_head == "standard":
        return
    other = [name for name in algo_names if name not in ("dqn", "qrdqn")]
    if other:
        raise UsageError(f"--q-head per-action is a Q head for dqn and qrdqn; --algo {other[0]} has none")


def check_history(args: argparse.Namespace) -> None:
    checked_int(args.history, "--history", 0, hint="0: no memory")
    one_of("history encoder", args.history_encoder, list(HISTORY_ENCODERS))
    one_of("--action-features", args.action_features, list(ACTION_FEATURE_CHOICES))


def memory_label(args: argparse.Namespace) -> str:
    label = f"history {args.history} ({args.history_encoder})" if args.history else "no history"
    label += f", action features {args.action_features}" if args.action_features != "none" else ""
    label += ", per-action Q head" if getattr(args, "q_head", "standard") == "per-action" else ""
    return label + (", per-action policy head" if getattr(args, "policy_head", "standard") == "per-action" else "")


# ---------------------------------------------------------------------------------------------------- goal specs
def goal_spec(args: argparse.Namespace, probe: Any, env_name: str) -> tuple[Any, str]:
    """The goal spec relabeling uses: ``--goal-spec``, else the one the env declares, else ``exact``."""
    kwargs = parse_kwargs(args.goal_spec_kwarg, option="--goal-spec-kwarg")
    if args.goal_spec is None:
        if kwargs:
            raise UsageError("--goal-spec-kwarg needs --goal-spec")
        spec = declared(probe, ENV_GOAL_SPEC)
        if spec is None:
            return resolvers.resolve_goal_spec("exact"), "exact"
        spec = resolvers.resolve_goal_spec(spec)
        return spec, f"{type(spec).__name__} (declared by env {env_name!r})"
    installed("goal_spec", args.goal_spec)
    factory = plugin_registry.get("goal_spec", args.goal_spec)
    with contextlib.suppress(TypeError, ValueError):
        if "env" in inspect.signature(factory).parameters and "env" not in kwargs:
            kwargs["env"] = probe
    try:
        spec = resolvers.resolve_goal_spec(args.goal_spec, argument="--goal-spec", **kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"goal spec {args.goal_spec!r} rejected {kwargs}: {exc}") from exc
    if not isinstance(spec, GoalSpec):
        raise UsageError(f"goal spec {args.goal_spec!r} built a {type(spec).__name__}, not a GoalSpec")
    return spec, args.goal_spec


def check_goal_spec(probe: Any, env_name: str, spec: Any, num_goals: int, label: str) -> None:
    """Relabeled data must be what the env produces: run the instruction-env check with this spec first."""
    try:
        relabeler = HindsightInstructionRelabeler(num_goals, strategy="none", goal_spec=spec)
        check_instruction_env(probe, relabeler=relabeler, n_episodes=2, max_steps=300)
    except (AssertionError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise UsageError(f"env {env_name!r} and goal spec {label} disagree, so relabeling would misrepresent the "
                         f"env (pass --goal-spec NAME): {detail}") from exc


def check_expert(name: str, env_name: str, kwargs: dict[str, Any]) -> None:
    """An expert that cannot act in the env says so in one line, naming the installed experts that can."""

    def serves(expert_name: str) -> str | None:
        try:  # an expert that reads the env labels from a wrapper of each env (sb3_hir.env_experts)
            venv = DummyVecEnv([with_expert_labels(lambda: resolvers.resolve_env(env_name, **kwargs), expert_name)])
        except Exception as exc:
            return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        try:
            expert = resolvers.resolve_expert(expert_name, venv=venv)
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


# ---------------------------------------------------------------------------------------------------- files
def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv(path: Path, records: Sequence[dict[str, Any]]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table, aligned so it also reads well in a terminal."""
    cells = [[str(h) for h in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *[line(row) for row in cells[1:]]])


def log_formats() -> list[str]:
    """SB3 logger formats of a run directory: CSV, plus TensorBoard when it is installed."""
    if importlib.util.find_spec("tensorboard") is not None:
        return ["csv", "tensorboard"]
    print("note: tensorboard is not installed; writing CSV logs only", file=sys.stderr)
    return ["csv"]


#: Marker file of a run directory: ``--overwrite`` only ever clears a directory that holds one.
RUN_MARKER = ".sb3-hir-run"
#: Lock file held (``flock``) while a process writes into a run directory.
LOCK_FILE = ".sb3-hir.lock"


def prepare_out(command: str, out_arg: str | None, overwrite: bool) -> tuple[Path, IO[str]]:
    """The run directory, created and locked: unique by default, never shared by accident.

    The default name has the time, the pid and a random suffix, so two runs started in the same second get
    two directories. An explicit ``--out`` that is not empty is refused unless ``--overwrite`` (which clears it,
    and only if an earlier sb3-hir run made it). A lock held for the process's life makes a second process
    writing into the same directory fail at once. Returns the directory and the open lock file.
    """
    out = _new_default_dir(command) if out_arg is None else _explicit_dir(out_arg)
    handle = lock(out)
    if out_arg is not None:
        contents = [path for path in out.iterdir() if path.name != LOCK_FILE]
        if contents and not overwrite:
            handle.close()
            raise UsageError(f"--out {str(out)!r} is not empty; pass --overwrite to replace the run in it, or choose "
                             "another directory")
        if contents:
            if not (out / RUN_MARKER).is_file():
                handle.close()
                raise UsageError(f"--overwrite refuses to clear {str(out)!r}: it was not made by sb3-hir (no "
                                 f"{RUN_MARKER} file)")
            for path in contents:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    (out / RUN_MARKER).write_text(json.dumps({"command": command, "pid": os.getpid()}) + "\n")
    return out, handle


def _new_default_dir(command: str) -> Path:
    while True:
        out = Path("runs") / f"{command}-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}-{secrets.token_hex(2)}"
        try:
            out.mkdir(parents=True, exist_ok=False)
            return out
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(f"cannot create the run directory {str(out)!r}: {exc.strerror}") from exc


def _explicit_dir(out_arg: str) -> Path:
    out = Path(out_arg)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} is an existing file; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {str(out)!r}: {exc.strerror}") from exc
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"--out {str(out)!r} is not writable")
    return out


def lock(out: Path) -> IO[str]:
    """Hold an exclusive ``flock`` on the run directory's lock file (released when the process ends)."""
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


# ---------------------------------------------------------------------------------------------------- pictures
def save_episode_pictures(model: Any, env_name: str, kwargs: dict[str, Any], folder: Path, seed: int,
                          stem: str = "episode", gif: bool = True, png: bool = True,
                          best_of: int = 1, history: int = 0, features: str = "none") -> tuple[Any, int] | None:
    """Record deterministic episodes (seeds ``seed``, ``seed + 1``, ...) and draw the one that got furthest.

    Up to ``best_of`` episodes are played, stopping at the first success; the picture's title says which one it
    shows, so a good episode is never passed off as a typical one. Returns (the episode drawn, episodes played),
    or None when the env cannot render.
    """
    try:
        return _draw_episode(model, env_name, kwargs, folder, seed, stem, gif, png, best_of, history, features)
    except Exception as exc:  # e.g. no OpenGL on a headless machine: the run and its results matter more
        detail = " ".join(str(exc).split())[:300]
        print(f"warning: no episode picture ({type(exc).__name__}: {detail}); the run's results are kept. On a "
              "headless machine set MUJOCO_GL=egl or MUJOCO_GL=osmesa", file=sys.stderr)
        return None


def _draw_episode(model: Any, env_name: str, kwargs: dict[str, Any], folder: Path, seed: int, stem: str,
                  gif: bool, png: bool, best_of: int, history: int = 0,
                  features: str = "none") -> tuple[Any, int] | None:
    try:
        env = make_env(env_name, kwargs, history=history, features=features, render_mode="rgb_array")
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
