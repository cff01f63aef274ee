"""Control flows one way: entry -> planner -> launch -> runners -> gmi -> comm -> placement/...

Every ``isaacgymenvs_gmi`` import in the package (module level or inside a function) must point
to a lower layer or stay inside its own package. A circle or an import running back up fails
here, with the file and the import named.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Top-level subpackage (or module) -> layer; a module may import only from higher numbers.
LAYERS = {
    "__main__": -4,  # python -m isaacgymenvs_gmi
    "sweep_job": -4,  # python -m isaacgymenvs_gmi.sweep_job: one job of a packed sweep
    "cli": -3,  # the command line (train.py's)
    "api": -2,  # make() and run(): the Python entry points
    "sweep": -2,  # hydra/launcher=gmi: packs a sweep's runs (each one train.py) onto devices
    "planner": -1,  # searches configurations by launching trial runs
    "launch": 0,
    "mig": 0,
    "runners": 1,
    "gmi": 2,
    "channels": 3,  # experience channels sit on comm's shared-memory segments and store
    "comm": 4,
    "placement": 5,
    "rl": 5,
    "patches": 5,
    "sim": 6,
    "tasks": 7,
    "config": 8,
    "xla_defaults": 9,
    "console": 9,  # filters library chatter; imports nothing of ours
    "startup_clock": 9,  # marks on the way to the first epoch; imports nothing of ours
    "atomic_file": 9,  # whole-or-absent files; imports nothing of ours
}
SOURCES = {  # package part -> folder on disk
    **{name: ROOT / "isaacgymenvs_gmi" for name in LAYERS},
    "tasks": ROOT / "tasks",
    "patches": ROOT / "patches",
}


def _part_of(path: Path) -> str:
    if path.is_relative_to(ROOT / "tasks"):
        return "tasks"
    if path.is_relative_to(ROOT / "patches"):
        return "patches"
    rel = path.relative_to(ROOT / "isaacgymenvs_gmi")
    return rel.parts[0].removesuffix(".py")


def _package_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level part) of every import of our own package in ``path``."""
    part = _part_of(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue  # relative imports stay inside their own package
        for name in names:
            bits = name.split(".")
            if bits[0] == "isaacgymenvs_gmi" and len(bits) > 1 and bits[1] != part:
                found.append((node.lineno, bits[1]))
    return found


def _files() -> list[Path]:
    files = [*(ROOT / "isaacgymenvs_gmi").rglob("*.py"), *(ROOT / "tasks").rglob("*.py")]
    files += (ROOT / "patches").rglob("*.py")
    return sorted(
        f for f in files if f.name != "__init__.py" or f.parent.name != "isaacgymenvs_gmi"
    )


def test_every_part_of_the_package_has_a_layer():
    parts = {_part_of(f) for f in _files()}
    assert parts <= set(LAYERS), parts - set(LAYERS)


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_run_down(path):
    mine = LAYERS[_part_of(path)]
    upward = [
        f"line {line}: imports isaacgymenvs_gmi.{part} (layer {LAYERS[part]} >= {mine})"
        for line, part in _package_imports(path)
        if LAYERS[part] <= mine
    ]
    assert not upward, f"{path.relative_to(ROOT)}: " + "; ".join(upward)


RUNNERS = ROOT / "isaacgymenvs_gmi" / "runners"
MODE_PACKAGES = sorted(p.name for p in RUNNERS.iterdir() if (p / "__init__.py").is_file())


def _runner_imports(path: Path) -> list[tuple[int, str]]:
    """(line, package under runners/) of every import of a runners subpackage in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            bits = name.split(".")
            if bits[:2] == ["isaacgymenvs_gmi", "runners"] and len(bits) > 2:
                found.append((node.lineno, bits[2]))
    return found


@pytest.mark.parametrize("mode", [m for m in MODE_PACKAGES if m != "shared"])
def test_a_mode_imports_no_other_mode(mode):
    """Modes share what they share through runners.shared, never through each other."""
    others = set(MODE_PACKAGES) - {mode, "shared"}
    crossing = [
        f"{path.relative_to(ROOT)} line {line}: imports runners.{package}"
        for path in sorted((RUNNERS / mode).rglob("*.py"))
        for line, package in _runner_imports(path)
        if package in others
    ]
    assert not crossing, "; ".join(crossing)


def test_the_shared_runner_code_imports_no_mode():
    modes = set(MODE_PACKAGES) - {"shared"}
    crossing = [
        f"{path.relative_to(ROOT)} line {line}: imports runners.{package}"
        for path in sorted((RUNNERS / "shared").rglob("*.py"))
        for line, package in _runner_imports(path)
        if package in modes
    ]
    assert not crossing, "; ".join(crossing)


def test_the_launcher_names_no_mode():
    """launch.py reaches a mode only through the registry: no mode's name in its code."""
    from isaacgymenvs_gmi.runners import MODES

    launch = ROOT / "isaacgymenvs_gmi" / "launch.py"
    named = [
        f"line {node.lineno}: {node.value!r}"
        for node in ast.walk(ast.parse(launch.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for mode in MODES
        if node.value == mode or f"mode={mode}" in node.value or f"mode {mode}" in node.value
    ]
    assert not named, "launch.py names modes: " + "; ".join(named)
    assert len(MODES) >= 3  # the registry the check reads is the real one
