"""One versioned upgrade: the state of a buffer pickled by an earlier version, made today's.

SB3's ``save_replay_buffer`` pickles the buffer's ``__dict__``. Today it holds SB3's arrays, the cursor, the options
(:class:`~sb3_hir.buffers.options.BufferOptions`), the sources' builder, the mixture and the env's rewards. Three
earlier states load:

1. **0.1, flat** (commit cf051ef and before): the episode index (``_meta``, ``_field``, ...) and the draw mode as
   flags on the buffer itself. The draw strategy and the index are built again from them.
2. **0.1, by concept** (commit a8ff4f8 and before): the layout and the cursor on the buffer, the index and the draw
   strategy as parts of it, the demonstrations as a nested buffer.
3. **0.2** (commit c3075a3 and before): the sources holding the parts, with views that read the buffer, and the
   settings and counters copied onto the buffer.

:func:`upgrade` takes any of them to the parts every state shares (the online rows' storage, index and draw strategy,
the serving, the demonstration region), then builds today's state from those parts and the options read from the
settings, the same way whatever the version. The generator and the index carry over, so a loaded buffer draws on as
it would have (``tests/buffers/test_legacy_pickles.py``; ``test_concept_pickles.py`` for versions 2 and 3).
"""

from __future__ import annotations

import copy
from typing import Any

from sb3_hir.buffers.demonstrations import Demonstrations
from sb3_hir.buffers.draws import DrawStrategy, DrawView, StoredDraws
from sb3_hir.buffers.episode_index import EpisodeIndex
from sb3_hir.buffers.layout import FullLayout
from sb3_hir.buffers.mixture import Mixture
from sb3_hir.buffers.options import BufferOptions, choose_serving, draw_strategy_for
from sb3_hir.buffers.reward_checks import GoalEnvRewards
from sb3_hir.buffers.serving import GoalEnvServing, Served
from sb3_hir.buffers.source import Source, SourceBuilder
from sb3_hir.buffers.storage import Cursor, Storage
from sb3_hir.buffers.termination import SuccessTermination
from sb3_hir.goals import indexable_by_value

__all__ = ["upgrade", "version"]

#: SB3's own attributes of a ``DictReplayBuffer`` (``pos`` and ``full`` live in the cursor since 0.2).
SB3_KEYS = (
    "buffer_size", "observation_space", "action_space", "obs_shape", "action_dim", "device", "n_envs",
    "optimize_memory_usage", "observations", "next_observations", "actions", "rewards", "dones", "timeouts",
    "handle_timeout_termination",
)


def version(state: dict[str, Any]) -> int:
    """Which state a pickled buffer has: 1 (0.1, flat), 2 (0.1, by concept), 3 (0.2) or 4 (today's)."""
    if "options" in state:
        return 4
    if "_online" in state:
        return 3
    return 1 if "_meta" in state else 2


def upgrade(owner: str, state: dict[str, Any]) -> dict[str, Any]:
    """Today's state from an earlier ``state`` (module docstring); ``owner`` is the buffer's class name, for the
    messages of the env's rewards."""
    cursor = state["_cursor"] if "_cursor" in state else Cursor(state["pos"], state["full"])
    storage, index, draws = _online_parts(state, cursor)
    options = _options(state, index)
    if index is None:  # version 1: the index and the draw strategy are built again from the flat state
        draws, index = _flat_index(state, options, storage)
    assert draws is not None
    _settle(draws)
    env_rewards = GoalEnvRewards(None, options.copy_info_dict, owner)
    sources = SourceBuilder(options, state["observation_space"], state["action_space"], state["device"],
                            _unbound_copy(draws), state.get("terminate_on_success"))
    sources.termination = SuccessTermination(state.get("terminate_on_success"), index)
    online = sources.rebuilt(None, storage, index, draws, state["rng"])
    demos, last_demos = _demonstrations(state, sources)
    mixture = Mixture(online, demos, _serving(state, options, env_rewards, owner), options.relabel_ratio)
    _carry_counts(state, mixture)
    mixture.last_demonstrations = last_demos
    today = {key: state[key] for key in SB3_KEYS if key in state}
    today.update(_cursor=cursor, options=options, seed=state.get("seed"), infos=state.get("infos"), _env=env_rewards,
                 _sources=sources, _mixture=mixture, _spec_unconfirmed=state.get("_spec_unconfirmed", False))
    return today


def _online_parts(state: dict[str, Any], cursor: Cursor) -> tuple[Storage, EpisodeIndex | None, DrawStrategy | None]:
    """The online rows' storage, index and draw strategy as pickled (index and strategy None in version 1)."""
    if "_online" in state:
        online = state["_online"]
        return online.storage, _plain_index(online.index), online.draws
    storage = state.get("_storage")
    if not isinstance(storage, Storage):  # before the storage owned the rows
        spec = state["relabeler"].goal_spec
        layout = state.get("_layout")
        storage = Storage(state["observations"], state["next_observations"], state["actions"], state["rewards"],
                          state["dones"], state["timeouts"], state.get("infos"), cursor, state["observation_space"],
                          state["obs_shape"], spec.goals_key, spec.achieved_key,
                          layout if layout is not None else FullLayout())
    index = state.get("_index")
    return storage, None if index is None else _plain_index(index), state.get("_draws")


def _plain_index(index: EpisodeIndex) -> EpisodeIndex:
    """An index pickled when it held its view and draw strategy, without them (the source holds those now)."""
    vars(index).pop("view", None)
    vars(index).pop("draws", None)
    return index


def _options(state: dict[str, Any], index: EpisodeIndex | None) -> BufferOptions:
    """The options an earlier buffer was built with, read back from the settings it kept as attributes."""
    relabeler = state["relabeler"]
    has_test = state.get("has_success_test", getattr(index, "has_success_test", True))
    return BufferOptions(
        goal_env=state.get("goal_env", False), relabeler=relabeler, has_success_test=has_test,
        num_goals=state["num_goals"], goal_shape=tuple(state["goal_shape"]),
        exact_values=indexable_by_value(relabeler.goal_spec, state["observation_space"]),
        relabel_ratio=state["relabel_ratio"], goal_selection=state["goal_selection"], n_steps=state["n_steps"],
        gamma=state["gamma"], draws_per_episode=state["draws_per_episode"], max_redraws=state["max_redraws"],
        copy_info_dict=state.get("copy_info_dict", False),
        handle_timeout_termination=state["handle_timeout_termination"],
        compact=bool(state.get("optimize_memory_usage", False)),
    )


def _flat_index(state: dict[str, Any], options: BufferOptions, storage: Storage
                ) -> tuple[DrawStrategy, EpisodeIndex]:
    """Version 1: the draw strategy chosen as today's buffer chooses it, and its index filled from the flat state."""
    draws = draw_strategy_for(options)
    builder = SourceBuilder(options, state["observation_space"], state["action_space"], state["device"], draws,
                            None)
    index = builder.index_for(storage)
    draws.bind(DrawView(options, storage, index, state["rng"]))
    if any(name not in state["_field"] for name in draws.fields):  # saved before event goals had index fields
        draws.fields = type(draws).fields
        vars(draws)["events"] = False  # drawn over all steps, as then; steps that achieved nothing stay inadmissible
    index.with_fields(tuple(draws.fields))
    draws.allocate(DrawView(options, storage, index, state["rng"]), index.meta.dtype)
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
    return draws, index


def _serving(state: dict[str, Any], options: BufferOptions, env_rewards: GoalEnvRewards, owner: str) -> Any:
    """The pickled serving (its draws' reward check state kept), or one chosen again where it read its settings from
    the buffer; a GoalEnv serving asks the env's rewards, not the buffer."""
    serving = state.get("_serving")
    if serving is None or not hasattr(serving, "windows"):
        return choose_serving(options, state["device"], env_rewards, owner)
    vars(serving).pop("slot_masks", None)  # the masks come from the reach steps alone since 0.2
    if isinstance(serving, GoalEnvServing):
        serving.env_rewards = env_rewards
    return serving


def _demonstrations(state: dict[str, Any], sources: SourceBuilder) -> tuple[Demonstrations, Served | None]:
    """The demonstration region over today's view, and what it served last: as pickled (version 3), from the nested
    buffer that held it (version 2, already loaded by its own upgrade), or empty (none could be added then)."""
    demos = state.get("demonstrations")
    if demos is None:
        return Demonstrations(0.0, sources), None
    nested = vars(demos).pop("buffer", None)
    vars(demos).pop("make_buffer", None)
    last = vars(demos).pop("last_sample", None)
    source = vars(demos).get("source")
    if nested is not None:
        # The nested buffer's own arrays hold the region; SB3's add() on it writes them (its cursor is the storage's).
        source = Source(nested, nested._online.storage, nested._online.index, nested._online.draws,
                        nested._online.view)
        source.view.rng = nested.rng
    if source is not None:
        _settle(source.draws)
        rng = source.view.rng if source.view.rng is not None else state["rng"]
        source = sources.rebuilt(source.rows, source.storage, _plain_index(source.index), source.draws, rng)
    vars(demos).update(source=source, sources=sources)
    vars(demos).setdefault("warned_empty", False)
    vars(demos).setdefault("num_episodes", 0)
    return demos, last


def _carry_counts(state: dict[str, Any], mixture: Mixture) -> None:
    """What was served so far, and last."""
    mixture.num_served = state.get("num_served", 0)
    mixture.num_served_relabeled = state.get("num_served_relabeled", 0)
    mixture.num_served_demos = state.get("num_served_demos", 0)
    last = state.get("_last_sample")
    mixture.last_online = Served(*last) if isinstance(last, tuple) and not isinstance(last, Served) else last


def _settle(draws: DrawStrategy) -> None:
    """What a draw strategy pickled by an earlier version lacks: whether it was bound (it was, inside a buffer).
    Whether it draws among event steps is a class default (False: event goals came later), since it decides the
    backend as the strategy is unpickled."""
    vars(draws).setdefault("bound", True)


def _unbound_copy(draws: DrawStrategy) -> DrawStrategy:
    """A bound strategy as a new one, the template of later sources: its settings, none of its per-buffer state."""
    fresh = copy.deepcopy(draws)
    fresh.bound, fresh.admitted = False, 1.0
    if hasattr(fresh, "cfg"):
        fresh.cfg = None
    if isinstance(fresh, StoredDraws):
        fresh.goals = fresh.reach = None
    return fresh
