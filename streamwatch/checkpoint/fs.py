"""Read-only storage access for the checkpoint reader: local folders through ``os`` (fast
path) and anything else through fsspec (``s3://…``, ``file://…``, ``memory://…``).

Only listing and reading are offered; nothing here can create, modify or delete a file.
Listing a folder that vanished (Spark renames temporary files while we read) yields an empty
listing instead of an error.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass

from streamwatch.errors import ExitCode, StreamwatchError


class StorageError(StreamwatchError):
    """PATH itself cannot be used (missing, not a folder, permission denied, symlink loop)."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class Item:
    """One listing entry: ``name`` (no folder), ``is_dir``, ``size`` in bytes (0 for folders)."""

    name: str
    is_dir: bool
    size: int


class Storage:
    """Interface: ``join``, ``list`` (None when the folder is missing), ``read`` (bytes;
    raises OSError), ``kind`` (``"dir"``, ``"file"`` or None)."""

    def join(self, *parts: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def list(self, path: str) -> list[Item] | None:  # pragma: no cover - interface
        raise NotImplementedError

    def read(self, path: str) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def names(self, path: str) -> list[str] | None:
        """Entry names only (cheaper than ``list``); None when the folder is missing."""
        items = self.list(path)
        return None if items is None else [i.name for i in items]

    def read_many(self, paths: list[str]) -> list[bytes | OSError]:
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

    def note_problem(self, path: str, reason: str) -> None:
        """Remember that ``path`` could not be listed or looked at (``reason``: one line)."""
        self.__dict__.setdefault("problems", []).append((path, reason))

    def take_problems(self) -> list[tuple[str, str]]:
        """(path, reason) of everything noted since the last call; the reader turns them
        into ``unreadable-file`` findings."""
        return self.__dict__.pop("problems", [])


def _is_ancestor_link(entry: os.DirEntry, folder: str) -> bool:
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

    def names(self, path: str) -> list[str] | None:
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

    def __init__(self, fs) -> None:  # fs: fsspec.AbstractFileSystem
        self.fs = fs

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def list(self, path: str) -> list[Item] | None:
        try:
            infos = self.fs.ls(path, detail=True, refresh=True) if _accepts_refresh(self.fs) else self.fs.ls(path, detail=True)
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
        with self.fs.open(path, "rb") as f:
            return f.read()

    def read_many(self, paths: list[str]) -> list[bytes | OSError]:
        """Reads in parallel threads (remote stores are latency-bound)."""
        if len(paths) < 4:
            return super().read_many(paths)
        from concurrent.futures import ThreadPoolExecutor

        def one(p: str) -> bytes | OSError:
            try:
                return self.read(p)
            except OSError as e:
                return e

        with ThreadPoolExecutor(max_workers=16) as pool:
            return list(pool.map(one, paths))

    def kind(self, path: str) -> str | None:
        try:
            info = self.fs.info(path)
        except FileNotFoundError:
            return None
        except PermissionError:
            raise StorageError(f"{path}: permission denied") from None
        return "dir" if info.get("type") == "directory" else "file"


def _reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "symlink loop"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return err.strerror or str(err)


def _accepts_refresh(fs) -> bool:
    return type(fs).__module__.startswith("s3fs")


def open_storage(path: str, storage_options: dict | None = None) -> tuple[Storage, str]:
    """(storage, path in that storage) for a local path or an fsspec URL. Raises
    :class:`StorageError` when fsspec cannot handle the URL's protocol."""
    if "://" not in path:
        return LocalStorage(), path
    if path.startswith("file://"):
        return LocalStorage(), path[len("file://") :] or "/"
    try:
        from fsspec.core import url_to_fs

        fs, inner = url_to_fs(path, **(storage_options or {}))
        fs.invalidate_cache()  # fsspec caches instances and listings; a checkpoint changes
    except (ImportError, ValueError) as e:
        raise StorageError(f"{path}: cannot open ({e})") from None
    return FsspecStorage(fs), inner.rstrip("/") or inner
