"""Which GMIs train and which act (the paper's async template, Sec. 5.1): trainers are the
first ``gmi.trainers`` GMIs (the first device(s)), actors (simulator + inference) the others."""

from __future__ import annotations

from dataclasses import dataclass

from isaacgymenvs_gmi.placement.layout import GmiLayout


@dataclass(frozen=True)
class AsyncRoles:
    trainers: tuple[int, ...]
    actors: tuple[int, ...]

    @classmethod
    def of(cls, world_size: int, trainers: int) -> AsyncRoles:
        """``gmi.trainers`` of ``world_size`` GMIs (checked with the mode: leaves an actor)."""
        return cls(tuple(range(trainers)), tuple(range(trainers, world_size)))

    def is_trainer(self, gmi: int) -> bool:
        return gmi in self.trainers

    def describe(self, layout: GmiLayout) -> str:
        """One line per device: its GMIs and their roles."""
        rows = []
        for device, gmis in enumerate(layout.mpl()):
            roles = ", ".join(f"{g} {'trainer' if self.is_trainer(g) else 'actor'}" for g in gmis)
            rows.append(f"device {device}: {roles}")
        return f"async roles: {len(self.trainers)} trainer(s), {len(self.actors)} actor(s); " + (
            "; ".join(rows)
        )
