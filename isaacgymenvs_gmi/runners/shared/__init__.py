"""What the modes share: rl-games glue (the lockstep that keeps replicas identical, the
stoppable agent, the edits every GMI makes to rl-games' settings), the GMI preamble, the env
builder, the actor that plays a policy into channels, and the checks of modes that act without
training in step. Modes import from here, never from each other."""
