"""Plan MIG instances for GMIs: print the ``nvidia-smi`` commands an administrator would run.

We never create or destroy MIG instances (that needs admin rights, idle GPUs, and changes the
machine for everyone). For ``T`` GMIs per GPU this picks the largest GPU-instance profile of
which ``T`` fit on the card (7 compute slices on A100/H100-class GPUs) and prints the commands.

    python -m isaacgymenvs_gmi.mig plan --per-gpu 3 [--gpus 0,1] [--memory-gb 80]
"""

from __future__ import annotations

import argparse
import sys

SLICES = 7  # compute slices usable for GPU instances on MIG-capable data-centre GPUs
PROFILE_SLICES = (7, 4, 3, 2, 1)  # compute slices per profile, largest first
MEMORY_EIGHTHS = {7: 8, 4: 4, 3: 4, 2: 2, 1: 1}  # memory per profile, in eighths of the card


def profile_for(per_gpu: int, memory_gb: int) -> str:
    """Name of the largest profile ("<g>g.<mem>gb") of which ``per_gpu`` fit on one GPU."""
    if not 1 <= per_gpu <= SLICES:
        raise ValueError(f"--per-gpu must be in 1..{SLICES} for MIG, got {per_gpu}")
    slices = next(g for g in PROFILE_SLICES if g * per_gpu <= SLICES)
    return f"{slices}g.{memory_gb * MEMORY_EIGHTHS[slices] // 8}gb"


def mig_setup_commands(per_gpu: int, gpus: list[int], memory_gb: int) -> list[str]:
    profile = profile_for(per_gpu, memory_gb)
    cmds = []
    for g in gpus:
        cmds += [
            f"sudo nvidia-smi -i {g} -mig 1    # MIG mode on (GPU idle; may need a reset)",
            f"sudo nvidia-smi mig -i {g} -cgi {','.join([profile] * per_gpu)} -C",
        ]
    cmds.append("nvidia-smi -L    # the MIG-... UUIDs the GMIs will bind to")
    return cmds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m isaacgymenvs_gmi.mig", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="print the nvidia-smi commands for a GMI layout")
    plan.add_argument("--per-gpu", type=int, required=True, help="GMIs (MIG instances) per GPU")
    plan.add_argument("--gpus", default="0", help="comma-separated GPU indices (default 0)")
    plan.add_argument("--memory-gb", type=int, default=80, help="memory of one GPU (default 80)")
    args = p.parse_args(argv)
    try:
        gpus = [int(x) for x in args.gpus.split(",") if x.strip()]
        print("\n".join(mig_setup_commands(args.per_gpu, gpus, args.memory_gb)))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
