"""Workload-aware GMI selection (the paper's §5.2, Algorithm 2): ``gmi.per_gpu=auto`` and
``num_envs=auto`` are chosen by short real trial runs, cached per task, config and machine.

- :mod:`.search`: Algorithm 2 as a pure function over a profiler callback;
- :mod:`.candidates`: the search space and what a candidate changes in the config;
- :mod:`.trial`, :mod:`.trial_main`: a trial in processes of its own, watched for time and memory;
- :mod:`.projection`: one device's measurement projected to the system;
- :mod:`.cache`: results reused across runs, keyed by config, hardware and versions;
- :mod:`.resolve`: the entry ``train.py`` calls; ``python -m isaacgymenvs_gmi.planner``: the CLI.
"""

from .resolve import Choice, NoRunnableCandidate, auto_requested, choose, resolve_auto

__all__ = ["Choice", "NoRunnableCandidate", "auto_requested", "choose", "resolve_auto"]
