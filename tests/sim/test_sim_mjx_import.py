"""MJX's mesh helpers run only when a model needs them; a module registered to execute on first
use behaves as the module itself once used."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from isaacgymenvs_gmi.sim.mjx_import import import_on_first_use


def _package(root, body: str) -> None:
    pkg = root / "first_use_pkg"
    (pkg / "inner").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "inner" / "__init__.py").write_text("import first_use_pkg.inner.helpers as _h\n")
    (pkg / "inner" / "helpers.py").write_text(body)


def test_a_module_runs_at_its_first_name_read_not_at_import(tmp_path, monkeypatch):
    _package(tmp_path, "import sys\nsys.runs = getattr(sys, 'runs', 0) + 1\nVALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "runs", 0, raising=False)
    try:
        assert import_on_first_use("first_use_pkg.inner.helpers")
        assert "first_use_pkg" not in sys.modules  # parents are left alone
        from first_use_pkg.inner import helpers  # the package's own import of it, then ours

        assert sys.runs == 0
        assert helpers.__name__ == "first_use_pkg.inner.helpers"
        assert helpers.__file__.endswith("helpers.py")
        assert not hasattr(helpers, "__path__")
        assert sys.runs == 0  # dunders read without running it
        assert helpers.VALUE == 7
        assert sys.runs == 1
        assert type(helpers) is type(sys)  # a plain module from then on
        assert not hasattr(helpers, "MISSING") and sys.runs == 1
        assert not import_on_first_use("first_use_pkg.inner.helpers")  # already there
    finally:
        for name in [n for n in sys.modules if n.startswith("first_use_pkg")]:
            del sys.modules[name]


def test_unknown_modules_are_not_registered():
    assert not import_on_first_use("no_such_package_here.mod")
    assert not import_on_first_use("json.no_such_module")
    assert not import_on_first_use("json")  # imported already


def test_mjx_imports_without_trimesh_and_meshes_still_work():
    """A fresh process: importing MJX leaves trimesh out; a model with a box and a mesh then
    loads MJX's mesh helpers, and steps."""
    code = textwrap.dedent(
        """
        import sys
        import jax, mujoco
        from isaacgymenvs_gmi.sim.mjx_import import import_mjx
        mjx = import_mjx()
        assert "trimesh" not in sys.modules, "trimesh imported with MJX"
        xml = '''<mujoco><asset><mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
        <worldbody><geom type="plane" size="5 5 .1"/>
        <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
        <body pos="1 0 1"><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>'''
        model = mujoco.MjModel.from_xml_string(xml)
        mx = mjx.put_model(model)
        assert "trimesh" in sys.modules
        d = jax.jit(mjx.step)(mx, mjx.make_data(mx))
        assert bool(jax.numpy.isfinite(d.qpos).all())
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
