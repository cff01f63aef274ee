"""Bridge to rl-games: env registration, observer, runner."""
