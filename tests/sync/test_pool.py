"""The bounded pool and the throttle that picks how much work it keeps in flight."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from airflow_provider_resourcesync.sync.pool import Throttle, bounded_map


def settle(rate: Callable[[int], float], ceiling: int = 16, completions: int = 20_000) -> Counter:
    """Drive a throttle with a modelled Source: completions per second at each limit. Returns
    how many completions happened at each limit."""
    throttle, now, at = Throttle(ceiling, 0.0), 0.0, Counter()
    for _ in range(completions):
        now += 1 / rate(throttle.limit)
        at[throttle.limit] += 1
        throttle.completed(now)
    return at


def test_a_distant_source_gets_every_worker() -> None:
    # 20 ms per answer and nothing else: throughput grows with what is in flight (Little's law)
    at = settle(lambda limit: limit / 0.020)
    assert at.most_common(1)[0][0] == 16
    assert at[16] > 0.8 * sum(at.values())


def test_a_steady_source_is_probed_ever_more_rarely() -> None:
    # each probe down to 8 halves the rate while it lasts; probes that do not pay back off
    at = settle(lambda limit: limit / 0.020, completions=20_000)
    assert at[16] > 0.97 * sum(at.values())


def test_the_first_probe_goes_down_from_the_ceiling() -> None:
    # a Source that only our own work bounds is found at once, not after a hold at 16
    at = settle(lambda limit: 1000 / (1 + 0.15 * (limit - 1)), completions=2_000)
    assert at[16] < 100 and at.most_common(1)[0][0] == 1


def test_a_near_source_gets_one_at_a_time() -> None:
    # our own work bound: each thread more only adds contention
    at = settle(lambda limit: 1000 / (1 + 0.15 * (limit - 1)))
    assert at.most_common(1)[0][0] == 1
    assert at[1] > 0.7 * sum(at.values())


def test_on_a_plateau_the_higher_limit_stays() -> None:
    # 20 ms per answer, but at most 300 completions a second whatever is in flight (8 does it):
    # fewer would not be faster, and more is what a Source that slows down needs
    at = settle(lambda limit: min(limit / 0.020, 300.0))
    assert at.most_common(1)[0][0] == 16
    assert at[4] + at[2] + at[1] == 0  # never below what the plateau needs


def test_the_limit_follows_a_source_that_slows_down() -> None:
    throttle, now = Throttle(16, 0.0), 0.0
    bound_by_us = lambda limit: 1000 / (1 + 0.15 * (limit - 1))  # noqa: E731
    distant = lambda limit: limit / 0.020  # noqa: E731
    for rate, settled in ((bound_by_us, 1), (distant, 16)):
        for _ in range(5000):
            now += 1 / rate(throttle.limit)
            throttle.completed(now)
        assert throttle.limit == settled


def test_the_limit_stays_within_its_bounds() -> None:
    at = settle(lambda limit: limit / 0.020, ceiling=3)
    assert set(at) <= {1, 2, 3} and at.most_common(1)[0][0] == 3
    assert set(settle(lambda limit: 100.0, ceiling=1)) == {1}


def test_every_item_comes_back_once() -> None:
    assert sorted(bounded_map(lambda n: n * n, range(500), 8)) == [n * n for n in range(500)]


def test_never_more_calls_running_than_workers() -> None:
    running, peak, lock = 0, 0, threading.Lock()

    def work(_: int) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.001)
        with lock:
            running -= 1

    list(bounded_map(work, range(1500), 4))  # a few seconds: the limit changes on the way
    assert 1 <= peak <= 4


def test_an_exception_reaches_the_caller_and_stops_the_rest() -> None:
    calls = []

    def work(n: int) -> int:
        calls.append(n)
        if n == 3:
            raise ValueError("item 3 is bad")
        return n

    with pytest.raises(ValueError, match="item 3 is bad"):
        list(bounded_map(work, range(100_000), 4))
    assert len(calls) < 100  # the stream was not drawn to its end


def test_leaving_early_draws_no_more_items() -> None:
    drawn = []

    def items():
        for n in range(100_000):
            drawn.append(n)
            yield n

    results = bounded_map(lambda n: n, items(), 4)
    next(results)
    results.close()
    assert len(drawn) <= 2 * 4 + 1  # two per thread in flight, and the one in hand


def test_no_thread_outlives_the_map() -> None:
    """However the map ends (drawn whole, left early, or by an exception), its threads have
    ended by the time it returns."""

    def work(n: int) -> int:
        time.sleep(0.001)
        if n == 50:
            raise ValueError("item 50 is bad")
        return n

    assert sorted(bounded_map(work, range(40), 4)) == list(range(40))
    early = bounded_map(work, range(1000), 4)
    next(early)
    early.close()
    with pytest.raises(ValueError, match="item 50"):
        list(bounded_map(work, range(1000), 4))
    assert not [thread for thread in threading.enumerate()
                if thread.name.startswith("resourcesync_")]
