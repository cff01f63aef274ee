"""Does torch.compile change what 3 synced GMIs compute more than it changes one process?

Companion to ``mjx_compile_learning.py``: there, 3 GMIs with rl-games' ``torch_compile`` ended
below one process on two seeds. Learning curves are too noisy to say why; this compares
trajectories instead. For 3 GMIs and for one process at the same total envs (Ant on MJX, the
CPU), it trains the same seed with compile on and off and reads rl-games' per-epoch figures
(KL, critic loss, entropy, learning rate). Compiled and eager code differ by float
reassociation, so each pair drifts apart as the chaos of the physics amplifies it; what a
defect in the synced path under compile (normaliser statistics, the KL riding with the
gradients, the gradient hook) would add is an earlier and larger drift for the 3 GMIs.

Prints, per GMI count, the drift at every epoch (largest relative difference over the figures)
and the epoch where it first passes 1e-3, then the ratio of the 3 GMIs' mean log-drift to the
one process's, both measured in this call. Writes bench/results/compile_fidelity.json.

    python bench/compile_fidelity.py [--seed 42] [--epochs 12] [--envs 384]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from common import read_scalars, write_result
from mjx_compile_learning import train_ant_mjx

NAME = "compile_fidelity"
TAGS = ("info/kl", "losses/c_loss", "losses/entropy", "info/last_lr")
ONSET = 1e-3


def one_run(gmis: int, compile_on: bool, args, work: Path) -> dict[str, list[float]]:
    """rl-games' per-epoch figures (one list per tag, epoch order) of one training run."""
    runs = work / f"gmis{gmis}_compile{int(compile_on)}"
    _, summaries, _, _ = train_ant_mjx(
        gmis, args.envs // gmis, args.seed, compile_on, args.epochs, runs
    )
    return {tag: [v for _, v in sorted(read_scalars(summaries, tag))] for tag in TAGS}


def drift(a: dict[str, list[float]], b: dict[str, list[float]]) -> list[float]:
    """Per epoch, the largest relative difference between two runs' figures."""
    epochs = min(len(a[t]) for t in TAGS)
    return [
        max(abs(a[t][e] - b[t][e]) / max(abs(a[t][e]), abs(b[t][e]), 1e-12) for t in TAGS)
        for e in range(epochs)
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--envs", type=int, default=384, help="total envs, split over the GMIs")
    args = p.parse_args()
    pairs, start = {}, time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        for gmis in (3, 1):
            on, off = (one_run(gmis, c, args, Path(work)) for c in (True, False))
            d = drift(on, off)
            onset = next((e for e, x in enumerate(d, start=1) if x > ONSET), None)
            pairs[gmis] = {"drift": d, "onset_epoch": onset, "compile_on": on, "compile_off": off}
            print(
                f"{gmis} GMI(s), compile on vs off: drift per epoch "
                + " ".join(f"{x:.0e}" for x in d)
                + f"; passes {ONSET:g} at epoch {onset}"
            )

    def mean_log(d: list[float]) -> float:
        return sum(math.log10(max(x, 1e-12)) for x in d) / len(d)

    ratio = 10 ** (mean_log(pairs[3]["drift"]) - mean_log(pairs[1]["drift"]))
    print(f"3 GMIs' compile drift / one process's (geometric mean over epochs): {ratio:.2f}")
    write_result(
        NAME,
        {
            "command": f"python bench/compile_fidelity.py --seed {args.seed} "
            f"--epochs {args.epochs} --envs {args.envs}",
            "setup": f"Ant, sim_backend=mjx (CPU), {args.envs} envs in all (1 x {args.envs} vs "
            f"3 x {args.envs // 3}), minibatch 8 x envs per GMI, seed {args.seed}",
            "tags": list(TAGS),
            "drift_ratio_three_over_one": ratio,
            "pairs": {str(g): v for g, v in pairs.items()},
            "wall_s": time.monotonic() - start,
        },
    )


if __name__ == "__main__":
    main()
