"""Population-based training on GMIs (in progress): the rules each member applies, written from
DexPBT's algorithm and the behaviour of IsaacGymEnvs' ``pbt`` package; not yet a mode."""
