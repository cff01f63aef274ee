"""Bundled MJCF models."""
