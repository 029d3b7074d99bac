"""Optional dependencies: which extra brings which library, and the one-line error when it is missing.

The core (relabeling, buffer, wrappers, MazeRunner, ``sb3-hir train``, the checks) needs only SB3 and gymnasium,
so it installs on the newest gymnasium. imitation pins gymnasium 0.29, so DAgger and everything that builds on
imitation come with the ``dagger`` extra: ``pip install 'sb3-hir[dagger]'``. On gymnasium 1.x that extra would
replace the user's gymnasium with 0.29 (or find no solution), so the hint there is the ``dagger-gymnasium1`` extra
and imitation without its dependencies (docs/guide/install.md). Ray Tune and Optuna, for ``sb3-hir sweep``, come
with the ``sweep`` extra.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "has", "install_hint", "require"]

#: Top-level module -> the extra of ``sb3-hir`` that installs it.
EXTRAS = {"imitation": "dagger", "ray": "sweep", "optuna": "sweep"}


class MissingExtraError(ImportError):
    """A feature's optional dependency is not installed; the message names the extra to install."""


def has(module: str) -> bool:
    """Whether ``module`` (a top-level package) is installed, without importing it."""
    return importlib.util.find_spec(module) is not None


def install_hint(top: str, gymnasium_version: str | None = None) -> str:
    """The install command for the top-level package ``top``, for the gymnasium installed (or ``gymnasium_version``).

    imitation 1.0 pins gymnasium ~=0.29: on gymnasium 1.x the ``dagger`` extra would downgrade it, so the hint
    installs the ``dagger-gymnasium1`` extra and imitation with ``--no-deps`` instead.
    """
    extra = EXTRAS.get(top)
    if extra is None:
        return f"pip install {top}"
    if top == "imitation":
        if gymnasium_version is None:
            import gymnasium

            gymnasium_version = gymnasium.__version__
        if int(gymnasium_version.split(".")[0]) >= 1:
            return "pip install 'sb3-hir[dagger-gymnasium1]' && pip install --no-deps imitation==1.0.0"
    return f"pip install 'sb3-hir[{extra}]'"


def require(module: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtraError` saying which extra installs it.

    :param module: dotted module name, e.g. ``"imitation.data.types"``.
    :param feature: what needs it, for the message (``"sb3_hir.dagger"``, ``"sb3-hir dagger"``).
    """
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if has(top):  # installed but broken: say so rather than send the user to install it again
            raise
        raise MissingExtraError(f"{feature} needs {top}, which is not installed: {install_hint(top)}") from error
