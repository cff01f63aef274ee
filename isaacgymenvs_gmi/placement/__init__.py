"""Where a run's GMIs go, as pure functions of the config and the machine.

The GMI layout and its mapping list (MPL), the backend that carves GMIs out of a device, CPU core
sets, the layout of ``torchrun``'s ranks, the node inventory (GPUs, MIG instances, cores) and the
:class:`RunPlan` every GMI receives. Nothing here starts a process or touches a device.
"""
