"""Headless rendering of one MuJoCo world to RGB images, with no display: EGL (a GPU's driver,
or Mesa's software rasteriser on a CPU machine), else OSMesa."""

from __future__ import annotations

import importlib

import mujoco
import numpy as np


class RendererUnavailable(RuntimeError):
    """No headless OpenGL context could be made here (the message says what was tried)."""


def _gl_context(width: int, height: int):
    """An OpenGL context made current on this thread: EGL first, then OSMesa."""
    tried = []
    for name in ("egl", "osmesa"):
        try:
            context = importlib.import_module(f"mujoco.{name}").GLContext(width, height)
            context.make_current()
            return context
        except Exception as err:  # noqa: BLE001 - each backend fails in its own way
            tried.append(f"{name}: {type(err).__name__}: {err}".strip())
    raise RendererUnavailable("no headless OpenGL: " + "; ".join(tried))


class OffscreenRenderer:
    """Renders ``model`` in states (qpos (nq,), qvel (nv,)) as (H, W, 3) uint8 images, the
    camera following the model's first body below the world."""

    def __init__(self, model: mujoco.MjModel, width: int = 640, height: int = 480):
        self.model = model
        self.width, self.height = width, height
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        if model.nlight == 0:  # lit by the headlight alone: brighter than MuJoCo's default
            model.vis.headlight.ambient[:] = 0.4
            model.vis.headlight.diffuse[:] = 0.8
        self._context = _gl_context(width, height)
        self._data = mujoco.MjData(model)
        self._scene = mujoco.MjvScene(model, maxgeom=2000)
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        root = next((b for b in range(1, model.nbody) if model.body_parentid[b] == 0), 0)
        self._camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        self._camera.trackbodyid = root
        self._camera.distance = 2.5 * float(model.stat.extent)
        self._camera.elevation, self._camera.azimuth = -20.0, 135.0
        self._gpu = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._gpu)
        self._viewport = mujoco.MjrRect(0, 0, width, height)
        self._pixels = np.empty((height, width, 3), np.uint8)

    def render(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """The world in state (qpos, qvel), a fresh (H, W, 3) uint8 image, top row first."""
        self._context.make_current()
        d = self._data
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(self.model, d)
        mujoco.mjv_updateScene(
            self.model, d, self._option, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )
        mujoco.mjr_render(self._viewport, self._scene, self._gpu)
        mujoco.mjr_readPixels(self._pixels, None, self._viewport, self._gpu)
        return np.flipud(self._pixels).copy()

    def close(self) -> None:
        if self._context is not None:
            self._gpu.free()
            self._context.free()
            self._context = None


def renderer_problem(model: mujoco.MjModel | None = None) -> str | None:
    """Why video cannot be recorded here (no OpenGL context, or no video encoder), else None."""
    try:
        import av  # noqa: F401 - the encoder
    except ImportError:
        return "needs PyAV to write mp4 files: pip install 'isaacgymenvs_gmi[video]'"
    model = model or mujoco.MjModel.from_xml_string("<mujoco/>")
    try:
        OffscreenRenderer(model, 16, 16).close()
    except RendererUnavailable as err:
        return str(err)
    return None
