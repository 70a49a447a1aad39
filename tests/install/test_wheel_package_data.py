"""The wheel's package configuration (pyproject.toml ``[tool.setuptools]``) as setuptools builds
it from a clean copy of the checkout: no folder Python can import is left out of ``packages``
(setuptools' "absent from the `packages` configuration" warning), and the events pipeline's
Spark Declarative Pipelines definitions ship byte for byte — held against the files in the
checkout's ``sample_pipelines/events/sdp/`` (what ``streamwatch run events --sdp`` copies
into a project), not against the configuration itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from tests.install.test_wheel_without_spark import ROOT, SOURCES

SDP = ROOT / "sample_pipelines" / "events" / "sdp"


def test_the_build_leaves_no_importable_folder_out_and_ships_the_sdp_definitions(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / "dist"),
                            str(src)], capture_output=True, text=True, timeout=600)
    log = build.stdout + build.stderr
    assert build.returncode == 0, log[-3000:]
    assert "absent from the `packages` configuration" not in log, \
        [line for line in log.splitlines() if "absent from" in line]
    (wheel,) = (tmp_path / "dist").glob("streamwatch-*.whl")
    shipped = zipfile.ZipFile(wheel)
    files = sorted(p for p in SDP.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert {p.suffix for p in files} == {".py", ".sql"}, files  # the definitions: Python and SQL
    for p in files:
        name = "streamwatch/sample_pipelines/events/sdp/" + p.relative_to(SDP).as_posix()
        assert shipped.read(name) == p.read_bytes(), name
