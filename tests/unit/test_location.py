"""A workspace is a typed location, local or an S3 prefix: one parser, one place that maps
Hadoop's ``s3a://`` to fsspec's ``s3://``, and every folder of a run derived from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.model.location import Location, LocationError
from streamwatch.pipeline import DEFAULT_WORKSPACE, Workspace, get_pipeline, plan_run, table_of_checkpoint


def test_s3a_and_s3_name_one_folder_for_spark_and_for_fsspec():
    for typed in ("s3a://bkt/ws/", "s3://bkt//ws", "S3A://bkt/ws"):
        loc = Location.parse(typed)
        assert (loc.bucket, loc.key, loc.is_local) == ("bkt", "ws", False)
        assert loc.spark_uri == "s3a://bkt/ws" and loc.fsspec_uri == "s3://bkt/ws" == str(loc)
    cp = Location.parse("s3a://bkt/ws") / "checkpoints/flights/gold"
    assert cp.spark_uri == "s3a://bkt/ws/checkpoints/flights/gold"
    assert (cp.name, cp.parent.name, cp.parent.parent.parent) == ("gold", "flights", Location("ws", "bkt"))
    root = Location.parse("s3://bkt")
    assert (root.spark_uri, (root / "a").fsspec_uri, root.parent) == ("s3a://bkt", "s3://bkt/a", root)
    with pytest.raises(TypeError, match="not a local path"):
        os.fspath(cp)


def test_local_paths_and_file_urls_are_local_folders(tmp_path):
    for typed in (str(tmp_path), f"file://{tmp_path}", tmp_path):
        loc = Location.parse(typed)
        assert loc.is_local and Path(loc) == tmp_path and loc.spark_uri == str(tmp_path.resolve())
    assert Path(Location.parse("rel/ws")) == Path.cwd() / "rel" / "ws"
    assert Path(Location.local(tmp_path) / "a/b") == tmp_path / "a" / "b"


@pytest.mark.parametrize("typed, says", [
    ("", "empty"), ("gs://bkt/ws", "unsupported scheme gs://"), ("http://127.0.0.1:9000/b", "unsupported scheme"),
    ("s3a:///ws", "no bucket"), ("s3a://", "no bucket"), ("s3a://My_Bucket/ws", "not an S3 bucket name"),
    ("s3://ab/ws", "not an S3 bucket name"), ("s3a://bkt/a/../b", "'..' are not folders"),
])
def test_a_bad_location_is_one_line_naming_what_is_wrong(typed, says):
    with pytest.raises(LocationError, match=says) as e:
        Location.parse(typed)
    assert "\n" not in str(e.value) and isinstance(e.value, ValueError)


def test_an_s3_workspace_keeps_landing_archive_and_logs_local(tmp_path):
    ws = Workspace.at("s3a://bkt/prefix")
    assert ws.local == DEFAULT_WORKSPACE.absolute()
    ws = Workspace.at("s3a://bkt/prefix", local=tmp_path)
    assert ws.landing("flights", "flights") == tmp_path / "landing" / "flights" / "flights"
    assert ws.archive("orders", "orders") == tmp_path / "archive" / "orders" / "orders"
    assert ws.logs == tmp_path / "logs"
    assert ws.checkpoint("flights", "gold").spark_uri == "s3a://bkt/prefix/checkpoints/flights/gold"
    assert ws.table("flights", "flights_weather").fsspec_uri == "s3://bkt/prefix/tables/flights/flights_weather"
    local = Workspace(tmp_path)
    assert local.local == tmp_path and Path(local.checkpoint("flights", "gold")) == tmp_path / "checkpoints/flights/gold"


def test_the_run_plan_of_an_s3_workspace_names_fsspec_urls_for_the_readers(tmp_path):
    plan = plan_run(get_pipeline("flights"), Workspace.at("s3a://bkt/ws", local=tmp_path), "availableNow")
    gold = plan.query("flights_gold")
    assert (gold.checkpoint, gold.table) == ("s3://bkt/ws/checkpoints/flights/gold", "s3://bkt/ws/tables/flights/gold")
    assert plan.query("flights_bronze").landing == (str(tmp_path / "landing" / "flights" / "flights"),)
    assert str(table_of_checkpoint("s3://bkt/ws/checkpoints/flights/enriched")) == \
        "s3://bkt/ws/tables/flights/flights_weather"
    assert table_of_checkpoint("s3://bkt/ws/checkpoints/events/gold") is None  # memory sink
    assert table_of_checkpoint("s3://bkt/elsewhere") is None and table_of_checkpoint("gs://x/y") is None


def test_s3a_settings_follow_the_endpoint_boto3_and_s3fs_use():
    from streamwatch.spark.session import s3a_settings

    assert s3a_settings({}) == {}
    conf = s3a_settings({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_DEFAULT_REGION": "us-east-1"})
    assert conf == {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
                    "spark.hadoop.fs.s3a.path.style.access": "true",
                    "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
                    "spark.hadoop.fs.s3a.endpoint.region": "us-east-1"}
    assert s3a_settings({"AWS_ENDPOINT_URL_S3": "https://minio.lan", "AWS_ENDPOINT_URL": "http://x"})[
        "spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"


@pytest.mark.parametrize("command", ["run", "log", "land"])
def test_a_bad_workspace_url_is_one_line_and_exit_2(command, tmp_path):
    from streamwatch.cli import main

    args = [command, "flights"] if command == "land" else [command]
    res = CliRunner().invoke(main, [*args, "--workspace", "gs://bkt/ws"])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--workspace gs://bkt/ws: unsupported scheme gs://" in lines[0], lines


@pytest.mark.parametrize("command", ["run", "log"])
def test_help_shows_an_s3a_workspace_example(command):
    from streamwatch.cli import main

    out = CliRunner().invoke(main, [command, "--help"]).stdout
    assert f"streamwatch {command} --workspace s3a://" in out


def test_an_s3a_workspace_without_hadoop_aws_is_one_line_and_exit_3(tmp_path, monkeypatch):
    from streamwatch.cli import main

    monkeypatch.setenv("STREAMWATCH_JARS", str(tmp_path / "no-jars"))
    res = CliRunner().invoke(main, ["log", "--workspace", "s3a://bkt/ws", "--out", str(tmp_path / "e.jsonl")])
    assert res.exit_code == 3, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "s3a://bkt/ws" in lines[0] and "streamwatch jars --set s3" in lines[0], lines


def test_a_workspace_that_is_a_file_is_one_line_and_exit_2(tmp_path):
    from streamwatch.cli import main

    f = tmp_path / "ws.txt"
    f.write_text("")
    res = CliRunner().invoke(main, ["log", "--workspace", str(f)])
    assert res.exit_code == 2 and res.stderr.strip() == f"streamwatch log: --workspace {f}: is a file, not a folder"
