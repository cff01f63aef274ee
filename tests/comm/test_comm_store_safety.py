"""Values read from the shared store are checked before use: segment paths must name a segment
this runtime made; nothing read from the store is unpickled."""

from __future__ import annotations

import ast
import os
import uuid
from pathlib import Path

import pytest
import torch.distributed as dist

from isaacgymenvs_gmi.comm import shared_memory
from isaacgymenvs_gmi.comm.shared_memory import (
    SEGMENT_PREFIX,
    SegmentPathError,
    SharedMemoryCollectives,
    checked_segment_path,
)

PACKAGE = Path(shared_memory.__file__).resolve().parents[1]


@pytest.fixture
def segment():
    """A file shaped like one of our segments, in the segment folder."""
    path = os.path.join(shared_memory._segment_dir(), f"{SEGMENT_PREFIX}test-{uuid.uuid4().hex}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.ftruncate(fd, 4096)
    os.close(fd)
    yield path
    for leftover in (path, path + "-link"):
        if os.path.lexists(leftover):
            os.unlink(leftover)


def test_our_own_segment_passes(segment):
    assert checked_segment_path(segment) == segment


def test_segment_paths_outside_our_folder_prefix_or_ownership_are_refused(segment, tmp_path):
    elsewhere = tmp_path / f"{SEGMENT_PREFIX}x"
    elsewhere.write_bytes(b"\0" * 64)
    link = segment + "-link"
    os.symlink("/etc/passwd", link)
    for path, why in [
        ("/etc/passwd", "not a isaacgymenvs-gmi-"),
        (str(elsewhere), "not a isaacgymenvs-gmi-"),
        (os.path.join(shared_memory._segment_dir(), "other-name"), "not a isaacgymenvs-gmi-"),
        (link, "not a regular file"),
        (segment + "-missing", "cannot be read"),
    ]:
        with pytest.raises(SegmentPathError, match=why):
            checked_segment_path(path)
    os.chmod(segment, 0o644)
    with pytest.raises(SegmentPathError, match="readable by others"):
        checked_segment_path(segment)


def test_a_member_refuses_a_forged_segment_path_from_the_store():
    store = dist.HashStore()
    store.set("device0", "/etc/passwd")  # as if a stranger had published it
    with pytest.raises(SegmentPathError):
        SharedMemoryCollectives(1, (0, 1), store, "device0", timeout_s=1)


def test_nothing_in_the_package_unpickles():
    calls = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            unpickles = (
                isinstance(node, ast.Attribute)
                and node.attr in ("loads", "load")
                and isinstance(node.value, ast.Name)
                and node.value.id in ("pickle", "cloudpickle")
            )
            if unpickles:
                calls.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not calls
