"""Point look-ups on a checkpoint's storage, for incremental polling (read-only).

The inspector (:mod:`streamwatch.checkpoint`) lists whole folders; a poller that follows a
running query only needs to know whether the *next* file exists (``offsets/N+1``,
``commits/M+1``, ``_spark_metadata/M+1`` …), so its cost per poll is proportional to what
changed, not to the checkpoint's size. :class:`Probe` offers exactly that: ``stat`` (size and
modification time of one file, or None), ``read`` (bytes or None) and ``names`` (one folder
listing, used once at start). Local paths go through ``os``; any other fsspec URL
(``s3://…``, ``gs://…``, ``abfss://…``) through fsspec, opened as the checkpoint reader opens
it (:func:`streamwatch.checkpoint.fs.open_fs`; one HEAD per ``stat`` on S3, one metadata GET on
GCS, one blob-properties HEAD on Azure). ``requests`` counts storage calls.
"""

from __future__ import annotations

import os
import posixpath
import stat as stat_mod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from streamwatch.errors import ExitCode, StreamwatchError


class ProbeError(StreamwatchError):
    """The URL's protocol cannot be opened (fsspec missing the implementation)."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class FileStat:
    """One file's ``size`` (bytes) and ``mtime_ms`` (modification time, epoch ms; on S3 the
    object's LastModified, whole seconds)."""

    size: int
    mtime_ms: int


@dataclass(frozen=True, slots=True)
class Listing:
    """One folder listing: ``files`` name → :class:`FileStat` (those a caller kept) and the
    names of its sub-folders ``dirs``."""

    files: dict[str, FileStat]
    dirs: tuple[str, ...]


def _mtime_ms(info: dict[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "modified", "created"):
        v = info.get(key)
        if v is None:
            continue
        if isinstance(v, datetime):
            return int(v.timestamp() * 1000)
        try:
            return int(float(v) * 1000)
        except (TypeError, ValueError):
            continue
    return 0


class Probe:
    """Read-only look-ups under one root (a local path or an fsspec URL).

    ``root`` is the path in the storage's own terms; ``url(path)`` turns such a path back into
    what the user would type. Raises :class:`ProbeError` from the constructor when fsspec
    cannot open the URL."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.requests = 0
        self.protocol: str | None = None
        self._fs: Any = None
        if "://" not in url or url.startswith("file://"):
            self.root = url[len("file://"):] if url.startswith("file://") else url
            self.root = self.root.rstrip("/") or "/"
            return
        from streamwatch.checkpoint.fs import StorageError, open_fs

        try:
            # an instance of its own, without a listings cache: the inspector's cached listings
            # of the same folders would hide files that appeared since
            opts = {"skip_instance_cache": True, "use_listings_cache": False, **(storage_options or {})}
            self._fs, inner = open_fs(url, opts)
        except StorageError as e:
            raise ProbeError(str(e)) from None
        self._url = url
        self.protocol = url.split("://", 1)[0]
        self.root = inner.rstrip("/")
        self._refresh = type(self._fs).__module__.startswith("s3fs")

    @property
    def local(self) -> bool:
        return self._fs is None

    def join(self, *parts: str) -> str:
        return os.path.join(*parts) if self.local else posixpath.join(*parts)

    def url(self, path: str) -> str:
        """``path`` as a user-facing location (``s3://bucket/key``, ``abfss://container@account
        .dfs.core.windows.net/key`` as the root was typed, or a local path)."""
        from streamwatch.checkpoint.fs import url_of

        return path if self.local else url_of(self._url, path)

    def stat(self, path: str) -> FileStat | None:
        """Size and mtime of the file at ``path``; None when it does not exist (or is a folder)."""
        self.requests += 1
        if self.local:
            try:
                st = os.stat(path)
            except OSError:
                return None
            if not stat_mod.S_ISREG(st.st_mode):
                return None
            return FileStat(st.st_size, st.st_mtime_ns // 1_000_000)
        from streamwatch.checkpoint.fs import object_info

        try:
            info = object_info(self._fs, path)  # one request on GCS and Azure, a HEAD on S3
        except OSError:
            return None
        if info is None:
            return None
        return FileStat(int(info.get("size") or 0), _mtime_ms(info))

    def read(self, path: str) -> bytes | None:
        """The file's bytes; None when it is missing or cannot be read."""
        self.requests += 1
        try:
            if self.local:
                with open(path, "rb") as f:
                    return f.read()
            from streamwatch.checkpoint.fs import store_errors_as_oserror

            with store_errors_as_oserror(path):
                # s3fs: one GET (no HEAD for the size first); fsspec is untyped: cat_file gives bytes
                data: bytes = self._fs.cat_file(path, max_concurrency=1) if self._refresh else self._fs.cat_file(path)
                return data
        except (OSError, ValueError):
            return None

    def names(self, path: str) -> list[str] | None:
        """Entry names of the folder ``path`` (one listing); None when it is missing."""
        self.requests += 1
        if self.local:
            try:
                return os.listdir(path)
            except OSError:
                return None
        from streamwatch.checkpoint.fs import store_errors_as_oserror

        try:
            with store_errors_as_oserror(path):
                self._fs.invalidate_cache(path)
                entries = self._fs.ls(path, detail=False)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        base = path.rstrip("/")
        return [posixpath.basename(e.rstrip("/")) for e in entries if e.rstrip("/") != base]

    def files_of(self, uri: str, skip: Callable[[str], bool]) -> Listing | None:
        """One listing of the folder a Spark log URI names (``file:/in``, ``s3a://b/in``) when it
        lives on this probe's storage: each file whose name ``skip`` does not reject, with its
        size and mtime (stat only for those: a local folder of read files costs one listing).
        None when the folder is missing or on another storage."""
        path = unquote(storage_path(uri)).rstrip("/")
        self.requests += 1
        if self.local:
            if not path.startswith("/"):
                return None
            try:
                entries = list(os.scandir(path))
            except OSError:
                return None
            files: dict[str, FileStat] = {}
            dirs: list[str] = []
            for e in entries:
                try:
                    if e.is_dir():
                        dirs.append(e.name)
                    elif not skip(e.name):
                        st = e.stat()
                        files[e.name] = FileStat(st.st_size, st.st_mtime_ns // 1_000_000)
                except OSError:  # removed between the listing and the stat
                    continue
            return Listing(files, tuple(dirs))
        store = _STORES.get(uri.split(":", 1)[0].lower())
        if store is None or store != _STORES.get((self.protocol or "").lower()) or (
                store == "azure" and not self._same_azure_account(uri)):
            return None
        from streamwatch.checkpoint.fs import store_errors_as_oserror

        try:
            with store_errors_as_oserror(path):
                self._fs.invalidate_cache(path)
                infos = self._fs.ls(path, detail=True)
        except OSError:
            return None
        files, dirs = {}, []
        for info in infos:
            name = posixpath.basename(str(info.get("name", "")).rstrip("/"))
            if not name or str(info.get("name", "")).rstrip("/") == path:
                continue
            if info.get("type") == "directory":
                dirs.append(name)
            elif not skip(name):
                files[name] = FileStat(int(info.get("size") or 0), _mtime_ms(info))
        return Listing(files, tuple(dirs))

    def find(self, path: str) -> list[str]:
        """Every file under ``path`` on an fsspec storage (a flat, paged listing: S3
        ListObjectsV2); raises OSError when it cannot be listed. Not for local paths."""
        from streamwatch.checkpoint.fs import store_errors_as_oserror

        self.requests += 1
        self._fs.invalidate_cache()
        with store_errors_as_oserror(path):  # Azure's and Google's own errors as OSErrors
            return list(self._fs.find(path, withdirs=False))

    def stat_url(self, uri: str) -> FileStat | None:
        """Stat a file named by a URI as Spark writes it in a log (``file:/x``, ``file:///x``,
        ``s3a://b/k``) when it lives on this probe's storage; None otherwise."""
        path = storage_path(uri)
        if self.local:
            return self.stat(path) if path.startswith("/") else None
        store = _STORES.get(uri.split(":", 1)[0].lower())
        if store is None or store != _STORES.get((self.protocol or "").lower()):
            return None
        if store == "azure" and not self._same_azure_account(uri):
            return None  # the same container name in another storage account
        return self.stat(path)

    def _same_azure_account(self, uri: str) -> bool:
        """Whether ``uri`` names this probe's Azure storage account (True when either leaves
        it unnamed: ``az://c/p`` takes it from the environment)."""
        from streamwatch.checkpoint.fs import azure_account

        theirs, ours = azure_account(uri), azure_account(self._url)
        return theirs is None or ours is None or theirs == ours


#: Object stores by the URL schemes Spark (Hadoop) and fsspec give them: a Spark log's
#: ``s3a://``/``gs://``/``abfss://`` file is statted on a probe opened as ``s3://``/``gs://``/``az://``.
_STORES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs",
           "abfs": "azure", "abfss": "azure", "az": "azure", "wasb": "azure", "wasbs": "azure"}


def storage_path(uri: str) -> str:
    """A Spark log URI as a storage path: ``file:/a/b`` and ``file:///a/b`` → ``/a/b``;
    ``s3a://bucket/k`` and ``gs://bucket/k`` → ``bucket/k``; Azure's
    ``abfss://container@account.dfs.core.windows.net/k`` (and ``wasbs://…``) → ``container/k``,
    adlfs's path; anything else unchanged."""
    if uri.startswith("file:"):
        rest = uri[5:]
        while rest.startswith("//"):
            rest = rest[1:]
        return rest
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        if _STORES.get(scheme.lower()) == "azure":
            authority, slash, key = rest.partition("/")
            return authority.split("@", 1)[0] + slash + key
        return rest
    return uri


def same_place(uri: str) -> str:
    """A key for comparing locations written by different writers: the storage path with
    trailing ``/`` removed (``file:/x/`` and ``/x`` agree; ``s3a://b/k`` and ``s3://b/k`` agree)."""
    return unquote(storage_path(uri)).rstrip("/")
