"""Train or play an IsaacGymEnvs task: ``python train.py task=Ant gmi.per_gpu=3``.

The same command line and configs as IsaacGymEnvs' ``train.py``; the ``gmi.*`` options choose how
the run is split across GPU multiplexing instances. A thin caller of ``python -m
isaacgymenvs_gmi`` (:mod:`isaacgymenvs_gmi.cli`), which works from any folder once installed.
"""

if __name__ == "__main__":
    from isaacgymenvs_gmi.cli import main

    main()
