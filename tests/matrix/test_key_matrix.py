"""``state --key`` on checkpoints written by every pyspark of the matrix (4.0 and later: the
versions whose facts hold Spark's own ``statestore`` rows): for every key Spark's reader
returned, the partition streamwatch computes is the ``partition_id`` Spark's reader gave it,
and the value read from that partition alone is Spark's value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamwatch.state.keys import lookup_key
from tests.matrix.test_version_matrix import STORE_CASES, _cp, _norm

#: operators `--key` answers for (joins, session windows, transformWithState: a one-line error)
KEYED = ("agg_hdfs", "agg_rocks", "agg_rocks_cl", "dedup", "pandas")
CASES = [(v, n, c, s) for v, n, c, s in STORE_CASES
         if n in KEYED and s["options"].get("storeName", "default") == "default" and "joinSide" not in s["options"]]


def test_the_matrix_gives_keys_of_more_than_one_spark():
    assert len({v for v, *_ in CASES}) >= 3 and {n for _, n, _, _ in CASES} == set(KEYED)


@pytest.mark.parametrize(("version", "name", "case", "store"), CASES,
                         ids=[f"{v}-{n}" for v, n, _, _ in CASES])
def test_each_key_is_where_spark_put_it_with_sparks_value(version, name, case, store):
    cp = str(_cp(version, case))
    operator = int(store["options"].get("operatorId", 0))
    assert store["rows"], "Spark's reader returned rows"
    for row in store["rows"]:
        got = lookup_key(cp, json.dumps(row["key"]), operator=operator)
        assert got.target.partition == row["partition_id"], (row, got.target)
        assert got.value is not None, row
        ours: dict[str, Any] = {f.name: _norm(x) for f, x in zip(got.target.value_schema.fields, got.value, strict=True)}
        assert ours == row["value"], (row, ours)
