"""Whole compiled programs kept beside the compile cache, loaded without tracing.

JAX's persistent cache saves XLA's compile, but every process still traces the Python function
and lowers it to find the cache key: for MJX's step that is seconds of a warm start. A
:func:`stored_jit` program is kept whole (``jax.experimental.serialize_executable``) under a key
made *before* tracing, from everything the traced program depends on:

- the program's name and the key its owner gives (what it closes over: the task config, the
  MuJoCo model's bytes, sizes, ...);
- the source of the code that is traced: every Python file of this package, of the task suite,
  of the task's own package, and of ``mujoco.mjx``; the versions of jax, jaxlib, mujoco and
  numpy;
- JAX's settings that change programs, ``XLA_FLAGS``, and the device (platform and kind);
- the arguments' tree, shapes and dtypes (per call signature).

The files live in ``<compile cache>/programs`` (the cache folder is already one per CPU), are
written atomically (a reader never sees half a file), and go with the cache's ``--clear``. A file
holds the executable as JAX serializes it and the structure of its outputs as JSON
(:mod:`.tree_codec`); nothing of ours unpickles it.
Without a compile cache, a stored program is a plain ``jax.jit``. A file that cannot be loaded
is compiled again and replaced.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import jax

from isaacgymenvs_gmi.atomic_file import write_atomically

from . import tree_codec
from .compile_cache import compile_counts

log = logging.getLogger(__name__)

FOLDER = "programs"
MAGIC = b"isaacgymenvs_gmi program 1\n"
MAX_BYTES = 1 << 30  # least recently used files go first beyond this
JAX_SETTINGS = (  # settings that change what a traced function becomes
    "jax_enable_x64",
    "jax_default_matmul_precision",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_softmax_custom_jvp",
    "jax_dynamic_shapes",
    "jax_enable_checks",
    "jax_debug_nans",
    "jax_debug_infs",
)
VERSIONED = ("jax", "jaxlib", "mujoco", "numpy")


def stored_jit(
    fn: Callable, *, name: str, key: bytes, code_of: Iterable[str] = (), donate_argnums=()
) -> Callable:
    """``jax.jit(fn, donate_argnums=...)``, kept whole in the compile cache (if one is set).

    ``key``: bytes naming all that ``fn`` closes over (same key: same program). ``code_of``:
    modules or packages whose source is traced too (the task's), beside this package's, the
    suite's and ``mujoco.mjx``'s.
    """
    jitted = jax.jit(fn, donate_argnums=donate_argnums)
    folder = _folder()
    if folder is None:
        return jitted
    base = hashlib.sha256()
    for part in (name.encode(), key, _environment_key(tuple(sorted(code_of)))):
        base.update(hashlib.sha256(part).digest())
    programs: dict[Any, Any] = {}  # call signature -> compiled program
    last: list[Any] = []  # the program of the latest call: tried first, it checks its arguments

    def call(*args):
        if last:
            try:
                return last[0](*args)
            except TypeError as err:
                if not _not_its_arguments(err):
                    raise
        signature, stable = _signature(args)
        program = programs.get(signature)
        if program is None:
            digest = base.copy()
            digest.update(stable.encode())
            path = folder / f"{name}-{digest.hexdigest()[:40]}.exe"
            program = _load(path, args, code_of) or _compile_and_store(jitted, args, path)
            programs[signature] = program
        last[:] = [program]
        return program(*args)

    return call


def _not_its_arguments(err: TypeError) -> bool:
    """Whether a compiled program refused arguments of another signature (before running)."""
    text = str(err)
    return text.startswith(
        ("Argument types differ from the types", "Function compiled with input pytree")
    )


def _folder() -> Path | None:
    cache = jax.config.jax_compilation_cache_dir
    return Path(cache) / FOLDER if cache else None


def _signature(args: tuple) -> tuple[Any, str]:
    """The arguments' tree, shapes, dtypes and devices: as a key within this process, and as
    text that is the same in every process (object addresses left out)."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    types = tuple(
        (
            getattr(x, "shape", None),
            str(getattr(x, "dtype", type(x).__name__)),
            bool(getattr(x, "weak_type", False)),
        )
        for x in leaves
    )
    devices = tuple(sorted({str(d) for x in leaves for d in getattr(x, "devices", tuple)()}))
    stable = f"{_ADDRESS.sub('', str(tree))}|{types}|{devices}"
    return (tree, types, devices), stable


_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


@cache
def _environment_key(code_of: tuple[str, ...]) -> bytes:
    """Code, versions, JAX settings, XLA flags and devices: hashed once per process."""
    digest = hashlib.sha256()
    own = __name__.split(".")[0]
    packages = (own, f"{own}.tasks", "mujoco.mjx")  # the suite lives in a folder of its own
    covered = tuple(f"{p}." for p in packages)  # a task module inside them is read with them
    extra = [n for n in code_of if not n.startswith(covered)]
    for name in dict.fromkeys((*packages, *extra)):
        for path in _source_files(name):
            digest.update(str(path.name).encode())
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"?")
    for dist in VERSIONED:
        try:
            digest.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{dist}=?".encode())
    for setting in JAX_SETTINGS:
        digest.update(f"{setting}={getattr(jax.config, setting, None)!r}".encode())
    digest.update(os.environ.get("XLA_FLAGS", "").encode())
    digest.update(";".join(f"{d.platform}:{d.device_kind}" for d in jax.devices()).encode())
    return digest.digest()


def _source_files(name: str) -> list[Path]:
    """The Python files of module or package ``name`` (a package's, all under its folders)."""
    module = sys.modules.get(name)
    if module is None:
        try:
            module = importlib.import_module(name)
        except ImportError:
            return []
    folders = getattr(module, "__path__", None)
    if folders is None:
        file = getattr(module, "__file__", None)
        return [Path(file)] if file else []
    return sorted(f for folder in folders for f in Path(folder).rglob("*.py"))


def _load(path: Path, args: tuple, code_of: Iterable[str]):
    """The program kept at ``path`` for calls like ``args``, or None (no file, or one that
    cannot be used: another jaxlib's, truncated, ...)."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    try:
        from jax.experimental.serialize_executable import deserialize_and_load

        out_tree, executable = _unpack(blob, code_of)
        _ready_lapack()
        in_tree = jax.tree_util.tree_structure((args, {}))
        program = deserialize_and_load(executable, in_tree, out_tree)
    except Exception as err:  # noqa: BLE001 - whatever is wrong with it: compile instead
        log.debug("stored program %s not loaded (%s): compiling it", path.name, err)
        return None
    os.utime(path)  # recently used
    compile_counts().loaded_whole += 1
    return program


def _pack(out_tree, executable: bytes) -> bytes:
    """[magic | header length | JSON header (the output's structure) | executable]."""
    header = json.dumps({"out_tree": tree_codec.encode(out_tree)}).encode()
    return MAGIC + len(header).to_bytes(8, "big") + header + executable


def _unpack(blob: bytes, code_of: Iterable[str]):
    if not blob.startswith(MAGIC):
        raise ValueError("not a stored program")
    start = len(MAGIC) + 8
    end = start + int.from_bytes(blob[len(MAGIC) : start], "big")
    header = json.loads(blob[start:end])
    return tree_codec.decode(header["out_tree"], code_of), blob[end:]


@cache
def _ready_lapack() -> None:
    """Point the CPU's LAPACK calls at their functions: tracing a program that uses them does it
    on the way, a loaded program needs it done (else it crashes on its first such call)."""
    from jax._src.lax import linalg

    initialize = getattr(linalg, "initialize_lapack", None)
    if initialize is not None:
        initialize()


def _compile_and_store(jitted, args: tuple, path: Path):
    program = _compile_afresh(jitted, args)
    try:
        from jax.experimental.serialize_executable import serialize

        executable, _, out_tree = serialize(program)
        blob = _pack(out_tree, executable)
    except Exception as err:  # noqa: BLE001 - e.g. host callbacks, an unusual output
        log.info("program %s is not kept whole (%s)", path.stem, err)
        return program
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, blob)
    except OSError as err:
        log.warning("program %s not stored: %s", path.stem, err)
        return program
    _evict(path.parent)
    return program


def _compile_afresh(jitted, args: tuple):
    """Compiled by XLA now, not taken from JAX's cache: an executable JAX loaded from its cache
    serializes without its compiled kernels (on the CPU it then fails when run)."""
    from jax.experimental.compilation_cache import compilation_cache

    lowered = jitted.lower(*args)
    was_on = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    try:
        program = lowered.compile()
    finally:
        jax.config.update("jax_enable_compilation_cache", was_on)
        compilation_cache.reset_cache()
    compile_counts().compiled_whole += 1
    return program


def _evict(folder: Path) -> None:
    files = []
    for path in folder.glob("*.exe"):
        try:
            stat = path.stat()
        except OSError:  # another GMI evicted it
            continue
        files.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= MAX_BYTES:
            return
        path.unlink(missing_ok=True)
        total -= size
