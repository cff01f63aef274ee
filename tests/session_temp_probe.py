"""Run by tests/test_session_temp.py as a pytest session of its own (not collected by the suite):
torch's header cache, which ignores its cache variable, made where torch makes it when it first
compiles; and a leftover of ours planted where a run's folder would be."""

from __future__ import annotations

import os
import tempfile

PLANTED = "isaacgymenvs-gmi-run-1-planted"  # a run's private folder, as a crashed run leaves it


def test_torchs_header_cache_is_made_in_the_session_temp_dir():
    from torch._inductor import codecache

    assert codecache._HEADER_DIR.startswith(os.environ["TMPDIR"] + os.sep)
    os.makedirs(codecache._HEADER_LOCK_DIR)  # as a CPU compile does (tests/rl: a real one)


def test_a_runs_folder_left_in_the_temp_dir_is_a_leftover():
    os.mkdir(os.path.join(tempfile.gettempdir(), PLANTED))
