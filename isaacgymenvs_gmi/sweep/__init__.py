"""Sweeps packed onto GMIs: ``python train.py -m task=Ant seed=1,2,3,4 hydra/launcher=gmi``.

Hydra's sweepers hand our launcher batches of jobs; each job is an ordinary single run in a
process of its own, bound to a slot of a device (a core set on a CPU, an MPS client on a GPU).
``hydra.launcher.per_gpu`` jobs run on each device at once, the rest queue; a job with
``gmi.per_gpu=k`` takes k slots of one device. Every job is validated before any starts and
returns its reward as a Hydra ``JobReturn``; one job failing does not stop the others.

- :mod:`.settings`: ``hydra.launcher.*``, typed;
- :mod:`.slots`: which device slots (and cores) a job gets;
- :mod:`.jobs`: the jobs of a batch, composed and validated, and their command lines;
- :mod:`.runner`: starts, watches and stops the job processes;
- :mod:`.report`: start and end lines, the live table, the closing summary and its files;
- :mod:`.job_result`: what a job's run (:mod:`isaacgymenvs_gmi.sweep_job`) writes for it;
- :mod:`.launcher`: the glue to Hydra's ``Launcher`` interface.
"""
