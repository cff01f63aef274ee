"""rl-games' test networks stay unimported until a config asks for one, and torch's compiler
until something compiles; asking still works."""

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


COMPILER = """
import sys
from datetime import timedelta
import isaacgymenvs_gmi.runners  # puts the compiler's stand-in in place
import rl_games.torch_runner
import torch
import torch.distributed as dist

def compiler():
    return type(sys.modules["torch._dynamo"]).__name__

# what training does: rl-games' trainer, an optimizer's steps, a process group
model = torch.nn.Linear(3, 2)
opt = torch.optim.Adam(model.parameters())
for _ in range(2):
    opt.zero_grad()
    model(torch.ones(4, 3)).sum().backward()
    opt.step()
opt.load_state_dict(opt.state_dict())
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
dist.destroy_process_group()
assert compiler() == "_CompilerStandIn", compiler()
assert "torch._dynamo.convert_frame" not in sys.modules
# torch.compile imports the real compiler, with rl-games' option set on it
double = torch.compile(lambda x: 2 * x, backend="eager")
assert double(torch.ones(2)).tolist() == [2.0, 2.0]
assert compiler() == "module"
assert torch._dynamo.config.cache_size_limit == 64  # rl-games' option
zero_grad = torch.optim.Optimizer.zero_grad.__wrapped__
assert zero_grad.__dict__.get("__dynamo_disable") is None  # torch's own marking is back
opt.zero_grad()
assert zero_grad.__dict__["__dynamo_disable"] is not zero_grad
print("ok")
"""


def test_the_compiler_loads_only_when_something_compiles():
    proc = subprocess.run([sys.executable, "-c", COMPILER], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


WALKED = """
import inspect, sys
import isaacgymenvs_gmi.runners
import torch
# tools that walk sys.modules ask every module for its dunders: the stand-in stays
assert inspect.getmodule(torch.ones) is not None
assert type(sys.modules["torch._dynamo"]).__name__ == "_CompilerStandIn"
# what imported the compiler in the middle of another import before: DTensor comparisons
torch.testing.assert_close(torch.ones(2), torch.ones(2))
import torch.distributed.tensor  # noqa: F401
import torch._dynamo.config  # a submodule: the real package is imported for it
assert type(sys.modules["torch._dynamo"]).__name__ == "module"
print("ok")
"""


def test_walking_the_modules_leaves_the_stand_in_and_submodules_load_the_real_one():
    proc = subprocess.run([sys.executable, "-c", WALKED], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
