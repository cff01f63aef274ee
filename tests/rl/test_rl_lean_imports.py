"""rl-games' test networks (and torch's compiler they load) stay unimported until a config asks
for one; asking still works."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import isaacgymenvs_gmi.runners  # defers them before any body imports rl-games' trainer
import rl_games.torch_runner
assert "rl_games.envs.test_network" not in sys.modules
assert "torch._inductor.compile_fx" not in sys.modules
from rl_games.algos_torch import model_builder
builder = model_builder.NETWORK_REGISTRY["testnet"]()
assert type(builder).__name__ == "TestNetBuilder"
assert "rl_games.envs.test_network" in sys.modules
import rl_games.envs.test  # the package's other modules import as before
print("ok")
"""


def test_the_test_networks_load_on_first_use_only():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
