"""Read-only checkpoint reader with health findings. Imports neither pyspark nor textual.

Entry points: :func:`read_checkpoint` (a whole checkpoint → :class:`Checkpoint`),
:func:`batch_timeline` (per-batch rows), and the single-log readers used on loose log
folders: :func:`read_offsets_log`, :func:`read_commit_log`, :func:`read_file_source_log`,
:func:`read_file_sink_log`, :func:`read_commit_file`.
"""

from streamwatch.checkpoint.loose import (
    read_commit_file,
    read_commit_log,
    read_file_sink_log,
    read_file_source_log,
    read_offsets_log,
)
from streamwatch.checkpoint.reader import CheckpointError, read_checkpoint
from streamwatch.checkpoint.timeline import batch_timeline
from streamwatch.model.checkpoint import BatchRow, Checkpoint, FileEntry, SourceLog
from streamwatch.model.findings import Finding

__all__ = [
    "BatchRow",
    "Checkpoint",
    "CheckpointError",
    "FileEntry",
    "Finding",
    "SourceLog",
    "batch_timeline",
    "read_checkpoint",
    "read_commit_file",
    "read_commit_log",
    "read_file_sink_log",
    "read_file_source_log",
    "read_offsets_log",
]
