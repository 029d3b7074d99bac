"""Whether a relabeled success is served as terminal: :class:`SuccessTermination`, shared by every source.

In instruction mode the goal spec decides (the k-th goal ends the episode). In GoalEnv mode it is a setting
(``terminate_on_success``), decided from the env when the buffer is built, or left to the recorded episodes: GoalEnvs
without ``compute_terminated`` (SB3's BitFlippingEnv, highway-env's parking) end on success, and one recorded episode
that goes on after reaching its own goal shows this one does not, from then on. The online rows' episode index counts
that evidence; the demonstrations are served under the same decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sb3_hir._validate import ArgumentError

__all__ = ["SuccessTermination"]


class SuccessTermination:
    """The buffer's ``terminates_on_success`` (module docstring).

    :param setting: True or False as given (or as decided from the env), None to let the recorded episodes decide.
    :param evidence: the online rows' episode index, which counts the recorded episodes that went on after reaching
        their own goal (``episodes_going_on_after_goal``).
    """

    def __init__(self, setting: bool | None, evidence: Any) -> None:
        self.setting = setting
        self.evidence = evidence

    @property
    def setting(self) -> bool | None:
        return self._setting

    @setting.setter
    def setting(self, value: bool | None) -> None:
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise ArgumentError("terminate_on_success", f"must be True, False or None (decide from the env); got "
                                f"{value!r}")
        self._setting = None if value is None else bool(value)

    @property
    def terminates(self) -> bool:
        """Whether a relabeled transition whose next achieved goal reaches its goal is served as terminal."""
        if self._setting is not None:
            return self._setting
        return self.evidence.episodes_going_on_after_goal == 0
