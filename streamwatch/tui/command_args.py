"""What a ``:`` command line parses to and how its arguments are parsed: one typed
:class:`Command` a kind (:class:`ShowTab`, :class:`QueryControl`, :class:`SetTrigger`, :class:`Advise` …) whose
:meth:`Command.run` calls the :class:`Runner` method of its kind —
:class:`streamwatch.tui.control.Controls` implements them — and the parser of each kind's
arguments, which a :class:`CommandSpec` of the registry (:mod:`streamwatch.tui.commands`)
names. Pure parsing here, no dispatch on command names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

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

    def advise(self, cmd: Advise) -> None: ...

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
class Advise(Command):
    """Tuning advice for ``query`` (None: the selected query), measured on its checkpoint
    with the trigger the backend started it with, shown in the detail tab."""

    query: str | None = None

    def run(self, runner: Runner) -> None:
        runner.advise(self)


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


def args_tab(tab: Tab) -> Parser:
    """The parser of a tab's command: no argument, or ``[QUERY]`` when the spec takes a query."""
    def parse(spec: CommandSpec, args: list[str], known: Known) -> Command:
        if not spec.takes_query:
            _no_args(spec, args)
            return ShowTab(spec.name, tab)
        return ShowTab(spec.name, tab, _query(spec, args, known)[0])
    return parse


def args_query_control(spec: CommandSpec, args: list[str], known: Known) -> Command:
    """``start|stop|restart [QUERY|all]``: the spec's two controls, one query's and the pipeline's."""
    query, every = _query(spec, args, known)
    one, pipeline = spec.controls
    return QueryControl(spec.name, query, every, one, pipeline)


def args_land(spec: CommandSpec, args: list[str], known: Known) -> Command:
    """``land [N] [SOURCE]``: N files (1–1000, default 1) into a known source (None: every one)."""
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


def args_trigger(spec: CommandSpec, args: list[str], known: Known) -> Command:
    """``trigger SPEC [QUERY|all]``: the trigger parsed once (:func:`command_trigger`)."""
    if not args:
        raise CommandError("trigger: give a trigger, e.g. :trigger 5s")
    target, every = None, False
    if len(args) > 1 and (args[-1] == "all" or _match(args[-1], known.queries)):
        target, every = _match(args[-1], known.queries), args[-1] == "all"
        args = args[:-1]
    return SetTrigger(spec.name, command_trigger(" ".join(args)), None if every else target, every)


def args_state(spec: CommandSpec, args: list[str], known: Known) -> Command:
    """``state [BATCH]``: a batch id (None: the highlighted or last committed batch)."""
    if len(args) > 1 or (args and not args[0].isdigit()):
        raise CommandError("state: give a batch id, e.g. :state 12")
    return OpenState(spec.name, int(args[0]) if args else None)


def args_advise(spec: CommandSpec, args: list[str], known: Known) -> Command:
    """``advise [QUERY]``: a known query (None: the selected one)."""
    return Advise(spec.name, _query(spec, args, known)[0])


def args_filter(spec: CommandSpec, args: list[str], known: Known) -> Command:
    """``:filter [TEXT]``: the words are the filter text (none: no filter)."""
    return Filter(spec.name, " ".join(args))


def bare(make: Callable[[str], Command]) -> Parser:
    """The parser of a command without arguments."""
    def parse(spec: CommandSpec, args: list[str], known: Known) -> Command:
        _no_args(spec, args)
        return make(spec.name)
    return parse


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


def _match(word: str, queries: list[str]) -> str | None:
    if word in queries:
        return word
    hits = [q for q in queries if q.endswith("_" + word) or q.startswith(word)]
    return hits[0] if len(hits) == 1 else None
