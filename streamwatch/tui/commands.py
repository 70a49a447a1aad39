"""The command registry (k9s style ``:`` commands and the keys bound to them) with parsing
and completion. A command line parses to a typed :class:`~streamwatch.tui.command_args.Command`
(the kinds and their argument parsers: :mod:`streamwatch.tui.command_args`) whose ``run``
calls the :class:`~streamwatch.tui.command_args.Runner` method of its kind. No dispatch on
command names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.binding import Binding
from textual.suggester import Suggester

from streamwatch.backends.base import Control
from streamwatch.tui.command_args import (
    Command,
    CommandError,
    CommandSpec,
    Help,
    Known,
    Pause,
    Quit,
    args_advise,
    args_filter,
    args_land,
    args_query_control,
    args_state,
    args_tab,
    args_trigger,
    bare,
    normalise_trigger,
)
from streamwatch.tui.tabs import Tab

#: what other modules import from here (the parsed commands' names live in command_args)
__all__ = ["ALIASES", "BINDINGS", "COMMANDS", "FOOTER", "KEYS", "LINE_OPENERS", "REGISTRY", "Command",
           "CommandError", "CommandSuggester", "KeyHelp", "candidates", "common_prefix", "complete",
           "normalise_trigger", "parse"]


#: every ``:`` command, in help order — the one registry the command line, its completion,
#: the key bindings (:data:`KEYS`) and the ``?`` help read
REGISTRY: tuple[CommandSpec, ...] = (
    CommandSpec(Tab.QUERIES.value, "", "the queries view", args_tab(Tab.QUERIES)),
    CommandSpec(Tab.DETAIL.value, "[QUERY]", "charts and metrics of one query", args_tab(Tab.DETAIL), takes_query=True),
    CommandSpec(Tab.CHECKPOINT.value, "[QUERY]", "per-batch checkpoint timeline and findings", args_tab(Tab.CHECKPOINT),
                takes_query=True),
    CommandSpec("state", "[BATCH]", "the selected query's state at BATCH (default: the batch highlighted in the "
                "checkpoint tab, else the last committed): first rows, per-partition sizes", args_state),
    CommandSpec(Tab.LANDING.value, "", "landed files and their journey", args_tab(Tab.LANDING)),
    CommandSpec(Tab.EVENTS.value, "", "the raw event stream", args_tab(Tab.EVENTS)),
    CommandSpec(Tab.RESULTS.value, "[QUERY]", "current rows of a query's table", args_tab(Tab.RESULTS), takes_query=True,
                controls=(Control.READ_RESULTS,)),
    CommandSpec(Tab.PIPELINE.value, "", "the pipeline drawn: layers, backlog per edge, end-to-end latency, slowest layer",
                args_tab(Tab.PIPELINE)),
    CommandSpec("start", "[QUERY|all]", "start a stopped query (or every query)", args_query_control, True, True,
                (Control.START_QUERY, Control.START_PIPELINE)),
    CommandSpec("stop", "[QUERY|all]", "stop a query (or the whole pipeline)", args_query_control, True, True,
                (Control.STOP_QUERY, Control.STOP_PIPELINE)),
    CommandSpec("restart", "[QUERY|all]", "restart a query (or the whole pipeline)", args_query_control, True, True,
                (Control.RESTART_QUERY, Control.RESTART_PIPELINE)),
    CommandSpec("land", "[N] [SOURCE]", "land N more input files now (default 1)", args_land, controls=(Control.LAND,)),
    CommandSpec("trigger", "SPEC [QUERY|all]", "restart with a new trigger: 5s, 500ms, default, availableNow, once",
                args_trigger, controls=(Control.SET_TRIGGER,)),
    CommandSpec("pause", "", "freeze the display (events are still recorded)", bare(lambda n: Pause(n, True))),
    CommandSpec("resume", "", "unfreeze the display", bare(lambda n: Pause(n, False))),
    CommandSpec("advise", "[QUERY]", "tuning advice for a query (default: the selected one), measured on its "
                "checkpoint with the trigger it runs with: shown in the detail tab", args_advise, takes_query=True),
    CommandSpec("filter", "[TEXT]", "filter the current view (same as /)", args_filter),
    CommandSpec("help", "", "keys and commands", bare(Help)),
    CommandSpec("quit", "", "stop the queries and exit (also :q)", bare(Quit)),
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
