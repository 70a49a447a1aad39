"""The command registry (k9s style ``:`` commands and the keys bound to them) with parsing
and completion. A command line parses to a typed :class:`Command` (one class a kind:
:class:`ShowTab`, :class:`QueryControl`, :class:`SetTrigger` …) whose :meth:`Command.run`
calls the :class:`Runner` method of its kind — :class:`streamwatch.tui.control.Controls`
implements them. Pure parsing here, no dispatch on command names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

from textual.binding import Binding
from textual.suggester import Suggester

from streamwatch.analysis.triggers import Trigger, TriggerError, parse_trigger
from streamwatch.backends.base import Control
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.tui.tabs import Tab


class CommandError(StreamwatchError, ValueError):
    """A command line that cannot be run (unknown command, bad argument)."""

    exit_code = ExitCode.USAGE


class Runner(Protocol):
    """What runs the parsed commands, one method a kind
    (:class:`streamwatch.tui.control.Controls`): each :class:`Command` calls its own."""

    def show_tab(self, cmd: ShowTab) -> None: ...

    def query_control(self, cmd: QueryControl) -> None: ...

    def land(self, cmd: Land) -> None: ...

    def set_trigger(self, cmd: SetTrigger) -> None: ...

    def pause(self, cmd: Pause) -> None: ...

    def filter(self, cmd: Filter) -> None: ...

    def help(self, cmd: Help) -> None: ...

    def open_state(self, cmd: OpenState) -> None: ...

    def quit(self, cmd: Quit) -> None: ...


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command; ``name`` is its registry name (what the status line calls it).
    :meth:`run` hands it to the :class:`Runner` method of its kind."""

    name: str

    def run(self, runner: Runner) -> None:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ShowTab(Command):
    """Show ``tab``; ``query`` (a query name) becomes the selected query first."""

    tab: Tab
    query: str | None = None

    def run(self, runner: Runner) -> None:
        runner.show_tab(self)


@dataclass(frozen=True, slots=True)
class QueryControl(Command):
    """Start, stop or restart ``query`` (None: the selected query) with the backend control
    ``one``, or — ``every`` (``all``) — the whole pipeline with ``pipeline``."""

    query: str | None
    every: bool
    one: Control
    pipeline: Control

    @property
    def control(self) -> Control:
        """The backend control this command needs."""
        return self.pipeline if self.every else self.one

    def run(self, runner: Runner) -> None:
        runner.query_control(self)


@dataclass(frozen=True, slots=True)
class Land(Command):
    """Land ``count`` more input files now into ``source`` (None: every landing source)."""

    count: int = 1
    source: str | None = None
    control: ClassVar[Control] = Control.LAND

    def run(self, runner: Runner) -> None:
        runner.land(self)


@dataclass(frozen=True, slots=True)
class SetTrigger(Command):
    """Restart ``query`` (None: every query; ``every`` when ``all`` was given) with
    ``trigger``."""

    trigger: Trigger
    query: str | None = None
    every: bool = False
    control: ClassVar[Control] = Control.SET_TRIGGER

    def run(self, runner: Runner) -> None:
        runner.set_trigger(self)


@dataclass(frozen=True, slots=True)
class Pause(Command):
    """Freeze the display (``paused``) or unfreeze it; no change when it already is."""

    paused: bool

    def run(self, runner: Runner) -> None:
        runner.pause(self)


@dataclass(frozen=True, slots=True)
class Filter(Command):
    """Filter the current view by ``text`` (``""``: no filter)."""

    text: str = ""

    def run(self, runner: Runner) -> None:
        runner.filter(self)


@dataclass(frozen=True, slots=True)
class Help(Command):
    """Open the ``?`` help."""

    def run(self, runner: Runner) -> None:
        runner.help(self)


@dataclass(frozen=True, slots=True)
class OpenState(Command):
    """The selected query's state at ``batch`` (None: the highlighted or last committed)."""

    batch: int | None = None

    def run(self, runner: Runner) -> None:
        runner.open_state(self)


@dataclass(frozen=True, slots=True)
class Quit(Command):
    """Stop the queries and exit."""

    def run(self, runner: Runner) -> None:
        runner.quit(self)


@dataclass(frozen=True, slots=True)
class Known:
    """The names a command line may give: the queries shown, the landing sources (None:
    any source is accepted)."""

    queries: list[str]
    sources: list[str] | None = None


#: parses one command's arguments (the words after its name) into its :class:`Command`
Parser = Callable[["CommandSpec", list[str], Known], Command]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One ``:`` command: its argument synopsis and help line; ``parse`` turns its words into
    the typed :class:`Command` that runs it; ``takes_query``: accepts a query name (``all``
    too when ``takes_all``); ``controls``: the backend controls it runs (one query, all
    queries), which the backend must support."""

    name: str
    args: str
    help: str
    parse: Parser
    takes_query: bool = False
    takes_all: bool = False
    controls: tuple[Control, ...] = ()


def _no_args(spec: CommandSpec, args: list[str]) -> None:
    if args:
        raise CommandError(f"{spec.name} takes no arguments")


def _query(spec: CommandSpec, args: list[str], known: Known) -> tuple[str | None, bool]:
    """(the query named, ``all`` given) of a command taking ``[QUERY]`` or ``[QUERY|all]``."""
    if len(args) > 1:
        raise CommandError(f"{spec.name}: one query at most")
    if not args:
        return None, False
    if args[0] == "all" and spec.takes_all:
        return None, True
    q = _match(args[0], known.queries)
    if q is None:
        raise CommandError(f"unknown query {args[0]!r}; known: {', '.join(known.queries)}")
    return q, False


def _tab(tab: Tab) -> Parser:
    def parse(spec: CommandSpec, args: list[str], known: Known) -> Command:
        if not spec.takes_query:
            _no_args(spec, args)
            return ShowTab(spec.name, tab)
        return ShowTab(spec.name, tab, _query(spec, args, known)[0])
    return parse


def _query_control(spec: CommandSpec, args: list[str], known: Known) -> Command:
    query, every = _query(spec, args, known)
    one, pipeline = spec.controls
    return QueryControl(spec.name, query, every, one, pipeline)


def _land(spec: CommandSpec, args: list[str], known: Known) -> Command:
    count, source = 1, None
    for a in args:
        if a.isdigit():
            count = int(a)
        elif known.sources is not None and a not in known.sources:
            raise CommandError(f"unknown source {a!r}; known: {', '.join(known.sources)}")
        else:
            source = a
    if count < 1 or count > 1000:
        raise CommandError("land: N must be between 1 and 1000")
    return Land(spec.name, count, source)


def _trigger(spec: CommandSpec, args: list[str], known: Known) -> Command:
    if not args:
        raise CommandError("trigger: give a trigger, e.g. :trigger 5s")
    target, every = None, False
    if len(args) > 1 and (args[-1] == "all" or _match(args[-1], known.queries)):
        target, every = _match(args[-1], known.queries), args[-1] == "all"
        args = args[:-1]
    return SetTrigger(spec.name, command_trigger(" ".join(args)), None if every else target, every)


def _state(spec: CommandSpec, args: list[str], known: Known) -> Command:
    if len(args) > 1 or (args and not args[0].isdigit()):
        raise CommandError("state: give a batch id, e.g. :state 12")
    return OpenState(spec.name, int(args[0]) if args else None)


def _bare(make: Callable[[str], Command]) -> Parser:
    """The parser of a command without arguments."""
    def parse(spec: CommandSpec, args: list[str], known: Known) -> Command:
        _no_args(spec, args)
        return make(spec.name)
    return parse


#: every ``:`` command, in help order — the one registry the command line, its completion,
#: the key bindings (:data:`KEYS`) and the ``?`` help read
REGISTRY: tuple[CommandSpec, ...] = (
    CommandSpec(Tab.QUERIES.value, "", "the queries view", _tab(Tab.QUERIES)),
    CommandSpec(Tab.DETAIL.value, "[QUERY]", "charts and metrics of one query", _tab(Tab.DETAIL), takes_query=True),
    CommandSpec(Tab.CHECKPOINT.value, "[QUERY]", "per-batch checkpoint timeline and findings", _tab(Tab.CHECKPOINT),
                takes_query=True),
    CommandSpec("state", "[BATCH]", "the selected query's state at BATCH (default: the batch highlighted in the "
                "checkpoint tab, else the last committed): first rows, per-partition sizes", _state),
    CommandSpec(Tab.LANDING.value, "", "landed files and their journey", _tab(Tab.LANDING)),
    CommandSpec(Tab.EVENTS.value, "", "the raw event stream", _tab(Tab.EVENTS)),
    CommandSpec(Tab.RESULTS.value, "[QUERY]", "current rows of a query's table", _tab(Tab.RESULTS), takes_query=True,
                controls=(Control.READ_RESULTS,)),
    CommandSpec(Tab.PIPELINE.value, "", "the pipeline drawn: layers, backlog per edge, end-to-end latency, slowest layer",
                _tab(Tab.PIPELINE)),
    CommandSpec("start", "[QUERY|all]", "start a stopped query (or every query)", _query_control, True, True,
                (Control.START_QUERY, Control.START_PIPELINE)),
    CommandSpec("stop", "[QUERY|all]", "stop a query (or the whole pipeline)", _query_control, True, True,
                (Control.STOP_QUERY, Control.STOP_PIPELINE)),
    CommandSpec("restart", "[QUERY|all]", "restart a query (or the whole pipeline)", _query_control, True, True,
                (Control.RESTART_QUERY, Control.RESTART_PIPELINE)),
    CommandSpec("land", "[N] [SOURCE]", "land N more input files now (default 1)", _land, controls=(Control.LAND,)),
    CommandSpec("trigger", "SPEC [QUERY|all]", "restart with a new trigger: 5s, 500ms, default, availableNow, once",
                _trigger, controls=(Control.SET_TRIGGER,)),
    CommandSpec("pause", "", "freeze the display (events are still recorded)", _bare(lambda n: Pause(n, True))),
    CommandSpec("resume", "", "unfreeze the display", _bare(lambda n: Pause(n, False))),
    CommandSpec("filter", "[TEXT]", "filter the current view (same as /)",
                lambda spec, args, known: Filter(spec.name, " ".join(args))),
    CommandSpec("help", "", "keys and commands", _bare(Help)),
    CommandSpec("quit", "", "stop the queries and exit (also :q)", _bare(Quit)),
)
COMMANDS: dict[str, CommandSpec] = {c.name: c for c in REGISTRY}
ALIASES = {"q": "quit", "cp": "checkpoint", "ckpt": "checkpoint", "ev": "events", "res": "results",
           "land-more": "land", "h": "help", "query": "detail",
           "pipe": "pipeline", "dag": "pipeline"}


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
    KeyHelp(" ".join(t.key for t in Tab), f"tabs: {', '.join(Tab)}",
            tuple(_run(t.key, t.value, priority=True) for t in Tab)),
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


def normalise_trigger(spec: str) -> str:
    """The canonical spec of ``spec`` (``5s`` → ``processingTime=5s``), in the one trigger
    grammar of :mod:`streamwatch.analysis.triggers`. Raises :class:`CommandError`."""
    return command_trigger(spec).spec


def command_trigger(spec: str) -> Trigger:
    """The :class:`Trigger` a ``:trigger`` argument names (parsed here, once: the object
    travels to the backend). Raises :class:`CommandError`."""
    try:
        return parse_trigger(spec)
    except TriggerError:
        raise CommandError(f"bad trigger {spec!r}: use e.g. 5s, 500ms, default, availableNow, once") from None


def parse(line: str, queries: list[str], sources: list[str] | None = None) -> Command:
    """Parse a command line (without the leading ``:``) into its typed :class:`Command`.
    Query names may be given in full or by a unique suffix/prefix (``gold`` for
    ``flights_gold``); ``sources`` (None: any) the landing sources ``:land`` accepts. Raises
    :class:`CommandError`."""
    words = line.strip().split()
    if not words:
        raise CommandError("empty command")
    name = ALIASES.get(words[0].lower(), words[0].lower())
    spec = COMMANDS.get(name)
    if spec is None:
        raise CommandError(f"unknown command {words[0]!r}; try :help")
    return spec.parse(spec, words[1:], Known(queries, sources))


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
