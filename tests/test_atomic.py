"""Crash-safe writes: a failed write leaves the old file and no temporary behind."""

from __future__ import annotations

import os
import stat

import pytest

from sb3_hir.atomic import atomic_path, atomic_write


def test_atomic_write_replaces_the_target(tmp_path):
    target = tmp_path / "sub" / "round-000.npz"
    atomic_write(target, lambda f: f.write(b"first"))
    atomic_write(target, lambda f: f.write(b"second"))
    assert target.read_bytes() == b"second"
    assert [p.name for p in target.parent.iterdir()] == ["round-000.npz"]


@pytest.mark.parametrize("fsync", [True, False])
def test_atomic_write_with_and_without_fsync_replaces_the_target(tmp_path, fsync):
    target = tmp_path / "round-000.npz"
    atomic_write(target, lambda f: f.write(b"first"), fsync=fsync)
    atomic_write(target, lambda f: f.write(b"second"), fsync=fsync)
    assert target.read_bytes() == b"second"
    assert [p.name for p in tmp_path.iterdir()] == ["round-000.npz"]


def test_failed_write_keeps_the_old_file_and_cleans_up(tmp_path):
    target = tmp_path / "model.zip"
    target.write_bytes(b"old")

    def crash(f):
        f.write(b"half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError, match="killed mid-write"):
        atomic_write(target, crash)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.zip"]


def test_atomic_path_keeps_the_suffix_for_writers_that_add_one(tmp_path):
    with atomic_path(tmp_path / "model.zip") as tmp:
        assert tmp.suffix == ".zip" and tmp.name.startswith(".")
        tmp.write_bytes(b"x")
    assert (tmp_path / "model.zip").read_bytes() == b"x"


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_honour_the_umask(tmp_path, umask, mode):
    """Results are ordinary files: 0644 under the usual umask, so other users of a shared machine can read them."""
    old = os.umask(umask)
    try:
        written = atomic_write(tmp_path / "results.md", lambda f: f.write(b"| run |\n"))
        with atomic_path(tmp_path / "model.zip") as tmp:
            tmp.write_bytes(b"zip")
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "model.zip").stat().st_mode) == mode
