"""The one interface every dashboard backend implements (live Spark, replay, tests …).

A backend declares the controls it supports in :attr:`Backend.CONTROLS`; every control has a
default implementation that raises :class:`NotSupported`, so the UI asks
:meth:`Backend.supports` (a capability flag) instead of looking methods up by name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

from streamwatch.analysis.triggers import Trigger
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.runtime import RunPlan


class Control(enum.Enum):
    """A control the dashboard can ask a backend for."""

    START_QUERY = "start a query"
    STOP_QUERY = "stop a query"
    RESTART_QUERY = "restart a query"
    START_PIPELINE = "start the pipeline"
    STOP_PIPELINE = "stop the pipeline"
    RESTART_PIPELINE = "restart the pipeline"
    LAND = "land input files"
    SET_TRIGGER = "change the trigger"
    READ_RESULTS = "read result tables"


class NotSupported(StreamwatchError, NotImplementedError):
    """The backend cannot do this control (e.g. starting a query in a replay)."""

    exit_code = ExitCode.USAGE

    def __init__(self, control: Control) -> None:
        super().__init__(f"{control.value}: not supported by this backend")
        self.control = control


_EMPTY: Mapping[str, str] = MappingProxyType({})


class Backend:
    """Base class of the dashboard's backends.

    ``plan`` is known before anything starts (first frame); ``start(emit)`` blocks while it
    starts (the app calls it from a worker thread) and then delivers model objects to
    ``emit`` from any thread; ``stop()`` stops everything and is safe to call twice.
    ``triggers``/``output_modes`` map query name → trigger spec (its text, as the dashboard
    labels it) / output mode when known.
    Controls not listed in :attr:`CONTROLS` raise :class:`NotSupported`.
    """

    plan: RunPlan
    #: the controls this backend implements (the UI greys out / refuses the others)
    CONTROLS: ClassVar[frozenset[Control]] = frozenset()
    triggers: Mapping[str, str] = _EMPTY
    output_modes: Mapping[str, str] = _EMPTY
    #: queries a stop ended before their running batch committed (the stop grace ran out):
    #: Spark runs that batch again on restart (filled by a backend that runs queries)
    forced_queries: Sequence[str] = ()
    #: the stop grace (s) a backend that runs queries gives a running batch
    stop_grace_s: float = 0.0
    #: the backend emits :class:`~streamwatch.analysis.pipeview.PipelineGraph` objects itself
    #: (a checkpoint watch); otherwise the dashboard derives them from the plan's checkpoints
    emits_pipeline: ClassVar[bool] = False

    def supports(self, control: Control) -> bool:
        """Whether :attr:`CONTROLS` lists ``control``."""
        return control in self.CONTROLS

    def why_not(self, control: Control) -> str:
        """One line saying why ``control`` is not supported (shown in the status line)."""
        return f"{control.value}: not supported by this backend"

    def start(self, emit: Callable[[object], None]) -> object:
        """Start; model objects go to ``emit`` (from any thread). May block."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop everything (idempotent)."""

    # -- controls: each raises NotSupported unless overridden ---------------------------------
    def start_query(self, query_name: str) -> None:
        """Start a stopped query."""
        raise NotSupported(Control.START_QUERY)

    def stop_query(self, query_name: str) -> None:
        """Stop one query."""
        raise NotSupported(Control.STOP_QUERY)

    def restart_query(self, query_name: str) -> None:
        """Stop and start one query."""
        raise NotSupported(Control.RESTART_QUERY)

    def start_pipeline(self) -> None:
        """Start every query."""
        raise NotSupported(Control.START_PIPELINE)

    def stop_pipeline(self) -> None:
        """Stop every query."""
        raise NotSupported(Control.STOP_PIPELINE)

    def restart_pipeline(self) -> None:
        """Stop and start every query."""
        raise NotSupported(Control.RESTART_PIPELINE)

    def land(self, count: int = 1, source: str | None = None) -> Sequence[object] | None:
        """Land ``count`` more input files now (into ``source``, or every source); returns
        what was landed when known."""
        raise NotSupported(Control.LAND)

    def set_trigger(self, trigger: Trigger, query_name: str | None = None) -> None:
        """Restart one query (or all, ``None``) with ``trigger`` (parsed once, where the user
        gave it: :func:`streamwatch.analysis.triggers.parse_trigger`)."""
        raise NotSupported(Control.SET_TRIGGER)

    def read_results(self, query_name: str, limit: int = 100) -> tuple[Sequence[str], Sequence[Sequence[object]]]:
        """Up to ``limit`` current rows of the query's table: (column names, rows)."""
        raise NotSupported(Control.READ_RESULTS)
