"""Spark Declarative Pipelines spec checks (``streamwatch.checkpoint.sdp_spec``, ``streamwatch
pipelines --check-spec``) held against Spark and pyspark themselves: every listed static conf is
refused by ``spark.conf.set`` with ``CANNOT_MODIFY_STATIC_CONFIG``; the storage rule agrees with
the server's own ``PipelineUpdateContextImpl.validateStorageRoot``; the glob rule and the files a
glob registers agree with pyspark's ``validate_patch_glob_pattern``/``register_definitions``
(pyspark/pipelines/cli.py) on the same folder; a spec pyspark's ``load_pipeline_spec`` refuses
is one we report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamwatch.checkpoint.sdp_spec import (
    STATIC_CONFS,
    ProblemKind,
    SpecUnreadable,
    check_spec,
    glob_refused,
    library_files,
    read_spec,
    storage_problem,
)

SW = str(Path(sys.executable).parent / "streamwatch")


def _project(tmp_path: Path, spec: str) -> Path:
    (tmp_path / "transformations" / "sub").mkdir(parents=True)
    (tmp_path / "transformations" / "a.py").write_text("x = 1\n")
    (tmp_path / "transformations" / "sub" / "b.sql").write_text("CREATE MATERIALIZED VIEW v AS SELECT 1\n")
    (tmp_path / "transformations" / "__pycache__").mkdir()
    (tmp_path / "transformations" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "README.md").write_text("hi\n")
    path = tmp_path / "spark-pipeline.yml"
    path.write_text(spec)
    return path


CLEAN = """name: p
storage: file:///tmp/sw-sdp-storage
libraries:
  - glob:
      include: transformations/**
"""


@pytest.mark.spark
@pytest.mark.parametrize("key", sorted(STATIC_CONFS))
def test_each_listed_static_conf_is_refused_by_spark(spark, key):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as e:
        spark.conf.set(key, "x")
    assert e.value.getCondition() == "CANNOT_MODIFY_STATIC_CONFIG", e.value


@pytest.mark.spark
def test_a_runtime_conf_is_not_listed_and_spark_accepts_it(spark):
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    spark.conf.set(key, before)  # no error: the control for the test above
    assert key not in STATIC_CONFS


ROOTS = ["file:///tmp/x", "file:/tmp/x", "s3a://bucket/prefix", "hdfs://nn:9000/p", "relative/path", "./rel",
         "/tmp/x", "pipelines", "file:x"]


@pytest.mark.spark
@pytest.mark.parametrize("root", ROOTS)
def test_storage_rule_agrees_with_the_servers_validate_storage_root(spark, root):
    validate = spark._jvm.org.apache.spark.sql.pipelines.graph.PipelineUpdateContextImpl.validateStorageRoot
    try:
        validate(root)
        spark_accepts = True
    except Exception:  # noqa: BLE001 - py4j wraps PIPELINE_STORAGE_ROOT_INVALID / URISyntaxException
        spark_accepts = False
    assert (storage_problem(root) is None) == spark_accepts, root


GLOBS = ["transformations/**", "transformations/a.py", "transformations/**/*.py", "*.py", "transformations/*",
         "trans*/**", "README.md", "nothing/**", "transformations/sub/b.sql"]


@pytest.mark.parametrize("pattern", GLOBS)
def test_glob_rule_and_files_agree_with_pysparks_cli(tmp_path, pattern):
    pytest.importorskip("yaml")
    from pyspark.errors import PySparkException
    from pyspark.pipelines.cli import validate_patch_glob_pattern

    _project(tmp_path, CLEAN)
    try:
        expr = validate_patch_glob_pattern(pattern)
    except PySparkException as e:
        assert e.getCondition() == "PIPELINE_SPEC_INVALID_GLOB_PATTERN"
        assert glob_refused(pattern)
        return
    assert not glob_refused(pattern)
    # register_definitions' own selection, on the same folder
    theirs = sorted(p for p in tmp_path.resolve().glob(expr) if p.is_file() and "__pycache__" not in p.parts)
    assert library_files(tmp_path.resolve(), pattern) == theirs


def test_a_clean_spec_has_only_the_rerun_catalog_warning_and_none_with_hive_defaults(tmp_path):
    spec = read_spec(_project(tmp_path, CLEAN))
    assert spec.name == "p" and spec.libraries == ("transformations/**",)
    assert [p.kind for p in check_spec(spec)] == [ProblemKind.CATALOG_RERUN]
    assert check_spec(spec, {"spark.sql.catalogImplementation": "hive"}) == []


BAD = """name: p
storage: rel/storage
colour: blue
configuration:
  spark.sql.extensions: io.delta.sql.DeltaSparkSessionExtension
  spark.sql.shuffle.partitions: 2
libraries:
  - glob:
      include: transformations/**/*.py
  - glob:
      include: nothing/**
  - glob:
      include: README.md
"""


def test_each_problem_of_a_bad_spec_is_one_line(tmp_path):
    problems = check_spec(read_spec(_project(tmp_path, BAD)), {"spark.sql.catalogImplementation": "hive"})
    kinds = [p.kind for p in problems]
    assert kinds == [ProblemKind.FIELD, ProblemKind.STATIC_CONF, ProblemKind.FIELD, ProblemKind.STORAGE_NOT_URI,
                     ProblemKind.GLOB_REFUSED, ProblemKind.GLOB_NO_MATCH, ProblemKind.FILE_REFUSED]
    assert "spark.sql.extensions" in problems[1].line() and "CANNOT_MODIFY_STATIC_CONFIG" in problems[1].line()
    assert all("\n" not in p.line() for p in problems)


def test_pysparks_loader_refuses_what_we_report_as_field_problems(tmp_path):
    pytest.importorskip("yaml")
    from pyspark.errors import PySparkException
    from pyspark.pipelines.cli import load_pipeline_spec

    for text, condition in (("storage: file:///x\n", "PIPELINE_SPEC_MISSING_REQUIRED_FIELD"),
                            ("name: p\n", "PIPELINE_SPEC_MISSING_REQUIRED_FIELD"),
                            ("name: p\nstorage: file:///x\ncolour: 1\n", "PIPELINE_SPEC_UNEXPECTED_FIELD"),
                            ("name: p\nstorage: file:///x\nlibraries:\n  - glob:\n      include: '*.py'\n",
                             "PIPELINE_SPEC_INVALID_GLOB_PATTERN")):
        path = tmp_path / "spark-pipeline.yml"
        path.write_text(text)
        with pytest.raises(PySparkException) as e:
            load_pipeline_spec(path)
        assert e.value.getCondition() == condition
        errors = [p for p in check_spec(read_spec(path)) if p.severity.value == "error"]
        assert errors, text


def test_unreadable_specs_raise(tmp_path):
    with pytest.raises(SpecUnreadable):
        read_spec(tmp_path / "missing.yml")
    (tmp_path / "broken.yml").write_text("a: [\n")
    with pytest.raises(SpecUnreadable):
        read_spec(tmp_path / "broken.yml")
    (tmp_path / "list.yml").write_text("- a\n")
    with pytest.raises(SpecUnreadable):
        read_spec(tmp_path / "list.yml")


def test_json_spec_reads_the_same(tmp_path):
    import json

    _project(tmp_path, CLEAN)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"name": "p", "storage": "file:///tmp/s",
                                "libraries": [{"glob": {"include": "transformations/**"}}]}))
    assert [p.kind for p in check_spec(read_spec(path))] == [ProblemKind.CATALOG_RERUN]


def _sw(*args: str, cwd: Path, env_conf: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "SPARK_CONF_DIR": str(env_conf)}
    return subprocess.run([SW, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_cli_exit_codes_and_one_line_per_problem(tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("# comment\nspark.sql.catalogImplementation  hive\n")
    good = _project(tmp_path / "good", CLEAN)
    r = _sw("pipelines", "--check-spec", str(good), cwd=tmp_path, env_conf=conf)
    assert (r.returncode, r.stdout) == (0, f"{good}: no problems\n"), r.stderr
    bad = _project(tmp_path / "bad", BAD)
    r = _sw("pipelines", "--check-spec", str(bad), cwd=tmp_path, env_conf=conf)
    assert r.returncode == 1
    assert len(r.stdout.splitlines()) == 7 and all(line.startswith(f"{bad}: ") for line in r.stdout.splitlines())
    (conf / "spark-defaults.conf").write_text("")
    r = _sw("pipelines", "--check-spec", str(good), cwd=tmp_path, env_conf=conf)
    assert r.returncode == 1 and "SDP_CATALOG_RERUN" in r.stdout
    r = _sw("pipelines", "--check-spec", str(tmp_path / "missing.yml"), cwd=tmp_path, env_conf=conf)
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "missing.yml" in r.stderr
    r = _sw("pipelines", "--check-spec", str(good), "--json", cwd=tmp_path, env_conf=conf)
    assert r.returncode == 2
