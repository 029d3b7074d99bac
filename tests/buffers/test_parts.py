"""The buffer's parts stand without it: they read the options, their storage and a generator, never the buffer.

House rules of ``sb3_hir/buffers/``: no module but the buffer's own imports it, no object reachable from its parts
leads back to it, and it keeps few attributes of its own (the settings live in one ``BufferOptions``).
"""

from __future__ import annotations

import ast
import gc
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from concept_pickles import demonstrations
from served_rows import filled_buffer
from stable_baselines3.common.buffers import DictReplayBuffer

import sb3_hir
from sb3_hir.buffers import HindsightInstructionReplayBuffer
from sb3_hir.buffers.demonstrations import Demonstrations
from sb3_hir.buffers.mixture import Mixture
from sb3_hir.buffers.options import choose_serving, draw_strategy_for, resolve_options
from sb3_hir.buffers.reward_checks import GoalEnvRewards
from sb3_hir.buffers.source import SourceBuilder
from sb3_hir.buffers.storage import Cursor

BUFFERS = Path(sb3_hir.__file__).parent / "buffers"
#: the modules that are the buffer: its class, the HER drop-in on it, and the package's exports.
THE_BUFFER = {"hindsight.py", "her.py", "__init__.py"}


def test_no_part_of_the_buffers_package_imports_the_buffer() -> None:
    offenders = []
    for path in sorted(BUFFERS.rglob("*.py")):
        if path.name in THE_BUFFER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom):
                names.append(node.module or "")
            if any(name.endswith(("hindsight", "HindsightInstructionReplayBuffer", "HerReplayBuffer"))
                   and "her_replay_buffer" not in name for name in names):
                offenders.append(f"{path.relative_to(BUFFERS)}:{node.lineno}")
    assert not offenders, f"parts of sb3_hir/buffers import the buffer: {offenders}"


def _path_back(buffer: Any) -> list[str] | None:
    """The attribute path from one of ``buffer``'s parts back to ``buffer`` (breadth first), or None."""
    sb3_arrays = set(vars(DictReplayBuffer(2, buffer.observation_space, buffer.action_space)))
    queue: deque[tuple[Any, list[str]]] = deque(
        (value, [name]) for name, value in vars(buffer).items() if name not in sb3_arrays)
    seen = {id(buffer.observation_space), id(buffer.action_space)}
    while queue:
        obj, path = queue.popleft()
        if obj is buffer:
            return path
        leaf = isinstance(obj, (type, np.ndarray, str, bytes, int, float))
        if id(obj) in seen or leaf or (callable(obj) and not hasattr(obj, "__self__")):
            continue
        seen.add(id(obj))
        queue.extend((child, [*path, type(child).__name__]) for child in gc.get_referents(obj))
    return None


@pytest.mark.parametrize("case, overrides", [
    ("maze_k3_some_future", dict(demo_ratio=0.5)),
    ("bitflip_future", dict(demo_ratio=0.25, optimize_memory_usage=True)),
    ("point_terminating_future", {}),
])
def test_no_part_of_a_built_buffer_leads_back_to_it(case: str, overrides: dict[str, Any]) -> None:
    buffer = filled_buffer(case, steps=60, size=80, **overrides)
    if overrides.get("demo_ratio"):
        buffer.add_demonstrations(demonstrations(buffer, case, 3))
    buffer.sample(32)  # the last samples, the draws' state, the serving's checks
    assert _path_back(buffer) is None, _path_back(buffer)
    # The check can fail: a part that held the buffer (as the draws' view did in 0.2) is found.
    buffer._view.index.__dict__["owner"] = buffer
    assert _path_back(buffer) is not None


def test_the_buffer_keeps_at_most_20_attributes_of_its_own() -> None:
    buffer = filled_buffer("maze_k3_some_future", steps=10, size=40, demo_ratio=0.5)
    sb3 = set(vars(DictReplayBuffer(2, buffer.observation_space, buffer.action_space)))
    own = sorted(set(vars(buffer)) - sb3)
    assert len(own) <= 20, own
    assert isinstance(buffer, HindsightInstructionReplayBuffer)


def test_the_parts_built_from_the_options_alone_store_and_serve_demonstrations() -> None:
    """No buffer at all: options resolved from the spaces, sources built by the builder, demonstrations added through
    their public door, and a batch sampled by the mixture."""
    case = "maze_k3_some_future"
    donor = filled_buffer(case, steps=1, size=40)  # only for its spaces and its demonstrations' env
    space, actions = donor.observation_space, donor.action_space
    options = resolve_options(
        space, None, "parts", False, buffer_size=40, n_envs=1, optimize_memory_usage=False,
        handle_timeout_termination=True, n_sampled_goal=None, goal_selection_strategy=None, copy_info_dict=False,
        terminate_on_success=None, relabeler="hindsight-instruction", hindsight_goals="some", goal_spec=None,
        relabel_ratio=0.8, goal_step=None, n_steps=1, gamma=0.99, relabeler_kwargs=None, draws_per_episode=4,
        max_redraws=8)
    sources = SourceBuilder(options, space, actions, donor.device, draw_strategy_for(options), None)
    rows = DictReplayBuffer(40, space, actions, n_envs=1)
    cursor = Cursor()
    online = sources.online(rows, None, cursor, np.random.default_rng(0))
    demos = Demonstrations(1.0, sources)
    rng = np.random.default_rng(1)
    episodes = demonstrations(donor, case, 3)
    demos.add(episodes, rng)
    assert demos.num_episodes == 3 and demos.num_transitions == sum(len(e) for e in episodes)
    serving = choose_serving(options, donor.device, GoalEnvRewards(None, False, "parts"), "parts")
    mixture = Mixture(online, demos, serving, options.relabel_ratio)
    batch = mixture.sample(64)  # the online rows are empty: every row from the demonstrations
    assert batch.rewards.shape == (64, 1) and mixture.num_served_demos == 64
    assert mixture.last_demonstrations is not None and mixture.last_online is None


@pytest.mark.parametrize("name, value, message", [
    ("relabel_ratio", 1.5, r"relabel_ratio must be a number in \[0, 1\]"),
    ("terminate_on_success", "yes", "terminate_on_success must be True, False or None"),
    ("rng", 3, "rng must be a numpy Generator"),
    ("num_served", -1, "num_served must be an int >= 0"),
])
def test_the_settable_settings_refuse_bad_values_by_name_and_keep_theirs(name: str, value: Any, message: str) -> None:
    buffer = filled_buffer("bitflip_future", steps=10, size=40)
    before = getattr(buffer, name)
    with pytest.raises(ValueError, match=message):
        setattr(buffer, name, value)
    assert getattr(buffer, name) is before or getattr(buffer, name) == before
