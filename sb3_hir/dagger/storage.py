"""Round files: DAgger's episodes on disk, named and laid out as imitation's, read by us without running code.

Names. A round directory (``scratch_dir/demos/round-NNN/``) holds files named as imitation's DAgger names them,
``[prefix-]dagger-demo-{i}-{uuid}.npz``: ``i`` counts the directory's files (one per episode by default) and the
uuid's 128 bits are drawn from the caller's ``rng`` as imitation draws them, so two runs with the same seed write
the same names. Each file is written to a hidden temporary file and renamed into place (:mod:`sb3_hir.atomic`):
a reader sees whole files or none, and a crash leaves every earlier file intact. Files are never rewritten: a
resumed round adds files beside the ones already there, and readers take them all in index order.

Layout (format ``sb3_hir.dagger.round/2``). For Box/Discrete observations a file is the ``.npz`` layout that
``imitation.data.serialize.load`` reads (imitation's pre-HuggingFace trajectory format: ``obs``, ``acts``,
``rews``, ``infos``, ``terminal``, ``indices``), so imitation's loader and its ``DAggerTrainer`` read our rounds.
``terminal`` has imitation's meaning there (the file holds the episode's end, by termination or time limit). Our
own fields ride along: ``executed_acts`` and ``learner_mask`` as arrays, and a JSON ``header`` holding the format,
the per-episode ``truncated`` / ``complete`` flags and the infos (per-episode values go into the header rather than
into arrays of their own because every ``.npz`` entry costs ~30 us on the collector's hot path). Only imitation's
``infos`` is an object array (a pickle of plain dicts, for imitation's loader, which unpickles anyway);
:func:`load_trajectories` reads the header's copy with ``np.load(allow_pickle=False)`` and never touches it.

Dict observations (our extension, which imitation's ``.npz`` layout cannot hold): one array per key, named
``obs:{key}``, with the keys in the header's ``obs_keys``; there is no ``obs`` entry, so imitation's loader fails
on such a file with ``KeyError: 'obs'`` rather than misreading it. :func:`load_trajectories` returns ``DictObs``.

Files of format 1 (``[prefix]demos-NNNNN-TOKEN.npz``, written before issue 23) are still found and read, so a run
begun with an older sb3-hir resumes without dropping them.
"""

from __future__ import annotations

import io
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
    "file_index",
    "load_round_dir",
    "load_trajectories",
    "new_round_file",
    "next_file_index",
    "round_file_token",
    "round_files",
    "save_trajectories",
    "stored_fingerprints",
]

#: Format tag of round files; bumped on incompatible changes.
ROUND_FILE_FORMAT = "sb3_hir.dagger.round/2"
_FORMAT_1 = "sb3_hir.dagger.round/1"

#: imitation's name for a DAgger demo file: ``[prefix-]dagger-demo-{i}-{uuid hex}.npz``.
_ROUND_FILE_RE = re.compile(r"^(?:(?P<prefix>.+)-)?dagger-demo-(?P<index>\d+)-(?P<token>[0-9a-f]{32})\.npz$")
#: Format 1 names, read so that older runs resume.
_FORMAT_1_RE = re.compile(r"^(?P<prefix>.*?)demos-(?P<index>\d+)-(?P<token>[0-9a-f]+)\.npz$")


class CorruptRoundFileError(ValueError):
    """A round file cannot be read; ``path`` names it.

    Raised instead of a bare numpy or zip error, so that a resume can skip or report the one damaged file by name.
    """

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


def _plain_infos(trajs: Sequence[DAggerTrajectory]) -> list[list[dict[str, Any]]]:
    """Per episode, its info dicts as plain JSON values (``terminal_observation``, a copy of the last obs, dropped)."""
    infos = []
    for t in trajs:
        ep_infos = [{}] * len(t) if t.infos is None else list(t.infos)
        if TERMINAL_OBS_KEY in ep_infos[-1]:  # only an episode's last info holds it
            ep_infos[-1] = {k: v for k, v in ep_infos[-1].items() if k != TERMINAL_OBS_KEY}
        infos.append(ep_infos)
    return infos


def save_trajectories(
    path: str | os.PathLike[str],
    trajectories: Sequence[types.Trajectory],
    *,
    meta: Mapping[str, Any] | None = None,
    save_infos: bool = True,
    fsync: bool = True,
    compress: bool = True,
) -> pathlib.Path:
    """Write trajectories to one ``.npz`` atomically, in the layout described in the module docstring.

    One file per episode by default, renamed into place, so a killed process loses no finished episode.

    Arrays are concatenated over episodes and split again at ``indices`` (imitation's layout). ``infos`` go
    through JSON: numpy values become lists/numbers, other objects their ``repr``; ``save_infos=False`` stores
    empty dicts. ``fsync=False`` skips flushing to the disk: the file still appears whole or not at all and
    survives a crash of the process, but not a power loss. ``compress=False`` skips zlib: about 0.6 ms less per
    file (half the cost of a one-episode file), which the collector's per-episode writes take
    (``benchmarks/bench_dagger_collector.py``), at the price of larger files.
    """
    path = pathlib.Path(path)
    trajs, dict_obs = _checked_trajectories(trajectories)
    arrays, keys = _episode_arrays(trajs, dict_obs)
    lengths = [len(t) for t in trajs]
    infos_text = json.dumps(_plain_infos(trajs) if save_infos else [[{}] * n for n in lengths], default=_json_default)
    plain = np.empty(sum(lengths), dtype=object)  # imitation's loader wants one dict per step
    plain[:] = [info for ep in json.loads(infos_text) for info in ep]
    arrays["infos"] = plain
    arrays["header"] = _header(trajs, keys, meta, save_infos, infos_text)
    _write_npz(path, arrays, compress=compress, fsync=fsync)
    return path


def _checked_trajectories(trajectories: Sequence[types.Trajectory]) -> tuple[list[DAggerTrajectory], bool]:
    """``trajectories`` as DAgger trajectories, and whether their observations are Dicts: at least one, and all
    alike (one file holds one observation layout)."""
    trajs = [as_dagger_trajectory(t) for t in trajectories]
    if not trajs:
        raise ValueError("trajectories must hold at least one trajectory")
    dict_obs = isinstance(trajs[0].obs, types.DictObs)
    if any(isinstance(t.obs, types.DictObs) != dict_obs for t in trajs):
        raise ValueError("trajectories must all have Dict observations (DictObs) or all array observations")
    return trajs, dict_obs


def _episode_arrays(trajs: Sequence[DAggerTrajectory], dict_obs: bool) -> tuple[dict[str, np.ndarray], list | None]:
    """The episodes' arrays concatenated in imitation's layout (``obs`` or one ``obs:{key}`` per Dict key, then
    ``acts``, ``rews``, ``terminal``, ``indices``) and ours (``executed_acts``, ``learner_mask``), in the file's
    entry order; and the Dict keys (None for array observations)."""
    arrays: dict[str, np.ndarray] = {}
    if dict_obs:
        keys = list(trajs[0].obs.keys())
        for key in keys:
            arrays[f"obs:{key}"] = np.concatenate([t.obs.get(key) for t in trajs])
    else:
        keys = None
        arrays["obs"] = np.concatenate([t.obs for t in trajs])
    arrays["acts"] = np.concatenate([t.acts for t in trajs])
    arrays["rews"] = np.concatenate([t.rews for t in trajs])
    # imitation's "terminal": the trajectory holds its episode's end (terminated or truncated)
    arrays["terminal"] = np.array([t.complete for t in trajs], dtype=bool)
    arrays["indices"] = np.cumsum([len(t) for t in trajs][:-1], dtype=np.int64)
    arrays["executed_acts"] = np.concatenate(
        [t.acts if t.executed_acts is None else t.executed_acts for t in trajs]
    )
    arrays["learner_mask"] = np.concatenate(
        [np.zeros(len(t), bool) if t.learner_mask is None else t.learner_mask for t in trajs]
    )
    return arrays, keys


def _header(trajs: Sequence[DAggerTrajectory], keys: list | None, meta: Mapping[str, Any] | None, save_infos: bool,
            infos_text: str) -> np.ndarray:
    """The file's JSON ``header`` as bytes: the format, the per-episode flags, ``meta`` and the infos (already JSON,
    spliced in rather than parsed and dumped again)."""
    header = {"format": ROUND_FILE_FORMAT, "n_episodes": len(trajs), "obs_keys": keys, "meta": dict(meta or {}),
              "truncated": [bool(t.truncated) for t in trajs], "complete": [bool(t.complete) for t in trajs],
              "save_infos": bool(save_infos)}
    text = json.dumps(header, default=_json_default)
    text = f'{text[:-1]}, "infos": {infos_text}}}'
    return np.frombuffer(text.encode(), dtype=np.uint8)


def _write_npz(path: pathlib.Path, arrays: dict[str, np.ndarray], *, compress: bool, fsync: bool) -> None:
    """``arrays`` as one ``.npz`` at ``path``, renamed into place (:func:`~sb3_hir.atomic.atomic_write`).

    Built in memory and written with one write: np.savez straight into the file seeks back over every entry's
    header, flushing small writes (a one-episode file: 355 us to a file against 113 us to memory, measured)."""
    save = np.savez_compressed if compress else np.savez
    buffer = io.BytesIO()
    save(buffer, **arrays)
    atomic_write(path, lambda f: f.write(buffer.getbuffer()), fsync=fsync)


_ARRAYS = ("acts", "executed_acts", "learner_mask", "rews", "terminal")


def load_trajectories(path: str | os.PathLike[str]) -> list[DAggerTrajectory]:
    """Read a file written by :func:`save_trajectories`; unreadable content raises :class:`CorruptRoundFileError`.

    Loads with ``allow_pickle=False``: imitation's pickled ``infos`` entry is never read.
    """
    path = pathlib.Path(path)
    if path.is_dir():
        raise CorruptRoundFileError(path, "a directory: imitation's own HuggingFace-dataset demo, which sb3_hir does "
                                    "not read; load it with imitation.data.serialize.load")
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:  # np.load leaks its own handle
            header = json.loads(data["header"].tobytes())
            version = header.get("format")
            if version not in (ROUND_FILE_FORMAT, _FORMAT_1):
                raise CorruptRoundFileError(path, f"unknown format {version!r}")
            keys = header["obs_keys"]
            obs_arrays = {k: data[f"obs:{k}"] for k in keys} if keys is not None else {"": data["obs"]}
            fields = {name: data[name] for name in _ARRAYS}
            infos, lengths, terminated = _episode_fields(version, header, data, fields)
    except CorruptRoundFileError:
        raise
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, zlib.error, ValueError, KeyError, EOFError, OSError, TypeError) as exc:
        raise CorruptRoundFileError(path, f"{type(exc).__name__}: {exc}") from exc
    _check_lengths(path, header, obs_arrays, fields, infos, lengths)
    if header.get("save_infos") is False:
        infos = None
    return _split_episodes(keys, obs_arrays, fields, infos, lengths, terminated)


def _episode_fields(version: str, header: dict[str, Any], data: Any, fields: dict[str, np.ndarray]
                    ) -> tuple[list | None, np.ndarray, np.ndarray]:
    """The per-episode flags (``truncated``, ``complete``, added to ``fields``) where ``version`` keeps them, and
    ``(infos, lengths, terminated)``: format 2 keeps flags and infos in the header, imitation's ``indices`` and
    ``terminal`` (terminated or truncated) in arrays."""
    if version == ROUND_FILE_FORMAT:
        infos = header["infos"]
        fields["truncated"] = np.array(header["truncated"], dtype=bool)
        fields["complete"] = np.array(header["complete"], dtype=bool)
        bounds = np.concatenate([[0], data["indices"], [len(fields["acts"])]]).astype(np.int64)
        return infos, np.diff(bounds), fields["terminal"] & ~fields["truncated"]
    # format 1: flags as arrays, "terminal" meaning terminated, infos as JSON bytes
    infos = json.loads(data["infos"].tobytes()) if "infos" in data.files else None
    fields["truncated"] = data["truncated"]
    fields["complete"] = data["complete"]
    return infos, data["lengths"], fields["terminal"]


def _check_lengths(path: pathlib.Path, header: dict[str, Any], obs_arrays: dict[str, np.ndarray],
                   fields: dict[str, np.ndarray], infos: list | None, lengths: np.ndarray) -> None:
    """Refuse a file whose arrays do not hold the header's episodes (``n + 1`` observations of an ``n``-step
    episode): :class:`CorruptRoundFileError`."""
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


def _split_episodes(keys: list | None, obs_arrays: dict[str, np.ndarray], fields: dict[str, np.ndarray],
                    infos: list | None, lengths: np.ndarray, terminated: np.ndarray) -> list[DAggerTrajectory]:
    """The file's concatenated arrays split into its episodes (imitation's layout: one more observation than steps
    per episode)."""
    n = len(lengths)
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
                terminal=bool(terminated[i]),
                rews=split["rews"][i],
                truncated=bool(fields["truncated"][i]),
                complete=bool(fields["complete"][i]),
                executed_acts=split["executed_acts"][i],
                learner_mask=split["learner_mask"][i],
            )
        )
    return out


def _match(name: str) -> re.Match[str] | None:
    if name.startswith("."):  # temporary files of interrupted writes
        return None
    return _ROUND_FILE_RE.match(name) or _FORMAT_1_RE.match(name)


def round_files(directory: str | os.PathLike[str]) -> list[pathlib.Path]:
    """Round files of ``directory`` in write order (by index); temporary files of interrupted writes are ignored.

    Write order is the order episodes finished in, so a resume and a reload see the round as it was collected.
    """
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _match(entry.name)
        if match:
            found.append((int(match["index"]), entry.name, entry))
    return [entry for _, _, entry in sorted(found)]


def file_index(path: str | os.PathLike[str]) -> int:
    """The index in a round file's name."""
    match = _match(pathlib.Path(path).name)
    if match is None:
        raise ValueError(f"path {str(path)!r} is not named as a round file ([prefix-]dagger-demo-{{i}}-{{uuid}}.npz)")
    return int(match["index"])


def next_file_index(directory: pathlib.Path) -> int:
    """One more than the highest file index in ``directory`` (0 when it holds none)."""
    return max((file_index(p) for p in round_files(directory)), default=-1) + 1


def load_round_dir(directory: str | os.PathLike[str], *, skip_corrupt: bool = False) -> list[DAggerTrajectory]:
    """All trajectories of one round directory, in write order.

    What a trainer reads to train on a round, and what a resume reads to adopt the episodes of a killed run.

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


def round_file_token(rng: np.random.Generator) -> str:
    """A file token as imitation draws it: 128 bits of ``rng`` as a version-4 uuid, so seeded runs agree."""
    return uuid.UUID(int=int.from_bytes(rng.bytes(16), "big"), version=4).hex


def new_round_file(
    directory: str | os.PathLike[str],
    rng: np.random.Generator,
    prefix: str = "",
    index: int | None = None,
) -> pathlib.Path:
    """A fresh name ``[prefix-]dagger-demo-{index}-{uuid}.npz`` after the existing files (or at ``index``, which a
    writer that counts its own files passes to skip listing the directory).

    The index orders files and the token (:func:`round_file_token`) keeps writers of one round apart; a name
    that exists already (two writers with the same seed and index) moves to the next index, so no file is ever
    replaced.
    """
    directory = pathlib.Path(directory)
    index = next_file_index(directory) if index is None else index
    dash = f"{prefix}-" if prefix else ""
    while True:
        path = directory / f"{dash}dagger-demo-{index}-{round_file_token(rng)}.npz"
        if not path.exists():
            return path
        index += 1


def stored_fingerprints(directory: str | os.PathLike[str], *, skip_corrupt: bool = False) -> set[str]:
    """Fingerprints (:func:`trajectory_fingerprint`) of the episodes already stored in a round directory."""
    return {trajectory_fingerprint(t) for t in load_round_dir(directory, skip_corrupt=skip_corrupt)}
