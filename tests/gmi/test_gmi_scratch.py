"""A run's private temp folder: its temp dir while it runs, gone afterwards, and a folder whose
launcher was killed is removed by the next run."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from isaacgymenvs_gmi.gmi.scratch import PREFIX, private_temp_dir, remove_abandoned


def test_the_folder_is_the_temp_dir_and_is_removed_with_variables_restored(monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    outside = tempfile.gettempdir()
    with private_temp_dir() as folder:
        assert tempfile.gettempdir() == folder and os.path.basename(folder).startswith(PREFIX)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "cache")  # as torch does
        with open(os.path.join(folder, "f"), "w") as f:
            f.write("x")
    assert not os.path.exists(folder)
    assert tempfile.gettempdir() == outside and "TORCHINDUCTOR_CACHE_DIR" not in os.environ


def test_folders_of_dead_launchers_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    dead_pid = int(dead.stdout)
    abandoned = tmp_path / f"{PREFIX}{dead_pid}-abc"
    live = tmp_path / f"{PREFIX}{os.getpid()}-def"
    other = tmp_path / "unrelated-999999-x"
    for folder in (abandoned, live, other):
        folder.mkdir()
        (folder / "file").write_text("x")
    assert remove_abandoned(str(tmp_path)) == [str(abandoned)]
    assert live.exists() and other.exists() and not abandoned.exists()
