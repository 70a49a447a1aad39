"""Read-only storage access for the checkpoint reader: local folders through ``os`` (fast
path) and anything else through fsspec (``s3://…`` with s3fs, ``abfss://…``/``az://…`` with
adlfs, ``gs://…`` with gcsfs, ``file://…``, ``memory://…``).

Only listing and reading are offered; nothing here can create, modify or delete a file.
Listing a folder that vanished (Spark renames temporary files while we read) yields an empty
listing instead of an error.

Object stores are configured the way their fsspec libraries already are — nothing here reads
a credential itself:

* S3 (s3fs): boto3's chain (``AWS_ACCESS_KEY_ID``…, profiles, instance roles);
  ``AWS_ENDPOINT_URL``/``FSSPEC_S3_ENDPOINT_URL`` for MinIO, moto and other S3-compatible stores.
* Azure Blob Storage / ADLS Gen2 (adlfs): ``abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH``
  names the account, ``az://CONTAINER/PATH`` takes it from ``AZURE_STORAGE_ACCOUNT_NAME``;
  credentials from ``AZURE_STORAGE_CONNECTION_STRING`` (also the way to reach Azurite: its
  ``BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1``), ``AZURE_STORAGE_ACCOUNT_KEY``,
  ``AZURE_STORAGE_SAS_TOKEN``, ``AZURE_STORAGE_CLIENT_ID``/``_SECRET``/``AZURE_STORAGE_TENANT_ID``,
  else azure-identity's ``DefaultAzureCredential`` (managed identity, ``az login``…).
* Google Cloud Storage (gcsfs): Application Default Credentials
  (``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth application-default login``, the metadata
  server); ``STORAGE_EMULATOR_HOST`` (e.g. ``http://127.0.0.1:9023``) points it at an emulator,
  which is then read anonymously unless ``storage_options`` give a ``token``.

Listings of Azure and GCS folders are never cached (``use_listings_cache=False``): a monitor
re-lists folders a running query keeps writing to.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from streamwatch.errors import ExitCode, StreamwatchError, one_line

_T = TypeVar("_T")
_R = TypeVar("_R")


class StorageError(StreamwatchError):
    """PATH itself cannot be used (missing, not a folder, permission denied, symlink loop, or
    the fsspec library for its URL scheme not installed)."""

    exit_code = ExitCode.UNREADABLE


#: fsspec protocols of Azure Blob Storage / ADLS Gen2 (adlfs). ``adl://`` is ADLS Gen1, another
#: service (retired), and ``wasb(s)://`` is Hadoop's name only: fsspec knows neither.
AZURE_PROTOCOLS = ("abfs", "abfss", "az")
#: fsspec protocols of Google Cloud Storage (gcsfs).
GCS_PROTOCOLS = ("gs", "gcs")
#: What to install for a protocol whose fsspec implementation is missing: (package, extra of
#: streamwatch that brings it, or None).
_PACKAGES: dict[str, tuple[str, str | None]] = {
    **{p: ("s3fs", None) for p in ("s3", "s3a")},
    **{p: ("adlfs", "azure") for p in AZURE_PROTOCOLS},
    **{p: ("gcsfs", "gcs") for p in GCS_PROTOCOLS},
}


@dataclass(frozen=True, slots=True)
class Item:
    """One listing entry: ``name`` (no folder), ``is_dir``, ``size`` in bytes (0 for folders)."""

    name: str
    is_dir: bool
    size: int


@dataclass(slots=True)
class Tree:
    """A folder listed recursively: ``files`` (names directly inside), ``bytes`` (their total
    size; None when sizes were not asked for and the listing did not give them for free) and
    ``dirs`` (name → :class:`Tree`)."""

    files: list[str]
    bytes: int | None
    dirs: dict[str, "Tree"]

    def total(self) -> tuple[int, int | None]:
        """(files, bytes) in the whole tree; bytes None when any folder's are unknown."""
        n, b = len(self.files), self.bytes
        for d in self.dirs.values():
            dn, db = d.total()
            n += dn
            b = None if b is None or db is None else b + db
        return n, b


class Storage:
    """Interface: ``join``, ``list`` (None when the folder is missing), ``read`` (bytes;
    raises OSError), ``kind`` (``"dir"``, ``"file"`` or None), ``tree``/``trees``
    (recursive listings, one request per folder tree on object storage)."""

    #: Listings/reads run in this many threads at once (object storage is latency-bound).
    concurrency = 1

    def tree(self, path: str, sizes: bool = True) -> Tree | None:
        """``path`` listed recursively (None when missing). ``sizes`` False lets a local
        listing skip the per-file ``stat``."""
        items = self.list(path)
        if items is None:
            return None
        files = [i.name for i in items if not i.is_dir]
        total = sum(i.size for i in items if not i.is_dir)
        dirs = {}
        for i in items:
            if i.is_dir:
                sub = self.tree(self.join(path, i.name), sizes)
                if sub is not None:
                    dirs[i.name] = sub
        return Tree(files, total, dirs)

    def trees(self, paths: list[str], sizes: bool = True) -> list[Tree | None]:
        """:meth:`tree` of each path, :attr:`concurrency` listings at a time."""
        return self.map_concurrent(lambda p: self.tree(p, sizes), paths)

    def map_concurrent(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> builtins.list[_R]:
        """``[fn(i) for i in items]``, :attr:`concurrency` calls at a time."""
        if self.concurrency <= 1 or len(items) < 4:
            return [fn(i) for i in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(fn, items))

    def join(self, *parts: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def list(self, path: str) -> list[Item] | None:  # pragma: no cover - interface
        raise NotImplementedError

    def read(self, path: str) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def names(self, path: str) -> builtins.list[str] | None:
        """Entry names only (cheaper than ``list``); None when the folder is missing."""
        items = self.list(path)
        return None if items is None else [i.name for i in items]

    def read_many(self, paths: builtins.list[str]) -> builtins.list[bytes | OSError]:
        """Read several files; each result is the bytes or the OSError raised."""
        out: list[bytes | OSError] = []
        for p in paths:
            try:
                out.append(self.read(p))
            except OSError as e:
                out.append(e)
        return out

    def kind(self, path: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def mtime_ms(self, path: str) -> int | None:
        """When ``path`` was last modified (epoch ms); None when it is missing or unknown."""
        return None

    def note_problem(self, path: str, reason: str) -> None:
        """Remember that ``path`` could not be listed or looked at (``reason``: one line)."""
        self.__dict__.setdefault("problems", []).append((path, reason))

    def take_problems(self) -> builtins.list[tuple[str, str]]:
        """(path, reason) of everything noted since the last call; the reader turns them
        into ``unreadable-file`` findings."""
        problems: builtins.list[tuple[str, str]] = self.__dict__.pop("problems", [])
        return problems


def _is_ancestor_link(entry: os.DirEntry[str], folder: str) -> bool:
    """Whether ``entry`` is a symlink to ``folder`` itself or to a folder containing it (a loop
    a recursive walk would follow for ever)."""
    target = os.path.realpath(entry.path)
    here = os.path.realpath(folder)
    try:
        return os.path.commonpath([target, here]) == target
    except ValueError:
        return False


class LocalStorage(Storage):
    """The local filesystem through ``os.scandir`` / ``os.open`` (read-only flags)."""

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def list(self, path: str) -> list[Item] | None:
        """Entries of ``path`` (None when it is missing or not a folder). Entries that cannot
        be looked at (a symlink loop, permission denied) and symlinks back to an enclosing
        folder are left out and noted (:meth:`take_problems`); entries that vanish while
        listing, and dangling links, are left out silently."""
        try:
            with os.scandir(path) as it:
                out = []
                for e in it:
                    try:
                        is_dir = e.is_dir()
                        if is_dir and e.is_symlink() and _is_ancestor_link(e, path):
                            self.note_problem(e.path, "symlink loop (links to a folder that contains it)")
                            continue
                        size = 0 if is_dir else e.stat().st_size
                    except FileNotFoundError:  # renamed/removed while listing, or a dangling link
                        continue
                    except OSError as err:
                        self.note_problem(e.path, _reason(err))
                        continue
                    out.append(Item(e.name, is_dir, size))
                return out
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            self.note_problem(path, _reason(err))
            return None

    def tree(self, path: str, sizes: bool = True) -> Tree | None:
        """``path`` listed recursively with ``os.scandir``: file/folder from the directory
        entry's type (no ``stat``), one ``stat`` per file only when ``sizes``. Symlink loops and
        unreadable entries are left out and noted, as in :meth:`list`."""
        files: list[str] = []
        dirs: dict[str, Tree] = {}
        total: int | None = 0 if sizes else None
        try:
            with os.scandir(path) as it:
                for e in it:
                    try:
                        if e.is_dir():
                            if e.is_symlink() and _is_ancestor_link(e, path):
                                self.note_problem(e.path, "symlink loop (links to a folder that contains it)")
                                continue
                            sub = self.tree(e.path, sizes)
                            if sub is not None:
                                dirs[e.name] = sub
                            continue
                        if sizes:
                            total += e.stat().st_size  # type: ignore[operator]
                        elif e.is_symlink() and not os.path.exists(e.path):
                            continue  # a dangling link
                    except FileNotFoundError:
                        continue
                    except OSError as err:
                        self.note_problem(e.path, _reason(err))
                        continue
                    files.append(e.name)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            self.note_problem(path, _reason(err))
            return None
        return Tree(files, total, dirs)

    def names(self, path: str) -> builtins.list[str] | None:
        """Entry names of ``path``; None when it is missing, not a folder or cannot be listed
        (noted, see :meth:`list`)."""
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            self.note_problem(path, _reason(err))
            return None

    def read(self, path: str) -> bytes:
        """The file's bytes. Opens without blocking (``O_NONBLOCK``) and refuses anything but a
        regular file — reading a FIFO would wait forever for a writer — with an OSError
        (``EISDIR`` for a folder, ``EINVAL`` otherwise)."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                if stat.S_ISDIR(mode):
                    raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", path)
                what = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
                raise OSError(errno.EINVAL, f"not a regular file ({what})", path)
            chunks = []
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def mtime_ms(self, path: str) -> int | None:
        try:
            return int(os.stat(path).st_mtime * 1000)
        except OSError:
            return None

    def kind(self, path: str) -> str | None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise StorageError(f"{path}: symlink loop") from None
            if e.errno == errno.EACCES:
                raise StorageError(f"{path}: permission denied") from None
            raise StorageError(f"{path}: {e.strerror}") from None
        return "dir" if stat.S_ISDIR(st.st_mode) else "file"


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


def _reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "symlink loop"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return err.strerror or str(err)


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


def protocol_of(url: str) -> str | None:
    """The URL's scheme, lower case (``abfss`` for ``abfss://c@a.dfs.core.windows.net/p``);
    None for a local path."""
    return url.split("://", 1)[0].lower() if "://" in url else None


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


def _missing_library(url: str, protocol: str, e: BaseException) -> str:
    package, extra = _PACKAGES.get(protocol, (None, None))
    if package is None:
        return f"{url}: cannot open ({one_line(e)})"
    how = f"pip install {package} (streamwatch's [{extra}] extra)" if extra else f"pip install {package}"
    return f"{url}: reading {protocol}:// needs {package}, which is not installed: {how}"


def open_fs(url: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for the URL ``url``, configured as the module
    docstring says: Azure and GCS listings uncached; on a GCS emulator gcsfs's plain JSON-API
    filesystem, anonymous unless ``storage_options`` give a ``token`` (gcsfs's default class
    first asks Google's Storage Control API over gRPC what kind of bucket it is, which no
    emulator serves: a minute of retries per object). ``storage_options`` win over these
    defaults. Raises :class:`StorageError` (one line) when the library for the URL's scheme is
    not installed — naming the ``pip install`` to run —, the URL is malformed, or an Azure
    URL has no account."""
    protocol = protocol_of(url) or "file"
    opts = dict(storage_options or {})
    try:
        if protocol in AZURE_PROTOCOLS:
            import adlfs  # noqa: F401 - missing, it is what to install that the user needs first

            _azure_options(url, opts)
            opts = {"use_listings_cache": False, **opts}
        elif protocol in GCS_PROTOCOLS:
            opts = {"use_listings_cache": False, **opts}
            if gcs_emulator(opts):
                from gcsfs.core import GCSFileSystem

                opts = {"token": "anon", **GCSFileSystem._get_kwargs_from_urls(url), **opts}
                return GCSFileSystem(**opts), GCSFileSystem._strip_protocol(url)
        from fsspec.core import url_to_fs

        fs, inner = url_to_fs(url, **opts)
    except ImportError as e:
        raise StorageError(_missing_library(url, protocol, e)) from None
    except (ValueError, TypeError) as e:  # a malformed URL; adlfs: no account or credentials
        raise StorageError(f"{url}: cannot open ({one_line(e)})") from None
    return fs, inner


def url_of(raw: str, inner: str) -> str:
    """``inner`` — a path in the storage :func:`open_storage` gave for ``raw`` — named the way
    ``raw`` was typed: a local path as it is, else ``scheme://inner``, keeping an Azure URL's
    ``@ACCOUNT.dfs.core.windows.net`` (adlfs paths are ``container/path``: the account would be
    lost, and with it the way to open the URL again)."""
    protocol = protocol_of(raw)
    if protocol is None or protocol == "file":
        return inner
    scheme = raw.split("://", 1)[0]
    if protocol in AZURE_PROTOCOLS:
        container, host = _azure_authority(raw)
        if host and (inner == container or inner.startswith(container + "/")):
            return f"{scheme}://{container}@{host}{inner[len(container):]}"
    return f"{scheme}://{inner}"


def open_storage(path: str, storage_options: dict[str, Any] | None = None) -> tuple[Storage, str]:
    """(storage, path in that storage) for a local path or an fsspec URL. Raises
    :class:`StorageError` when fsspec cannot handle the URL (see :func:`open_fs`)."""
    if "://" not in path:
        return LocalStorage(), path
    if path.startswith("file://"):
        return LocalStorage(), path[len("file://") :] or "/"
    fs, inner = open_fs(path, storage_options)
    fs.invalidate_cache()  # fsspec caches instances and listings; a checkpoint changes
    storage = AzureStorage(fs) if protocol_of(path) in AZURE_PROTOCOLS else FsspecStorage(fs)
    return storage, inner.rstrip("/") or inner
