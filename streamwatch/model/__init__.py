"""Pure, immutable model objects shared by every adapter and front-end.

Nothing here imports pyspark or textual (enforced by ``tests/unit/test_boundaries.py``).
"""

from streamwatch.model.events import (
    Event,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
    SinkProgress,
    SourceProgress,
    StateOperatorProgress,
)
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import RecordedSession, RuntimeNotice, SessionInfo

__all__ = [
    "Event",
    "LandedFile",
    "QueryIdle",
    "QueryProgress",
    "QueryStarted",
    "QueryTerminated",
    "RuntimeNotice",
    "RecordedSession",
    "SessionInfo",
    "SinkProgress",
    "SourceProgress",
    "StateOperatorProgress",
]
