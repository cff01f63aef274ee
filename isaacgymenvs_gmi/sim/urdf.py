"""Read IsaacGymEnvs URDF assets with MuJoCo.

Isaac Gym derives a missing ``<inertia>`` from an ``<inertial>``'s mass; MuJoCo's URDF reader
refuses it. We add the inertia of the link's first collision shape (box, cylinder or sphere, else
a small sphere) at that mass, and point MuJoCo's mesh folder at the URDF's folder.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco


def _shape_inertia(mass: float, geometry: ET.Element | None) -> tuple[float, float, float]:
    shape = None if geometry is None else next(iter(geometry), None)
    if shape is not None and shape.tag == "box":
        x, y, z = (float(v) for v in shape.get("size", "0.1 0.1 0.1").split())
        return (
            mass * (y * y + z * z) / 12,
            mass * (x * x + z * z) / 12,
            mass * (x * x + y * y) / 12,
        )
    if shape is not None and shape.tag == "cylinder":
        r, h = float(shape.get("radius", 0.05)), float(shape.get("length", 0.1))
        side = mass * (3 * r * r + h * h) / 12
        return (side, side, mass * r * r / 2)
    r = float(shape.get("radius", 0.05)) if shape is not None and shape.tag == "sphere" else 0.05
    return (2 * mass * r * r / 5,) * 3


def complete_inertials(robot: ET.Element) -> None:
    """Add an ``<inertia>`` to every ``<inertial>`` that lacks one (in place)."""
    for link in robot.iter("link"):
        inertial = link.find("inertial")
        if inertial is None or inertial.find("inertia") is not None:
            continue
        mass_el = inertial.find("mass")
        mass = float(mass_el.get("value", 1.0)) if mass_el is not None else 1.0
        collision = link.find("collision")
        diagonal = _shape_inertia(mass, None if collision is None else collision.find("geometry"))
        attrib = {k: f"{v:.9g}" for k, v in zip(("ixx", "iyy", "izz"), diagonal, strict=True)}
        ET.SubElement(inertial, "inertia", attrib, ixy="0", ixz="0", iyz="0")


def spec_from_urdf(path: Path) -> mujoco.MjSpec:
    robot = ET.parse(path).getroot()
    complete_inertials(robot)
    if robot.find("mujoco") is None:
        ext = ET.SubElement(robot, "mujoco")
        ET.SubElement(ext, "compiler", meshdir=str(path.parent), discardvisual="true")
    return mujoco.MjSpec.from_string(ET.tostring(robot, encoding="unicode"))
