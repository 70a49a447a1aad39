"""Golden `--json` documents of recover and compat's rules on the shared corpus (no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import read_checkpoint
from streamwatch.checkpoint.fs import open_storage
from streamwatch.checkpoint.ops.compat_rules import NewOperator, NewQuery, NewSource, check, read_schema_file
from streamwatch.cli import main
from streamwatch.cli.compat_cmd import render
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["checkpoint-test-offsetId-commitId-inconsistent", "checkpoint-version-4.0.0/hdfs/join2"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_recover_plan_golden(corpus, unchanged, name, fmt):
    cp = unchanged(corpus / "spark" / name)
    r = CliRunner().invoke(main, ["recover", str(cp), "--plan"] + (["--json"] if fmt == "json" else []))
    assert r.exit_code in (1, 3), r.output
    assert_golden({GOLDEN / "recover" / f"{name.replace('/', '-')}.{fmt}": r.stdout.replace(str(cp), "<PATH>")})


@pytest.mark.corpus
def test_recover_apply_to_leaves_the_original_alone(corpus, unchanged, tmp_path):
    cp = unchanged(corpus / "spark" / "checkpoint-test-offsetId-commitId-inconsistent")
    r = CliRunner().invoke(main, ["recover", str(cp), "--apply-to", str(tmp_path / "fixed")])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "fixed" / "offsets" / "4").exists() and (cp / "offsets" / "4").exists()
    again = CliRunner().invoke(main, ["recover", str(tmp_path / "fixed"), "--json"])
    assert "previous-offsets-missing" not in json.loads(again.stdout)["blocking_findings"]


@pytest.mark.corpus
def test_compat_rules_golden(corpus, unchanged):
    path = unchanged(corpus / "spark" / "checkpoint-version-4.0.0" / "hdfs" / "join2")
    cp = read_checkpoint(path)
    storage, _ = open_storage(str(path))
    new = NewQuery(
        sources=(NewSource("rate"), NewSource("rate"), NewSource("rate")),
        operators=(NewOperator("symmetricHashJoin"),),
        sink_format="memory",
        sink_path=None,
        output_mode="append",
        query_name="q",
        conf={"spark.sql.shuffle.partitions": "7"},
    )
    doc = check(cp, storage, new)
    assert doc["verdict"] == "incompatible"
    assert_golden({
        GOLDEN / "compat" / "join2-three-sources.json":
            orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode().replace(str(path), "<PATH>") + "\n",
        GOLDEN / "compat" / "join2-three-sources.text": render(doc).replace(str(path), "<PATH>") + "\n",
    })


def test_state_schema_file_v2_is_read():
    key = b'{"type":"struct","fields":[{"name":"w","type":{"type":"struct","fields":[{"name":"start","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":false,"metadata":{}}]}'
    val = b'{"type":"struct","fields":[{"name":"count","type":"long","nullable":false,"metadata":{}}]}'
    data = b"\x00\x02v2" + b"\x00\x00\x00\x01" + len(key).to_bytes(2, "big") + key + b"\x00\x00\x00\x01" + len(val).to_bytes(2, "big") + val
    docs = read_schema_file(data)
    assert [d["fields"][0]["name"] for d in docs] == ["w", "count"]
