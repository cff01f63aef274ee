"""rl-games agents and runners that know about GMIs."""
