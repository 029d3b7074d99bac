"""Round files: DAgger's episodes on disk, as compressed ``.npz`` files that load without running code.

A round directory holds any number of files named ``[prefix]demos-NNNNN-TOKEN.npz``; each is written to a hidden
temporary file and renamed into place (:mod:`sb3_hir.atomic`), so a reader sees whole files or none, and a crash
at any point leaves every earlier file intact. Files are never rewritten: a resumed round adds files beside the
ones already there, and readers take them all in index order.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import uuid
import warnings
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from imitation.data import types

from sb3_hir.atomic import atomic_write
from sb3_hir.dagger.trajectory import TERMINAL_OBS_KEY, DAggerTrajectory, as_dagger_trajectory, trajectory_fingerprint

__all__ = [
    "ROUND_FILE_FORMAT",
    "CorruptRoundFileError",
    "load_round_dir",
    "load_trajectories",
    "new_round_file",
    "next_file_index",
    "round_files",
    "save_trajectories",
    "stored_fingerprints",
]

#: Format tag of round files; bumped on incompatible changes.
ROUND_FILE_FORMAT = "sb3_hir.dagger.round/1"

_ROUND_FILE_RE = re.compile(r"^(?P<prefix>.*?)demos-(?P<index>\d+)-(?P<token>[0-9a-f]+)\.npz$")


class CorruptRoundFileError(ValueError):
    """A round file cannot be read; ``path`` names it."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = pathlib.Path(path)
        super().__init__(
            f"round file {str(self.path)!r} is corrupt or truncated ({reason}); delete or move it, or load the "
            "remaining files with skip_corrupt=True"
        )


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return repr(value)


def _json_bytes(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, default=_json_default).encode(), dtype=np.uint8)


def save_trajectories(
    path: str | os.PathLike[str],
    trajectories: Sequence[types.Trajectory],
    *,
    meta: Mapping[str, Any] | None = None,
    save_infos: bool = True,
    fsync: bool = True,
    compress: bool = True,
) -> pathlib.Path:
    """Write trajectories to one ``.npz`` atomically; no pickles, so loading runs no code.

    Arrays are concatenated over episodes (``lengths`` splits them again); the JSON header and infos are stored
    as bytes. ``infos`` go through JSON: numpy values become lists/numbers, other objects their ``repr``, and the
    duplicated ``terminal_observation`` is dropped. ``fsync=False`` skips flushing to the disk: the file still
    appears whole or not at all and survives a crash of the process, but not a power loss. ``compress=False``
    skips zlib: about 0.6 ms less per file (half the cost of a one-episode file), which the collector's
    per-episode writes take (``benchmarks/bench_dagger_collector.py``), at the price of larger files.
    """
    path = pathlib.Path(path)
    trajs = [as_dagger_trajectory(t) for t in trajectories]
    if not trajs:
        raise ValueError("trajectories must hold at least one trajectory")
    dict_obs = isinstance(trajs[0].obs, types.DictObs)
    if any(isinstance(t.obs, types.DictObs) != dict_obs for t in trajs):
        raise ValueError("trajectories must all have Dict observations (DictObs) or all array observations")
    arrays: dict[str, np.ndarray] = {"lengths": np.array([len(t) for t in trajs], dtype=np.int64)}
    if dict_obs:
        keys = list(trajs[0].obs.keys())
        for key in keys:
            arrays[f"obs:{key}"] = np.concatenate([t.obs.get(key) for t in trajs])
    else:
        keys = None
        arrays["obs"] = np.concatenate([t.obs for t in trajs])
    arrays["acts"] = np.concatenate([t.acts for t in trajs])
    arrays["executed_acts"] = np.concatenate(
        [t.acts if t.executed_acts is None else t.executed_acts for t in trajs]
    )
    arrays["learner_mask"] = np.concatenate(
        [np.zeros(len(t), bool) if t.learner_mask is None else t.learner_mask for t in trajs]
    )
    arrays["rews"] = np.concatenate([t.rews for t in trajs])
    arrays["terminal"] = np.array([t.terminal for t in trajs], dtype=bool)
    arrays["truncated"] = np.array([t.truncated for t in trajs], dtype=bool)
    arrays["complete"] = np.array([t.complete for t in trajs], dtype=bool)
    if save_infos:
        infos = []
        for t in trajs:
            ep_infos = [{}] * len(t) if t.infos is None else list(t.infos)
            if TERMINAL_OBS_KEY in ep_infos[-1]:  # only an episode's last info holds it
                ep_infos[-1] = {k: v for k, v in ep_infos[-1].items() if k != TERMINAL_OBS_KEY}
            infos.append(ep_infos)
        arrays["infos"] = _json_bytes(infos)
    header = {"format": ROUND_FILE_FORMAT, "n_episodes": len(trajs), "obs_keys": keys, "meta": dict(meta or {})}
    arrays["header"] = _json_bytes(header)
    save = np.savez_compressed if compress else np.savez
    atomic_write(path, lambda f: save(f, **arrays), fsync=fsync)
    return path


def load_trajectories(path: str | os.PathLike[str]) -> list[DAggerTrajectory]:
    """Read a file written by :func:`save_trajectories`; unreadable content raises :class:`CorruptRoundFileError`."""
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:  # np.load leaks its own handle
            header = json.loads(data["header"].tobytes())
            if header.get("format") != ROUND_FILE_FORMAT:
                raise CorruptRoundFileError(path, f"unknown format {header.get('format')!r}")
            lengths = data["lengths"]
            keys = header["obs_keys"]
            obs_arrays = {k: data[f"obs:{k}"] for k in keys} if keys is not None else {"": data["obs"]}
            fields = {
                name: data[name]
                for name in ("acts", "executed_acts", "learner_mask", "rews", "terminal", "truncated", "complete")
            }
            infos = json.loads(data["infos"].tobytes()) if "infos" in data.files else None
    except CorruptRoundFileError:
        raise
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, zlib.error, ValueError, KeyError, EOFError, OSError, TypeError) as exc:
        raise CorruptRoundFileError(path, f"{type(exc).__name__}: {exc}") from exc
    n = len(lengths)
    total = int(lengths.sum())
    if (
        header.get("n_episodes") != n
        or np.any(lengths < 1)
        or any(len(v) != total + n for v in obs_arrays.values())
        or any(len(fields[k]) != total for k in ("acts", "executed_acts", "learner_mask", "rews"))
        or any(len(fields[k]) != n for k in ("terminal", "truncated", "complete"))
        or (infos is not None and [len(i) for i in infos] != lengths.tolist())
    ):
        raise CorruptRoundFileError(path, "array lengths disagree with the header")
    act_splits = np.cumsum(lengths)[:-1]
    obs_splits = act_splits + np.arange(1, n)
    obs_parts = {k: np.split(v, obs_splits) for k, v in obs_arrays.items()}
    split = {k: np.split(fields[k], act_splits) for k in ("acts", "executed_acts", "learner_mask", "rews")}
    out = []
    for i in range(n):
        if keys is not None:
            obs: types.Observation = types.DictObs({k: obs_parts[k][i] for k in keys})
        else:
            obs = obs_parts[""][i]
        ep_infos = None
        if infos is not None:
            ep_infos = np.empty(len(infos[i]), dtype=object)
            ep_infos[:] = infos[i]
        out.append(
            DAggerTrajectory(
                obs=obs,
                acts=split["acts"][i],
                infos=ep_infos,
                terminal=bool(fields["terminal"][i]),
                rews=split["rews"][i],
                truncated=bool(fields["truncated"][i]),
                complete=bool(fields["complete"][i]),
                executed_acts=split["executed_acts"][i],
                learner_mask=split["learner_mask"][i],
            )
        )
    return out


def round_files(directory: str | os.PathLike[str]) -> list[pathlib.Path]:
    """Round files of ``directory`` in write order; temporary files of interrupted writes are ignored."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _ROUND_FILE_RE.match(entry.name)
        if match and not entry.name.startswith("."):
            found.append((int(match["index"]), entry.name, entry))
    return [entry for _, _, entry in sorted(found)]


def next_file_index(directory: pathlib.Path) -> int:
    """One more than the highest file index in ``directory`` (0 when it holds none)."""
    indices = [int(_ROUND_FILE_RE.match(p.name)["index"]) for p in round_files(directory)]  # type: ignore[index]
    return max(indices, default=-1) + 1


def load_round_dir(directory: str | os.PathLike[str], *, skip_corrupt: bool = False) -> list[DAggerTrajectory]:
    """All trajectories of one round directory, in write order.

    :param skip_corrupt: load the readable files and warn about the others instead of raising
        :class:`CorruptRoundFileError`.
    """
    out: list[DAggerTrajectory] = []
    for path in round_files(directory):
        try:
            out.extend(load_trajectories(path))
        except CorruptRoundFileError as exc:
            if not skip_corrupt:
                raise
            warnings.warn(f"skipping {exc}", RuntimeWarning, stacklevel=2)
    return out


def new_round_file(directory: str | os.PathLike[str], prefix: str = "", index: int | None = None) -> pathlib.Path:
    """A fresh file name after the existing ones (or at ``index``, which a writer that counts its own files
    passes to skip listing the directory); the random token keeps two writers of one round apart."""
    directory = pathlib.Path(directory)
    index = next_file_index(directory) if index is None else index
    return directory / f"{prefix}demos-{index:05d}-{uuid.uuid4().hex[:8]}.npz"


def stored_fingerprints(directory: str | os.PathLike[str], *, skip_corrupt: bool = False) -> set[str]:
    """Fingerprints (:func:`trajectory_fingerprint`) of the episodes already stored in a round directory."""
    return {trajectory_fingerprint(t) for t in load_round_dir(directory, skip_corrupt=skip_corrupt)}
