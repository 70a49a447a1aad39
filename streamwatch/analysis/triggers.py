"""The one trigger grammar of streamwatch (CLI ``--trigger``, the dashboard's ``:trigger``, the
Spark layer's ``DataStreamWriter.trigger`` arguments and the stall diagnosis). Pure Python.

Specs (case-insensitive keywords), mirroring Spark's ``Trigger`` factory methods:

* ``default`` (or empty) — micro-batches back to back (no ``trigger()`` call);
* ``availableNow`` — everything available now, in micro-batches, then stop;
* ``once`` — one batch, then stop (deprecated since Spark 3.4, see :data:`ONCE_NOTE`);
* ``processingTime=<interval>`` or a bare ``<interval>`` — a micro-batch every interval;
* ``continuous=<interval>`` — continuous processing, checkpointing every interval;
* ``realTime=<interval>`` or ``realTime`` — real-time mode (Spark 4.1+): long-running batches
  of ``<interval>`` each (Spark's default 5 minutes), records processed as they arrive.

An interval is an integer and a unit: ``500ms``, ``2s``, ``2 seconds``, ``1 minute``, ``1h``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from streamwatch.errors import ExitCode, StreamwatchError

TRIGGERS_HELP = ("default, availableNow, once, processingTime=<interval>, continuous=<interval> or "
                 "realTime[=<interval>]")
ONCE_NOTE = (
    "trigger 'once' is deprecated since Spark 3.4: availableNow replaces it (it processes the "
    "same data, split into micro-batches that honour maxFilesPerTrigger)"
)
#: interval assumed for ``default``/``once``/``availableNow`` by the stall diagnosis (ms)
DEFAULT_TRIGGER_MS = 2_000
#: ``RealTimeTrigger()``'s batch duration when none is given: 5 minutes
REAL_TIME_DEFAULT = (5, "m")

#: unit word → (short unit, long unit as Spark's interval parser spells it, ms per unit)
_UNITS: dict[str, tuple[str, str, int]] = {}
for _short, _long, _ms, _words in (("ms", "milliseconds", 1, ("ms", "millisecond", "milliseconds")),
                                   ("s", "seconds", 1000, ("s", "sec", "second", "seconds")),
                                   ("m", "minutes", 60_000, ("m", "min", "minute", "minutes")),
                                   ("h", "hours", 3_600_000, ("h", "hour", "hours"))):
    for _w in _words:
        _UNITS[_w] = (_short, _long, _ms)
_INTERVAL = re.compile(r"(\d+)\s*([a-z]+)")


class TriggerError(StreamwatchError, ValueError):
    """A trigger spec outside the grammar (the message says what is accepted)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True, slots=True)
class Trigger:
    """A parsed trigger: ``kind`` is default, availableNow, once, processingTime, continuous
    or realTime; ``amount``/``unit`` the interval (unit short: ms, s, m, h) for the last three
    (realTime's is its checkpoint interval, Spark's ``batchDurationMs``)."""

    kind: str
    amount: int | None = None
    unit: str | None = None

    @property
    def interval_ms(self) -> int | None:
        """The interval in ms (None without one)."""
        if self.amount is None or self.unit is None:
            return None
        return self.amount * _UNITS[self.unit][2]

    @property
    def real_time(self) -> bool:
        """True for real-time mode (``trigger(realTime=…)``)."""
        return self.kind == "realTime"

    @property
    def one_shot(self) -> bool:
        """True for ``availableNow`` and ``once``: the query processes what is there, then
        stops."""
        return self.kind in ("availableNow", "once")

    @property
    def continuous(self) -> bool:
        """True for continuous processing (``trigger(continuous=…)``)."""
        return self.kind == "continuous"

    @property
    def spec(self) -> str:
        """The canonical spec: ``processingTime=5s``, ``default``, ``availableNow`` …"""
        return f"{self.kind}={self.amount}{self.unit}" if self.amount is not None else self.kind

    def kwargs(self) -> dict[str, object]:
        """Keyword arguments of pyspark's ``DataStreamWriter.trigger`` (``{}`` for default:
        pyspark rejects ``trigger()`` without arguments)."""
        if self.kind == "default":
            return {}
        if self.kind in ("availableNow", "once"):
            return {self.kind: True}
        assert self.unit is not None
        return {self.kind: f"{self.amount} {_UNITS[self.unit][1]}"}

    @property
    def note(self) -> str | None:
        """A one-line note for an accepted but discouraged trigger (``once``), else None."""
        return ONCE_NOTE if self.kind == "once" else None


def _interval(text: str) -> tuple[int, str] | None:
    m = _INTERVAL.fullmatch(text.strip().lower())
    if not m or m.group(2) not in _UNITS:
        return None
    return int(m.group(1)), _UNITS[m.group(2)][0]


def parse_trigger(spec: str | None) -> Trigger:
    """Parse a trigger spec (see the module docstring). Raises :class:`TriggerError`."""
    s = (spec or "").strip()
    low = s.lower()
    if low in ("", "default"):
        return Trigger("default")
    if low == "availablenow":
        return Trigger("availableNow")
    if low == "once":
        return Trigger("once")
    if low == "realtime":
        return Trigger("realTime", *REAL_TIME_DEFAULT)
    key, sep, value = s.partition("=")
    kind = {"processingtime": "processingTime", "continuous": "continuous",
            "realtime": "realTime"}.get(key.strip().lower()) if sep else None
    interval = _interval(value if kind else s)
    if interval is not None and (kind or not sep):
        return Trigger(kind or "processingTime", *interval)
    raise TriggerError(f"unknown trigger {spec!r}: use {TRIGGERS_HELP} (intervals like 500ms, 2s, 1 minute)")


def as_trigger(trigger: Trigger | str) -> Trigger:
    """``trigger`` as a :class:`Trigger`: a spec string (what a caller of the Python API —
    a CLI option, a test, a driver script — gives) parsed once, a :class:`Trigger` as it is.
    Raises :class:`TriggerError` for a bad spec."""
    return trigger if isinstance(trigger, Trigger) else parse_trigger(trigger)


def trigger_kwargs(spec: str) -> dict[str, object]:
    """``DataStreamWriter.trigger`` keyword arguments of ``spec``. Raises :class:`TriggerError`."""
    return parse_trigger(spec).kwargs()


def trigger_note(spec: str) -> str | None:
    """The note for a discouraged trigger (``once``), else None (also for bad specs)."""
    try:
        return parse_trigger(spec).note
    except TriggerError:
        return None


@functools.lru_cache(maxsize=1024)
def known_trigger(spec: str | None) -> Trigger | None:
    """The trigger ``spec`` names, or None when it names none (``None``, a bad spec, or a
    front-end's placeholder such as ``replay``): the trigger is then unknown, never assumed.
    Cached: the dashboard asks for every query on every frame."""
    if not spec:
        return None
    try:
        return parse_trigger(spec)
    except TriggerError:
        return None


def trigger_label(trigger: Trigger | None) -> str:
    """How the dashboard names a trigger: ``2s`` (processingTime), ``real-time 5m``,
    ``availableNow``, ``default``, ``continuous 1s``; ``unknown`` for None."""
    if trigger is None:
        return "unknown"
    if trigger.amount is None:
        return trigger.kind
    interval = f"{trigger.amount}{trigger.unit}"
    return {"processingTime": interval, "realTime": f"real-time {interval}"}.get(trigger.kind, f"{trigger.kind} {interval}")


def is_real_time(spec: str | None) -> bool:
    """True when ``spec`` is a real-time trigger (False for bad specs)."""
    try:
        return parse_trigger(spec).real_time
    except TriggerError:
        return False


def trigger_interval_ms(spec: str | None) -> int:
    """How often ``spec`` plans a batch (ms; real-time mode: its checkpoint interval): its
    interval, or :data:`DEFAULT_TRIGGER_MS` for
    default/once/availableNow, a zero interval or an unparsable spec."""
    try:
        ms = parse_trigger(spec).interval_ms
    except TriggerError:
        return DEFAULT_TRIGGER_MS
    return ms if ms else DEFAULT_TRIGGER_MS
