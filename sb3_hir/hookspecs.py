"""Hook specifications: one ``register_*`` hook per component kind.

A plugin is any module (or object) with functions decorated by :data:`hookimpl` and named after these specs,
made discoverable through an entry point in the ``sb3_hir`` group. Each hook receives a ``register``
callable and calls it once per component::

    from sb3_hir import hookimpl

    @hookimpl
    def register_beta_schedules(register):
        register("cosine", CosineBetaSchedule, description="beta follows half a cosine to 0")

``register(name, factory, description=None)``: ``factory(**kwargs)`` builds the component; it is usually the
class itself. Names are unique per kind across all installed plugins.
"""

from __future__ import annotations

from typing import Any, Protocol

import pluggy

#: pluggy project name and entry-point group.
PROJECT_NAME = "sb3_hir"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class Register(Protocol):
    """The callable every ``register_*`` hook receives."""

    def __call__(self, name: str, factory: Any, description: str | None = None) -> None: ...


@hookspec
def register_relabelers(register: Register) -> None:
    """Register relabelers (kind ``"relabeler"``).

    The factory is called as ``factory(num_goals=k, goal_spec=..., **kwargs)`` and returns an object with
    ``num_goals``, ``goal_spec``, ``relabel_goals(episode, rng)``, ``reach_steps(achieved, goals)`` (also taking
    ``groups`` when the goal spec declares a ``groups_key``), ``replay(episode, goals)`` and
    ``relabel(episode, rng)``; subclassing :class:`sb3_hir.relabel.InstructionRelabeler` provides all but
    ``relabel_goals``. An optional
    ``draw_goal_steps(own_steps, length, t, rng, goal_selection)`` (see
    :meth:`sb3_hir.relabel.HindsightInstructionRelabeler.draw_goal_steps`) lets the replay buffer draw a fresh
    instruction per sampled transition; without it the buffer stores a few ``relabel_goals`` draws per episode.
    """


@hookspec
def register_goal_specs(register: Register) -> None:
    """Register goal specifications (kind ``"goal_spec"``).

    The factory returns a :class:`sb3_hir.goals.GoalSpec`: where the instruction and the achieved value live in
    the observation, the mask value, the reward per goal and a vectorized ``reached(achieved, goal)``.
    """


@hookspec
def register_envs(register: Register) -> None:
    """Register instruction environments (kind ``"env"``).

    The factory is called with keyword arguments only and returns a ``gymnasium.Env`` whose observation is a
    ``Dict`` with the instruction contract: ``"obs"``, ``"goals"`` (k goals, reached ones masked) and
    ``"achieved"``, with ``info["is_success"]`` set on every step.
    """


@hookspec
def register_experts(register: Register) -> None:
    """Register expert policies (kind ``"expert"``).

    The factory is called as ``factory(venv, **kwargs)`` and returns an object with SB3's
    ``predict(observation, state=None, episode_start=None, deterministic=True)``, usable as a DAgger expert
    and as imitation's ``expert_policy``. An expert that labels from the env's state (a planner, a scripted bot)
    registers an :class:`sb3_hir.env_experts.EnvStateExpertFactory`, whose envs
    :func:`sb3_hir.env_experts.with_expert_labels` wraps.
    """


@hookspec
def register_beta_schedules(register: Register) -> None:
    """Register DAgger beta schedules (kind ``"beta_schedule"``).

    The factory returns a callable ``schedule(round_num) -> beta`` with ``beta`` in ``[0, 1]``, as imitation's
    :class:`imitation.algorithms.dagger.BetaSchedule` does.
    """


@hookspec
def register_draw_strategies(register: Register) -> None:
    """Register draw strategies of the replay buffers (kind ``"draw_strategy"``).

    The factory is called with keyword arguments only (the buffers' ``draw_kwargs``) and returns a
    :class:`sb3_hir.buffers.draws.DrawStrategy`: how a relabeled transition gets its hindsight instruction. Each
    source of rows (a buffer's online rows, its demonstrations) binds its own copy. See the docs' "Write your own
    draw strategy".
    """


#: Component kind -> name of the hook that registers it.
HOOKS: dict[str, str] = {
    "relabeler": "register_relabelers",
    "goal_spec": "register_goal_specs",
    "env": "register_envs",
    "expert": "register_experts",
    "beta_schedule": "register_beta_schedules",
    "draw_strategy": "register_draw_strategies",
}
