"""The storage interface the checkpoint reader lists and reads through — :class:`Storage`, its
listing entries (:class:`Item`, :class:`Tree`) and :class:`StorageError` — and
:class:`LocalStorage`, local folders through ``os`` (the fast path). Object stores are in
:mod:`streamwatch.checkpoint.objectstore`; :func:`streamwatch.checkpoint.fs.open_storage` picks
one for a path or URL.

Only listing and reading are offered; nothing here can create, modify or delete a file.
Listing a folder that vanished (Spark renames temporary files while we read) yields an empty
listing instead of an error.
"""

from __future__ import annotations

import builtins
import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from streamwatch.errors import ExitCode, StreamwatchError

_T = TypeVar("_T")
_R = TypeVar("_R")


class StorageError(StreamwatchError):
    """PATH itself cannot be used (missing, not a folder, permission denied, symlink loop, or
    the fsspec library for its URL scheme not installed)."""

    exit_code = ExitCode.UNREADABLE


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
    dirs: dict[str, Tree]

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
        total = 0  # bytes of the files directly inside, summed only when sizes
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
                            total += e.stat().st_size
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
        return Tree(files, total if sizes else None, dirs)

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

def _reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "symlink loop"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return err.strerror or str(err)

