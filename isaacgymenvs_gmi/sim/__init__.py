"""Physics backends behind the VecTask interface."""
