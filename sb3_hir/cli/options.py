"""The options the ``sb3-hir`` commands share, and the parser whose errors are one line like every other error."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

from sb3_hir import plugins as plugin_registry
from sb3_hir.cli.common import MAZE_OPTIONS, USAGE_EXIT, UsageError


def names(kind: str) -> str:
    """Installed names of ``kind``, for --help (a broken plugin never breaks the help)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ", ".join(plugin_registry.available(kind)) or "none installed"
    except Exception as exc:  # pragma: no cover - a conflicting registration reported elsewhere
        return f"unavailable ({type(exc).__name__})"


def add_goal_spec_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--goal-spec", metavar="NAME",
                   help="goal spec relabeling judges goals by (default: the one the env declares, else exact); "
                        f"installed: {names('goal_spec')}")
    p.add_argument("--goal-spec-kwarg", action="append", default=[], metavar="KEY=VALUE",
                   help="goal spec argument (repeatable), e.g. tolerance=0.5")


def add_run_options(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--out", metavar="DIR",
                   help=f"run directory (default runs/{command}-<time>-<pid>-<random>); refused when not empty")
    p.add_argument("--overwrite", action="store_true",
                   help="clear a non-empty --out made by an earlier sb3-hir run and write the new run there")


def add_run_env_options(p: argparse.ArgumentParser, command: str, progress_help: str, continuous_help: str) -> None:
    """What every training command ends with: its run directory, progress bars, the goal spec and the env."""
    add_run_options(p, command)
    p.add_argument("--no-progress", action="store_true", help=progress_help)
    add_goal_spec_options(p)
    add_env_options(p, continuous_help)


def add_command(sub: Any, name: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                run: Callable[[argparse.Namespace], int], **texts: str) -> argparse.ArgumentParser:
    """The sub-command ``name`` with its options and the function that runs it (``texts``: help, description)."""
    p = sub.add_parser(name, **texts)
    add_arguments(p)
    p.set_defaults(func=run)
    return p


def add_env_options(p: argparse.ArgumentParser, continuous_help: str) -> None:
    g = p.add_argument_group("environment")
    g.add_argument("--env", default="mazerunner", metavar="NAME",
                   help=f"env plugin name (default: mazerunner); installed: {names('env')}")
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


def add_relabel_option(p: argparse.ArgumentParser, what: str, **kwargs: Any) -> None:
    """``--relabel``: a strategy of the built-in relabeler (some, all, none) or a relabeler plugin's name."""
    p.add_argument("--relabel", metavar="NAME", **kwargs,
                   help=f"{what}: some, all, none or relabeler plugin names; installed: {names('relabeler')}")


def add_history_options(p: argparse.ArgumentParser, default: int, head: str, head_what: str) -> None:
    """The memory options, in one group of ``--help``: the window, the per-action table and the head reading it."""
    p = p.add_argument_group("memory")  # type: ignore[assignment]
    p.add_argument("--history", type=int, metavar="N", default=default,
                   help="memory: the last N observations and actions enter the observation (HistoryWrapper) and the "
                        f"policy encodes them (HistoryExtractor); 0 for none (default {default})")
    p.add_argument("--action-features", default="none", metavar="NAME",
                   help="memory for controls that change every episode (Discrete actions): a per-action table of "
                        "what each action was seen to do enters the observation; effects: the generic table "
                        "(ActionEffectWrapper), env: the env's own (MazeRunner: the moves each action can still be); "
                        "default none")
    p.add_argument("--history-encoder", default="conv", metavar="NAME",
                   help="how the policy encodes the window: conv or gru (default conv: it learned MazeRunner as well "
                        "as the GRU at 0.8x its cost)")
    add_head_option(p, head, head_what)


def add_expert_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--expert``: an expert plugin's name."""
    p.add_argument("--expert", default="shortest-path", metavar="NAME",
                   help=f"{what} (default shortest-path); installed: {names('expert')}")


def add_demo_options(p: argparse.ArgumentParser) -> None:
    """The demonstration options, in one group of ``--help``: where the episodes come from and their share."""
    g = p.add_argument_group("demonstrations")
    g.add_argument("--demos", type=int, metavar="N", default=0,
                   help="N episodes of --expert, played in the training env (its wrappers included), go into the "
                        "replay buffer's demonstration region before training (default 0)")
    add_expert_option(g, "the expert playing --demos")  # type: ignore[arg-type]
    g.add_argument("--demos-from", metavar="PATH",
                   help="demonstrations from DAgger round files: a round file, a round directory or a scratch "
                        "directory (sb3-hir dagger's --out/scratch); they must be observed as the training env is")
    g.add_argument("--demo-ratio", type=float, metavar="X", default=None,
                   help="share of each batch from the demonstrations, in [0, 1] (default 0.5 with --demos or "
                        "--demos-from: symmetric sampling; without either it is refused, as nothing would be served)")


def add_head_option(p: argparse.ArgumentParser, flag: str, what: str) -> None:
    """``--q-head`` / ``--policy-head``: the same choice for a Q network's outputs and a policy's logits."""
    p.add_argument(flag, default="standard", metavar="NAME",
                   help=f"{what}: standard (one output per action index) or per-action (one network scores each "
                        "action from its --action-features row: for controls that change every episode); default "
                        "standard")


class ArgumentParser(argparse.ArgumentParser):
    """argparse with its errors in one line, as every other error of the CLI (no usage block around it).

    ``raises``: raise the error as a :class:`UsageError` instead of exiting, for a parser the CLI runs on
    arguments it wrote itself (a sweep's trials), so the command reports it as its own one line.
    """

    raises = False

    def error(self, message: str) -> Any:
        line = " ".join(message.split())
        if self.raises:
            raise UsageError(line)
        self.exit(USAGE_EXIT, f"{self.prog}: error: {line} (see {self.prog} --help)\n")
