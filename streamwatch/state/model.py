"""Typed results of reading a checkpoint's state rows (see :func:`streamwatch.state.read_state`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.findings import Finding


class StateReadError(StreamwatchError):
    """The state asked for cannot be read at all (message: one line; exit status 4): no such
    operator, store or batch, no readable schema, an encoding streamwatch does not decode."""

    exit_code = ExitCode.UNREADABLE

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


@dataclass(frozen=True, slots=True)
class Column:
    """One output column: ``name`` (``key.<field>``, ``value.<field>``, ``partition_id``…),
    Spark ``type`` (simple string, e.g. ``bigint``, ``struct<start:timestamp,end:timestamp>``),
    ``part`` (``key``, ``value`` or ``meta``)."""

    name: str
    type: str
    part: str


@dataclass(frozen=True, slots=True)
class PartitionSize:
    """One partition's store at the version read: ``rows``, ``file_bytes`` (compressed bytes
    read to rebuild it), ``snapshot`` version it started from (None: from scratch),
    ``replayed`` delta/changelog versions after it, ``error`` (one line) when unreadable."""

    partition: int
    store: str
    rows: int = 0
    file_bytes: int = 0
    snapshot: int | None = None
    replayed: tuple[int, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class StateTable:
    """The rows of one store (or one join side) of one operator as of ``batch_id``
    (``version`` = batch id + 1). ``rows`` hold values in ``columns`` order (Python values:
    datetimes are tz-aware UTC, structs dicts); ``total_rows`` counts all rows before
    ``--limit``; ``partitions`` one entry per partition read; ``variable`` the
    transformWithState state variable (or ``timers``) the rows belong to, else None."""

    operator_id: int
    operator_name: str | None
    store: str
    provider: str
    encoding: str
    batch_id: int
    version: int
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    total_rows: int
    partitions: tuple[PartitionSize, ...] = ()
    findings: tuple[Finding, ...] = field(default_factory=tuple)
    variable: str | None = None

    @property
    def bytes(self) -> int:
        return sum(p.file_bytes for p in self.partitions)


class BatchError(StreamwatchError):
    """A value the column-wise path (:mod:`streamwatch.state.columnar`) cannot convert (a
    timestamp beyond datetime's range…): the caller decodes the batch row by row instead.
    Never leaves the state package (its exit code, 4, is for completeness)."""

    exit_code = ExitCode.UNREADABLE
