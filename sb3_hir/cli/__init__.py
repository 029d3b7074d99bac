"""The ``sb3-hir`` command. The library never imports this package.

``sb3-hir train`` compares relabeling strategies on one env and algorithm (default: MazeRunner + DQN, HIR "some"
against no relabeling); ``sb3-hir dagger`` runs DAgger against the shortest-path expert; ``sb3-hir render MODEL``
draws an episode of a saved model; ``sb3-hir plugins`` lists what is installed; ``sb3-hir sweep`` runs ``train``
over a grid on Ray Tune. Bad input (unknown names, incompatible combinations) ends with one ``error:`` line on
stderr and exit code 2. One module per command; :mod:`.common` holds what they share, :mod:`.options` their shared
options, :mod:`.parser` the parser.

The command modules import gymnasium, whose env plugins (gymnasium-robotics) print notices when loaded, so they are
imported here with that output kept off the command's own (``sb3-hir --verbose`` lets it through).
"""

from __future__ import annotations

import contextlib
import io
import sys

_IMPORT_NOTICES = io.StringIO()
with contextlib.ExitStack() as _quiet:
    if "--verbose" not in sys.argv[1:]:
        _quiet.enter_context(contextlib.redirect_stderr(_IMPORT_NOTICES))
        _quiet.enter_context(contextlib.redirect_stdout(_IMPORT_NOTICES))
    from sb3_hir.cli.common import (
        ALGOS,
        LOCK_FILE,
        MAZE_OPTIONS,
        RUN_MARKER,
        STRATEGIES,
        TRAIN_HISTORY,
        TRAIN_TIMESTEPS,
        USAGE_EXIT,
        Algo,
        UsageError,
    )
    from sb3_hir.cli.dagger import DAGGER_OPTIONS_FILE
    from sb3_hir.cli.parser import build_parser, main

__all__ = [
    "ALGOS",
    "DAGGER_OPTIONS_FILE",
    "LOCK_FILE",
    "MAZE_OPTIONS",
    "RUN_MARKER",
    "STRATEGIES",
    "TRAIN_HISTORY",
    "TRAIN_TIMESTEPS",
    "USAGE_EXIT",
    "Algo",
    "UsageError",
    "build_parser",
    "main",
]
