"""XLA CPU defaults: added to XLA_FLAGS once, never overriding what the user set."""

from __future__ import annotations

import os
import subprocess
import sys

from isaacgymenvs_gmi.xla_defaults import apply_cpu_defaults, jaxlib_knows_defaults


def test_defaults_are_appended_to_the_users_flags():
    env = {"XLA_FLAGS": "--xla_dump_to=somewhere"}
    flags = apply_cpu_defaults(env)
    assert flags == "--xla_dump_to=somewhere --xla_cpu_use_fusion_emitters=false"
    assert apply_cpu_defaults(env) == flags  # idempotent
    assert apply_cpu_defaults({}) == "--xla_cpu_use_fusion_emitters=false"


def test_a_value_the_user_chose_is_kept():
    env = {"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"}
    assert apply_cpu_defaults(env) == "--xla_cpu_use_fusion_emitters=true"


def test_importing_the_package_sets_them_before_jax_starts():
    code = (
        "import os, isaacgymenvs_gmi, jax.numpy as jnp; jnp.ones(2).block_until_ready(); "
        "print(os.environ['XLA_FLAGS'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr  # XLA accepts the flag (it aborts on unknown ones)
    assert out.stdout.strip() == "--xla_cpu_use_fusion_emitters=false"


def test_only_jaxlib_releases_that_know_the_flag_get_it():
    """jaxlib 0.11 aborts the process on the flag ("Unknown flag in XLA_FLAGS"), as seen on a
    GPU machine with jaxlib 0.11.2: the defaults follow the installed release."""
    assert jaxlib_knows_defaults("0.10.2") and jaxlib_knows_defaults("0.9.0")
    assert not jaxlib_knows_defaults("0.11.2") and not jaxlib_knows_defaults("1.0.0")
    assert not jaxlib_knows_defaults("nightly")
