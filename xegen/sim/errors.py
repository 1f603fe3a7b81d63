"""Errors the simulator raises: all are `xegen.Error`s, so the CLI prints them on one line."""

from __future__ import annotations

from ..errors import Error, UnsupportedError


class SimulationError(Error):
    """The kernel did something the simulator cannot run, or that would fault on hardware
    (an undecodable instruction, an out-of-range register, a barrier that never completes).
    The message names the pc and the instruction."""


class MemoryFault(SimulationError):
    """An access outside every buffer of the flat address space or outside SLM."""


class HazardError(SimulationError):
    """The kernel's software scoreboard (SWSB) misses a dependency: `hazards` lists each one."""

    def __init__(self, hazards: list) -> None:
        self.hazards = list(hazards)
        shown = "\n".join(str(h) for h in self.hazards[:5])
        more = f"\n... and {len(self.hazards) - 5} more" if len(self.hazards) > 5 else ""
        count = len(self.hazards)
        super().__init__(f"{count} SWSB hazard{'s' if count != 1 else ''}:\n{shown}{more}")


class UnsupportedInstruction(SimulationError, UnsupportedError):
    """A valid instruction whose behaviour the public documentation does not specify well enough
    to simulate faithfully; the message says what is missing."""
