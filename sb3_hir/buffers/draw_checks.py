"""What the buffer checks of every draw, whichever strategy made it: :class:`DrawWatch`.

A strategy's contract (refused with :class:`~sb3_hir.buffers.draws.DrawContractError`) holds each returned
instruction to its form. Two mistakes pass it and are still silently wrong, so the buffer checks every strategy's
admitted pairs, on both backends, where a source hands them to serving:

* a goal outside the goals' observation space: usually an event env's step that achieved nothing, with no
  ``nothing_value`` declared, served as a goal no instruction can hold;
* a strategy whose draws are all inadmissible for a while: every relabeled row is then served as recorded, and
  ``served_relabeled_share`` reads 0 without a word.

Both cost a few microseconds per ``sample()`` in the usual case (two reductions over the drawn goals, or one pass of
:func:`goals_within` with the compiled draw, and a counter); a built-in compiled draw on integer goals checks the
bounds in the kernel that writes the goals and says so (``GoalsInside``), which leaves the counter.
"""

from __future__ import annotations

import warnings

import numpy as np
from gymnasium import spaces

from sb3_hir.buffers import compiled
from sb3_hir.buffers.draws import DrawStrategy, DrawView, Relabeled
from sb3_hir.buffers.draws.base import GoalsInside
from sb3_hir.buffers.storage import Storage

__all__ = ["DRY_DRAWS", "DrawWatch", "check_draw", "check_goals_in_space", "goals_within", "uniform_bounds"]

#: consecutive draws that admit no pair, while finished episodes exist, before :class:`DrawWatch` warns: a healthy
#: strategy admits some pair within a few batches even early in training.
DRY_DRAWS = 50

#: goal dtypes :func:`goals_within` takes (numba's integers and floats).
_KERNEL_DTYPES = frozenset(np.dtype(char) for char in "bBhHiIlLqQfd")


def check_goals_in_space(relabeled: Relabeled, view: DrawView, space: spaces.Space, strategy: str,
                         uniform: tuple[float, float] | None = None, warm: set[str] | None = None) -> None:
    """Refuse drawn goals outside ``space`` (the goals' Box), naming the key, the value, the bounds and the likely
    fix. The spec's own markers (mask, wildcard, padding) are left to the spec, which may place them outside; a goal
    holding the declared nothing value is never drawn (``GoalSpec.is_nothing``), so one outside the space is refused
    too.

    ``uniform``: the Box's bounds when every component shares them (:func:`uniform_bounds`), which settles the usual
    case, every goal inside, in two reductions; ``warm``: the kernels called (``compiled.call``) when the draw runs
    compiled, which settles it in one pass (:func:`goals_within`) instead.
    """
    if not isinstance(space, spaces.Box) or not len(relabeled.goals):
        return
    goals, spec = relabeled.goals, view.goal_spec
    if uniform is not None:
        if warm is not None and goals.dtype in _KERNEL_DTYPES:
            inside = compiled.call(warm, goals_within, goals.reshape(-1), uniform[0], uniform[1])
        else:
            inside = goals.min() >= uniform[0] and goals.max() <= uniform[1]
        if inside:
            return
    outside = (goals < np.broadcast_to(space.low, goals.shape[1:])) | (goals > np.broadcast_to(space.high,
                                                                                                goals.shape[1:]))
    for marker in ("mask_value", "wildcard_value", "pad_value"):
        value = getattr(spec, marker, None)
        if value is not None:
            outside &= goals != value
    if not outside.any():
        return
    b, j = (int(i) for i in np.argwhere(outside.reshape(len(goals), goals.shape[1], -1).any(axis=-1))[0])
    key, goal = spec.goals_key, goals[b, j]
    nothing = spec.nothing_value
    hint = (f"declare it as the goal spec's nothing_value (e.g. {type(spec).__name__}(nothing_value="
            f"{np.asarray(goal).ravel()[0].item()!r}, ...)), so such a step is never drawn"
            if nothing is None else f"the spec declares nothing_value={nothing!r}; widen the space or fix the env")
    raise ValueError(
        f"draw strategy {strategy} drew goal {np.asarray(goal).tolist()} (slot {j}) for the transition at step "
        f"{int(relabeled.t[b])} of its episode, outside observation_space[{key!r}] = Box(low={space.low.min()!r}, "
        f"high={space.high.max()!r}): an achieved value no instruction can hold. If it marks a step that achieved "
        f"nothing, {hint}"
    )


@compiled.kernel
def goals_within(goals: np.ndarray, low: float, high: float) -> bool:
    """Whether every value of ``goals`` (flat) lies in ``[low, high]`` (a NaN does not): ``goals.min() >= low and
    goals.max() <= high`` in one pass, stopping at the first value outside."""
    for i in range(goals.shape[0]):
        value = goals[i]
        if not (value >= low and value <= high):
            return False
    return True


def uniform_bounds(space: spaces.Space) -> tuple[float, float] | None:
    """A Box's ``(low, high)`` when every component shares them, else None."""
    if not isinstance(space, spaces.Box) or space.low.min() != space.low.max() or space.high.min() != space.high.max():
        return None
    return float(space.low.min()), float(space.high.max())


class DrawWatch:
    """Counts a source's draws that admit no pair although finished episodes exist, and warns once (module
    docstring). Kept by the source, pickled with it."""

    def __init__(self) -> None:
        self.dry = 0
        self.warned = False
        #: the goals' space and its uniform bounds (:func:`uniform_bounds`), read once.
        self.bounds: tuple[spaces.Space, tuple[float, float] | None] | None = None

    def see(self, relabeled: Relabeled | None, view: DrawView, draws: DrawStrategy) -> None:
        """Record one draw's outcome; after :data:`DRY_DRAWS` dry ones in a row, warn naming the strategy and why."""
        if self.warned:
            return
        if relabeled is not None and len(relabeled.flat):
            self.dry = 0
            return
        self.dry += 1
        if self.dry < DRY_DRAWS:
            return
        # Read the whole index once per DRY_DRAWS empty draws, not per draw: before the first episode ends (a long
        # first episode in a large buffer), nothing could be drawn, and that is no fault.
        if view.index is None or not (view.index.meta[..., view.index.field["len"]] > 0).any():
            self.dry = 0
            return
        self.warned = True
        nothing = view.goal_spec.nothing_value
        cause = ("every drawn instruction holds a goal that is the goal spec's nothing_value "
                 f"({nothing!r}: a step that achieved nothing, e.g. 'final' on event goals whose episodes end on such "
                 "a step), or ends before its transition (its last goal reached at or before it)"
                 if nothing is not None else
                 "every drawn instruction ends before its transition (its last goal reached at or before it), or is "
                 "refused by the strategy (keep False)")
        warnings.warn(
            f"draw strategy {draws.name} admitted no relabeled pair in {DRY_DRAWS} draws in a row, although finished "
            f"episodes exist: {cause}. Relabeled rows are served as recorded (served_relabeled_share stays at 0); "
            "choose another draw strategy or goal_step",
            stacklevel=6,
        )


def check_draw(relabeled: Relabeled | None, view: DrawView, storage: Storage, draws: DrawStrategy,
               watch: DrawWatch) -> None:
    """Both checks on one draw of a source (module docstring); a compiled draw's kernel has made the bounds check
    when it returns :class:`~sb3_hir.buffers.draws.base.GoalsInside`."""
    watch.see(relabeled, view, draws)
    if relabeled is None or isinstance(relabeled, GoalsInside):
        return
    space = storage.observation_space[view.goal_spec.goals_key]
    cached = watch.__dict__.get("bounds")
    if cached is None or cached[0] is not space:  # once per source (and after loading)
        cached = watch.bounds = (space, uniform_bounds(space))
    uniform = cached[1]
    if uniform is not None and uniform[0] == -np.inf and uniform[1] == np.inf:
        return  # an unbounded Box (GoalEnvs' goals): nothing lies outside
    check_goals_in_space(relabeled, view, space, draws.name, uniform, draws.warm if draws.compiled else None)
