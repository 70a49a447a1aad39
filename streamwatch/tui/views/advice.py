"""The detail tab's advice section (``:advise [QUERY]``): one finding per rule of
:mod:`streamwatch.analysis.advice` — the setting, verdict and confidence, the evidence (numbers
with units and where each was read), what to do and its expected effect, or, for an
``unknown`` finding, what evidence it needs — as ``streamwatch advise`` prints them. Measured
on the query's checkpoint (read-only, in a thread worker) with the trigger the backend started
the query with and the session's cores, so the trigger rule is judged, not unknown."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from streamwatch.analysis.advice import Advice, Cores, Verdict
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.triggers import Trigger
from streamwatch.errors import one_line
from streamwatch.model.runtime import RunPlan, SessionInfo

#: where the dashboard's cores come from in local mode (SessionInfo.local_cores)
LOCAL_CORES = "spark.sparkContext.defaultParallelism, local mode"
#: each verdict's style
_STYLE = {Verdict.CHANGE: "bold yellow", Verdict.KEEP: "green", Verdict.UNKNOWN: "dim"}


@dataclass(frozen=True, slots=True)
class AdviceRequest:
    """What one ``:advise`` measures: ``query``'s ``checkpoint`` (its location, as the run plan
    names it), the ``trigger`` it runs with (None: unknown) and the ``cores`` that run it."""

    query: str
    checkpoint: str
    trigger: Trigger | None
    cores: Cores


def advice_request(plan: RunPlan, model: DashboardModel, query: str) -> AdviceRequest:
    """The request for ``query``: its checkpoint from ``plan``, its trigger from the account
    that started it (:meth:`DashboardModel.trigger_of`: the backend, ``:trigger`` changes
    included), the cores from the session (``defaultParallelism`` in local mode; unknown on a
    cluster or in a replay). Raises ``KeyError`` when ``plan`` has no such query."""
    checkpoint = plan.query(query).checkpoint
    session = model.session_info
    cores = (Cores(session.local_cores, LOCAL_CORES)
             if isinstance(session, SessionInfo) and session.local_cores is not None
             else Cores(None, "unknown: the session does not run in local mode"))
    return AdviceRequest(query, checkpoint, model.trigger_of(query), cores)


class AdviceRead(Message):
    """The findings of one :class:`AdviceRequest` (rule order), or why there are none
    (``error``, one line)."""

    def __init__(self, request: AdviceRequest, findings: Sequence[Advice], error: str | None = None) -> None:
        super().__init__()
        self.request = request
        self.findings = tuple(findings)
        self.error = error


def read_advice(request: AdviceRequest) -> AdviceRead:
    """Run every rule on the request's checkpoint (blocking I/O: a thread worker's). Never
    raises: an unreadable or missing checkpoint comes back as the message's error."""
    from streamwatch.analysis.advise_run import advise_checkpoint
    from streamwatch.checkpoint import read_checkpoint

    if not request.checkpoint:
        return AdviceRead(request, (), "no checkpoint location known")
    try:
        cp = read_checkpoint(request.checkpoint, sizes=False)
        return AdviceRead(request, advise_checkpoint(request.checkpoint, cp, request.trigger, request.cores,
                                                     trigger_source="the dashboard started it with"))
    except Exception as e:  # not written yet, unreadable: said in the section, never a crash
        return AdviceRead(request, (), one_line(e))


def finding_text(a: Advice) -> Text:
    """One finding as ``streamwatch advise`` prints it: ``code  [verdict, confidence]  setting``,
    the summary, then ``evidence:``, ``do:``, ``effect:`` and ``needs:`` lines."""
    t = Text()
    t.append(f"{a.code}  [{a.verdict.value}, {a.confidence.value}]  {a.setting}", style=_STYLE[a.verdict])
    t.append(f"\n  {a.summary}")
    for ev in a.evidence:
        t.append(f"\n  evidence: {ev.text}", style="dim")
    for label, text in (("do", a.action), ("effect", a.effect), ("needs", a.needs)):
        if text:
            t.append(f"\n  {label}: {text}")
    return t


class AdviceSection(Static):
    """The advice of the last ``:advise``, shown while the detail tab shows its query
    (:meth:`follow`); hidden before the first. ``findings`` are those shown (empty while one
    is being computed or after an error)."""

    DEFAULT_CSS = "AdviceSection { height: auto; margin: 1 0 0 0; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.display = False
        self.query_name: str | None = None
        self.findings: tuple[Advice, ...] = ()

    def load(self, request: AdviceRequest) -> None:
        """Compute the advice for ``request`` in a worker; the section says so meanwhile."""
        self.query_name, self.findings = request.query, ()
        self.update(Text(f"advice for {request.query}: measuring its checkpoint…", style="cyan"))
        self.display = True
        self._measure(request)

    @work(thread=True, exclusive=True, exit_on_error=False, group="advice")
    def _measure(self, request: AdviceRequest) -> None:
        self.post_message(read_advice(request))

    def on_advice_read(self, message: AdviceRead) -> None:
        req = message.request
        if req.query != self.query_name:  # an older :advise of another query
            return
        trigger = req.trigger.spec if req.trigger is not None else "unknown"
        cores = "unknown" if req.cores.count is None else f"{req.cores.count}"
        t = Text(f"advice for {req.query} · trigger {trigger} · cores {cores} · measured "
                 f"{time.strftime('%H:%M:%S', time.gmtime())} UTC (:advise again to re-measure)", style="bold")
        if message.error is not None:
            t.append(f"\ncannot advise: {message.error}", style="yellow")
        for a in message.findings:
            t.append("\n")
            t.append_text(finding_text(a))
        self.findings = message.findings
        self.update(t)

    def follow(self, query: str | None) -> None:
        """Shown only while the detail tab shows the query the advice is about."""
        self.display = self.query_name is not None and self.query_name == query
