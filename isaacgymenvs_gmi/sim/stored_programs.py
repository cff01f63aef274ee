"""Programs kept beside the compile cache as exported StableHLO, loaded without lowering.

JAX's persistent cache saves XLA's compile, but every process still traces and lowers the
function to find the cache key (seconds for MJX's step). A :func:`stored_jit` program is exported
once (``jax.export``) under a key made *before* tracing from all it depends on: its name, its
owner's key and platform, the source of the traced code (this package, the task suite, the
task's package, ``mujoco.mjx``), library versions, JAX's settings, ``XLA_FLAGS``, the devices and
the arguments' tree, shapes and dtypes. A warm process deserializes and calls it inside a
``jax.jit``; the outputs' tree comes from ``out_like`` (checked on export), else
``jax.eval_shape``. Files live in ``<compile cache>/programs`` as [SHA-256 of the rest | bytes],
written atomically; without a compile cache it is a plain ``jax.jit``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import logging
import os
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

import jax

from isaacgymenvs_gmi.atomic_file import write_atomically

from .compile_cache import compile_counts

log = logging.getLogger(__name__)

FOLDER = "programs"
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
    fn: Callable,
    *,
    name: str,
    key: bytes | None,
    code_of: Iterable[str] = (),
    donate_argnums=(),
    platform: str | None = None,
    out_like: Callable | None = None,
) -> Callable:
    """``jax.jit(fn, donate_argnums=...)``, kept in the compile cache (if one is set).
    ``key``: bytes naming all that ``fn`` closes over (None: not kept); ``code_of``: the task's
    modules; ``out_like(*args)``: a tree of the outputs' structure, made without tracing."""
    folder = _folder()
    if folder is None or key is None:
        return jax.jit(fn, donate_argnums=donate_argnums)
    base = hashlib.sha256()
    env = _environment_key(tuple(sorted(code_of)))
    for part in (name.encode(), key, env, f"{platform}".encode()):
        base.update(hashlib.sha256(part).digest())

    def run(*args):  # traced by jax.jit once per call signature
        leaves, in_tree = jax.tree_util.tree_flatten(args)
        specs = [
            jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=jax.typeof(x).weak_type)
            for x in leaves
        ]
        digest = base.copy()
        types = [(s.shape, str(s.dtype), s.weak_type) for s in specs]
        digest.update(f"{_ADDRESS.sub('', str(in_tree))}|{types}".encode())
        path = folder / f"{name}-{digest.hexdigest()[:40]}.exp"
        exported = _load(path)
        if exported is not None:
            out_tree = jax.tree_util.tree_structure(
                out_like(*args) if out_like else jax.eval_shape(fn, *args)
            )
            compile_counts().loaded_whole += 1
        else:
            try:
                exported, out_tree = _export_and_store(fn, in_tree, specs, path, platform)
            except Exception as err:  # noqa: BLE001 - e.g. host callbacks: a plain jit then
                log.info("program %s is not kept (%s)", name, err)
                return fn(*args)
            if out_like and jax.tree_util.tree_structure(out_like(*args)) != out_tree:
                raise ValueError(f"{name}: out_like gives another structure than the program's")
        return jax.tree_util.tree_unflatten(out_tree, exported.call(*leaves))

    return jax.jit(run, donate_argnums=donate_argnums)


def _folder() -> Path | None:
    cache = jax.config.jax_compilation_cache_dir
    return Path(cache) / FOLDER if cache else None


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
    try:
        module = importlib.import_module(name)
    except ImportError:
        return []
    folders = getattr(module, "__path__", None)
    if folders is None:
        file = getattr(module, "__file__", None)
        return [Path(file)] if file else []
    return sorted(f for folder in folders for f in Path(folder).rglob("*.py"))


def _load(path: Path) -> jax.export.Exported | None:
    """The program kept at ``path``, or None (no file, or one that cannot be used)."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    try:
        if hashlib.sha256(blob[32:]).digest() != blob[:32]:
            raise ValueError("damaged")
        exported = jax.export.deserialize(bytearray(blob[32:]))
    except Exception as err:  # noqa: BLE001 - whatever is wrong with it: export it again
        log.debug("stored program %s not loaded (%s): exporting it", path.name, err)
        return None
    os.utime(path)  # recently used
    return exported


def _export_and_store(fn, in_tree, specs: list, path: Path, platform: str | None):
    """``fn`` exported over flat arguments, kept at ``path``; and its outputs' tree."""
    out_trees = []

    def flat(*leaves):
        out, out_tree = jax.tree_util.tree_flatten(
            fn(*jax.tree_util.tree_unflatten(in_tree, leaves))
        )
        out_trees.append(out_tree)
        return out

    platforms = None if platform is None else (platform,)
    exported = jax.export.export(jax.jit(flat), platforms=platforms)(*specs)
    payload = bytes(exported.serialize())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, hashlib.sha256(payload).digest() + payload)
    except OSError as err:
        log.warning("program %s not stored: %s", path.stem, err)
    _evict(path.parent)
    return exported, out_trees[0]


def _evict(folder: Path) -> None:
    files = []
    for path in folder.glob("*.exp"):
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
