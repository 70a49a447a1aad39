"""The events pipeline as a Spark Declarative Pipelines project (``spark-pipelines run``):
:func:`write_project` puts the spec and the definitions in ``sdp/transformations/`` into a
folder, with the storage and landing paths that folder needs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

#: The definitions shipped with the package (Python streaming tables, a SQL materialized view).
TRANSFORMATIONS = Path(__file__).with_name("sdp") / "transformations"
#: The spec's configuration key the definitions read the landing folder from.
LANDING_CONF = "streamwatch.events.landing"


def write_project(dest: Path, landing: Path) -> Path:
    """Write ``dest/spark-pipeline.yml`` and ``dest/transformations/`` for the events pipeline
    reading JSON lines from ``landing``; its storage (the flows' checkpoints) is
    ``dest/pipeline-storage``. Returns the spec's path. Raises ``FileExistsError`` when
    ``dest`` holds a spec already (a project is never overwritten)."""
    dest = dest.absolute()
    spec = dest / "spark-pipeline.yml"
    if spec.exists():
        raise FileExistsError(f"{spec} exists")
    (dest / "pipeline-storage").mkdir(parents=True, exist_ok=True)
    shutil.copytree(TRANSFORMATIONS, dest / "transformations", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    # JSON strings are YAML strings: any path, no quoting rules of its own
    spec.write_text(
        f"name: events\nstorage: {json.dumps((dest / 'pipeline-storage').as_uri())}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n"
        f"configuration:\n  {LANDING_CONF}: {json.dumps(str(landing.absolute()))}\n")
    return spec
