"""How ``streamwatch state`` writes state rows: the ``--json`` document (schema
``streamwatch.state/1``) and ``--csv`` streamed as rows are decoded, and the rich tables of
the default output. Values are written as :mod:`streamwatch.state.display` formats them."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from itertools import islice
from typing import IO, TYPE_CHECKING, Any

from streamwatch.state.display import jsonable, text

if TYPE_CHECKING:
    from streamwatch.state.model import StateTable
    from streamwatch.state.scan import StateStream


def _leaf(col: str) -> str:
    return col.rsplit(".", 1)[-1]


def _json_default(v: object) -> str:
    """What orjson does not write itself, as :func:`~streamwatch.state.display.jsonable` writes it."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


#: between two rows in one orjson call: a raw NUL, which orjson never writes (it escapes every
#: control character in a string), so the rows' boundaries are found without parsing
_ROW_MARK = b"\x00"
_ROW_SEP = b",\n      "


def rows_json(leaves: list[str], has_map: bool) -> Callable[[list[tuple[Any, ...]]], bytes]:
    """Rows as their JSON arrays, one a line (``,\\n`` and the indent between): orjson writes
    UTC datetimes (``…Z``), naive ones and dates as :func:`~streamwatch.state.display.jsonable`
    does, a batch of rows in one call; only a table with a map column (keys of any type,
    written as ``str(key)``) goes value by value through ``jsonable``."""
    import orjson

    if has_map:
        def each(rows: list[tuple[Any, ...]]) -> bytes:
            return _ROW_SEP.join(orjson.dumps([jsonable(v, n) for n, v in zip(leaves, r, strict=True)]) for r in rows)
        return each
    mark = orjson.Fragment(_ROW_MARK)
    cut = len(b"," + _ROW_MARK + b"]")

    def batch(rows: list[tuple[Any, ...]]) -> bytes:
        doc = orjson.dumps([x for r in rows for x in (r, mark)], default=_json_default, option=orjson.OPT_UTC_Z)
        return doc[1:-cut].replace(b"," + _ROW_MARK + b",", _ROW_SEP)
    return batch


def write_json_stream(out: IO[bytes], checkpoint: str, streams: Sequence[StateStream]) -> None:
    """The ``--json`` document (schema ``streamwatch.state/1``: per table its operator, store,
    variable, provider, encoding, batch, version, columns, ``rows``, ``total_rows``,
    ``partitions``, ``findings``) of :class:`~streamwatch.state.scan.StateStream` tables,
    written to the binary stream ``out`` as rows are decoded (one row a line): the totals,
    partitions and findings after ``rows`` are known once every row is read."""
    import orjson

    out.write(b'{\n  "schema": "streamwatch.state/1",\n  "checkpoint": ' + orjson.dumps(checkpoint) + b',\n  "tables": [')
    for i, t in enumerate(streams):
        names = [c.name for c in t.columns]
        leaves = [_leaf(n) for n in names]
        head = {"operator": t.operator_id, "operator_name": t.operator_name, "store": t.store, "variable": t.variable,
                "provider": t.provider, "encoding": t.encoding, "batch_id": t.batch_id, "version": t.version,
                "columns": [{"name": c.name, "type": c.type} for c in t.columns]}
        out.write((b",\n    " if i else b"\n    ") + orjson.dumps(head)[:-1] + b',\n    "rows": [')
        sep = b"\n      "
        rows = iter(t.rows)
        dump = rows_json(leaves, any("map<" in c.type for c in t.columns))
        while batch := list(islice(rows, 4096)):
            out.write(sep + dump(batch))
            sep = b",\n      "
        st = t.stats
        tail = {"total_rows": st.total,
                "partitions": [{"partition": p.partition, "store": p.store, "rows": p.rows, "file_bytes": p.file_bytes,
                                "snapshot": p.snapshot, "replayed": list(p.replayed), "error": p.error} for p in st.sizes],
                "findings": [{"severity": f.severity, "code": f.code, "message": f.message, "path": f.path}
                             for f in st.findings]}
        out.write(b"\n    ],\n    " + orjson.dumps(tail)[1:])
    out.write(b"\n  ]\n}\n")
    out.flush()


def write_csv_stream(t: StateStream) -> None:
    """One :class:`~streamwatch.state.scan.StateStream` as CSV on stdout, rows written as they
    are decoded (header: column names; values as display text)."""
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow([c.name for c in t.columns])
    names = [_leaf(c.name) for c in t.columns]
    for r in t.rows:
        w.writerow([text(v, n) for n, v in zip(names, r, strict=True)])
    sys.stdout.flush()


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def print_tables(tables: Sequence[StateTable]) -> None:
    from rich.console import Console
    from rich.table import Table

    # a pipe or file gets whole rows (no terminal width to respect)
    out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 250)
    for t in tables:
        shown = len(t.rows)
        where = f"variable {t.variable}" if t.variable else f"store {t.store}"
        title = (f"operator {t.operator_id} ({t.operator_name or 'unknown'}) · {where} · {t.provider} · {t.encoding} · "
                 f"batch {t.batch_id} (version {t.version}) · {t.total_rows} rows"
                 + (f" (first {shown})" if shown < t.total_rows else ""))
        table = Table(title=title, title_justify="left")
        for c in t.columns:
            table.add_column(f"{c.name}\n{c.type}", no_wrap=True,
                             justify="right" if c.type in ("bigint", "int", "double", "float", "smallint", "tinyint") else "left")
        names = [_leaf(c.name) for c in t.columns]
        for r in t.rows:
            table.add_row(*(text(v, n) for n, v in zip(names, r, strict=True)))
        out.print(table)
        sizes = "  ".join(f"p{p.partition}: {p.rows} rows, {_human_bytes(p.file_bytes)}"
                          + (f" (snapshot {p.snapshot} + {len(p.replayed)} replayed)" if p.snapshot else f" ({len(p.replayed)} replayed)")
                          for p in t.partitions if not p.error)
        out.print(f"partitions: {sizes or 'none readable'}", highlight=False)
