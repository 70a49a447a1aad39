"""Whether two paths name the same folder: the one comparison every checkpoint operation makes
(a query's sink path against the checkpoint's sink, a file source's folder against the files
its log lists, a finding's file against a checkpoint root).

The same folder reaches streamwatch under many names: relative (``./ws/tables/gold``, as typed)
or absolute, with or without a trailing ``/``, as a Hadoop URI (``file:/…``, ``file:///…``,
percent-encoded: Spark writes its logs' paths with ``Path.toUri``) or a plain path, as
``s3a://`` (Hadoop) or ``s3://`` (fsspec). :func:`place` gives each one name, built on
:class:`~streamwatch.model.location.Location` (which already treats ``s3a``/``s3`` as one
place): local paths absolute with symlinks resolved (as Spark records them), object-store
prefixes as ``s3a://bucket/key``. Pure: no I/O beyond resolving local symlinks.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote

from streamwatch.model.location import Location, LocationError

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$", re.S)


def place(path: str | os.PathLike[str] | None) -> str | None:
    """The one name of the folder or file ``path`` names, for comparing (never for showing):
    a local path absolute, normalised and with symlinks resolved (relative paths are taken
    from the current directory, as the CLI's user meant them); ``file:/x``, ``file:///x`` and
    ``file://localhost/x`` as the local ``/x``; ``s3://`` and ``s3a://`` as ``s3a://bucket/key``;
    any other ``scheme://authority/path`` with its scheme lower-cased, ``//`` collapsed and no
    trailing ``/``. URIs are percent-decoded (Spark writes ``%20`` for a space); a plain path
    is taken as typed. None for None or an empty text."""
    if path is None:
        return None
    text = os.fspath(path).strip()
    if not text:
        return None
    m = _URI.match(text)
    # a one-letter "scheme" is a Windows drive (C:\…), not a URI
    if m is None or len(m.group(1)) == 1:
        return Location.local(text).spark_uri
    scheme, rest = m.group(1).lower(), unquote(m.group(2))
    if scheme == "file":
        if rest.startswith("//"):  # file://authority/path: only the local host is local
            authority, _, rest = rest[2:].partition("/")
            if authority not in ("", "localhost"):
                return f"file://{authority}/{_clean(rest)}"
            rest = "/" + rest
        return Location.local(rest or "/").spark_uri
    if not rest.startswith("//"):
        return f"{scheme}:{rest}"  # not a path at all (e.g. memory:…): compared as written
    try:
        return Location.parse(f"{scheme}:{rest}").spark_uri
    except LocationError:  # hdfs://, abfss://, gs://…: no Location for them, text only
        authority, _, key = rest[2:].partition("/")
        return f"{scheme}://{authority.lower()}/{_clean(key)}".rstrip("/")


def _clean(key: str) -> str:
    """A key or path without empty parts, ``.`` or a trailing ``/`` (``..`` resolved)."""
    norm = posixpath.normpath("/" + key).lstrip("/")
    return "" if norm == "." else norm


def same_place(a: str | os.PathLike[str] | None, b: str | os.PathLike[str] | None) -> bool:
    """Whether ``a`` and ``b`` name the same folder or file (see :func:`place`); False when
    either is None."""
    pa, pb = place(a), place(b)
    return pa is not None and pa == pb


def inside(path: str | os.PathLike[str] | None, folder: str | os.PathLike[str] | None) -> bool:
    """Whether ``path`` is ``folder`` itself or lies anywhere below it (see :func:`place`)."""
    return _inside(place(path), place(folder))


def _inside(p: str | None, f: str | None) -> bool:
    if p is None or f is None:
        return False
    return p == f or p.startswith(f.rstrip("/") + "/")


def relative_to(path: str | os.PathLike[str] | None, folder: str | os.PathLike[str] | None) -> str | None:
    """``path`` relative to ``folder`` (``/``-separated, ``"."`` for the folder itself), or None
    when it does not lie inside it."""
    p, f = place(path), place(folder)
    if p is None or f is None or not _inside(p, f):
        return None
    return "." if p == f else p[len(f.rstrip("/")) + 1 :]


__all__ = ["inside", "place", "relative_to", "same_place"]
