"""Object stores read through fsspec (:class:`FsspecStorage`: S3 with s3fs, ``gs://`` with
gcsfs, ``memory://``…; :class:`AzureStorage`: Azure Blob Storage / ADLS Gen2 with adlfs and the
Azure SDK's container client), and what the Azure and Google client libraries need around them:
their errors turned into OSErrors (:func:`store_errors_as_oserror`), one-request object
metadata (:func:`object_info`), the storage account an Azure URL names and the checks on it,
and the GCS emulator gcsfs talks to. How each store is configured: :mod:`streamwatch.checkpoint.fs`.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import posixpath
from collections.abc import Iterator
from typing import Any

from streamwatch.checkpoint.storage import Item, Storage, StorageError, Tree
from streamwatch.errors import one_line

#: fsspec protocols of Azure Blob Storage / ADLS Gen2 (adlfs). ``adl://`` is ADLS Gen1, another
#: service (retired), and ``wasb(s)://`` is Hadoop's name only: fsspec knows neither.
AZURE_PROTOCOLS = ("abfs", "abfss", "az")
#: fsspec protocols of Google Cloud Storage (gcsfs).
GCS_PROTOCOLS = ("gs", "gcs")


class FsspecStorage(Storage):
    """Any fsspec filesystem; paths are the filesystem's own (no protocol prefix)."""

    concurrency = 16

    def __init__(self, fs: Any) -> None:  # fs: fsspec.AbstractFileSystem
        self.fs = fs

    def tree(self, path: str, sizes: bool = True) -> Tree | None:
        """``path`` listed recursively in one paginated listing (``fs.find``: on S3 one
        ListObjectsV2 call per 1,000 keys, whatever the depth); sizes come with it."""
        base = path.rstrip("/")
        try:
            with store_errors_as_oserror(path):
                infos = self.fs.find(base, detail=True, withdirs=True)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not infos:
            return None if self.kind(base) != "dir" else Tree([], 0, {})
        root = Tree([], 0, {})
        for name, info in infos.items():
            rel = name.rstrip("/")[len(base) + 1 :] if name.startswith(base + "/") else None
            if not rel:
                continue
            *folders, leaf = rel.split("/")
            node = root
            for f in folders:
                node = node.dirs.setdefault(f, Tree([], 0, {}))
            if info.get("type") == "directory":
                node.dirs.setdefault(leaf, Tree([], 0, {}))
            else:
                node.files.append(leaf)
                node.bytes = (node.bytes or 0) + int(info.get("size") or 0)
        return root

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def list(self, path: str) -> list[Item] | None:
        """Entries of ``path`` in one delimited listing, sizes included; None when it is
        missing. Raises OSError when the store refuses (permission, throttling…)."""
        try:
            with store_errors_as_oserror(path):
                infos = self.fs.ls(path, detail=True, refresh=True) if _is_s3fs(self.fs) else self.fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return None
        out = []
        base = path.rstrip("/")
        for info in infos:
            name = info["name"].rstrip("/")
            if name == base:
                continue
            out.append(Item(posixpath.basename(name), info.get("type") == "directory", int(info.get("size") or 0)))
        return out

    def read(self, path: str) -> bytes:
        """The object's bytes in one GET (``cat_file``: no HEAD for the size first, which
        ``open()`` would send). Raises OSError (FileNotFoundError, PermissionError…); the
        Azure and Google client libraries' own errors are turned into OSErrors too."""
        # s3fs splits a large object into ranged GETs after a HEAD unless told not to
        kw = {"max_concurrency": 1} if _is_s3fs(self.fs) else {}
        with store_errors_as_oserror(path):
            data: bytes = self.fs.cat_file(path, **kw)
        return data

    def read_many(self, paths: builtins.list[str]) -> builtins.list[bytes | OSError]:
        """Reads in parallel threads (remote stores are latency-bound)."""
        if len(paths) < 4:
            return super().read_many(paths)
        from concurrent.futures import ThreadPoolExecutor

        def one(p: str) -> bytes | OSError:
            try:
                return self.read(p)
            except OSError as e:
                return e

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(one, paths))

    def mtime_ms(self, path: str) -> int | None:
        """When the object was last written (epoch ms): s3fs ``LastModified``, adlfs
        ``last_modified``, gcsfs ``mtime`` (a datetime each), or a number of seconds; None
        when missing, a folder, unreadable or unknown. At most one request (:func:`object_info`;
        on S3 none after the folder's listing)."""
        try:
            info = object_info(self.fs, path, refresh=False)
        except OSError:
            return None
        if info is None:
            return None
        t: Any = info.get("LastModified") or info.get("last_modified") or info.get("mtime") or info.get("created")
        if hasattr(t, "timestamp"):
            return int(t.timestamp() * 1000)
        return int(float(t) * 1000) if isinstance(t, (int, float)) else None

    def kind(self, path: str) -> str | None:
        """``"dir"``, ``"file"`` or None (missing). Raises :class:`StorageError` when the
        store refuses (permission denied, bad credentials) or cannot be reached."""
        try:
            info = self.fs.info(path)
        except FileNotFoundError:
            return None
        except PermissionError:
            raise StorageError(f"{path}: permission denied") from None
        except Exception as e:  # noqa: BLE001 - a store's own error becomes one line; the rest re-raised
            err = _store_oserror(e, path)
            if err is None:
                raise
            what = "permission denied" if isinstance(err, PermissionError) else "cannot read"
            raise StorageError(f"{path}: {what} ({err.strerror})") from None
        return "dir" if info.get("type") == "directory" else "file"


class AzureStorage(FsspecStorage):
    """Azure Blob Storage / ADLS Gen2 through adlfs, its folders listed with the Azure SDK's
    container client directly: adlfs's ``ls`` sends two List Blobs calls per folder (the
    folder's own name as a prefix, then what is under it) and its ``find`` a Get Blob
    Properties before its listing; one paged List Blobs (5,000 names a page) does for each.
    Reads and ``kind`` are adlfs's."""

    def _blobs(self, path: str, delimiter: bool) -> builtins.list[tuple[str, bool, int]] | None:
        """(name below ``path``, is a folder, size) of what is directly under ``path``
        (``delimiter``) or anywhere under it; None when the container does not exist. A folder
        is a name prefix, or an ADLS Gen2 directory (a blob marked ``hdi_isfolder``)."""
        from azure.core.exceptions import ResourceNotFoundError
        from fsspec.asyn import sync

        container, key, _ = self.fs.split_path(path)
        prefix = key.strip("/") + "/" if key.strip("/") else ""

        async def listing() -> builtins.list[tuple[str, bool, int]]:
            out = []
            async with self.fs.service_client.get_container_client(container) as cc:
                blobs = (cc.walk_blobs(name_starts_with=prefix, include=["metadata"], delimiter="/") if delimiter
                         else cc.list_blobs(name_starts_with=prefix, include=["metadata"]))
                async for b in blobs:
                    name = b["name"][len(prefix):].rstrip("/")
                    if not name:
                        continue  # the folder's own marker blob ("cp/" or an HNS directory)
                    meta = b.get("metadata") or {}
                    folder = "size" not in b or str(meta.get("hdi_isfolder", meta.get("Hdi_isfolder"))).lower() == "true"
                    out.append((name, folder, 0 if folder else int(b.get("size") or 0)))
            return out

        try:
            with store_errors_as_oserror(path):
                result: builtins.list[tuple[str, bool, int]] = sync(self.fs.loop, listing)
        except ResourceNotFoundError:
            return None
        return result

    def list(self, path: str) -> builtins.list[Item] | None:
        """Entries of ``path`` in one delimited List Blobs (sizes included); None when it is
        missing. Raises OSError when the store refuses."""
        found = self._blobs(path, delimiter=True)
        if not found:
            return [] if found is not None and self.kind(path) == "dir" else None
        return [Item(name, folder, size) for name, folder, size in found]

    def tree(self, path: str, sizes: bool = True) -> Tree | None:
        """``path`` listed recursively in one flat, paged List Blobs, sizes included."""
        found = self._blobs(path, delimiter=False)
        if not found:
            return Tree([], 0, {}) if found is not None and self.kind(path.rstrip("/")) == "dir" else None
        root = Tree([], 0, {})
        for rel, folder, size in found:
            *folders, leaf = rel.split("/")
            node = root
            for f in folders:
                node = node.dirs.setdefault(f, Tree([], 0, {}))
            if folder:
                node.dirs.setdefault(leaf, Tree([], 0, {}))
            else:
                node.files.append(leaf)
                node.bytes = (node.bytes or 0) + size
        return root


def _is_s3fs(fs: Any) -> bool:
    return type(fs).__module__.startswith("s3fs")


def _store_errors() -> tuple[type[BaseException], ...]:
    """Exception classes of the Azure and Google client libraries that are not OSErrors
    (whichever are installed): what a store's refusal looks like through adlfs and gcsfs."""
    found: list[type[BaseException]] = []
    try:
        from azure.core.exceptions import AzureError

        found.append(AzureError)
    except ImportError:
        pass
    try:
        from gcsfs.retry import HttpError

        found.append(HttpError)
    except ImportError:
        pass
    try:
        from google.auth.exceptions import GoogleAuthError

        found.append(GoogleAuthError)
    except ImportError:
        pass
    return tuple(found)


@contextlib.contextmanager
def store_errors_as_oserror(path: str) -> Iterator[None]:
    """Run the block with a store's own errors raised as OSErrors (:func:`_store_oserror`),
    so callers handle one family; OSErrors and anything else pass unchanged."""
    try:
        yield
    except Exception as e:
        err = _store_oserror(e, path)
        if err is None:
            raise
        raise err from e


def _store_oserror(e: BaseException, path: str) -> OSError | None:
    """``e`` as an OSError when it is a store's own error that is not one already (adlfs lets
    Azure's ``ClientAuthenticationError``/``HttpResponseError`` through, gcsfs raises
    ``HttpError`` for a 401): PermissionError for 401/403 and authentication failures, else
    EIO, the message one line. None for anything else — an OSError, or a bug — for the
    caller to re-raise unchanged."""
    if isinstance(e, OSError) or not isinstance(e, _store_errors()):
        return None
    status = getattr(e, "status_code", None) or getattr(e, "code", None)
    name = type(e).__name__
    if status in (401, 403) or "Auth" in name:
        return PermissionError(errno.EACCES, f"{name}: {one_line(e)}", path)
    return OSError(errno.EIO, f"{name}: {one_line(e)}", path)


def object_info(fs: Any, path: str, refresh: bool = True) -> dict[str, Any] | None:
    """The fsspec ``info`` of the object (file) at ``path`` — ``size``, ``type`` and the
    library's modification-time key — or None when no object has that name (a folder is
    none). One request on GCS and Azure: gcsfs's and adlfs's own ``info`` also ask, when
    there is no such object, whether ``path`` is a folder (2-3 requests), which a poller
    looking for the next ``offsets/N`` pays on every poll. s3fs's ``info`` is asked with
    ``refresh`` (its listings cache would hide a new object) unless ``refresh`` is False (a
    listing just made answers it without a request); others as they are. Raises OSError when
    the store refuses."""
    module = type(fs).__module__
    try:
        with store_errors_as_oserror(path):
            if module.startswith("gcsfs"):
                from fsspec.asyn import sync

                info: dict[str, Any] | None = sync(fs.loop, fs._get_object, path)  # the object GET alone
            elif module.startswith("adlfs"):
                info = _blob_properties(fs, path)
            else:
                info = fs.info(path, refresh=True) if refresh and _is_s3fs(fs) else fs.info(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return None if info is None or info.get("type") == "directory" else info


def _blob_properties(fs: Any, path: str) -> dict[str, Any] | None:
    """adlfs: Get Blob Properties (a HEAD) of ``path`` as an fsspec ``info``; None when
    there is no such blob or ``path`` is a container."""
    from azure.core.exceptions import ResourceNotFoundError
    from fsspec.asyn import sync

    container, blob, _ = fs.split_path(path)
    if not blob:
        return None

    async def properties() -> dict[str, Any] | None:
        try:
            async with fs.service_client.get_blob_client(container, blob) as bc:
                props = await bc.get_blob_properties()
        except ResourceNotFoundError:
            return None
        meta = props.metadata or {}
        folder = str(meta.get("hdi_isfolder", meta.get("Hdi_isfolder"))).lower() == "true"  # an ADLS Gen2 directory
        return {"name": path, "size": props.size, "type": "directory" if folder else "file",
                "last_modified": props.last_modified}

    found: dict[str, Any] | None = sync(fs.loop, properties)
    return found


def _azure_authority(url: str) -> tuple[str, str | None]:
    """(container, account host or None) of an Azure URL: ``abfss://c@a.dfs.core.windows.net/p``
    → ``("c", "a.dfs.core.windows.net")``, ``az://c/p`` → ``("c", None)``."""
    authority = url.split("://", 1)[1].split("/", 1)[0]
    container, at, host = authority.partition("@")
    return container, (host or None) if at else None


def azure_account(url: str) -> str | None:
    """The storage account an Azure URL names in its host (``a`` for
    ``abfss://c@a.dfs.core.windows.net/p`` or ``wasbs://c@a.blob.core.windows.net/p``); None
    when it names none (``az://c/p``)."""
    host = _azure_authority(url)[1]
    return host.split(".", 1)[0] if host else None


def _connection_string_account(conn: str) -> str | None:
    for part in conn.split(";"):
        k, _, v = part.partition("=")
        if k.strip().lower() == "accountname":
            return v.strip() or None
    return None


def _azure_options(url: str, opts: dict[str, Any]) -> None:
    """Refuse, with one line saying what to set, an Azure URL adlfs could only fail on later
    (no account anywhere) or would read from another account than it names (the URL's account
    differs from the connection string's: adlfs silently prefers the connection string).
    Raises :class:`StorageError`."""
    named = azure_account(url)
    conn = opts.get("connection_string") or os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if conn:
        theirs = _connection_string_account(conn)
        if named and theirs and named != theirs:
            raise StorageError(f"{url}: names storage account {named!r} but AZURE_STORAGE_CONNECTION_STRING is for "
                               f"{theirs!r} (adlfs would read {theirs!r}); unset it or use that account's URL")
        return
    if not named and not (opts.get("account_name") or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")):
        raise StorageError(f"{url}: no Azure storage account: use abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH, "
                           "or set AZURE_STORAGE_ACCOUNT_NAME (or AZURE_STORAGE_CONNECTION_STRING)")


def gcs_emulator(opts: dict[str, Any] | None = None) -> str | None:
    """The Cloud Storage emulator gcsfs will talk to (``STORAGE_EMULATOR_HOST``, or an
    ``endpoint_url`` storage option), None for Google's own service."""
    endpoint = (opts or {}).get("endpoint_url") or os.environ.get("STORAGE_EMULATOR_HOST", "")
    return None if endpoint in ("", "default") else str(endpoint)
