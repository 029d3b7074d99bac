"""Buffers pickled before the buffer was laid out by concept: their state made today's.

SB3's ``save_replay_buffer`` pickles the buffer's ``__dict__``. It used to hold the episode index (``_meta``,
``_field``, ``_row_head``, ...) and the draw mode as flags (``batched_draws``, ``exact_index``, ...) on the buffer
itself; :func:`upgrade` builds the draw strategy, the episode index and the serving from them, so a saved buffer
loads and serves on as before (the same draws: its generator and episode index carry over;
``tests/buffers/test_legacy_pickles.py`` loads buffers pickled at cf051ef, the last commit with that layout).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from sb3_hir.buffers.draws import DrawStrategy, DrawView, StoredDraws
from sb3_hir.buffers.layout import FullLayout
from sb3_hir.buffers.options import BufferOptions, build_index, choose_serving, rebuilt_serving
from sb3_hir.buffers.serving import Served
from sb3_hir.buffers.source import Source
from sb3_hir.buffers.storage import Cursor, Storage

__all__ = ["adopt_parts", "is_legacy", "upgrade", "upgrade_state"]

#: What the earlier layout kept on the buffer and today's keeps in its components (or derives).
_LEGACY_KEYS = (
    "_meta", "_field", "_id_mask", "_row_head", "_episode_start", "_num_adds", "_draw_goals", "_draw_reach",
    "_admitted", "_warned_too_long", "_warned_reward_scale", "episodes_ending_at_goal", "episodes_going_on_after_goal",
    "batched_draws", "exact_index", "builtin_draws", "single_index", "has_success_test", "_strategy_code",
    "_slot_masks", "jit", "_single_cfg", "_reach_cfg", "_exact_cfg", "_warm_kernels",
)


def is_legacy(state: dict[str, Any]) -> bool:
    """Whether a pickled buffer's state has the earlier layout."""
    return "_meta" in state


def upgrade(buffer: Any, state: dict[str, Any], choose_draws: Callable[[BufferOptions], DrawStrategy]) -> None:
    """Give ``buffer`` (its ``__dict__`` updated from the legacy ``state``) today's components, chosen as its class
    chooses them (``choose_draws``), with the episode index and the draws' state carried over."""
    goal_env = state.get("goal_env", False)  # GoalEnv mode's keys came later (absent: instruction mode)
    options = BufferOptions(
        goal_env=goal_env, relabeler=state["relabeler"], has_success_test=state.get("has_success_test", True),
        num_goals=state["num_goals"], goal_shape=tuple(state["goal_shape"]), exact_values=state["exact_index"],
        relabel_ratio=state["relabel_ratio"], goal_selection=state["goal_selection"], n_steps=state["n_steps"],
        gamma=state["gamma"], draws_per_episode=state["draws_per_episode"], max_redraws=state["max_redraws"],
        copy_info_dict=state.get("copy_info_dict", False),
        handle_timeout_termination=state["handle_timeout_termination"],
    )
    draws = choose_draws(options)
    parts = vars(buffer)["_parts"]
    view = DrawView(buffer, parts["storage"])
    draws.bind(view)
    if any(name not in state["_field"] for name in draws.fields):  # saved before event goals had index fields
        draws.fields = type(draws).fields
        vars(draws)["events"] = False  # drawn over all steps, as then; steps that achieved nothing stay inadmissible
    index = build_index(goal_env, options.has_success_test, parts["storage"], draws, view)
    for name, column in index.field.items():  # the earlier layout holds every field of today's (and maybe more)
        index.meta[..., column] = state["_meta"][..., state["_field"][name]]
    index.row_head[:] = state["_row_head"]
    index.episode_start[:] = state["_episode_start"]
    index.num_adds = state["_num_adds"]
    index.warned_too_long = state.get("_warned_too_long", False)
    index.warned_reward_scale = state.get("_warned_reward_scale", False)
    index.episodes_ending_at_goal = state.get("episodes_ending_at_goal", 0)
    index.episodes_going_on_after_goal = state.get("episodes_going_on_after_goal", 0)
    if isinstance(draws, StoredDraws):
        draws.goals, draws.reach = state["_draw_goals"], state["_draw_reach"]
    draws.admitted = state.get("_admitted", 1.0)
    last = state.get("_last_sample")
    vars(buffer).update(
        _serving=choose_serving(options, buffer.device, buffer, type(buffer).__name__),
        _last_sample=None if last is None else Served(*last),
    )
    parts.update(draws=draws, index=index)
    for key in _LEGACY_KEYS:
        vars(buffer).pop(key, None)


def upgrade_state(buffer: Any, state: dict[str, Any]) -> None:
    """A state pickled before the storage owned the rows (commit a8ff4f8 and earlier), made today's in place: the
    cursor and the storage with its layout; the parts the online source now holds are kept aside (``_parts``) for
    :func:`adopt_parts`, once the state is the buffer's."""
    state.pop("_reward_checked", None)  # the serving's since
    state.pop("_settings", None)  # how the demonstrations' nested buffer was built
    if "_cursor" not in state:
        state["_cursor"] = Cursor(state.pop("pos"), state.pop("full"))
    if "_online" in state:
        return
    layout = state.pop("_layout", None)
    spec = state["relabeler"].goal_spec
    storage = Storage(state["observations"], state["next_observations"], state["actions"], state["rewards"],
                      state["dones"], state["timeouts"], state.get("infos"), state["_cursor"],
                      state["observation_space"], state["obs_shape"], spec.goals_key, spec.achieved_key,
                      layout if layout is not None else FullLayout())
    state["_parts"] = dict(storage=storage, index=state.pop("_index", None), draws=state.pop("_draws", None))
    state.pop("_view", None)


def adopt_parts(buffer: Any) -> None:
    """The online source of a buffer pickled before the sources held the parts (:func:`upgrade_state`), its draw
    strategy's unbound template, and its serving with its own settings."""
    parts = vars(buffer).pop("_parts")
    storage, index, draws = parts["storage"], parts["index"], parts["draws"]
    view = DrawView(buffer, storage)
    view.index = index
    index.view, index.storage = view, storage
    buffer.has_success_test = getattr(index, "has_success_test", True)
    buffer._draw_template = unbound_copy(draws)
    buffer._online = Source(buffer, storage, index, draws, view)
    if not hasattr(buffer._serving, "windows"):  # it read its settings from the buffer
        buffer._serving = rebuilt_serving(buffer)


def unbound_copy(draws: DrawStrategy) -> DrawStrategy:
    """A bound strategy as a new one: its settings, none of its per-buffer state."""
    fresh = copy.deepcopy(draws)
    fresh.bound, fresh.admitted = False, 1.0
    if hasattr(fresh, "cfg"):
        fresh.cfg = None
    if isinstance(fresh, StoredDraws):
        fresh.goals = fresh.reach = None
    return fresh
