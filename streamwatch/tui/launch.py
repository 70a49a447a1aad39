"""Run the dashboard on a backend from a command (blocking until the user quits)."""

from __future__ import annotations

import sys
from typing import Any

from streamwatch.backends.base import Backend


def run_dashboard(backend: Backend, **app_options: Any) -> None:
    """Run :class:`~streamwatch.tui.app.StreamwatchApp` on ``backend`` in this terminal;
    the backend is stopped however the app ends. Exits the process with the app's return code
    when it is non-zero."""
    from streamwatch.tui.app import StreamwatchApp

    app = StreamwatchApp(backend, **app_options)
    try:
        app.run()
    finally:
        backend.stop()
    if app.return_code:
        sys.exit(app.return_code)
