"""Several searches in flight on one device, each resumed in turn (``decode.in_flight``).

Why: a beam-search step is the device's work (the decoder step and the top candidates) followed
by the host's (Python bookkeeping that picks the next step's rows from those candidates). With
one search at a time the two alternate, and each waits for the other: at paper scale, beam 12 ×
batch 30 on an H100, a step was 2.29 ms of GPU work and then about 1.1 ms on the host
(benchmarks/RESULTS.md, G5). Moving the choice of rows onto the device would restructure the
search; running two searches at once needs only a pause in it. Each search is a generator that
yields after launching a step and before reading it (:func:`nmtlib.decode.beam.beam_search_steps`),
so while the device computes one search's step, the host does another's bookkeeping.

Every search runs the same operations on the same shapes as alone; only the order of the
device's work changes. On a CPU the device is the host, so there is nothing to overlap: one in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nmtlib.decode.beam import Search

T = TypeVar("T")


@dataclass
class _InFlight(Generic[T]):
    task: T
    lane: int
    search: Search[Any]
    seconds: float  #: wall time of this task's own resumes so far


def interleave(tasks: Iterable[T], start: Callable[[T, int], Search[Any]], in_flight: int = 1,
               ) -> Iterator[tuple[T, Any, float]]:
    """Run ``start(task, lane)`` for each task, at most ``in_flight`` at once, resuming the live
    ones round-robin until each returns; yield ``(task, result, seconds)`` as each finishes.

    ``lane`` (0 … in_flight − 1) is unique among the searches in flight at the same time.
    ``seconds`` is the wall time spent in this task's own resumes (its start included): the
    tasks' seconds add up to the time of the whole loop, so each task carries its share. With
    ``in_flight`` 1 that is the task's wall time."""
    if in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, got {in_flight}")
    queue = iter(tasks)
    live: list[_InFlight[T]] = []
    free = list(range(in_flight - 1, -1, -1))  # lanes, lowest first out
    while True:
        while free and (task := next(queue, _END)) is not _END:
            t0 = time.perf_counter()
            lane = free.pop()
            live.append(_InFlight(task, lane, start(task, lane), time.perf_counter() - t0))
        if not live:
            return
        for entry in list(live):
            t0 = time.perf_counter()
            try:
                next(entry.search)
            except StopIteration as stop:
                live.remove(entry)
                free.append(entry.lane)
                yield entry.task, stop.value, entry.seconds + time.perf_counter() - t0
            else:
                entry.seconds += time.perf_counter() - t0


_END: Any = object()  # the end of the task queue
