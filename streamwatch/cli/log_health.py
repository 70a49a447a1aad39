"""``streamwatch log``'s health verdicts: each running query's checkpoint followed by the
same :class:`~streamwatch.analysis.watch.CheckpointWatcher` that ``streamwatch watch --log``
uses (so the same :func:`~streamwatch.analysis.health_window.judge_health` over the same
window: ``offsets/N``/``commits/N`` and their times, the file sources' landing folders listed
for backlog and lag about every 5 s), fed the listener's started/progress/terminated events
as the run outcomes (as ``watch --recording`` does: FAILING can be judged).

:class:`LogHealth` reads no file on the listener's thread: events are queued there and
handed to the watchers by :meth:`LogHealth.tick`, which the driver thread calls while it
waits for the run to end; it judges at most once per :data:`JUDGE_EVERY_S`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamwatch.analysis.records import QueryHealth, SourceLag
from streamwatch.analysis.watch import CheckpointWatcher, WatchError
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

if TYPE_CHECKING:
    from streamwatch.pipeline import Pipeline, Workspace

#: Seconds between judgements: ``watch``'s default ``--poll`` (its stuck/idle floor too).
JUDGE_EVERY_S = 1.0

RunEvent = QueryStarted | QueryProgress | QueryTerminated
Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class JudgedQuery:
    """One query of the run: its listener ``name`` (``events_bronze``) and ``checkpoint``
    (the workspace's ``checkpoints/<pipeline>/<layer>``, an fsspec URL or local path)."""

    name: str
    checkpoint: str


def judged_queries(pipeline: Pipeline, workspace: Workspace) -> list[JudgedQuery]:
    """Every layer's query of ``pipeline`` with its checkpoint under ``workspace``."""
    return [JudgedQuery(pipeline.query_name(layer), workspace.checkpoint(pipeline.name, layer.name).fsspec_uri)
            for layer in pipeline.layers]


@dataclass(frozen=True, slots=True)
class Judgement:
    """One :meth:`LogHealth.tick`: the ``changes`` (a :class:`QueryHealth` per query whose
    health changed, the first verdict included) and the latest :class:`SourceLag` of every
    file source of every opened query (``lags``, measured about every 5 s)."""

    changes: tuple[QueryHealth, ...] = ()
    lags: tuple[SourceLag, ...] = ()


class LogHealth:
    """The health of ``queries`` while ``log`` runs. :meth:`observe` takes listener events
    (any thread); :meth:`tick` (one thread) opens each checkpoint once its query has started,
    polls the opened ones and returns their :class:`Judgement` (records in the
    ``streamwatch watch --log`` shape). ``clock`` is monotonic seconds (the judgement's own
    times are epoch ms, as ``watch``'s)."""

    def __init__(self, queries: Iterable[JudgedQuery], say: Say, every_s: float = JUDGE_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.queries = {q.name: q for q in queries}
        self.say = say
        self.every_s = every_s
        self.clock = clock
        self.watchers: dict[str, CheckpointWatcher] = {}
        self._events: deque[RunEvent] = deque()  # append/popleft are thread-safe
        self._runs: dict[str, list[RunEvent]] = {}
        self._started: set[str] = set()
        self._names: dict[str, str] = {}  # query id → name
        self._failed: set[str] = set()
        self._next = 0.0

    def observe(self, obj: object) -> None:
        """An event-bus sink: keep a run event for the next :meth:`tick`."""
        if isinstance(obj, (QueryStarted, QueryProgress, QueryTerminated)):
            self._events.append(obj)

    def tick(self, force: bool = False) -> Judgement | None:
        """Judge when :attr:`every_s` has passed since the last judgement, or ``force`` (else None)."""
        now = self.clock()
        if now < self._next and not force:
            return None
        self._next = now + self.every_s
        self._take_events()
        changes = [h for name in self.queries for h in self._judge(name)]
        lags = [lag for w in self.watchers.values() for lag in w.lags.values()]
        return Judgement(tuple(changes), tuple(lags))

    def _take_events(self) -> None:
        """Hand the queued run events to their query's watcher (kept until it is opened);
        a terminated event names its query by id only: the id's started/progress name it."""
        while self._events:
            e = self._events.popleft()
            if not isinstance(e, QueryTerminated) and e.name:
                self._names[e.id] = e.name
            name = self._names.get(e.id)
            if name is None or name not in self.queries:
                continue
            self._started.add(name)
            w = self.watchers.get(name)
            if w is not None:
                w.observe_run(e)
            else:
                self._runs.setdefault(name, []).append(e)

    def _judge(self, name: str) -> list[QueryHealth]:
        w = self.watchers.get(name)
        try:
            if w is None:
                return self._open(name) if name in self._started else []
            records = w.poll()
        except Exception as e:  # noqa: BLE001 - a storage hiccup: said once, judged again next tick
            if name not in self._failed:
                self._failed.add(name)
                self.say(f"health of {name} not judged this time: {e}")
            return []
        return [r for r in records if isinstance(r, QueryHealth)]

    def _open(self, name: str) -> list[QueryHealth]:
        """Open ``name``'s checkpoint (nothing while Spark has not written it yet) and hand
        the watcher the run events seen so far."""
        q = self.queries[name]
        w = CheckpointWatcher(q.checkpoint, name, poll_s=self.every_s)
        try:
            records = w.open()
        except WatchError:
            return []  # metadata not written yet, or not readable from here: next tick
        self.watchers[name] = w
        for e in self._runs.pop(name, []):
            w.observe_run(e)
        records.extend(w.health_change())  # the runs can change the first verdict (FAILING)
        return [r for r in records if isinstance(r, QueryHealth)]


def publisher(health: LogHealth, record: Callable[[object], None],
              metrics: Callable[[object], None] | None) -> Callable[[bool], None]:
    """What the driver thread calls while it waits (and once more, ``final``, when the queries
    have stopped): :meth:`LogHealth.tick`; the changes and lags handed to the ``metrics``
    gauges, then each change written to the recording as a ``query-health`` line
    (``{"v", "kind", "t", "event"}``, the event :meth:`QueryHealth.to_dict`) — gauges first,
    so a reader who has seen the line finds the gauge already set."""
    from streamwatch.events.jsonl import DerivedRecord

    def judge(final: bool = False) -> None:
        j = health.tick(force=final)
        if j is None:
            return
        if metrics is not None:
            for rec in (*j.changes, *j.lags):
                metrics(rec)
        for h in j.changes:
            record(DerivedRecord(h.kind, h.to_dict()))

    return judge
