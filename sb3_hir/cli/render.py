"""``sb3-hir render MODEL``: draw one deterministic episode of a model saved by ``sb3-hir train``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sb3_hir.cli.common import (
    ACTION_FEATURE_CHOICES,
    ALGOS,
    UsageError,
    algo_class,
    checked_int,
    installed,
    make_env,
    one_of,
    parse_kwargs,
    save_episode_pictures,
    set_threads,
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("render", help="write a GIF/PNG of one episode of a saved model",
                       description="Play one deterministic episode of MODEL (a model.zip from sb3-hir train; its "
                                   "run.json supplies algorithm and env options) and draw it.")
    p.add_argument("model", metavar="MODEL", help="path of the saved model .zip")
    p.add_argument("--algo", metavar="ALGO", help="algorithm of MODEL when there is no run.json next to it")
    p.add_argument("--env", metavar="NAME", help="env plugin name (default: the run's env)")
    p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help="override an env option")
    p.add_argument("--action-features", metavar="NAME",
                   help="the per-action table MODEL was trained with (none, effects, env; default: the run's, from "
                        "run.json); the Q head is part of MODEL")
    p.add_argument("--seed", type=int, metavar="N", default=0, help="episode seed (default 0)")
    p.add_argument("--best-of", type=int, default=1, metavar="N",
                   help="play seeds SEED..SEED+N-1 and draw the episode that reached most goals (default 1)")
    p.add_argument("--out", metavar="FILE",
                   help="output .gif or .png (default: MODEL-episode.gif and .png beside MODEL)")
    p.set_defaults(func=run)
    return p


def read_run(model_path: Path) -> dict[str, Any]:
    """The ``run.json`` beside the model (algorithm and env options), or ``{}`` when there is none."""
    run_file = model_path.parent / "run.json"
    try:
        stored = json.loads(run_file.read_text()) if run_file.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read {run_file} ({exc}); pass --algo and --env to render without it") from exc
    if not isinstance(stored, dict):
        raise UsageError(f"{run_file} does not hold a run description (a JSON object); pass --algo and --env")
    return stored


def load_model(algo_name: str, model_path: Path) -> Any:
    try:
        return algo_class(algo_name).load(model_path, device="cpu")
    except Exception as exc:  # a zip of another algorithm or not a model at all
        raise UsageError(f"cannot load {model_path} as {algo_name}: {type(exc).__name__}: {exc}") from exc


def check_spaces(model: Any, env_name: str, env_kwargs: dict[str, Any], history: int, features: str = "none") -> None:
    """The env must be the one the model was trained on (actions first: with history they shape the window)."""
    probe = make_env(env_name, env_kwargs, history=history, features=features)
    try:
        for what in ("action_space", "observation_space"):
            if getattr(probe, what) != getattr(model, what):
                shown = " ".join(str(getattr(model, what)).split())
                raise UsageError(f"the model was trained with {what} {shown}, but env {env_name!r} {env_kwargs} "
                                 f"has {' '.join(str(getattr(probe, what)).split())}; render it with the run's env "
                                 "options")
    finally:
        probe.close()


def stored_features(stored: dict[str, Any]) -> str:
    """The run's ``--action-features``; run.json files before it have ``action_effects`` (True: the effect table)."""
    if "action_features" in stored:
        return str(stored["action_features"])
    return "effects" if stored.get("action_effects") else "none"


def run(args: argparse.Namespace) -> int:
    """``sb3-hir render``."""
    model_path = Path(args.model)
    checked_int(args.best_of, "--best-of", 1)
    if not model_path.is_file():
        raise UsageError(f"MODEL {str(model_path)!r} is not a file (expected a model .zip saved by sb3-hir train)")
    stored = read_run(model_path)
    algo_name = args.algo or stored.get("algo")
    if algo_name is None:
        raise UsageError(f"no run.json next to {model_path}: pass --algo ({', '.join(ALGOS)})")
    one_of("algorithm", algo_name, list(ALGOS))
    env_name = args.env or stored.get("env", "mazerunner")
    installed("env", env_name)
    env_kwargs = dict(stored.get("env_kwargs", {})) if env_name == stored.get("env", "mazerunner") else {}
    env_kwargs.update(parse_kwargs(args.env_kwarg))
    out = Path(args.out) if args.out else model_path.with_name(f"{model_path.stem}-episode.gif")
    if out.suffix not in (".gif", ".png"):
        raise UsageError(f"--out must end in .gif or .png; got {str(out)!r}")
    set_threads()
    model = load_model(algo_name, model_path)
    history = int(stored.get("history") or 0)
    features = args.action_features or stored_features(stored)
    one_of("--action-features", features, list(ACTION_FEATURE_CHOICES))
    check_spaces(model, env_name, env_kwargs, history, features)
    drawn = save_episode_pictures(model, env_name, env_kwargs, out.parent, seed=args.seed, stem=out.stem,
                                  gif=out.suffix == ".gif" or args.out is None,
                                  png=out.suffix == ".png" or args.out is None, best_of=args.best_of,
                                  history=history, features=features)
    if drawn is None:
        raise UsageError(f"env {env_name!r} does not render rgb_array frames")
    episode, played = drawn
    written = [out] if args.out else [out, out.with_suffix(".png")]
    goals = "" if episode.goals_reached is None else f", goals reached {episode.goals_reached}"
    which = f", best of {played} episodes" if played > 1 else ""
    print(f"episode (seed {episode.seed}{which}): success {episode.is_success}, {episode.length} steps{goals}; "
          f"wrote {', '.join(map(str, written))}")
    return 0
