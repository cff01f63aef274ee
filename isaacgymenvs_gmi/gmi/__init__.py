"""GMI processes: starting them, binding each to its slice of a device, and the group they form.

:mod:`.spawn` starts a node's GMIs; :mod:`.worker` is each GMI's entry (bind, join the group,
run the body of the plan's mode); :mod:`.group` holds the collectives every mode needs.
"""
