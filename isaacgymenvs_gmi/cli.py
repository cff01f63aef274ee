"""The command line: ``python -m isaacgymenvs_gmi task=Ant gmi.per_gpu=3`` (also the
``isaacgymenvs-gmi`` console script and a checkout's ``train.py``), with IsaacGymEnvs'
``train.py`` command line and configs. Config sources the user names come before the bundled
``cfg/`` (:mod:`isaacgymenvs_gmi.config.sources`); one line at start names where the task and
train configs came from.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Sequence

# JAX (physics) and torch (learner) share a GPU in one process, and GMIs share it between
# processes: JAX must not grab most of the device up front (GMIs further cap their share).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``argv`` (default: ``sys.argv[1:]``) as ``train.py`` would; exits with its code."""
    from isaacgymenvs_gmi.gmi.stop import STARTUP

    STARTUP.install()  # from here a Ctrl-C is recorded, never a traceback wherever it lands
    import hydra

    from isaacgymenvs_gmi import startup_clock
    from isaacgymenvs_gmi.config import ConfigError, register_resolvers
    from isaacgymenvs_gmi.config.sources import (
        resolve_sources,
        split_config_flags,
        user_sources_first,
    )

    startup_clock.clear()
    startup_clock.mark("process", startup_clock.process_start())
    args = list(sys.argv[1:] if argv is None else argv)
    flags, rest = split_config_flags(args)
    try:
        sources = resolve_sources(flags, rest)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    register_resolvers()
    # IsaacGymEnvs' version_base="1.1" is kept on purpose (same config semantics); spawned GMIs
    # re-import the main module, so say it once, not once per GMI.
    warnings.filterwarnings("ignore", message="(?s).*version_base")

    started = []  # the app ran: Hydra composed the config

    def app(cfg) -> float | None:
        from isaacgymenvs_gmi.console import quiet_console

        started.append(True)
        logging.basicConfig(level=logging.INFO, format="[%(name)s] %(message)s")
        enable_our_loggers()
        _say_sources(cfg, sources)
        with quiet_console():
            return _train(cfg)

    _register_sweep_launcher()
    sys.argv = [sys.argv[0], *sources.hydra_args]
    entry = hydra.main(
        version_base="1.1", config_path=sources.main, config_name=sources.config_name
    )
    try:
        with user_sources_first(sources):
            entry(app)()
    except SystemExit as exit_:
        if exit_.code not in (0, None) and not started:  # Hydra refused the command line
            from isaacgymenvs_gmi.config.suggest import suggestions

            for line in suggestions(args):
                print(line, file=sys.stderr)
        raise


def enable_our_loggers() -> None:
    """Hydra's ``disabled`` job logging (upstream's, kept) turns off every logger that exists
    when the job starts: ours too, where a pipeline imported this package before its Hydra
    main ran. Turn them back on."""
    prefix = __name__.partition(".")[0]
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger) and (name + ".").startswith(prefix + "."):
            logger.disabled = False


def _register_sweep_launcher() -> None:
    """``hydra/launcher=gmi`` (:mod:`isaacgymenvs_gmi.sweep`), registered as the search path
    plugin is: explicitly, so it is there however the package was installed."""
    from hydra.core.plugins import Plugins

    try:
        from hydra_plugins.isaacgymenvs_gmi_launcher import GmiLauncher
    except ImportError:  # a checkout run without its folder on the path: -m launches as upstream
        return
    Plugins.instance().register(GmiLauncher)


def _say_sources(cfg, sources) -> None:
    """One line naming where the task and train configs were read from (rank 0 only)."""
    from hydra.core.hydra_config import HydraConfig

    if os.environ.get("RANK", "0") != "0":
        return
    choices = HydraConfig.get().runtime.choices
    parts = [
        f"{group} {choices[group]} from {sources.origin(group, choices[group])}"
        for group in ("task", "train")
        if choices.get(group)
    ]
    if sources.foreign_primary and sources.primary_file is not None:
        parts.append(f"primary config {sources.primary_file} (plugin keys added with defaults)")
    print("configs: " + "; ".join(parts), file=sys.stderr, flush=True)


def _train(cfg) -> float | None:
    """Run ``cfg``: a training run ends with one closing line on stderr, a failed or stopped one
    with an exit code. Returns the best mean episode reward an epoch reported (a sweeper's
    objective), None without one; a sweep's job also writes its result (:mod:`.sweep.job_result`).
    """
    import time

    from isaacgymenvs_gmi import startup_clock
    from isaacgymenvs_gmi.api import run
    from isaacgymenvs_gmi.config import ConfigError
    from isaacgymenvs_gmi.console import closing_line, launcher_rank
    from isaacgymenvs_gmi.gmi.spawn import GmiFailure, GmiInterrupted
    from isaacgymenvs_gmi.gmi.stop import STARTUP, StopNow, exit_code
    from isaacgymenvs_gmi.planner import NoRunnableCandidate
    from isaacgymenvs_gmi.sim.model import AssetNotFoundError

    startup_clock.mark("imports")
    started = time.monotonic()
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
    STARTUP.run_ended()
    if result is None:
        return None
    from isaacgymenvs_gmi.sweep.job_result import job_result, write_result

    summary = job_result(result, time.monotonic() - started)
    write_result(summary)
    wall_s = summary["wall_s"]
    if not cfg.get("test", False) and launcher_rank() == 0:  # under torchrun rank 0 says it
        print(closing_line(result, wall_s), file=sys.stderr, flush=True)
    if result.stopped_by is not None:
        sys.exit(exit_code(result.stopped_by))
    return summary["best_reward"]
