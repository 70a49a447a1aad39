"""Alternated rounds and their median and min, for the benchmarks that time two or more ways of
doing one job on the same machine in the same run (``advise_bench``, ``advise_files_bench``,
``state_key_bench``).

Why alternate: on a shared machine the first arm of a round runs on a colder JVM, page cache
and CPU frequency than the next; reversing the order every other round spreads that over both.
Why median and min: the median is the typical run, the min the run least disturbed by other
processes; a ratio is given for each.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

A = TypeVar("A", bound=Hashable)
R = TypeVar("R")


def arm_order(arms: Sequence[A], round_index: int) -> Sequence[A]:
    """The arms in round ``round_index``'s order (0-based): as given on even rounds, reversed
    on odd ones."""
    return arms if round_index % 2 == 0 else arms[::-1]


def alternate(arms: Sequence[A], rounds: int, run: Callable[[A, int], R]) -> dict[A, list[R]]:
    """Calls ``run(arm, round_index)`` once per arm a round for ``rounds`` rounds, in
    :func:`arm_order`, printing ``round i/n done`` after each round. Returns arm → its results,
    round by round (the arms' order as given)."""
    results: dict[A, list[R]] = {arm: [] for arm in arms}
    for r in range(rounds):
        for arm in arm_order(arms, r):
            results[arm].append(run(arm, r))
        print(f"  round {r + 1}/{rounds} done", flush=True)
    return results


@dataclass(frozen=True)
class Spread:
    """The median and the min of one measure over the rounds (its unit: the caller's)."""

    median: float
    min: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        """Raises ``statistics.StatisticsError`` (or ``ValueError``) on no values."""
        xs = list(values)
        return cls(statistics.median(xs), min(xs))


def ratio(slow: Iterable[float], fast: Iterable[float]) -> Spread:
    """``slow`` ÷ ``fast``: of their medians, and of their mins (a plain number, no unit)."""
    s, f = Spread.of(slow), Spread.of(fast)
    return Spread(s.median / f.median, s.min / f.min)


def print_ratio(label: str, slow: Iterable[float], fast: Iterable[float], digits: int = 1) -> None:
    """Prints ``  ratio <label>: <median>× (median), <min>× (min)`` with ``digits`` decimals."""
    r = ratio(slow, fast)
    print(f"  ratio {label}: {r.median:.{digits}f}× (median), {r.min:.{digits}f}× (min)")
