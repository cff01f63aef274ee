"""Small, documented changes to rl-games behaviour."""
