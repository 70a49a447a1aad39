"""``streamwatch state CP --key JSON`` (one key's value) and ``--key JSON --from-batch A
--to-batch B`` (its changes per batch): the output of :mod:`streamwatch.state.keys`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from streamwatch.errors import ExitCode, Unreadable
from streamwatch.state.display import jsonable, text

if TYPE_CHECKING:
    from rich.console import Console

    from streamwatch.state.keys import KeyHistory, KeyLookup, KeyTarget


def _target_doc(t: KeyTarget) -> dict[str, Any]:
    doc = {"operator": t.operator_id, "operator_name": t.operator_name, "store": t.store, "provider": t.provider,
           "key": {f.name: jsonable(v, f.name) for f, v in zip(t.schema.fields, t.values, strict=True)},
           "partition": t.partition, "num_partitions": t.num_partitions,
           "value_columns": [{"name": f.name, "type": f.type.simple()} for f in t.value_schema.fields]}
    if t.prefix_cols:
        doc["entry_key_columns"] = [{"name": f.name, "type": f.type.simple()} for f in t.entry_key.fields]
    return doc


def _sub_doc(t: KeyTarget, sub: tuple[Any, ...] | None) -> dict[str, Any] | None:
    return None if sub is None else {f.name: jsonable(v, f.name) for f, v in zip(t.entry_key.fields, sub, strict=True)}


def _sub_text(t: KeyTarget, sub: tuple[Any, ...] | None) -> str:
    return "" if sub is None else ", ".join(f"{f.name}={text(v, f.name)}" for f, v in zip(t.entry_key.fields, sub, strict=True))


def _value_doc(t: KeyTarget, value: tuple[Any, ...] | None) -> list[Any] | None:
    return None if value is None else [jsonable(v, f.name) for f, v in zip(t.value_schema.fields, value, strict=True)]


def _value_text(t: KeyTarget, value: tuple[Any, ...] | None) -> str:
    if value is None:
        return "–"
    return ", ".join(f"{f.name}={text(v, f.name)}" for f, v in zip(t.value_schema.fields, value, strict=True))


def _key_text(t: KeyTarget) -> str:
    return ", ".join(f"{f.name}={text(v, f.name)}" for f, v in zip(t.schema.fields, t.values, strict=True))


def _watermark_text(ms: int | None) -> str:
    if ms is None:
        return "–"
    return text(ms, "expirationMs") if ms > 0 else "0 (none yet)"


def _emit(doc: dict[str, Any]) -> None:
    import orjson

    sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def _print_history(out: Console, checkpoint: str, h: KeyHistory, as_json: bool) -> None:
    t = h.target
    if as_json:
        _emit({"schema": "streamwatch.state-key-history/1", "checkpoint": checkpoint, **_target_doc(t),
               "from_batch": h.from_batch, "to_batch": h.to_batch, "source": h.source,
               "changes": [{"batch_id": c.batch_id, "version": c.version, "change_type": c.change_type,
                            "value": _value_doc(t, c.value), "watermark_ms": c.watermark_ms}
                           | ({"entry_key": _sub_doc(t, c.sub_key)} if t.prefix_cols else {}) for c in h.changes]})
        return
    from rich.table import Table

    table = Table(title=f"operator {t.operator_id} ({t.operator_name or 'unknown'}) · {t.provider} · key "
                        f"{_key_text(t)} · partition {t.partition} of {t.num_partitions} · batches "
                        f"{h.from_batch}–{h.to_batch} ({h.source})", title_justify="left")
    cols = ("batch", "change") + (("entry",) if t.prefix_cols else ()) + ("value", "watermark")
    for col in cols:
        table.add_column(col, no_wrap=True, justify="right" if col == "batch" else "left")
    for c in h.changes:
        entry = (_sub_text(t, c.sub_key),) if t.prefix_cols else ()
        table.add_row(str(c.batch_id), c.change_type, *entry, _value_text(t, c.value), _watermark_text(c.watermark_ms))
    out.print(table)
    if not h.changes:
        out.print("no change of this key in these batches", highlight=False)


def _print_lookup(out: Console, checkpoint: str, res: KeyLookup, as_json: bool) -> None:
    t = res.target
    if as_json:
        _emit({"schema": "streamwatch.state-key/1", "checkpoint": checkpoint, **_target_doc(t),
               "batch_id": res.batch_id, "version": res.version, "found": res.found,
               "value": _value_doc(t, res.value), "files": list(res.files), "file_bytes": res.bytes}
              | ({"entries": [{"entry_key": _sub_doc(t, e.sub_key), "value": _value_doc(t, e.value)}
                              for e in res.entries]} if t.prefix_cols else {}))
        return
    out.print(f"operator {t.operator_id} ({t.operator_name or 'unknown'}) · {t.provider} · batch {res.batch_id} "
              f"(version {res.version}) · partition {t.partition} of {t.num_partitions}", highlight=False)
    out.print(f"key:   {_key_text(t)}", highlight=False)
    for ent in res.entries:
        out.print(f"entry: {_sub_text(t, ent.sub_key)} · {_value_text(t, ent.value)}", highlight=False)
    if not res.found:
        out.print("value: not in the store", highlight=False)
    elif not t.prefix_cols:
        out.print(f"value: {_value_text(t, res.value)}", highlight=False)


def run_key(checkpoint: str, key: str, operator: int | None, batch: int | None, from_batch: int | None,
            to_batch: int | None, as_json: bool) -> int:
    """Print one key's value (or, with ``from_batch``/``to_batch``, its history; a session
    window's key: every session stored under it); the exit status: 0 found / changes listed,
    1 the key is not in the store (or never changed in the range), 2 a key that does not fit
    the key schema, 4 unreadable."""
    from rich.console import Console

    from streamwatch.state import StateReadError
    from streamwatch.state.keyjson import KeyUsageError
    from streamwatch.state.keys import key_history, lookup_key

    history = from_batch is not None or to_batch is not None
    try:
        if history:
            h = key_history(checkpoint, key, from_batch or 0, to_batch, operator=operator)
        else:
            res = lookup_key(checkpoint, key, operator=operator, batch=batch)
    except (KeyUsageError, StateReadError):
        raise  # exit 2 / 4, one line, from the command group's handler
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's checkpoint
        raise Unreadable(f"{checkpoint}: unreadable ({type(e).__name__}: {e})") from None
    out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 250)
    if history:
        _print_history(out, checkpoint, h, as_json)
        return ExitCode.OK if h.changes else ExitCode.WARNINGS
    _print_lookup(out, checkpoint, res, as_json)
    return ExitCode.OK if res.found else ExitCode.WARNINGS
