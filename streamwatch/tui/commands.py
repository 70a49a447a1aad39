"""The command registry (k9s style ``:`` commands and the keys bound to them) with parsing
and completion. Pure parsing here; :mod:`streamwatch.tui.control` runs the parsed
:class:`Command`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from textual.binding import Binding
from textual.suggester import Suggester

from streamwatch.analysis.triggers import TriggerError, parse_trigger
from streamwatch.backends.base import Control
from streamwatch.errors import ExitCode, StreamwatchError


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One ``:`` command: its argument synopsis and help line; ``takes_query``: accepts a
    query name (``all`` too when ``takes_all``); ``controls``: the backend controls it runs
    (one query, all queries), which the backend must support."""

    name: str
    args: str
    help: str
    takes_query: bool = False
    takes_all: bool = False
    controls: tuple[Control, ...] = ()


#: every ``:`` command, in help order — the one registry the command line, its completion,
#: the key bindings (:data:`KEYS`) and the ``?`` help read
REGISTRY: tuple[CommandSpec, ...] = (
    CommandSpec("queries", "", "the queries view"),
    CommandSpec("detail", "[QUERY]", "charts and metrics of one query", takes_query=True),
    CommandSpec("checkpoint", "[QUERY]", "per-batch checkpoint timeline and findings", takes_query=True),
    CommandSpec("state", "[BATCH]", "the selected query's state at BATCH (default: the batch highlighted in the "
                "checkpoint tab, else the last committed): first rows, per-partition sizes"),
    CommandSpec("landing", "", "landed files and their journey"),
    CommandSpec("events", "", "the raw event stream"),
    CommandSpec("results", "[QUERY]", "current rows of a query's table", takes_query=True,
                controls=(Control.READ_RESULTS,)),
    CommandSpec("pipeline", "", "the pipeline drawn: layers, backlog per edge, end-to-end latency, slowest layer"),
    CommandSpec("start", "[QUERY|all]", "start a stopped query (or every query)", True, True,
                (Control.START_QUERY, Control.START_PIPELINE)),
    CommandSpec("stop", "[QUERY|all]", "stop a query (or the whole pipeline)", True, True,
                (Control.STOP_QUERY, Control.STOP_PIPELINE)),
    CommandSpec("restart", "[QUERY|all]", "restart a query (or the whole pipeline)", True, True,
                (Control.RESTART_QUERY, Control.RESTART_PIPELINE)),
    CommandSpec("land", "[N] [SOURCE]", "land N more input files now (default 1)", controls=(Control.LAND,)),
    CommandSpec("trigger", "SPEC [QUERY|all]", "restart with a new trigger: 5s, 500ms, default, availableNow, once",
                controls=(Control.SET_TRIGGER,)),
    CommandSpec("pause", "", "freeze the display (events are still recorded)"),
    CommandSpec("resume", "", "unfreeze the display"),
    CommandSpec("filter", "[TEXT]", "filter the current view (same as /)"),
    CommandSpec("help", "", "keys and commands"),
    CommandSpec("quit", "", "stop the queries and exit (also :q)"),
)
COMMANDS: dict[str, CommandSpec] = {c.name: c for c in REGISTRY}
ALIASES = {"q": "quit", "cp": "checkpoint", "ckpt": "checkpoint", "ev": "events", "res": "results",
           "land-more": "land", "h": "help", "query": "detail",
           "pipe": "pipeline", "dag": "pipeline"}
TABS = ("queries", "detail", "checkpoint", "landing", "events", "results", "pipeline")


@dataclass(frozen=True, slots=True)
class KeyHelp:
    """One line of the ``?`` help: the keys as shown, what they do, and the app bindings
    behind them (none for keys a widget handles itself)."""

    keys: str
    help: str
    bindings: tuple[Binding, ...] = ()


def _run(key: str, line: str, footer: str = "", display: str | None = None, priority: bool = False) -> Binding:
    """A key that runs the command ``line`` (shown in the footer as ``footer``)."""
    return Binding(key, f"run({line!r})", footer or line, show=bool(footer), key_display=display, priority=priority)


#: every key, in help order. ``:``, ``/`` and ``t`` open the command line: priority bindings,
#: run the moment the key is read, so keys typed right after them already reach the line. The
#: tab keys are priority bindings too, so ``5/`` typed fast switches the tab before ``/`` opens
#: its filter (a normal binding runs only after the focused table has seen the key).
KEYS: tuple[KeyHelp, ...] = (
    KeyHelp("1 2 3 4 5 6 7", "tabs: queries, detail, checkpoint, landing, events, results, pipeline",
            tuple(_run(str(i + 1), t, priority=True) for i, t in enumerate(TABS))),
    KeyHelp("enter", "open the selected query's detail / open a checkpoint batch"),
    KeyHelp("v", "the state of the highlighted checkpoint batch (rows, partition sizes)", (_run("v", "state"),)),
    KeyHelp("↑ ↓ pgup pgdn", "move within a table"),
    KeyHelp("tab", "move focus"),
    KeyHelp(":", "command line (tab completes)", (Binding("colon", "command", "Cmd", key_display=":", priority=True),)),
    KeyHelp("/", "filter the current view (esc clears)",
            (Binding("slash", "filter", "Filter", key_display="/", priority=True),)),
    KeyHelp("esc", "close the command line, clear the filter, back to queries",
            (Binding("escape", "escape", "Back", show=False, key_display="esc"),)),
    KeyHelp("s", "start the selected query", (_run("s", "start"),)),
    KeyHelp("x", "stop the selected query", (_run("x", "stop", "Stop"),)),
    KeyHelp("r", "restart the selected query", (_run("r", "restart", "Restart"),)),
    KeyHelp("S", "start every query of the pipeline", (_run("S", "start all"),)),
    KeyHelp("X", "stop the pipeline (every query)", (_run("X", "stop all"),)),
    KeyHelp("R", "restart the pipeline", (_run("R", "restart all"),)),
    KeyHelp("l", "land one more input file now", (_run("l", "land", "Land"),)),
    KeyHelp("t", "change the trigger (opens :trigger)", (Binding("t", "trigger", "Trigger", show=False, priority=True),)),
    KeyHelp("p", "pause / resume the display (events are still recorded)", (Binding("p", "pause", "Pause"),)),
    KeyHelp("?", "this help", (_run("question_mark", "help", "Help", "?"),)),
    KeyHelp("q", "stop the queries cleanly, then quit", (Binding("q", "quit", "Quit"),)),
)
#: the footer's keys, in footer order
FOOTER = ("q", "question_mark", "colon", "slash", "p", "x", "r", "l")
#: the app's bindings: the footer's first (in :data:`FOOTER` order), then the rest
BINDINGS: list[Binding] = sorted((b for k in KEYS for b in k.bindings),
                                 key=lambda b: FOOTER.index(b.key) if b.key in FOOTER else len(FOOTER))
#: actions that open the command line (see :data:`KEYS`)
LINE_OPENERS = ("command", "filter", "trigger")


class CommandError(StreamwatchError, ValueError):
    """A command line that cannot be run (unknown command, bad argument)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command: ``name`` from :data:`COMMANDS`, ``target`` a query name, ``all`` or
    None, plus ``count``/``source`` (land), ``trigger`` (trigger), ``text`` (filter) and
    ``batch`` (state)."""

    name: str
    target: str | None = None
    count: int = 1
    source: str | None = None
    trigger: str | None = None
    text: str = ""
    batch: int | None = None


def normalise_trigger(spec: str) -> str:
    """The canonical spec of ``spec`` (``5s`` → ``processingTime=5s``), in the one trigger
    grammar of :mod:`streamwatch.analysis.triggers`. Raises :class:`CommandError`."""
    try:
        return parse_trigger(spec).spec
    except TriggerError:
        raise CommandError(f"bad trigger {spec!r}: use e.g. 5s, 500ms, default, availableNow, once") from None


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
    if name == "state":
        if len(args) > 1 or (args and not args[0].isdigit()):
            raise CommandError("state: give a batch id, e.g. :state 12")
        return Command(name, batch=int(args[0]) if args else None)
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
    if COMMANDS[name].takes_query:
        if len(args) > 1:
            raise CommandError(f"{name}: one query at most")
        if args:
            if args[0] == "all" and COMMANDS[name].takes_all:
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


def candidates(value: str, queries: list[str]) -> list[str]:
    """Every completion of the command line ``value`` (a whole line each, in order): the
    commands starting with its only word, or — for a command that takes a query — the
    queries (and ``all``) starting with its second word. Empty when nothing completes."""
    words = value.split(" ")
    if len(words) == 1:
        return [c for c in COMMANDS if c.startswith(words[0])] if words[0] else []
    spec = COMMANDS.get(ALIASES.get(words[0], words[0]))
    if spec is None or not spec.takes_query or len(words) != 2:
        return []
    options = list(dict.fromkeys(list(queries) + (["all"] if spec.takes_all else [])))
    return [f"{words[0]} {o}" for o in options if o.startswith(words[1])]


def common_prefix(lines: list[str]) -> str:
    """The longest prefix every one of ``lines`` starts with (``""`` for none)."""
    if not lines:
        return ""
    first, last = min(lines), max(lines)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def complete(value: str, queries: list[str]) -> tuple[str, list[str]]:
    """What tab makes of ``value``, as a shell does: (the line, the candidates). One
    candidate: it (the command line adds a space after it); several: their longest common
    prefix (``fl`` → ``flights_`` among six ``flights_*`` queries), which may be ``value``
    itself (the command line then lists them); none: ``value`` unchanged."""
    hits = candidates(value, queries)
    if not hits:
        return value, []
    prefix = common_prefix(hits)
    return (prefix if len(prefix) > len(value) else value), hits


class CommandSuggester(Suggester):
    """The greyed-out completion: what tab would make of the line (see :func:`complete`) —
    the one command or query that fits, or the longest prefix the fitting ones share.
    ``queries`` is called on each suggestion so new queries complete too; nothing is
    suggested while ``active()`` says False (the line filters a view instead)."""

    def __init__(self, queries: Callable[[], list[str]], active: Callable[[], bool] = lambda: True) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self._queries = queries
        self._active = active

    async def get_suggestion(self, value: str) -> str | None:
        if not self._active():
            return None
        line, _ = complete(value, list(self._queries()))
        return line if line != value else None
