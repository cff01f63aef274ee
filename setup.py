"""isaacgymenvs_gmi: run IsaacGymEnvs-style RL training split across GPU multiplexing instances."""

from setuptools import find_packages, setup

INSTALL_REQUIRES = [
    "torch==2.13.0",
    "rl-games==1.6.5",
    "hydra-core==1.3.8",
    "omegaconf==2.3.0",
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "flatbuffers==25.12.19",  # jax.export's serialization (sim/stored_programs.py)
    "mujoco==3.17.0",
    "mujoco-mjx==3.17.0",
    "nvidia-ml-py==13.615.71",
    "gymnasium==1.4.0",
    "numpy==2.4.6",
    "psutil==5.9.8",
    "tensorboard==2.21.0",
    "tensorboardX==2.6.5",
]

EXTRAS_REQUIRE = {
    "gpu": [
        "jax-cuda12-plugin[with-cuda]==0.10.2",
        "warp-lang==1.18.0",
        "mujoco-warp==3.17.0",
    ],
    "wandb": ["wandb==0.31.0"],
    "video": ["av==18.1.0"],  # capture_video's mp4 encoder (FFmpeg inside the wheel)
    # hydra/sweeper=optuna beside hydra/launcher=gmi (optuna < 3 is what the sweeper supports)
    "optuna": ["hydra-optuna-sweeper==1.2.0", "optuna==2.10.1", "SQLAlchemy==1.4.54"],
    # hydra/launcher=submitit_slurm: one packed sweep per node of a SLURM cluster
    "slurm": ["hydra-submitit-launcher==1.2.0", "submitit==1.5.4"],
    # the tests run wandb in its offline mode and write videos, so the dev install carries both
    # moviepy: gymnasium's RecordVideo writes with it (the README's make() + RecordVideo example);
    # the sweep tests run Optuna's sweeper and compose submitit's launcher config
    "dev": [
        "pytest==9.2.0",
        "pytest-xdist==3.8.0",  # make test's two workers (tests/parallel.py)
        "ruff==0.17.6",
        "matplotlib==3.11.2",
        "wandb==0.31.0",
        "av==18.1.0",
        "moviepy==1.0.3",
        "hydra-optuna-sweeper==1.2.0",
        "optuna==2.10.1",
        "SQLAlchemy==1.4.54",
        "hydra-submitit-launcher==1.2.0",
        "submitit==1.5.4",
    ],
}

setup(
    name="isaacgymenvs_gmi",
    version="0.1.0",
    description="GPU multiplexing instances (GMIs) for IsaacGymEnvs-style RL training",
    python_requires=">=3.10",
    packages=[
        # every package under isaacgymenvs_gmi/ (a new subpackage can never be left out)
        *find_packages(include=["isaacgymenvs_gmi", "isaacgymenvs_gmi.*"]),
        "isaacgymenvs_gmi.tasks",
        "isaacgymenvs_gmi.tasks.assets",
        "isaacgymenvs_gmi.patches",
        "hydra_plugins.isaacgymenvs_gmi_launcher",  # hydra/launcher=gmi (Hydra's namespace)
        "isaacgymenvs_gmi.cfg",
    ],
    package_dir={
        "isaacgymenvs_gmi.tasks": "tasks",
        "isaacgymenvs_gmi.tasks.assets": "tasks/assets",
        "isaacgymenvs_gmi.patches": "patches",
        "isaacgymenvs_gmi.cfg": "cfg",  # the bundled configs, shipped as package data
    },
    package_data={
        "isaacgymenvs_gmi.tasks.assets": ["*.xml"],
        "isaacgymenvs_gmi.cfg": ["*.yaml", "*/*.yaml"],
    },
    entry_points={"console_scripts": ["isaacgymenvs-gmi = isaacgymenvs_gmi.cli:main"]},
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
)
