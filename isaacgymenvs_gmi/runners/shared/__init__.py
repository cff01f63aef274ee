"""What the modes share: rl-games glue (the lockstep that keeps replicas identical, the
stoppable agent, agents built from the run's train config), the GMI preamble, the env builder,
the actor that plays a policy into channels, and the checks of modes that act without training
in step. Modes import from here, never from each other."""
