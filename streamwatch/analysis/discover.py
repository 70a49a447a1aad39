"""Find the checkpoints to watch under PATH: a checkpoint itself, a folder of checkpoints
(searched recursively for folders holding ``offsets/`` and ``metadata``), or a streamwatch
workspace (``checkpoints/<pipeline>/<layer>``). Local paths or fsspec URLs; read-only.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

from streamwatch.analysis.probe import Probe, ProbeError
from streamwatch.checkpoint.sdp import sdp_flow, superseded
from streamwatch.errors import ExitCode, StreamwatchError

#: Folders never searched for checkpoints (a table's logs, a checkpoint's own insides).
SKIP = frozenset({"_spark_metadata", "_delta_log", "state", "offsets", "commits", "sources", ".git",
                  "landing", "archive", "logs"})


class DiscoveryError(StreamwatchError):
    """PATH is missing, cannot be opened, or holds no checkpoint."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class Found:
    """A checkpoint: ``url`` (what to open) and ``name`` (display name: ``<pipeline>_<layer>``
    in a workspace, ``database.table`` / ``database.table ← flow`` for a Spark Declarative
    Pipelines flow (:mod:`streamwatch.checkpoint.sdp`), else the path relative to PATH, or the
    folder's name). ``superseded``: the older generations of the same SDP flow (checkpoints a
    full refresh replaced), which are not watched."""

    url: str
    name: str
    superseded: tuple[str, ...] = ()


def _name(rel: str, url: str) -> str:
    flow = sdp_flow(url)
    if flow is not None:
        return flow.name
    parts = [p for p in rel.replace("\\", "/").split("/") if p]
    if len(parts) >= 3 and parts[-3] == "checkpoints":
        return f"{parts[-2]}_{parts[-1]}"
    if not parts:
        return url.rstrip("/").rsplit("/", 1)[-1]
    return "/".join(parts)


def discover(path: str, storage_options: dict[str, Any] | None = None) -> list[Found]:
    """Checkpoints under ``path`` (sorted by location). Raises :class:`DiscoveryError` when
    ``path`` is missing or holds none."""
    try:
        probe = Probe(path, storage_options)
    except ProbeError as e:
        raise DiscoveryError(str(e)) from None
    root = os.path.realpath(probe.root) if probe.local else probe.root  # Spark logs absolute, resolved paths
    base = path.rstrip("/")
    if probe.local:
        if not os.path.isdir(root):
            raise DiscoveryError(f"{path}: no such folder")
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            if "offsets" in dirnames and "metadata" in filenames:
                rel = os.path.relpath(dirpath, root)
                found.append(Found(dirpath, _name("" if rel == "." else rel, dirpath)))
                dirnames[:] = []
                continue
            if "_spark_metadata" in dirnames or "_delta_log" in dirnames:
                dirnames[:] = []  # a table: its data files are no checkpoints
                continue
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith("."))
    else:
        try:
            keys = probe.find(root)
        except (FileNotFoundError, OSError) as e:
            raise DiscoveryError(f"{path}: cannot list ({e})") from None
        dirs = {posixpath.dirname(k) for k in keys if posixpath.basename(k) == "metadata"}
        has_offsets = {posixpath.dirname(posixpath.dirname(k)) for k in keys
                       if posixpath.basename(posixpath.dirname(k)) == "offsets"}
        found = []
        for d in sorted(dirs & has_offsets):
            if any(part in SKIP for part in d[len(root):].split("/")):
                continue
            rel = d[len(root):].strip("/")
            found.append(Found(probe.url(d), _name(rel, d)))
        if not found and not keys:
            raise DiscoveryError(f"{base}: no such folder (or empty)")
    if not found:
        raise DiscoveryError(f"{base}: no checkpoint found (a folder with offsets/ and metadata)")
    return _newest_generations(found)


def _newest_generations(found: list[Found]) -> list[Found]:
    """``found`` without the SDP flow checkpoints a later full refresh superseded (each kept
    on its flow's newest one), sorted by location."""
    old = superseded(f.url for f in found)
    live = [f for f in found if f.url not in old]
    out = []
    for f in live:
        flow = sdp_flow(f.url)
        mine = tuple(sorted(o for o in old if flow is not None and (g := sdp_flow(o)) is not None and g.key == flow.key))
        out.append(Found(f.url, f.name, mine) if mine else f)
    return sorted(out, key=lambda f: f.url)
