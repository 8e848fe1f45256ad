"""Whose fault a decode run's failure is, in a module of its own so that the engine process, the
freezer and the runner can all raise both (engineproc re-exports EngineFailure, runner
HarnessFailure, where they were defined before)."""
from __future__ import annotations

from ..events import RunFailure


class EngineFailure(RunFailure):
    """A verdict against the engine: code is one of the failure codes of events.ts."""


class IdleEngineFailure(EngineFailure):
    """A verdict against the candidate found while it was idle, i.e. while another engine's sample
    was timed (the freezer's): the timed engine did nothing wrong, so a caller that turns the
    trusted engine's failures into the evaluator's must let this one through as it is."""


class HarnessFailure(RunFailure):
    """The evaluator (or its baseline) failed: never the candidate's fault."""
