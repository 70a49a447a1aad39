"""Spark Connect sessions (``SparkSession.builder.remote("sc://host:15002")``): reaching a
server, describing its session, and how its listener events reach streamwatch.

Where a Connect listener runs (pyspark 4.2, ``pyspark/sql/connect/streaming/query.py``):
``spark.streams.addListener(listener)`` keeps the listener **in the client process**. The first
listener added asks the server (``StreamingQueryListenerBusCommand.add_listener_bus_listener``)
to register one server-side ``SparkConnectListenerBusListener`` on the Connect session's own
``StreamingQueryManager``; that listener serialises each event with Spark's
``event.json`` and streams it back on a long-running ``ExecutePlan`` response, which a client
thread turns into pyspark's ``QueryProgressEvent``/``QueryIdleEvent``/``QueryTerminatedEvent``
(``fromJson``) and hands to every client listener. ``QueryStartedEvent`` takes another way:
the server keeps it and returns it in the ``writeStream.start()`` response, and the client
posts it before ``start()`` returns. So, unlike a classic session:

* only queries of **this Connect session** are seen (each Connect session has its own
  ``StreamingQueryManager``), and ``started`` only for queries started after the listener was
  added;
* events arrive as Spark's progress JSON (``StreamingQueryProgress.jsonValue``: rates rounded
  to 0.1 rows/s, NaN rates left out) — the same JSON ``query.recentProgress`` returns there;
* there is no Py4J gateway and no ``sparkContext``: the recording header is described from
  the session's conf (``spark.app.id``, ``spark.master`` …) plus the Connect URL and session id.

:class:`streamwatch.spark.listener.PublishingListener` takes both routes unchanged: under
Connect pyspark calls its ``onQuery*`` methods with the events above, converted by the same
functions, so a Connect recording has the classic recording's format.
"""

from __future__ import annotations

import re
import socket
import sys
import time
import uuid
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from streamwatch.errors import ExitCode, StreamwatchError, one_line
from streamwatch.events.jsonl import RecordingHeader
from streamwatch.events.redact import redact_conf
from streamwatch.model.runtime import SessionInfo

if TYPE_CHECKING:  # pyspark is imported where a session is made: parsing a URL needs no JVM library
    from pyspark.sql import SparkSession

DEFAULT_PORT = 15002  # Spark Connect's default gRPC port (spark.connect.grpc.binding.port)
_DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
_SECRET_PARAM = re.compile(r"(?i)(;\s*(?:token|[a-z_]*secret[a-z_]*|password)\s*=)[^;]*")


class ConnectError(StreamwatchError):
    """A Spark Connect server cannot be used: the URL is unreachable (nothing listens, a name
    that does not resolve, a timeout), the server refused the session, or pyspark's Connect
    client libraries (grpcio, grpcio-status, googleapis-common-protos) are not installed. The
    message is one line; exit code 3 (Spark could not start)."""

    exit_code = ExitCode.ERRORS


def is_connect_session(spark: Any) -> bool:
    """True for a Spark Connect session (``pyspark.sql.connect.session.SparkSession``), False
    for a classic one (a Py4J gateway to a JVM in this process). Never imports the Connect
    client (grpc, pandas, pyarrow): a process that made a Connect session has imported it."""
    module = sys.modules.get("pyspark.sql.connect.session")
    return module is not None and isinstance(spark, module.SparkSession)


def public_url(url: str) -> str:
    """``url`` with secret parameters (``;token=…``) written as ``*********``: safe to print
    and to record."""
    return _SECRET_PARAM.sub(r"\1*********", url)


def parse_remote(url: str) -> tuple[str, int]:
    """(host, port) of a Spark Connect URL ``sc://HOST[:PORT][/;param=value…]`` (port 15002 when
    not given). Raises ``ValueError`` (one line, secrets hidden) for anything else, including
    what pyspark's ``ChannelBuilder`` refuses: a path, or a parameter that is not ``key=value``."""
    text = url.strip()
    if not text.startswith("sc://"):
        raise ValueError(f"--remote must be a Spark Connect URL sc://HOST[:PORT], not {public_url(text)!r}")
    head, _, params = text.partition(";")
    parts = urlsplit(head)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ValueError(f"--remote: bad port in {public_url(text)!r}") from None
    if not host:
        raise ValueError(f"--remote: no host in {public_url(text)!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"--remote: nothing may follow HOST[:PORT] but /;param=value…, in {public_url(text)!r}")
    for param in params.split(";") if params else ():
        key, eq, value = param.partition("=")
        if not eq or "=" in value or not key.strip():
            raise ValueError(f"--remote: parameter {public_url(';' + param)[1:]!r} is not key=value, "
                             f"in {public_url(text)!r}")
        if key == "session_id" and not _is_uuid(value):
            raise ValueError(f"--remote: session_id must be a UUID, not {value!r}")
    return host, port or DEFAULT_PORT


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def check_reachable(url: str, timeout_s: float = 5.0) -> None:
    """Open (and close) a TCP connection to the server of ``url`` within ``timeout_s`` s, so an
    unreachable server is reported at once (pyspark's client retries an unavailable server
    with back-off for minutes). Raises :class:`ConnectError` (one line) or ``ValueError`` for a
    malformed URL."""
    host, port = parse_remote(url)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as e:
        why = e.strerror or one_line(e) or type(e).__name__
        raise ConnectError(f"cannot reach the Spark Connect server at {host}:{port}: {why}") from None


def check_speaks_grpc(url: str, timeout_s: float = 5.0) -> None:
    """Wait up to ``timeout_s`` s for a gRPC channel to the server of ``url`` (built as
    pyspark's client builds it: TLS, token) to become ready — an HTTP/2 connection whose
    server sent its SETTINGS. A port that accepts TCP but is no gRPC server (silent, or
    answering HTTP/1.1) never gets there, and pyspark's client would retry it with back-off
    for 10 minutes or more. Raises :class:`ConnectError` (one line). Needs pyspark's Connect
    client (``grpcio``)."""
    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder

    host, port = parse_remote(url)
    channel = DefaultChannelBuilder(url.strip()).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
        raise ConnectError(f"the server at {host}:{port} does not answer as a Spark Connect (gRPC) server "
                           f"(no HTTP/2 handshake within {timeout_s:g} s)") from None
    finally:
        channel.close()


def connect_session(url: str, timeout_s: float = 5.0) -> SparkSession:
    """A Spark Connect session on ``url`` (``sc://host:port``), checked to answer (its Spark
    version is asked once; a server that does not speak gRPC is given ``timeout_s`` s). Raises
    ``ValueError`` for a malformed URL and :class:`ConnectError` when the server is
    unreachable, is no gRPC server, refuses the session, or the Connect
    client libraries are missing (``pip install 'streamwatch[connect]'``)."""
    check_reachable(url, timeout_s)
    try:
        import pyspark.sql.connect.session  # noqa: F401 - the client libraries' presence
    except ImportError as e:
        raise ConnectError(f"Spark Connect needs pyspark's Connect client ({e.name or e}): "
                           "pip install 'streamwatch[connect]'") from None
    check_speaks_grpc(url, timeout_s)
    from pyspark.sql import SparkSession

    try:
        spark = SparkSession.builder.remote(url.strip()).getOrCreate()
        spark.version  # noqa: B018 - one round trip: the server answers as Spark Connect
    except Exception as e:  # noqa: BLE001 - gRPC and Spark errors alike become one line
        raise ConnectError(f"the Spark Connect server at {public_url(url)} did not open a session: "
                           f"{_why(e)}") from None
    return spark


def _why(error: Exception) -> str:
    """One line for a failed session: a gRPC error — pyspark's ``SparkConnectGrpcException``
    raised from grpc's ``_InactiveRpcError``, whose first line is only ``<_InactiveRpcError of
    RPC that terminated with:`` — as its status code and details (``UNAUTHENTICATED: No
    authentication token provided``); anything else as its first line."""
    import grpc  # present: pyspark's Connect client imported it

    cause: BaseException | None = error  # the exception, then the ones it was raised from
    while cause is not None and not isinstance(cause, grpc.Call):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, grpc.Call):
        return one_line(f"{cause.code().name}: {cause.details()}", 300)
    return one_line(error, 300)


def add_listener(spark: SparkSession, listener: Any) -> None:
    """``spark.streams.addListener(listener)``, made to fail loudly under Spark Connect: there
    pyspark only warns ("Failed to add the listener …") when the server will not register its
    listener-bus listener, and the listener would receive nothing. Raises
    :class:`ConnectError` (one line) then; a classic session's errors propagate as they are."""
    if not is_connect_session(spark):
        spark.streams.addListener(listener)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spark.streams.addListener(listener)
    for w in caught:
        if "Failed to add the listener" in str(w.message):
            raise ConnectError(f"the Spark Connect server did not register the listener: {one_line(str(w.message), 300)}")
    for w in caught:  # anything else pyspark said stays visible
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _conf(spark: SparkSession, key: str) -> str | None:
    try:
        return spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a key the server will not show
        return None


def _all_conf(spark: SparkSession) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in spark.conf.getAll.items()}
    except Exception:  # noqa: BLE001 - an older server without getAll
        return {}


def connect_header(spark: SparkSession, app: Mapping[str, Any] | None = None,
                   url: str | None = None) -> RecordingHeader:
    """The recording header for a Connect session: Spark version, the server application's
    id, name and master (from its conf), ``remote`` (the URL, secrets hidden) and
    ``sessionId``, and the session's conf with secrets redacted; ``app`` adds fields."""
    facts: dict[str, Any] = {"sparkVersion": spark.version, "appId": _conf(spark, "spark.app.id"),
                             "appName": _conf(spark, "spark.app.name"), "master": _conf(spark, "spark.master"),
                             "remote": public_url(url) if url else None,
                             "sessionId": getattr(spark, "session_id", None)}
    facts = {k: v for k, v in facts.items() if v is not None}
    facts.update(app or {})
    return RecordingHeader(time_ms=int(time.time() * 1000), source="listener", app=facts,
                           conf=redact_conf(_all_conf(spark)))


def connect_table_format(spark: SparkSession) -> tuple[str, str]:
    """(``parquet``, why) for pipelines run through a Connect session: the client cannot add
    jars to a running server, and the Delta pipelines' ``foreachBatch`` MERGE through Spark
    Connect is not something streamwatch tests, so Parquet tables (Spark's file sink) are
    used even when the server loads Delta (``spark.sql.extensions``; said in the reason)."""
    if _DELTA_EXTENSION in (_conf(spark, "spark.sql.extensions") or ""):
        return "parquet", "Spark Connect: Parquet tables (the server loads Delta; not used through Connect)"
    return "parquet", "Spark Connect: Parquet tables (the server does not load Delta Lake)"


def connect_session_info(spark: SparkSession, table_format: str | None = None) -> SessionInfo:
    """The :class:`SessionInfo` of a Connect session: the server application's master
    (``local[2]``, ``spark://…``), no UI URL, and the table format (given, or
    :func:`connect_table_format`)."""
    fmt, why = (table_format, "chosen by the caller") if table_format else connect_table_format(spark)
    return SessionInfo(spark_version=spark.version, master=_conf(spark, "spark.master") or "unknown", ui_url=None,
                       table_format="delta" if fmt == "delta" else "parquet", table_format_reason=why)
