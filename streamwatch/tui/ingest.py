"""One model object from an adapter into the dashboard's model
(:class:`~streamwatch.analysis.dashboard.DashboardModel`), and what the user is told of it.

Adapters (the backend, the landing watcher, the pipeline poller) hand the app progress
events, plan notices, Kafka lag, landed files, pipeline graphs, session info and runtime
notices; :func:`ingest` applies one to the model and reports failures and notices through a
:class:`Reporter` (the app's status line and toasts). Drawing is not done here: the app
draws the model on its next frame.
"""

from __future__ import annotations

from typing import Protocol

from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.pipeview import PipelineGraph
from streamwatch.errors import one_line
from streamwatch.model.events import Event, QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.kafka import KafkaLag
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import QueryNotRun, QueryQueued, RecordedSession, RuntimeNotice, SessionInfo
from streamwatch.tui.views.feeds import event_line


class Reporter(Protocol):
    """Where :func:`ingest` tells the user: the status line, an error toast, the session line."""

    def set_status(self, text: str, level: str = "info", about: str | None = None) -> None: ...

    def status_passed(self, about: str | None = None, older_than_s: float | None = None) -> None: ...

    def alarm(self, text: str) -> None: ...

    def session_changed(self) -> None: ...


def ingest(model: DashboardModel, obj: object, ui: Reporter) -> bool:
    """Apply ``obj`` to ``model`` (unknown kinds are ignored); a query that failed and an
    error notice raise an alarm, plan notices and runtime notices go to the status line.
    Returns True for a progress update of the selected query (its results tab is due a
    re-read). Raises what the model raises for a malformed object."""
    m = model
    if isinstance(obj, Event):
        row = m.board.apply(obj)
        name = row.name if row else (m.board.name_of(obj.id) or "")
        m.log(event_line(obj, name))
        if row is None:
            return False
        if isinstance(obj, (QueryStarted, QueryProgress, QueryTerminated)):
            m.health.observe_run(row.name, obj)  # the health verdict's runs and commit times
        if row.status == "failed" and isinstance(obj, QueryTerminated) and obj.exception:
            msg = f"{row.name} failed in batch {row.failed_batch_id}: {one_line(row.exception)}"
            ui.set_status(msg, "error", about=row.name)
            ui.alarm(msg)
        elif isinstance(obj, QueryProgress):
            ui.status_passed(about=row.name)  # it runs again: its old failure is no longer news
        return row.name == m.selected and isinstance(obj, QueryProgress)
    if isinstance(obj, (QueryQueued, QueryNotRun)):
        row = m.board.apply_plan(obj)
        m.log(event_line(obj, row.name))
        ui.set_status(f"{row.name} {row.status}: {row.note}", "info" if row.status == "queued" else "warning",
                      about=row.name)
    elif isinstance(obj, KafkaLag):
        m.set_kafka_lag(obj)
    elif isinstance(obj, LandedFile):
        m.add_landed(obj)
        m.log(event_line(obj, ""))
    elif isinstance(obj, PipelineGraph):
        m.pipeline = obj
    elif isinstance(obj, (SessionInfo, RecordedSession)):
        m.session_info = obj
        ui.session_changed()
    elif isinstance(obj, RuntimeNotice):
        m.notices.append(obj)
        m.log(event_line(obj, ""))
        ui.set_status(obj.message, obj.level)
        if obj.level == "error":
            ui.alarm(obj.message)
    return False
