"""Every rule of :mod:`streamwatch.analysis.advice` run on one checkpoint as ``streamwatch
advise`` and the dashboard's ``:advise`` both run them: batch times from the progress given
(Spark's ``durationMs.triggerExecution``) or else from the checkpoint (``commits/N``
modification time − ``offsets/N`` ``batchTimestampMs``), each file source's backlog listed
now. Reads the checkpoint's storage and the file sources' folders (read-only); no Spark."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from streamwatch.analysis.advice import Advice, Cores, checkpoint_durations, progress_durations, shuffle_partitions
from streamwatch.analysis.advice_cleanup import file_source_cleanup, read_files_present
from streamwatch.analysis.advice_files import max_files_per_trigger
from streamwatch.analysis.advice_offsets import KafkaBacklog, max_offsets_per_trigger, read_kafka_batches
from streamwatch.analysis.advice_realtime import real_time_mode
from streamwatch.analysis.advice_retain import min_batches_to_retain, retained_files
from streamwatch.analysis.advice_state import newest_version_files, state_store
from streamwatch.analysis.advice_trigger import trigger_interval
from streamwatch.analysis.advice_watermark import watermark_delay
from streamwatch.analysis.records import SourceLag
from streamwatch.analysis.triggers import Trigger
from streamwatch.errors import Unreadable
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.events import QueryProgress


def advise_checkpoint(path: str, cp: Checkpoint, trigger: Trigger | None, cores: Cores,
                      progress: Sequence[QueryProgress] = (), idle: int | None = None,
                      trigger_source: str = "--trigger",
                      kafka_backlogs: Mapping[str, KafkaBacklog] | None = None) -> list[Advice]:
    """The findings for the query whose checkpoint ``cp`` was read at ``path`` (local or an
    fsspec URL), in rule order: ``advise-shuffle-partitions``, ``advise-max-files-per-trigger``
    (one per file source), ``advise-max-offsets-per-trigger`` (one per Kafka source),
    ``advise-file-source-cleanup`` (one per file source), ``advise-trigger-interval``,
    ``advise-real-time-mode``, ``advise-state-store``, ``advise-watermark-delay``,
    ``advise-min-batches-to-retain``. ``trigger`` is the one the query runs
    with (None: unknown), ``progress`` its progress events (batch times; none: the
    checkpoint's), ``idle`` the ``QueryIdleEvent``s of a recording (None without one),
    ``trigger_source`` where ``trigger`` came from (named in the evidence), ``kafka_backlogs``
    each Kafka source's backlog on the broker by source id (None: no broker given).
    Raises :class:`~streamwatch.errors.Unreadable` when the checkpoint's storage cannot be opened."""
    durations = progress_durations(progress) or checkpoint_durations(cp, commit_mtimes(path, cp.commit_batch_ids))
    return [shuffle_partitions(cp, progress, cores, durations),
            *max_files_per_trigger(cp, durations, source_lags(path, cp)),
            *max_offsets_per_trigger(read_kafka_batches(path, cp), durations, kafka_backlogs, cp),
            *file_source_cleanup(cp, read_files_present(path, cp), progress),
            trigger_interval(trigger, cp, durations, idle, trigger_source),
            real_time_mode(trigger, cp, progress, durations, trigger_source),
            state_store(cp, progress, newest_version_files(path, cp)),
            watermark_delay(progress, cp),
            min_batches_to_retain(cp, retained_files(path, cp))]


def commit_mtimes(path: str, batch_ids: Sequence[int]) -> dict[int, int]:
    """batch id → ``commits/N``'s modification time (epoch ms), for the last 100 batches.
    Raises :class:`~streamwatch.errors.Unreadable` when the storage cannot be opened."""
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.checkpoint.storage import StorageError

    try:
        storage, root = open_storage(path)
    except StorageError as e:
        raise Unreadable(str(e)) from None
    out = {}
    for b in batch_ids[-100:]:
        ms = storage.mtime_ms(storage.join(root, "commits", str(b)))
        if ms is not None:
            out[b] = ms
    return out


def source_lags(path: str, cp: Checkpoint) -> dict[str, SourceLag]:
    """Each file source's :class:`SourceLag` now: its folder listed against its log, the
    rates measured since the plan of the oldest of the last 10 committed batches. The query
    may be stopped (a checkpoint read offline), so a pause in planning is not judged
    (``patience_ms`` None). Sources whose folder cannot be listed are absent."""
    from streamwatch.analysis.lag import FileSourceLag
    from streamwatch.analysis.probe import Probe, ProbeError

    try:
        probe = Probe(path)
    except ProbeError:
        return {}
    fb = cp.files_by_batch()
    planned = {e.batch_id: e.timestamp_ms for e in cp.offsets if e.timestamp_ms is not None}
    recent = [b for b in cp.commit_batch_ids[-10:] if b in planned]
    out = {}
    for log in cp.sources:
        if not log.entries_loaded:
            continue
        reads = [fb.files_read(b, log.name) for b in recent]
        lag = FileSourceLag(probe, probe.root, log.name, ((e.path, e.timestamp_ms) for e in log.entries),
                            max((e.batch_id for e in log.entries), default=-1))
        out[log.name] = lag.measure(
            query_id=cp.query_id or "", query="", checkpoint=path, now_ms=int(time.time() * 1000),
            window_from_ms=min((planned[b] for b in recent), default=None),
            files_read_in_window=None if not recent or any(r is None for r in reads) else sum(len(r or ()) for r in reads),
            planned_since_ms=max(planned.values(), default=None), patience_ms=None)
    return out
