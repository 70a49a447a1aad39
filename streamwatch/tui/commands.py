"""The ``:`` command line (k9s style): parsing and completion. Pure parsing here; the app
runs the parsed :class:`Command`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from textual.suggester import Suggester

#: command → (argument synopsis, what it does); order is the help order
COMMANDS: dict[str, tuple[str, str]] = {
    "queries": ("", "the queries view"),
    "detail": ("[QUERY]", "charts and metrics of one query"),
    "checkpoint": ("[QUERY]", "per-batch checkpoint timeline and findings"),
    "landing": ("", "landed files and their journey"),
    "events": ("", "the raw event stream"),
    "results": ("[QUERY]", "current rows of a query's table"),
    "start": ("[QUERY|all]", "start a stopped query (or every query)"),
    "stop": ("[QUERY|all]", "stop a query (or the whole pipeline)"),
    "restart": ("[QUERY|all]", "restart a query (or the whole pipeline)"),
    "land": ("[N] [SOURCE]", "land N more input files now (default 1)"),
    "trigger": ("SPEC [QUERY|all]", "restart with a new trigger: 5s, 500ms, default, availableNow, once"),
    "pause": ("", "freeze the display (events are still recorded)"),
    "resume": ("", "unfreeze the display"),
    "filter": ("[TEXT]", "filter the current view (same as /)"),
    "help": ("", "keys and commands"),
    "quit": ("", "stop the queries and exit (also :q)"),
}
ALIASES = {"q": "quit", "cp": "checkpoint", "ckpt": "checkpoint", "ev": "events", "res": "results",
           "land-more": "land", "h": "help", "query": "detail"}
TAKES_QUERY = {"detail", "checkpoint", "results", "start", "stop", "restart"}


class CommandError(ValueError):
    """A command line that cannot be run (unknown command, bad argument)."""


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command: ``name`` from :data:`COMMANDS`, ``target`` a query name, ``all`` or
    None, plus ``count``/``source`` (land), ``trigger`` (trigger) and ``text`` (filter)."""

    name: str
    target: str | None = None
    count: int = 1
    source: str | None = None
    trigger: str | None = None
    text: str = ""


def normalise_trigger(spec: str) -> str:
    """``5s``/``500 ms``/``2 seconds`` → ``processingTime=…``; ``default``, ``once``,
    ``availableNow`` and ``processingTime=…`` pass through. Raises :class:`CommandError`."""
    s = spec.strip()
    low = s.lower()
    if low in ("default", "once"):
        return low
    if low == "availablenow":
        return "availableNow"
    if low.startswith("processingtime="):
        s = s.split("=", 1)[1].strip()
    if re.fullmatch(r"\d+\s*(ms|s|m|milliseconds?|seconds?|minutes?)", s, re.I):
        m = re.fullmatch(r"(\d+)\s*([a-z]+)", s, re.I)
        assert m
        n, unit = m.group(1), m.group(2).lower()
        short = {"milliseconds": "ms", "millisecond": "ms", "seconds": "s", "second": "s",
                 "minutes": "m", "minute": "m"}.get(unit, unit)
        return f"processingTime={n}{short}"
    raise CommandError(f"bad trigger {spec!r}: use e.g. 5s, 500ms, default, availableNow, once")


def parse(line: str, queries: list[str], sources: list[str] | None = None) -> Command:
    """Parse a command line (without the leading ``:``). Query names may be given in full or
    by a unique suffix/prefix (``gold`` for ``flights_gold``). Raises :class:`CommandError`."""
    words = line.strip().split()
    if not words:
        raise CommandError("empty command")
    name = ALIASES.get(words[0].lower(), words[0].lower())
    if name not in COMMANDS:
        raise CommandError(f"unknown command {words[0]!r}; try :help")
    args = words[1:]
    if name == "filter":
        return Command(name, text=" ".join(args))
    if name == "land":
        count, source = 1, None
        for a in args:
            if a.isdigit():
                count = int(a)
            elif sources is not None and a not in sources:
                raise CommandError(f"unknown source {a!r}; known: {', '.join(sources)}")
            else:
                source = a
        if count < 1 or count > 1000:
            raise CommandError("land: N must be between 1 and 1000")
        return Command(name, count=count, source=source)
    if name == "trigger":
        if not args:
            raise CommandError("trigger: give a trigger, e.g. :trigger 5s")
        target = None
        if len(args) > 1 and (args[-1] == "all" or _match(args[-1], queries)):
            target = "all" if args[-1] == "all" else _match(args[-1], queries)
            args = args[:-1]
        return Command(name, target=target, trigger=normalise_trigger(" ".join(args)))
    if name in TAKES_QUERY:
        if len(args) > 1:
            raise CommandError(f"{name}: one query at most")
        if args:
            if args[0] == "all" and name in ("start", "stop", "restart"):
                return Command(name, target="all")
            q = _match(args[0], queries)
            if q is None:
                raise CommandError(f"unknown query {args[0]!r}; known: {', '.join(queries)}")
            return Command(name, target=q)
        return Command(name)
    if args:
        raise CommandError(f"{name} takes no arguments")
    return Command(name)


def _match(word: str, queries: list[str]) -> str | None:
    if word in queries:
        return word
    hits = [q for q in queries if q.endswith("_" + word) or q.startswith(word)]
    return hits[0] if len(hits) == 1 else None


class CommandSuggester(Suggester):
    """Completes the command word, then a query name (or ``all``) for commands that take one.
    ``queries`` is called on each suggestion so new queries complete too."""

    def __init__(self, queries: Callable[[], list[str]]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self._queries = queries

    async def get_suggestion(self, value: str) -> str | None:
        words = value.split(" ")
        if len(words) == 1:
            hits = [c for c in COMMANDS if c.startswith(words[0]) and c != words[0]]
            return hits[0] if hits and words[0] else None
        cmd = ALIASES.get(words[0], words[0])
        if cmd in TAKES_QUERY and len(words) == 2 and words[1]:
            options = list(self._queries()) + (["all"] if cmd in ("start", "stop", "restart") else [])
            hits = [o for o in options if o.startswith(words[1]) and o != words[1]]
            if hits:
                return f"{words[0]} {hits[0]}"
        return None
