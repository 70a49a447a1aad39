"""The RocksDB state store of one partition (and store), rebuilt at a version without a JVM.

Mirrors ``RocksDBFileManager.loadCheckpointFromDfs`` and ``RocksDB.load``/``replayChangelog``:

- ``V.zip`` (``V_<uniqueId>.zip`` with checkpoint format v2) holds the database's small files
  (``CURRENT``, ``MANIFEST-*``, ``OPTIONS-*``) and ``metadata`` (``v1`` + JSON: ``sstFiles``
  [{``localFileName``, ``dfsSstFileName``, ``sizeBytes``}], ``numKeys``,
  ``columnFamilyMapping``); the SST files themselves live once in the store's ``SSTs/`` folder
  and are shared between versions;
- with changelog checkpointing, ``V.changelog`` files (:mod:`streamwatch.state.records`)
  hold the puts, deletes and merges of each version; the store at V is the latest zip at or
  below V plus the changelogs after it.

Merges (a transformWithState list-state append) are RocksDB's ``StringAppendOperator``: the
value of a key is its operands in write order joined by the operator's delimiter, which
``spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion`` chooses — ``,`` with version 1
(Spark up to 4.1, and checkpoints they started), nothing with version 2 (checkpoints Spark 4.2+
starts). The ``OPTIONS-*`` file of a zip names it: ``{id=StringAppendOperator;delimiter=,;}``
for version 1, a bare ``StringAppendOperator`` for version 2 — which RocksDB itself would read
as the default ``,``, so the file is rewritten to name the delimiter before the database is
opened: merges stay separate operands in the SSTs until a compaction folds them, and are
resolved here as Spark's RocksDB resolves them. A changelog merge is appended the same way.

The database is rebuilt in a temporary folder (copies, never links into the checkpoint),
opened read-only with rocksdict and removed afterwards; nothing under the checkpoint is
written. Keys and values are returned as RocksDB holds them (see
:mod:`streamwatch.state.encoding` for their layout).
"""

from __future__ import annotations

import builtins
import io
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from streamwatch.checkpoint.fs import Storage
from streamwatch.state.records import StateFileError, apply_records

if TYPE_CHECKING:  # numpy only where rows are decoded
    from streamwatch.state.entries import Entries

_FILE = re.compile(r"^(\d+)(?:_([0-9A-Za-z-]+))?\.(zip|changelog)$")
MAX_ZIP_MEMBER = 1 << 31


@dataclass(frozen=True, slots=True)
class Replay:
    """What a rebuild read: ``snapshot`` (zip version, None: from an empty database),
    ``changelogs`` replayed (versions), ``bytes`` read (zip + SSTs + changelogs),
    ``num_keys`` the zip's metadata claims, ``cf_mapping`` (virtual column family name → id;
    for a store rebuilt from changelogs alone, the mapping of the first zip after it, as the
    ids Spark assigns a family never change), ``internal_cfs`` the families the metadata's
    ``columnFamilyTypeMap`` marks internal (Spark counts their keys apart from ``numKeys``),
    ``merge_delimiter`` the bytes merges were joined with (``,`` or none: module docstring)."""

    snapshot: int | None
    changelogs: tuple[int, ...]
    bytes: int
    num_keys: int | None = None
    cf_mapping: tuple[tuple[str, int], ...] = ()
    internal_cfs: tuple[str, ...] = ()
    merge_delimiter: builtins.bytes = b","  # builtins: the field ``bytes`` above shadows the type here


#: (version, ``zip``|``changelog``) → [(unique id or None, file name, size in bytes)]
Files = dict[tuple[int, str], list[tuple[str | None, str, int]]]


def list_files(storage: Storage, folder: str) -> Files:
    """(version, ``zip``|``changelog``) → [(unique id, file name, size)] in ``folder``."""
    out: Files = {}
    for it in storage.list(folder) or []:
        m = _FILE.match(it.name)
        if m and not it.is_dir:
            out.setdefault((int(m.group(1)), m.group(3)), []).append((m.group(2), it.name, it.size))
    return out


def _pick(cands: list[tuple[str | None, str, int]], uid: str | None) -> tuple[str, int] | None:
    if uid is not None:
        for u, name, size in cands:
            if u == uid:
                return name, size
        return None
    plain = [c for c in cands if c[0] is None]
    if plain or len(cands) == 1:
        u, name, size = (plain or cands)[0]
        return name, size
    return None  # several unique ids and no commit log entry to choose


def _metadata(raw: bytes, name: str) -> dict[str, Any]:
    head, _, body = raw.partition(b"\n")
    if head.strip() != b"v1":
        raise StateFileError(f"{name}: metadata version {head.strip()[:10]!r} is not v1")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise StateFileError(f"{name}: metadata is not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise StateFileError(f"{name}: metadata is not a JSON object")
    return doc


MERGE_OPERATOR_CONF = "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion"
_MERGE_LINE = re.compile(rb"^(\s*merge_operator=)(.*?)[ \t\r]*$", re.M)
_DELIMITER = re.compile(rb"delimiter=([^;}]*)")


def merge_delimiter(conf: Mapping[str, str]) -> bytes:
    """What a store's list-state merges (and Spark's list encoding) put between two values,
    from the offsets log's conf: nothing with ``mergeOperatorVersion`` 2, else ``,``."""
    return b"" if str(conf.get(MERGE_OPERATOR_CONF, "1")).strip() == "2" else b","


def _set_merge_delimiter(folder: str, wanted: bytes | None) -> bytes | None:
    """Rewrite the ``merge_operator`` of the ``OPTIONS-*`` files in the rebuilt database
    ``folder`` to name its ``StringAppendOperator``'s delimiter: ``wanted``, else the one the
    file names (a bare operator name: none). Returns that delimiter (None: no such operator)."""
    found: bytes | None = None
    for name in os.listdir(folder):
        if not name.startswith("OPTIONS-"):
            continue
        path = os.path.join(folder, name)
        with open(path, "rb") as fh:
            text = fh.read()
        m = _MERGE_LINE.search(text)
        if m is None or b"StringAppendOperator" not in m.group(2):
            continue
        named = _DELIMITER.search(m.group(2))
        delim = wanted if wanted is not None else (named.group(1) if named else b"")
        if delim not in (b"", b","):
            return delim  # not one Spark writes: left as RocksDB reads it
        line = m.group(1) + b"{id=StringAppendOperator;delimiter=" + delim + b";}"
        with open(path, "wb") as fh:
            fh.write(text[:m.start()] + line + text[m.end():])
        found = delim
    return found


def _zip_metadata(storage: Storage, folder: str, zip_name: str) -> dict[str, Any]:
    """The ``metadata`` member of a snapshot zip alone (no SSTs read). Raises
    :class:`StateFileError`."""
    try:
        data = storage.read(storage.join(folder, zip_name))
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            member = next((i for i in zf.infolist() if os.path.basename(i.filename) == "metadata"), None)
            if member is None or member.file_size > MAX_ZIP_MEMBER:
                raise StateFileError(f"{zip_name}: no metadata file inside")
            raw = zf.read(member)
    except StateFileError:
        raise
    except Exception as e:  # noqa: BLE001 - zipfile raises zlib.error, EOFError, BadZipFile…
        raise StateFileError(f"{zip_name}: not a readable zip ({type(e).__name__}: {e})") from None
    return _metadata(raw, zip_name)


def _later_metadata(storage: Storage, folder: str, files: Files, version: int) -> dict[str, Any]:
    """The metadata of the first readable zip after ``version`` ({} when none): what names the
    column family ids of a store rebuilt from changelogs alone."""
    for v in sorted(v for v, kind in files if kind == "zip" and v > version):
        for _uid, name, _size in files[(v, "zip")]:
            try:
                return _zip_metadata(storage, folder, name)
            except (StateFileError, OSError):
                continue
    return {}


@contextmanager
def rebuilt(storage: Storage, folder: str, zip_name: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """The database of snapshot ``zip_name`` (Spark's RocksDB checkpoint: the zip holds the
    ``metadata`` file and small files, ``SSTs/`` under ``folder`` the SST files it names)
    rebuilt in a temporary folder for rocksdict to open read-only: (that folder, bytes read,
    the metadata). The folder is removed on exit; nothing is written under ``folder``. Raises
    :class:`StateFileError` for a zip, metadata or SST that cannot be read (``OSError`` when the
    zip itself cannot)."""
    data = storage.read(storage.join(folder, zip_name))
    total = len(data)
    tmp = tempfile.mkdtemp(prefix="streamwatch-rocksdb-")
    try:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist():
                    base = os.path.basename(info.filename)
                    if not base or info.file_size > MAX_ZIP_MEMBER:
                        continue
                    with open(os.path.join(tmp, base), "wb") as out:
                        out.write(zf.read(info))
        except Exception as e:  # noqa: BLE001 - zipfile raises zlib.error, EOFError, BadZipFile…
            raise StateFileError(f"{zip_name}: not a readable zip ({type(e).__name__}: {e})") from None
        meta_path = os.path.join(tmp, "metadata")
        if not os.path.exists(meta_path):
            raise StateFileError(f"{zip_name}: no metadata file inside")
        with open(meta_path, "rb") as fh:
            meta = _metadata(fh.read(), zip_name)
        os.remove(meta_path)
        for sst in meta.get("sstFiles") or []:
            local, dfs = os.path.basename(str(sst.get("localFileName", ""))), str(sst.get("dfsSstFileName", ""))
            if not local or not dfs or "/" in dfs:
                raise StateFileError(f"{zip_name}: metadata names an SST file without names")
            try:
                blob = storage.read(storage.join(folder, "SSTs", dfs))
            except OSError as e:
                raise StateFileError(f"{zip_name}: SSTs/{dfs} it needs cannot be read ({e})") from None
            total += len(blob)
            with open(os.path.join(tmp, local), "wb") as out:
                out.write(blob)
        yield tmp, total, meta
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_db(storage: Storage, folder: str, zip_name: str,
             delimiter: bytes | None = None) -> tuple[dict[bytes, bytes], int, dict[str, Any], bytes | None]:
    """The rows of the database in ``zip_name`` (+ its SSTs), its merges joined by
    ``delimiter`` (None: the one its OPTIONS file names); (rows, bytes read, metadata, the
    merge delimiter used — None when the database has no merge operator)."""
    from rocksdict import AccessType, Options, Rdict

    with rebuilt(storage, folder, zip_name) as (tmp, total, meta):
        used = _set_merge_delimiter(tmp, delimiter)
        opts = Options(raw_mode=True)
        try:
            cfs = Rdict.list_cf(tmp, opts)
        except Exception as e:  # noqa: BLE001 - rocksdb's own errors are plain Exceptions
            raise StateFileError(f"{zip_name}: RocksDB cannot open the rebuilt database ({e})") from None
        rows: dict[bytes, bytes] = {}
        try:
            # column_families only when there are real ones: with an empty mapping rocksdict
            # opens the database so that iteration stops early (half a transformWithState store)
            extra = {c: opts for c in cfs if c != "default"}
            db = (Rdict(tmp, options=opts, access_type=AccessType.read_only(), column_families=extra) if extra
                  else Rdict(tmp, options=opts, access_type=AccessType.read_only()))
        except Exception as e:  # noqa: BLE001
            raise StateFileError(f"{zip_name}: RocksDB cannot open the rebuilt database ({e})") from None
        try:
            for cf in cfs:
                handle = db if cf == "default" else db.get_column_family(cf)
                prefix = b"" if cf == "default" else cf.encode() + b"\x00"
                # the raw iterator, not items(): items() stops early on some entries
                # (transformWithState's list-state values), the iterator walks them all
                it = handle.iter()
                it.seek_to_first()
                while it.valid():
                    rows[prefix + bytes(it.key())] = bytes(it.value())
                    it.next()
                del it
        finally:
            db.close()
        return rows, total, meta, used


def load(storage: Storage, folder: str, version: int, codec: str = "lz4",
         unique_ids: Mapping[int, str] | None = None,
         merge_delimiter: bytes | None = None) -> tuple[dict[bytes, bytes], Replay]:
    """Key bytes → value bytes of the RocksDB store in ``folder`` at ``version`` (see
    :func:`load_entries`, which this is with every entry a ``bytes`` pair)."""
    rows, rep = load_entries(storage, folder, version, codec, unique_ids, merge_delimiter, columnar=False)
    assert isinstance(rows, dict)
    return rows, rep


def load_entries(storage: Storage, folder: str, version: int, codec: str = "lz4",
                 unique_ids: Mapping[int, str] | None = None, merge_delimiter: bytes | None = None, *,
                 columnar: bool = True) -> tuple[Entries | dict[bytes, bytes], Replay]:
    """Key bytes → value bytes of the RocksDB store in ``folder`` at ``version`` (keys of
    non-default real column families are prefixed ``<name>\\0``), and what was read; with
    ``columnar``, a store rebuilt from changelogs alone whose records all split column-wise
    comes as :class:`~streamwatch.state.entries.Entries` (offsets into their bytes).
    ``unique_ids`` maps versions to checkpoint-v2 unique ids (from the commit log);
    ``merge_delimiter`` what merges are joined with (:func:`merge_delimiter` of the offsets
    conf; None: what the zip's OPTIONS file names, else ``,``).
    Raises :class:`StateFileError` when a file needed is missing or unreadable."""
    files = list_files(storage, folder)
    ids = unique_ids or {}
    base = _base_snapshot(storage, folder, version, files, ids, merge_delimiter)
    delimiter = b"," if base.delimiter is None else base.delimiter
    acc = None
    if columnar and not base.version:
        from streamwatch.state.entries import Replayer

        acc = Replayer(delimiter=delimiter)
    changelogs = []
    total = base.bytes_read
    for v in range(base.version + 1, version + 1):
        name, size, data = _changelog(storage, folder, files, ids, v, version)
        if acc is not None:
            acc.apply(data, codec, name, changelog=True)
        else:
            apply_records(io.BytesIO(data), codec, name, base.rows, changelog=True, delimiter=delimiter)
        changelogs.append(v)
        total += size
    out: Entries | dict[bytes, bytes] = acc.result() if acc is not None else base.rows
    meta = base.meta
    if not base.version and out:
        # changelogs alone carry keys with column family ids but not the names they stand for
        meta = _later_metadata(storage, folder, files, version)
    nk = base.meta.get("numKeys")
    mapping = meta.get("columnFamilyMapping") or {}
    types = meta.get("columnFamilyTypeMap") or {}
    cf = tuple(sorted((str(k), int(v)) for k, v in mapping.items() if isinstance(v, int)))
    internal = tuple(sorted(str(k) for k, v in types.items() if v is True))
    return out, Replay(base.version or None, tuple(changelogs), total, nk if isinstance(nk, int) else None, cf,
                       internal, delimiter)


@dataclass(slots=True)
class _Base:
    """Where a rebuild starts: the snapshot ``version`` (0: an empty database), its ``rows``,
    the ``bytes_read`` for it, its ``meta``data, and the merge ``delimiter`` (None: unknown)."""

    version: int
    rows: dict[bytes, bytes]
    bytes_read: int
    meta: dict[str, Any]
    delimiter: bytes | None


def _base_snapshot(storage: Storage, folder: str, version: int, files: Files, ids: Mapping[int, str],
                   merge_delimiter: bytes | None) -> _Base:
    """The latest zip at or below ``version`` that every changelog after it (up to
    ``version``) completes, read; an empty database when there is none."""
    for s in sorted((v for v, kind in files if kind == "zip" and v <= version), reverse=True):
        picked = _pick(files[(s, "zip")], ids.get(s))
        if picked is None:
            continue
        if all((v, "changelog") in files for v in range(s + 1, version + 1)):
            rows, total, meta, used = _read_db(storage, folder, picked[0], merge_delimiter)
            return _Base(s, rows, total, meta, used if merge_delimiter is None else merge_delimiter)
    return _Base(0, {}, 0, {}, merge_delimiter)


def _changelog(storage: Storage, folder: str, files: Files, ids: Mapping[int, str], v: int,
               version: int) -> tuple[str, int, bytes]:
    """(name, size, bytes) of the changelog of version ``v`` (rebuilding ``version``). Raises
    :class:`StateFileError` when it is missing or unreadable."""
    cands = files.get((v, "changelog"))
    picked = _pick(cands, ids.get(v)) if cands else None
    if picked is None:
        raise StateFileError(f"{folder}: no snapshot (.zip) or changelog for version {v} "
                             f"(needed to rebuild version {version})")
    name, size = picked
    try:
        return name, size, storage.read(storage.join(folder, name))
    except OSError as e:
        raise StateFileError(f"{name}: cannot read ({e})") from None
