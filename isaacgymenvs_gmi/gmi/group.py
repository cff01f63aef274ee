"""The collectives every GMI mode needs to stay consistent (gloo; tensors on the host).

Start-up waits with a long, monitored barrier; steady-state collectives run under the group's
short timeout through a :class:`CollectiveGuard` that names a missing GMI.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import timedelta

import torch
import torch.distributed as dist

from isaacgymenvs_gmi.channels.weights import flatten, unflatten
from isaacgymenvs_gmi.comm.store import Store

from .guard import CollectiveGuard, GmiTimeoutError
from .status import say


def _xla_threads() -> int | None:
    found = re.search(r"intra_op_parallelism_threads=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(found.group(1)) if found else None


class GmiGroup:
    """GMI ``rank`` of ``world_size``, joined through torch.distributed's default group (or
    ``group``). ``store``: the run's shared store (progress records, transport set-up);
    ``threads``: what this GMI's pools were sized to (None: its cores)."""

    def __init__(
        self,
        rank: int,
        world_size: int,
        guard: CollectiveGuard,
        store: Store,
        startup_timeout_s: float,
        group: dist.ProcessGroup | None = None,
        threads: int | None = None,
    ):
        self.rank, self.world_size = rank, world_size
        self.guard, self.store, self.group = guard, store, group
        self.startup_timeout_s = startup_timeout_s
        self.threads = threads

    @property
    def timeout_s(self) -> float:
        """How long a steady-state collective waits for a missing GMI."""
        return self.guard.timeout_s

    def leading(self, k: int, name: str) -> GmiGroup | None:
        """The group of GMIs ``0 .. k-1`` (same ranks) for a member, else None. Collective, in
        the same order as any other group creation; ``name`` tells its progress records apart."""
        timeout = timedelta(seconds=self.timeout_s)
        handle = dist.new_group(list(range(k)), timeout=timeout)
        if self.rank >= k:
            return None
        guard = CollectiveGuard(
            self.store,
            self.rank,
            k,
            self.timeout_s,
            key=f"gmi/progress/{name}/{{}}",
            after=self.guard.after,
        )
        return GmiGroup(
            self.rank, k, guard, self.store, self.startup_timeout_s, handle, self.threads
        )

    # --- start-up ----------------------------------------------------------------------------
    def check_pools(self, **more: int | None) -> None:
        """Raise unless this GMI's thread pools match its core set (or its share of the cores):
        a pool sized to the whole machine makes co-located GMIs spin against each other."""
        cores = sorted(os.sched_getaffinity(0))
        want = len(cores) if self.threads is None else self.threads
        pools = {"torch": torch.get_num_threads(), "xla": _xla_threads(), **more}
        wrong = {k: v for k, v in pools.items() if v not in (None, want)}
        if wrong or want > len(cores):
            raise RuntimeError(
                f"GMI {self.rank}: thread pools {wrong or pools} do not fit {want} thread(s) "
                f"on cores {cores}"
            )
        say(f"GMI {self.rank} pools: {pools} on cores {cores}")

    def startup_barrier(self, what: str) -> None:
        """Wait (long) until every GMI gets here; name the ones that do not."""
        self.guard.count += 1
        try:
            dist.monitored_barrier(
                self.group, timeout=timedelta(seconds=self.startup_timeout_s), wait_all_ranks=True
            )
        except RuntimeError as err:
            raise GmiTimeoutError(
                f"GMI {self.rank}: not every GMI reached '{what}' within "
                f"{self.startup_timeout_s:.0f} s: {str(err).splitlines()[0][:300]}"
            ) from err

    # --- replicas ----------------------------------------------------------------------------
    def broadcast_module(self, module: torch.nn.Module, what: str) -> None:
        """GMI 0's parameters and buffers (e.g. normaliser statistics) on every GMI."""
        flat = flatten([module])
        self.guard(what, lambda: dist.broadcast(flat, 0, group=self.group))
        unflatten(flat, [module])

    def check_same(self, replicas: list, what: str) -> None:
        """Raise unless every GMI holds bit-identical ``replicas`` (modules, optimizers, gradient
        scalers); GMI 0 says each fingerprint, labelled (:func:`replica_names`)."""
        names = replica_names(replicas)
        mine = torch.stack([fingerprint(m) for m in replicas])  # (replicas, 2)
        prints = self.all_gather_vector(mine, what + " fingerprint")  # (GMIs, replicas, 2)
        if not torch.equal(prints, prints[:1].expand_as(prints)):
            differ = (prints != prints[:1]).any(-1)  # (GMIs, replicas)
            found = "; ".join(
                f"GMI {g} differs from GMI 0 in "
                + ", ".join(n for n, d in zip(names, row, strict=True) if d)
                for g, row in enumerate(differ.tolist())
                if any(row)
            )
            raise RuntimeError(f"GMIs diverged at '{what}': {found}")
        if self.rank == 0:
            pairs = zip(names, mine, strict=True)
            labelled = ", ".join(f"{n}={fingerprint_hex(p)}" for n, p in pairs)
            say(f"replicas identical at '{what}' on {self.world_size} GMIs: {labelled}")

    # --- small collectives -------------------------------------------------------------------
    def sum_(self, t: torch.Tensor, what: str) -> None:
        """``t`` (a host tensor) becomes its sum over all GMIs, in place."""
        self.guard(what, lambda: dist.all_reduce(t, group=self.group))

    def mean_scalar(self, what: str, value: float) -> float:
        t = torch.tensor([value], dtype=torch.float64)
        self.sum_(t, what)
        return float(t.item()) / self.world_size

    def agree_stop(self, signum: int | None) -> int | None:
        """The stop signal any GMI received (the highest number if several), or None: every GMI
        gets the same answer, so all stop after the same epoch."""
        t = torch.tensor([signum or 0], dtype=torch.int64)
        self.guard("stop request", lambda: dist.all_reduce(t, dist.ReduceOp.MAX, group=self.group))
        return int(t.item()) or None

    def all_gather_vector(self, x: torch.Tensor, what: str) -> torch.Tensor:
        """(world_size, *x.shape): every GMI's ``x``, in GMI order."""
        x = x.detach().cpu().contiguous()
        out = [torch.empty_like(x) for _ in range(self.world_size)]
        self.guard(what, lambda: dist.all_gather(out, x, group=self.group))
        return torch.stack(out)


def fingerprint(replica) -> torch.Tensor:
    """(2,) int64: a 128-bit hash of a replica's state (a module's parameters and buffers, in
    order; else every tensor and value of its ``state_dict``), equal only if bit-identical."""
    digest = hashlib.blake2b(digest_size=16)
    if isinstance(replica, torch.nn.Module):
        for t in (*replica.parameters(), *replica.buffers()):
            digest.update(_tensor_bytes(t))
    else:
        _hash_state(digest, replica.state_dict())
    return torch.frombuffer(bytearray(digest.digest()), dtype=torch.int64)


def _tensor_bytes(t: torch.Tensor):
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()


def _hash_state(digest, state) -> None:
    """Feed a state dict's tensors and plain values to ``digest``, keys sorted."""
    if isinstance(state, torch.Tensor):
        digest.update(_tensor_bytes(state))
    elif isinstance(state, dict):
        for key in sorted(state, key=repr):
            digest.update(repr(key).encode())
            _hash_state(digest, state[key])
    elif isinstance(state, (list, tuple)):
        for item in state:
            _hash_state(digest, item)
    else:
        digest.update(repr(state).encode())


def fingerprint_hex(print_: torch.Tensor) -> str:
    """A :func:`fingerprint` as its 32 hex digits."""
    return "".join(f"{v & (2**64 - 1):016x}" for v in print_.tolist())


REPLICA_LABELS = {  # type name -> label, for the state a learner replicates besides its model
    "CentralValueTrain": "critic",
    "GradScaler": "grad scaler",
}


def replica_names(replicas: list) -> list[str]:
    """Labels for the fingerprints of ``ReplicatedPpo.replicas()``: ``model`` (the first),
    ``critic``, ``optimizer``, ``grad scaler``, else ``module<i>``."""
    return [_replica_name(i, r) for i, r in enumerate(replicas)]


def _replica_name(i: int, replica) -> str:
    if type(replica).__name__ in REPLICA_LABELS:
        return REPLICA_LABELS[type(replica).__name__]
    if isinstance(replica, torch.optim.Optimizer):
        return "optimizer"
    return "model" if i == 0 else f"module{i}"
