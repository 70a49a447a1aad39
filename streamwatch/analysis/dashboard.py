"""Everything the dashboard shows, folded from model objects (pure Python, no textual).

:class:`DashboardModel` holds the per-query board, the landed files and their journeys, the
event log (one text line per object), the last checkpoint scan and the stall diagnoses. The
dashboard's views draw themselves from it (``show(model)``); it never draws anything.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from streamwatch.analysis.board import DEFAULT_HISTORY, QueryBoard, QueryRow
from streamwatch.analysis.dashboard_health import DashboardHealth
from streamwatch.analysis.diagnosis import CheckpointHead, Diagnosis, diagnose
from streamwatch.analysis.journeys import Consumed, Journey, backlog, consumed_files, journeys
from streamwatch.analysis.pipeview import PipelineGraph
from streamwatch.analysis.realtime import looks_real_time
from streamwatch.analysis.triggers import Trigger, known_trigger, trigger_label
from streamwatch.model.checkpoint import BatchRow, Checkpoint
from streamwatch.model.deltalog import DeltaBacklog, delta_backlog
from streamwatch.model.kafka import KafkaLag
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import RecordedSession, RunPlan, RuntimeNotice, SessionInfo

EventLine = tuple[str, str, str, str]


@dataclass
class DashboardModel:
    """The dashboard's state. ``clock`` returns epoch ms; ``triggers``/``output_modes`` give
    a query's current trigger spec and output mode (``{}`` when the backend cannot tell);
    ``max_events``/``max_landed`` bound the event log and the landed files."""

    plan: RunPlan
    clock: Callable[[], int]
    history: int = DEFAULT_HISTORY
    max_events: int = 2_000
    max_landed: int = 2_000
    triggers: Callable[[], Mapping[str, str]] = dict
    output_modes: Callable[[], Mapping[str, str]] = dict
    board: QueryBoard = field(init=False)
    session_info: SessionInfo | RecordedSession | None = None
    selected: str | None = None
    landed: collections.deque[LandedFile] = field(init=False)
    landed_count: int = 0
    notices: list[RuntimeNotice] = field(default_factory=list)
    event_log: collections.deque[tuple[str, EventLine]] = field(init=False)
    event_count: int = 0
    #: the last checkpoint scan: each readable query's checkpoint, why the others are not
    #: readable, each readable one's per-batch timeline (by query name)
    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)
    cp_errors: dict[str, str] = field(default_factory=dict)
    timelines: dict[str, tuple[BatchRow, ...]] = field(default_factory=dict)
    heads: dict[str, CheckpointHead] = field(default_factory=dict)
    consumed: dict[str, Consumed] = field(default_factory=dict)
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)
    #: the pipeline tab's graph (the latest one a checkpoint poll derived; None before)
    pipeline: PipelineGraph | None = None
    #: the latest consumer-lag measurement of each query reading Kafka (by query name)
    kafka_lag: dict[str, KafkaLag] = field(default_factory=dict)
    #: each query's run outcomes and commit times from the listener, and lag samples (health verdict)
    health: DashboardHealth = field(default_factory=DashboardHealth)
    _journeys: list[Journey] | None = None
    #: per query: (the row, its progress count when last looked at) — progress is looked at
    #: for real-time evidence once, not on every frame
    _looked_rt: dict[str, tuple[QueryRow, int]] = field(default_factory=dict)
    #: run ids whose progress showed real-time mode (proof holds for the whole run)
    _rt_runs: set[str] = field(default_factory=set)
    #: per query: (the row, the facts it was judged from, the diagnosis) (see :meth:`diagnose_all`)
    _judged: dict[str, tuple[QueryRow, tuple[object, ...], Diagnosis]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.board = QueryBoard([q.query_name for q in self.plan.queries], history=self.history)
        self.landed = collections.deque(maxlen=self.max_landed)
        self.event_log = collections.deque(maxlen=self.max_events)
        if self.selected is None and self.plan.queries:
            self.selected = self.plan.queries[0].query_name

    # -- folding model objects in --------------------------------------------------------------
    def log(self, line: EventLine) -> None:
        """Append one line to the event log (numbered from 1)."""
        self.event_count += 1
        self.event_log.append((str(self.event_count), line))

    def add_landed(self, f: LandedFile) -> None:
        self.landed.append(f)
        self.landed_count += 1
        self._journeys = None

    def set_checkpoints(self, checkpoints: Mapping[str, Checkpoint], errors: Mapping[str, str],
                        timelines: Mapping[str, tuple[BatchRow, ...]]) -> None:
        """Take one checkpoint scan (:func:`streamwatch.checkpoint.read_checkpoint`'s
        :class:`Checkpoint` and :func:`~streamwatch.checkpoint.batch_timeline` rows by query
        name, the error text of each unreadable one). Raises
        what :func:`consumed_files` raises, after storing everything else."""
        self.checkpoints = dict(checkpoints)
        self.cp_errors = dict(errors)
        self.timelines = dict(timelines)
        self.heads = {}
        for name, cp in self.checkpoints.items():
            last = cp.offsets[-1] if cp.offsets else None
            self.heads[name] = CheckpointHead(cp.latest_batch_id, cp.last_committed_batch_id,
                                              last.timestamp_ms if last else None)
        self._journeys = None
        self.consumed = consumed_files(self.checkpoints)

    def set_kafka_lag(self, lag: KafkaLag) -> None:
        """Take one consumer-lag measurement; a failed one keeps the last known partitions
        (shown with the error) so a broker hiccup does not blank the numbers."""
        old = self.kafka_lag.get(lag.query_name)
        if lag.error and old is not None and old.partitions:
            lag = KafkaLag(lag.query_name, lag.bootstrap, old.partitions, old.at_ms, lag.error)
        self.kafka_lag[lag.query_name] = lag

    # -- derived ---------------------------------------------------------------------------------
    def consumer_lag(self, name: str) -> int | None:
        """Records the Kafka query ``name`` has not read yet (broker latest − last committed
        batch, summed over partitions); None when it reads no Kafka or was not measured."""
        lag = self.kafka_lag.get(name)
        return None if lag is None else lag.total

    def delta_backlog(self, name: str) -> DeltaBacklog | None:
        """What the query ``name`` has not read yet from the Delta tables it streams from:
        its latest offsets' Delta source offsets against the ``_delta_log`` of the watched
        query writing that table (matched by ``reservoirId`` = the table's id), summed over
        its Delta sources; None when it reads no watched Delta table (or before a scan)."""
        cp = self.checkpoints.get(name)
        if cp is None or not cp.offsets:
            return None
        last = cp.offsets[-1]
        logs = {log.table_id: log for other in self.checkpoints.values()
                if (log := other.delta_sink) is not None and log.table_id}
        found = [delta_backlog(logs[pos[0]].commits, *pos[1:]) for p in last.parsed
                 if p is not None and (pos := p.delta_position) is not None and pos[0] in logs]
        if not found:
            return None
        total_bytes = [b.bytes for b in found]
        return DeltaBacklog(sum(b.versions for b in found), sum(b.files for b in found),
                            None if None in total_bytes else sum(b for b in total_bytes if b is not None),
                            found[0].latest_version if len(found) == 1 else None,
                            found[0].next_version if len(found) == 1 else 0)

    def trigger_of(self, name: str) -> Trigger | None:
        """The trigger query ``name`` runs with, from an account that knows it: the backend
        that started it (``:trigger`` changes included), else the run's trigger, else — in a
        replay — the recording header's (``streamwatch log`` writes it; an event log and
        ``record()`` do not). None when nothing says: unknown, never assumed."""
        trigger = known_trigger(self.triggers().get(name)) or known_trigger(self.plan.trigger)
        if trigger is None and isinstance(self.session_info, RecordedSession):
            trigger = known_trigger(self.session_info.trigger)
        return trigger

    def real_time(self, name: str) -> bool:
        """True when query ``name`` runs in real-time mode: its known trigger says so, or —
        trigger unknown — its recent progress carries what a micro-batch cannot (see
        :func:`~streamwatch.analysis.realtime.looks_real_time`). A known micro-batch trigger is
        never overruled by how its batches look."""
        trigger = self.trigger_of(name)
        if trigger is not None:
            return trigger.real_time
        row = self.board.rows.get(name)
        if row is None or row.run_id is None:
            return False
        seen = self._looked_rt.get(name)
        if seen is None or seen[0] is not row or seen[1] != row.progress_count:
            new = row.progress_count - seen[1] if seen is not None and seen[0] is row else len(row.recent)
            run = [p for p in list(row.recent)[-new:] if p.run_id == row.run_id] if new > 0 else []
            if looks_real_time(run):
                self._rt_runs.add(row.run_id)
            self._looked_rt[name] = (row, row.progress_count)
        return row.run_id in self._rt_runs

    def trigger_label(self, name: str) -> str:
        """The trigger as the queries table shows it: ``2s`` (processingTime), ``real-time 5m``
        (realTime=5m), ``availableNow``, ``default``; ``real-time`` when only its progress shows
        it; ``unknown`` when nothing tells."""
        trigger = self.trigger_of(name)
        if trigger is None and self.real_time(name):
            return "real-time"
        return trigger_label(trigger)

    def output_mode_of(self, name: str) -> str:
        return self.output_modes().get(name) or "-"

    @property
    def selected_row(self) -> QueryRow | None:
        return self.board.rows.get(self.selected) if self.selected else None

    def journeys(self) -> list[Journey]:
        """Each landed file's journey (recomputed after files landed or checkpoints were read)."""
        if self._journeys is None:
            self._journeys = journeys(self.landed, self.consumed)
        return self._journeys

    def diagnose_all(self) -> dict[str, Diagnosis]:
        """Diagnose every query now (``clock``) and keep the result in :attr:`diagnoses`.

        A query is judged again only when something its diagnosis reads has changed (its
        status, progress count, note, failure, kept samples, checkpoint head or trigger) or
        when its checkpoint has a planned batch without a commit: only then does the clock
        matter (the *stuck* rule). The dashboard asks every frame, 10 times a second, and
        judging 100 queries from their samples each time would be a steady share of every frame."""
        now = self.clock()
        for name, row in self.board.rows.items():
            trigger = self.trigger_of(name)
            head = self.heads.get(name)
            facts = (row.status, row.progress_count, row.note, row.exception, row.failed_batch_id,
                     len(row.history), head, trigger)
            kept = self._judged.get(name)
            if kept is not None and kept[0] is row and kept[1] == facts and not _in_flight(head):
                self.diagnoses[name] = kept[2]
                continue
            judged = diagnose(row, head, trigger, now, real_time=self.real_time(name))
            self.diagnoses[name] = judged
            self._judged[name] = (row, facts, judged)
        return self.diagnoses

    def query_backlog(self) -> dict[str, int | None]:
        """Landed files not yet read, per query (None when no source of it is known)."""
        js = self.journeys()
        per_source = backlog(js)
        sources_of: dict[str, set[str]] = {}
        for j in js:
            if j.consumed is not None:
                sources_of.setdefault(j.consumed.query, set()).add(j.file.source)
        out: dict[str, int | None] = {}
        first = self.plan.queries[0].query_name if self.plan.queries else None
        for name in self.board.rows:
            srcs = sources_of.get(name)
            if srcs is None and name == first and not sources_of and per_source:
                srcs = set(per_source)
            out[name] = sum(per_source.get(s, 0) for s in srcs) if srcs else None
        return out


def _in_flight(head: CheckpointHead | None) -> bool:
    """The checkpoint has planned a batch it has not committed (whose age the clock decides)."""
    return head is not None and head.planned is not None
