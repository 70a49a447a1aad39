"""Formatting for the dashboard's cells: rates (rows/s), counts, sizes (bytes), times (UTC)."""

from __future__ import annotations

from collections.abc import Iterable

from streamwatch.model.runtime import RecordedSession, SessionInfo
from streamwatch.model.timefmt import utc_text


def rate(v: float | None) -> str:
    """rows/s with one decimal, ``-`` for None (Spark's NaN)."""
    return "-" if v is None else f"{v:,.1f}"


def count(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def size(n: int) -> str:
    """Bytes as B/KiB/MiB/GiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return str(n)


def clock(ms: int | None, millis: bool = False) -> str:
    """Epoch ms → ``HH:MM:SS`` (UTC), ``-`` for None."""
    return utc_text(ms, "%H:%M:%S", millis) or "-"


def stamp(ms: int | None) -> str:
    """Epoch ms → ``YYYY-MM-DD HH:MM:SS`` (UTC), ``-`` for None."""
    return utc_text(ms) or "-"


def iso(ts: str | None) -> str:
    """Spark's ISO timestamp → ``YYYY-MM-DD HH:MM:SS``."""
    if not ts:
        return "-"
    return ts.replace("T", " ").split(".")[0].rstrip("Z")


def duration(ms: int | None) -> str:
    """ms → ``850 ms`` / ``2.3 s`` / ``4m05s`` / ``1h02m``."""
    if ms is None:
        return "-"
    if abs(ms) < 1000:
        return f"{ms} ms"
    s = ms / 1000
    if abs(s) < 60:
        return f"{s:.1f} s"
    if abs(s) < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"



#: :attr:`RecordedSession.source` of the header a checkpoint watch emits (no Spark application:
#: ``app_name`` says what is watched, e.g. ``3 checkpoints, read every 1 s``)
CHECKPOINTS_SOURCE = "checkpoints"
#: how a replay's header names the kind of file it came from, by :attr:`RecordedSession.source`
REPLAYED = {"listener": "recording", "eventlog": "Spark event log"}


def session_line(info: SessionInfo | RecordedSession | None, replay: bool = False, watching: bool = False) -> str:
    """The dashboard's header line: the live session (Spark version, ``local[N cores]`` or the
    cluster master with its executor count, UI URL,
    table format); in a replay, the application the file came from; in a checkpoint watch
    (``source`` :data:`CHECKPOINTS_SOURCE`), what is watched and that no Spark runs. Before
    the backend said anything (``info`` None): what is starting — a replay (``replay``), a
    checkpoint watch (``watching``) or Spark."""
    if (isinstance(info, RecordedSession) and info.source == CHECKPOINTS_SOURCE) or (info is None and watching):
        what = info.app_name if info is not None and info.app_name else "checkpoints"
        return f"Watching {what} · no Spark: batches read from the checkpoint files"
    if isinstance(info, RecordedSession):
        what = REPLAYED.get(info.source, "file")
        app = info.pipeline or info.app_name or "application"
        parts = [f"Replay of {what}: {app}" + (f" ({info.app_id})" if info.app_id else "")]
        if info.spark_version or info.master:
            parts.append(f"Spark {info.spark_version or '?'}" + (f" on {info.master}" if info.master else ""))
        if info.started_ms:
            parts.append(f"started {stamp(info.started_ms)} UTC")
        return " · ".join(parts)
    if info is None:
        return "Replay: reading…" if replay else "Spark: starting…"
    ui = info.ui_url or "off"
    return (f"Spark {info.spark_version} on {info.master_description} · UI {ui} · tables: {info.table_format} "
            f"({info.table_format_reason})")


def stopped(exception: str | None) -> str:
    """How a stopped query's end reads: ``stopped``, or — when Spark still reported an
    exception our own stop caused — ``stopped (Spark reported: <its first line>)``."""
    first = (exception or "").strip().splitlines()[:1]
    return f"stopped (Spark reported: {first[0]})" if first else "stopped"


def grace_ran_out(query_names: Iterable[str], grace_s: float) -> str:
    """The one line front-ends show for queries stopped because the stop grace ran out:
    ``flights_silver: its running batch did not commit within the 10 s stop grace; stopped
    anyway (that batch stays planned, not committed: Spark runs it again on restart)``."""
    names = list(query_names)
    its = "its" if len(names) == 1 else "their"
    that = "that batch stays" if len(names) == 1 else "those batches stay"
    return (f"{', '.join(names)}: {its} running batch did not commit within the {grace_s:g} s stop grace; "
            f"stopped anyway ({that} planned, not committed: Spark runs {'it' if len(names) == 1 else 'them'} "
            "again on restart)")
