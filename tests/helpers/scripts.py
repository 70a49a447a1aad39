"""The project's ``scripts/*.py`` (fixture writers, no package) loaded as modules, so tests use
the very code that wrote the committed fixtures."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` executed as a fresh module named ``name`` (each call loads it anew;
    nothing is put in ``sys.modules``). Raises ``FileNotFoundError`` when there is no such script."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
