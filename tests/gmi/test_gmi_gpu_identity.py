"""Which CUDA libraries a GMI runs on: read from the process's memory map, two copies of one
library named. The real identity needs a GPU (marked ``gpu``)."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.gmi.gpu_identity import GpuIdentity, gpu_identity, mapped_libraries

MAPS = """\
7f00-7f01 r-xp 00000000 08:01 1 /venv/nvidia/cublas/lib/libcublasLt.so.12
7f01-7f02 r--p 00100000 08:01 1 /venv/nvidia/cublas/lib/libcublasLt.so.12
7f02-7f03 r-xp 00000000 08:01 2 /venv/nvidia/cublas/lib/libcublas.so.12
7f03-7f04 r-xp 00000000 08:01 3 /opt/jax_plugins/cuda/lib/libcublasLt.so.13
7f04-7f05 r-xp 00000000 08:01 4 /venv/torch/lib/libtorch_cuda.so
7f05-7f06 r-xp 00000000 08:01 5 /venv/nvidia/cudnn/lib/libcudnn_ops.so.9
7f06-7f07 rw-p 00000000 00:00 0
"""


def test_mapped_copies_are_found_and_a_second_copy_is_named():
    copies = mapped_libraries(MAPS)
    assert copies == {
        "libcublasLt": [
            "/venv/nvidia/cublas/lib/libcublasLt.so.12",
            "/opt/jax_plugins/cuda/lib/libcublasLt.so.13",
        ],
        "libcublas": ["/venv/nvidia/cublas/lib/libcublas.so.12"],
    }
    identity = GpuIdentity(copies, {"/venv/nvidia/cublas/lib/libcublas.so.12": "12.4.5"})
    assert list(identity.duplicated) == ["libcublasLt"]
    assert "libcublas 12.4.5 (/venv/nvidia/cublas/lib/libcublas.so.12)" in identity.line(2)


@pytest.mark.gpu
def test_a_gpu_process_names_its_cublas_and_what_each_framework_sees():
    import jax.numpy as jnp
    import torch

    a = torch.randn(64, 64, device="cuda")
    (a @ a).sum().item()
    float((jnp.ones((64, 64)) @ jnp.ones((64, 64))).sum())
    identity = gpu_identity("cuda:0")
    assert identity.copies.get("libcublasLt"), identity.line(0)
    assert "SMs" in identity.frameworks["torch"] and "SMs" in identity.frameworks["jax"]
