"""``python -m isaacgymenvs_gmi task=Ant gmi.per_gpu=3``: IsaacGymEnvs' ``train.py`` command
line (see :mod:`isaacgymenvs_gmi.cli`)."""

if __name__ == "__main__":
    from isaacgymenvs_gmi.cli import main

    main()
