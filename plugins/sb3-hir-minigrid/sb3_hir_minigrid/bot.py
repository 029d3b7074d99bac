"""BabyAI's own bot (``minigrid.utils.baby_ai_bot.BabyAIBot``, minigrid >= 3.0) as an env-state DAgger expert.

The bot does not map an observation to an action: it plans from the env's state (the full grid, the mission's
instruction tree) and its own memory (the cells it has seen, a stack of subgoals), and replans after every action
it did not choose. :class:`BabyAIBotExpert` is that as an :class:`sb3_hir.env_experts.EnvStateExpert`: a new bot per
episode, ``replan`` once per visited state, given the executed action when it differs from the bot's suggestion
(BabyAI's own contract: ``None`` means "my suggestion was taken"). The plugin registers it as the ``"expert"``
``"babyai-bot"`` (:data:`BABYAI_BOT`, an :class:`~sb3_hir.env_experts.EnvStateExpertFactory`).

Two repairs, both counted. The bot raises ``DisappearedBoxError`` when the *agent* toggles a box, assuming the
mission is then lost. In a go-to level it is not (BabyAI's verifier keeps a toggled-away box's cell as the goal's
position until the next ``drop``), and a DAgger learner toggles boxes, so the bot is asked again with that check
passed (:attr:`BabyAIBotExpert.box_repairs`). And the bot's plan can break under a learner's actions: measured on
GoTo with a uniform-random learner, its stack held a ``DropSubgoal`` after the learner had dropped the object itself
(``AssertionError`` in ``replan``). Then a new bot takes over from the current state, as if the episode began there
(:attr:`BabyAIBotExpert.restarts`; it has not seen the cells the old one had, and it plans the whole mission again,
parts already done included, which BabyAI's verifier counts as done). ``restart_on_failure=False`` raises instead;
a failure of the new bot too is a :class:`BotStuckError` naming the level, the mission and the step.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import gymnasium as gym

from sb3_hir.env_experts import EnvStateExpert, EnvStateExpertFactory
from sb3_hir.extras import MissingExtraError

__all__ = ["BABYAI_BOT", "BabyAIBotExpert", "BotStuckError", "BotUnavailableError", "check_bot_available"]

#: minigrid's ``Actions.done``: the bot's answer once its plan is empty.
DONE = 6


class BotUnavailableError(MissingExtraError):
    """The installed minigrid has no BabyAI bot (it came with minigrid 3.0)."""


class BotStuckError(RuntimeError):
    """BabyAI's bot failed to suggest an action for a state (an exception inside its planner)."""


def _minigrid_version() -> str:
    try:
        return importlib.metadata.version("minigrid")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def check_bot_available() -> None:
    """Raise :class:`BotUnavailableError` (one sentence naming the version and profile that have it) when the
    installed minigrid has no ``minigrid.utils.baby_ai_bot``."""
    try:
        import minigrid.utils.baby_ai_bot  # noqa: F401
    except ImportError:
        raise BotUnavailableError(
            f"expert 'babyai-bot' is BabyAI's bot, minigrid.utils.baby_ai_bot.BabyAIBot, which minigrid ships from "
            f"3.0 on; this environment has minigrid {_minigrid_version()} (the gymnasium 0.29 'dagger' profile, "
            ".venv, pins 2.3.1): use the 'current' profile (.venv-current: gymnasium 1.x, minigrid 3.0.0) or "
            "pip install 'minigrid>=3.0,<3.1'"
        ) from None


class BabyAIBotExpert(EnvStateExpert):
    """BabyAI's bot labelling each visited state of a BabyAI level; a new bot per episode.

    :param restart_on_failure: when the bot's planner fails, let a new bot take over from the current state (see
        the module's docstring); False raises :class:`BotStuckError` at once.
    :ivar replans: steps where the executed action was not the bot's suggestion (the bot replanned after it).
    :ivar box_repairs: toggled boxes the bot was asked past.
    :ivar restarts: failures of the bot's planner after which a new bot took over.
    """

    def __init__(self, restart_on_failure: bool = True) -> None:
        check_bot_available()
        from minigrid.utils.baby_ai_bot import BabyAIBot, DisappearedBoxError

        self._bot_class = BabyAIBot
        self._box_error = DisappearedBoxError
        self._bot: Any = None
        self._suggested: int | None = None
        self._taken: int | None = None
        self._step = 0
        self.restart_on_failure = bool(restart_on_failure)
        self.replans = 0
        self.box_repairs = 0
        self.restarts = 0

    def reset(self, env: gym.Env) -> None:
        if not hasattr(env, "instrs"):
            raise ValueError(f"expert 'babyai-bot' labels BabyAI levels; {type(env).__name__} has no BabyAI "
                             "instruction (env.instrs)")
        self._bot = self._bot_class(env)
        self._suggested = None
        self._taken = None
        self._step = 0

    def observe(self, env: gym.Env, action: Any) -> None:
        taken = int(action)
        self._step += 1
        if taken != self._suggested:
            self._taken = taken
            self.replans += 1
        else:
            self._taken = None  # BabyAI's contract: None is "the suggested action was taken"

    def _replan(self) -> Any:
        try:
            return self._bot.replan(self._taken)
        except self._box_error:
            # The agent toggled a box away: the go-to mission goes on, so pass the bot's check and ask again (the
            # check runs before any change to the bot's plan; the seen cells it updated are idempotent).
            self._bot.prev_fwd_cell = None
            self.box_repairs += 1
            return self._bot.replan(self._taken)

    def _stuck(self, env: gym.Env, exc: Exception, when: str) -> BotStuckError:
        spec = getattr(env, "spec", None)
        level = spec.id if spec is not None else type(env).__name__
        return BotStuckError(f"BabyAI's bot failed {when}at step {self._step} of {level!r}, mission "
                             f"{getattr(env, 'mission', '?')!r}: {type(exc).__name__}: {exc}")

    def act(self, env: gym.Env) -> int:
        if self._bot is None:
            raise RuntimeError("BabyAIBotExpert.act before reset: the wrapper resets it at each episode start")
        try:
            action = self._replan()
        except Exception as exc:
            if not self.restart_on_failure:
                raise self._stuck(env, exc, "") from exc
            self.restarts += 1
            self._bot = self._bot_class(env)
            self._taken = None
            try:
                action = self._bot.replan()
            except Exception as again:
                raise self._stuck(env, again, "again after a restart ") from again
        if action is None:
            raise self._stuck(env, ValueError("no action suggested"), "")
        self._suggested = int(action)
        self._taken = None
        return self._suggested


def babyai_bot(restart_on_failure: bool = True) -> BabyAIBotExpert:
    """BabyAI's bot (minigrid >= 3.0) labelling from the env's state; replans after the learner's actions."""
    return BabyAIBotExpert(restart_on_failure=restart_on_failure)


#: What the plugin registers as the expert ``"babyai-bot"``.
BABYAI_BOT = EnvStateExpertFactory(babyai_bot, check=check_bot_available, env="babyai-goto")
