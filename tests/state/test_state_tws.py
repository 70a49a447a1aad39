"""Oracle for transformWithState state variables and Avro-encoded state: every state
variable (value, list with a TTL, map) and the registered timers of a
``transformWithStateInPandas`` query, decoded without a JVM, equal row for row what
``spark.read.format("statestore").option("stateVarName", …)`` (and
``readRegisteredTimers``) returns — in both state encodings (``unsaferow`` and ``avro``)."""

from __future__ import annotations

import contextlib
import json
from functools import partial

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.state import StateReadError, read_state
from tests.state.test_state_oracle import norm

pytestmark = pytest.mark.spark

VARIABLES = ("count", "seen", "text", "timers")


def spark_rows(spark, cp, var, batch):
    r = spark.read.format("statestore").option("batchId", batch)
    r = r.option("readRegisteredTimers", "true") if var == "timers" else r.option("stateVarName", var)
    out = []
    for row in r.load(str(cp)).collect():
        flat = []
        for name in row.__fields__:
            if name == "partition_id":
                continue
            x = row[name]
            if hasattr(x, "asDict"):
                flat.extend(norm(v) for v in x)
            else:
                flat.append(norm(x))
        out.append((*flat, row["partition_id"]))
    return sorted(out, key=repr)


def our_rows(guard, cp, var, batch):
    with guard.around(cp):
        (t,) = read_state(str(cp), var=var, batch=batch)
    assert not t.findings, t.findings
    assert t.variable == var and t.total_rows == len(t.rows)
    return t, sorted((tuple(norm(x) for x in r) for r in t.rows), key=repr)


@pytest.mark.parametrize("name,encoding", [("tws", "unsaferow"), ("tws_avro", "avro")])
def test_state_variables_match_the_statestore_source(spark, state_cps, unchanged, name, encoding):
    cp = state_cps[name]
    batches = sorted(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    assert len(batches) == 3, batches  # no no-data batches: the comparison stays quick
    seen = {}
    for b in batches:
        for var in VARIABLES:
            t, ours = our_rows(unchanged, cp, var, b)
            assert t.encoding == encoding
            assert ours == spark_rows(spark, cp, var, b), f"{name} {var} batch {b}"
            seen[var] = len(ours)
    # 4 keys; the list and map hold one entry per input row (4 batches of 4 rows → 12 after 3)
    assert seen == {"count": 4, "seen": 12, "text": 12, "timers": 12}, seen
    (t,) = read_state(str(cp), var="seen")
    assert [c.name for c in t.columns] == ["key.key", "list_element.value", "list_element.ttlExpirationMs", "partition_id"]
    assert all(r[2] > 1_700_000_000_000 for r in t.rows), "TTL expiry is epoch ms"
    names = [tb.variable for tb in read_state(str(cp))]
    assert names == ["count", "seen", "text", "timers"] or sorted(names) == sorted(VARIABLES), names


def test_cli_shows_one_state_variable(state_cps, unchanged):
    cp = unchanged(state_cps["tws_avro"])
    r = CliRunner().invoke(main, ["state", str(cp), "--var", "text", "--json", "--limit", "0"])
    assert r.exit_code == 0, r.output
    (t,) = json.loads(r.stdout)["tables"]
    assert t["variable"] == "text" and t["encoding"] == "avro" and t["total_rows"] == 12
    assert [c["name"] for c in t["columns"]] == ["key.key", "user_map_key.v", "user_map_value.d", "partition_id"]
    r = CliRunner().invoke(main, ["state", str(cp), "--var", "seen"])
    assert r.exit_code == 0, r.output
    assert "variable seen" in r.stdout and "2026-01-01 00:00:" in r.stdout  # ts and TTL as UTC text
    r = CliRunner().invoke(main, ["state", str(cp), "--var", "nope"])
    assert r.exit_code == 4 and len(r.stderr.strip().splitlines()) == 1 and "no state variable 'nope'" in r.stderr
    assert "count" in r.stderr and "timers" in r.stderr


def test_var_on_an_operator_without_state_variables_is_one_line(state_cps):
    with pytest.raises(StateReadError, match="transformWithState operators only"):
        read_state(str(state_cps["agg_hdfs"]), var="count")
    r = CliRunner().invoke(main, ["state", str(state_cps["agg_hdfs"]), "--var", "count"])
    assert r.exit_code == 4 and "Traceback" not in r.output and len(r.stderr.strip().splitlines()) == 1


def test_layout_decoders_turn_any_bytes_into_rows_or_row_errors(state_cps):
    """Random bytes through every key/value decoder of the transformWithState schema (both
    encodings): a row, a :class:`RowError` or ``struct.error`` (both become a
    ``state-row-undecodable`` finding in the reader), never another exception."""
    import struct as _struct

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from streamwatch.state.schema import parse_schema_file
    from streamwatch.state.tws import key_decoder, split_values, value_decoder
    from streamwatch.state.unsaferow import RowError

    schema_file = sorted((state_cps["tws_avro"] / "state" / "0" / "_stateSchema" / "default").iterdir())[-1]
    cfs = parse_schema_file(schema_file.read_bytes())
    assert {c.encoder for c in cfs} == {"noPrefix", "prefixScan", "rangeScan"}
    decoders = [(key_decoder(c, avro), value_decoder(c, avro)) for c in cfs for avro in (False, True)]

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(data=st.binary(max_size=80))
    def case(data):
        for kdec, vdec in decoders:
            for call in (partial(kdec, data), partial(vdec, data, 0, len(data)), partial(split_values, data)):
                with contextlib.suppress(RowError, _struct.error):
                    call()
    case()
