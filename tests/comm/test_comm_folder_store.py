"""The folder store: values shared between processes through a private folder, whole or not at
all, waited for up to a timeout, with the folder's size bounded however often a key changes."""

from __future__ import annotations

import multiprocessing as mp
import os
import stat
import time
from datetime import timedelta

import pytest

from isaacgymenvs_gmi.comm.folder_store import FolderStore, FolderStoreTimeout
from isaacgymenvs_gmi.comm.signed_store import SignedStore, StoreAuthError
from isaacgymenvs_gmi.gmi.rendezvous import make_rendezvous, open_rendezvous
from tests.speed import budget


def test_values_round_trip_and_the_folder_is_private(tmp_path):
    store = FolderStore(str(tmp_path / "keys"))
    store.set("gmi/progress/0", "3 grads")
    store.set("bytes", b"\x00\xff")
    assert store.get("gmi/progress/0") == b"3 grads" and store.get("bytes") == b"\x00\xff"
    assert stat.S_IMODE(os.stat(tmp_path / "keys").st_mode) == 0o700


def test_a_missing_key_times_out_naming_it(tmp_path):
    store = FolderStore(str(tmp_path), timedelta(seconds=0.2))
    started = time.monotonic()
    with pytest.raises(FolderStoreTimeout, match="'never/set' did not appear within 0.2 s"):
        store.get("never/set")
    assert 0.2 <= time.monotonic() - started < budget(5)


def _write_later(path: str, key: str, value: bytes, delay_s: float) -> None:
    time.sleep(delay_s)
    FolderStore(path).set(key, value)


def test_a_get_waits_for_a_key_another_process_sets(tmp_path):
    writer = mp.get_context("spawn").Process(
        target=_write_later, args=(str(tmp_path), "late", b"x" * 100_000, 0.5)
    )
    writer.start()
    assert FolderStore(str(tmp_path), timedelta(seconds=60)).get("late") == b"x" * 100_000
    writer.join(30)


def test_rewriting_a_key_keeps_one_file_and_no_scratch(tmp_path):
    store = FolderStore(str(tmp_path))
    for n in range(500):
        store.set("gmi/progress/1", f"{n} grads")
    assert store.get("gmi/progress/1") == b"499 grads"
    assert len(os.listdir(tmp_path)) == 1  # no growth, no temporary file left


def test_a_value_that_outgrows_its_file_moves_to_a_larger_one(tmp_path):
    store, reader = FolderStore(str(tmp_path)), FolderStore(str(tmp_path))
    store.set("k", "short")
    store.set("k", "x" * 10_000)
    assert reader.get("k") == b"x" * 10_000
    store.set("k", "short again")  # in place in the larger file
    assert reader.get("k") == b"short again" and len(os.listdir(tmp_path)) == 1


def _rewrite(path: str, rounds: int) -> None:
    store = FolderStore(path)
    for n in range(rounds):
        store.set("gmi/progress/0", f"{n} {'grads' * (n % 7)}")


def test_a_reader_never_sees_half_a_rewrite(tmp_path):
    """A writer rewrites a record in place as fast as it can; every read is one whole value."""
    FolderStore(str(tmp_path)).set("gmi/progress/0", "0 ")
    writer = mp.get_context("spawn").Process(target=_rewrite, args=(str(tmp_path), 100_000))
    writer.start()
    reader, seen = FolderStore(str(tmp_path)), set()
    while writer.is_alive():
        count, what = reader.get("gmi/progress/0").decode().split(" ", 1)
        assert what == "grads" * (int(count) % 7)
        seen.add(count)
    writer.join(60)
    assert len(seen) > 10  # it did read while the writer wrote


def test_the_rendezvous_is_private_and_signed(tmp_path):
    folder = make_rendezvous(str(tmp_path))
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    group_store, ours = open_rendezvous(folder, b"s" * 32, timedelta(seconds=1))
    group_store.set("torch/key", "value")  # torch's own store: a FileStore in the folder
    assert group_store.get("torch/key") == b"value"
    ours.set("gmi/0/device0", "segment")
    _, stranger = open_rendezvous(folder, b"t" * 32, timedelta(seconds=0.1))
    with pytest.raises(FolderStoreTimeout):  # another secret: another namespace
        stranger.get("gmi/0/device0")
    raw = FolderStore(os.path.join(folder, "keys"))
    raw.set(ours.namespace + "v/gmi/0/device0", b"x" * 32 + b"/etc/passwd")
    with pytest.raises(StoreAuthError):
        SignedStore(raw, b"s" * 32).get("gmi/0/device0")
