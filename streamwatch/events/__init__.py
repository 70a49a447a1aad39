"""Event plumbing that needs no JVM: the non-blocking hand-off between Spark's listener
thread and whoever consumes events (:mod:`.bus`), the JSONL recording format and recorder
(:mod:`.jsonl`), readers for recordings and Spark event logs (:mod:`.reader`,
:mod:`.eventlog`, :mod:`.codecs`), summaries (:mod:`.summary`) and redaction (:mod:`.redact`)."""

from streamwatch.events.bus import EventBus, EventBusStats
from streamwatch.events.jsonl import SCHEMA_VERSION, JsonlRecorder, RecordingHeader
from streamwatch.events.reader import EventSourceError, ReadReport, read_events, read_recording

__all__ = [
    "SCHEMA_VERSION",
    "EventBus",
    "EventBusStats",
    "EventSourceError",
    "JsonlRecorder",
    "ReadReport",
    "RecordingHeader",
    "read_events",
    "read_recording",
]
