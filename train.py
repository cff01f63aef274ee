"""Train or play an IsaacGymEnvs task: ``python train.py task=Ant gmi.per_gpu=3``.

Takes the same command line and configs as IsaacGymEnvs' ``train.py``; the ``gmi.*`` options
choose how the run is split across GPU multiplexing instances.
"""

import logging
import os
import sys
import warnings

# JAX (physics) and torch (learner) share a GPU in one process, and GMIs share it between
# processes: JAX must not grab most of the device up front (GMIs further cap their share).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import hydra
from omegaconf import DictConfig

from isaacgymenvs_gmi.config import ConfigError, register_resolvers
from isaacgymenvs_gmi.console import quiet_console

register_resolvers()
# IsaacGymEnvs' version_base="1.1" is kept on purpose (same config semantics); spawned GMIs
# re-import this file, so say it once, not once per GMI.
warnings.filterwarnings("ignore", message="(?s).*version_base")


@hydra.main(version_base="1.1", config_path="cfg", config_name="config")
def main(cfg: DictConfig) -> None:
    logging.basicConfig(level=logging.INFO, format="[%(name)s] %(message)s")
    with quiet_console():
        _train(cfg)


def _train(cfg: DictConfig) -> None:
    from isaacgymenvs_gmi.api import run
    from isaacgymenvs_gmi.gmi.spawn import GmiFailure, GmiInterrupted
    from isaacgymenvs_gmi.gmi.stop import StopNow, exit_code, signal_name
    from isaacgymenvs_gmi.planner import NoRunnableCandidate
    from isaacgymenvs_gmi.sim.model import AssetNotFoundError

    try:
        result = run(cfg)  # auto searched, validated, launched: the same call pipelines make
    except (ConfigError, AssetNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except (NoRunnableCandidate, GmiFailure) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except (GmiInterrupted, StopNow) as e:
        print(f"{e} (no final checkpoint)", file=sys.stderr)
        sys.exit(exit_code(e.signum))
    except KeyboardInterrupt:
        print("stopped by SIGINT", file=sys.stderr)
        sys.exit(130)
    if result is not None and result.stopped_by is not None:
        where = result.checkpoint or "none written"
        print(
            f"stopped by {signal_name(result.stopped_by)} after {result.frames:,} frames; "
            f"final checkpoint: {where}",
            file=sys.stderr,
        )
        sys.exit(exit_code(result.stopped_by))


if __name__ == "__main__":
    main()
