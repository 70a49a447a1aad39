"""Where a workspace folder lives: a local folder or a folder (key prefix) in an S3 bucket.

Spark and fsspec name the same S3 object differently: Hadoop's S3A connector reads
``s3a://bucket/key``, fsspec's s3fs ``s3://bucket/key``. A :class:`Location` holds the folder
once and gives each side its own name (:attr:`Location.spark_uri`, :attr:`Location.fsspec_uri`),
so no caller rewrites URL schemes itself. Pure value type: no I/O.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from streamwatch.errors import ExitCode, StreamwatchError

#: Object-store schemes a workspace may use, as typed (Hadoop's and fsspec's names of S3).
OBJECT_STORE_SCHEMES = ("s3a", "s3")
# S3 bucket names: 3-63 lower-case letters, digits, dots and hyphens (AWS's naming rules)
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$")


class LocationError(StreamwatchError, ValueError):
    """A workspace location that cannot be used: an unsupported URL scheme, no bucket, a bad
    bucket name. ``str()`` is one line naming the location and what is wrong. Exit 2."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True, slots=True)
class Location:
    """A folder: local (``bucket`` is None, ``key`` an absolute local path) or in an S3 bucket
    (``bucket``, ``key`` the key prefix without leading or trailing ``/``, possibly empty).

    Build one with :meth:`parse` (a path, ``file://…``, ``s3a://bucket/prefix`` or
    ``s3://bucket/prefix``) or :meth:`local`; ``loc / "name"`` is the folder ``name`` inside.
    A local location is ``os.PathLike`` (``Path(loc)``); an S3 one refuses that with
    ``TypeError``. ``str()`` is :attr:`fsspec_uri`, the name streamwatch's readers and messages use."""

    key: str
    bucket: str | None = None

    @classmethod
    def local(cls, path: str | os.PathLike[str]) -> Location:
        """The local folder ``path`` (made absolute; ``~`` expanded; symlinks kept)."""
        return cls(str(Path(path).expanduser().absolute()))

    @classmethod
    def parse(cls, text: str | os.PathLike[str]) -> Location:
        """A location from what a user typed. Raises :class:`LocationError` (one line) for an
        empty text, a scheme other than ``file``/``s3a``/``s3``, a missing or malformed bucket."""
        raw = os.fspath(text).strip()
        if not raw:
            raise LocationError("workspace location is empty")
        m = _SCHEME.match(raw)
        if m is None:
            return cls.local(raw)
        scheme, rest = m.group(1).lower(), m.group(2)
        if scheme == "file":
            return cls.local(rest or "/")
        if scheme not in OBJECT_STORE_SCHEMES:
            raise LocationError(f"{raw}: unsupported scheme {scheme}:// (use a local folder, s3a://BUCKET/PREFIX "
                                "or s3://BUCKET/PREFIX)")
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise LocationError(f"{raw}: no bucket (expected {scheme}://BUCKET/PREFIX)")
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise LocationError(f"{raw}: {bucket!r} is not an S3 bucket name (3-63 lower-case letters, digits, "
                                "'.' and '-')")
        key = "/".join(p for p in prefix.split("/") if p)
        if any(p in (".", "..") for p in key.split("/")):
            raise LocationError(f"{raw}: '.' and '..' are not folders in an object store")
        return cls(key, bucket)

    @property
    def is_local(self) -> bool:
        """True for a local folder, False for an object-store prefix."""
        return self.bucket is None

    @property
    def spark_uri(self) -> str:
        """The name Spark (Hadoop's file systems) uses: the local path with symlinks resolved
        (as Spark records file paths), or ``s3a://bucket/key`` (Hadoop's S3A connector,
        ``hadoop-aws``)."""
        return os.path.realpath(self.key) if self.bucket is None else self._uri("s3a")

    @property
    def fsspec_uri(self) -> str:
        """The name fsspec (and every streamwatch reader: inspect, the dashboard) uses: the
        absolute local path, or ``s3://bucket/key`` (s3fs)."""
        return self.key if self.bucket is None else self._uri("s3")

    def _uri(self, scheme: str) -> str:
        return f"{scheme}://{self.bucket}/{self.key}" if self.key else f"{scheme}://{self.bucket}"

    def __truediv__(self, name: str) -> Location:
        """The folder (or file) ``name`` inside this one (``a/b`` adds two levels)."""
        parts = [p for p in name.split("/") if p]
        if self.bucket is None:
            return Location(str(Path(self.key, *parts)))
        return Location(posixpath.join(self.key, *parts) if self.key else "/".join(parts), self.bucket)

    @property
    def name(self) -> str:
        """The last part of the path or key (``""`` for a bucket's root)."""
        return posixpath.basename(self.key) if self.bucket is not None else Path(self.key).name

    @property
    def parent(self) -> Location:
        """The folder holding this one (a bucket's root is its own parent)."""
        if self.bucket is None:
            return Location(str(Path(self.key).parent))
        return Location(posixpath.dirname(self.key), self.bucket)

    def __fspath__(self) -> str:
        if self.bucket is not None:
            raise TypeError(f"{self.fsspec_uri} is in an object store, not a local path")
        return self.key

    def __str__(self) -> str:
        return self.fsspec_uri
