"""What the modes share (rl-games glue, the GMI preamble, the env builder, the actor). Modes
import from here, never from each other."""
