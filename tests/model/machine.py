"""The model: a collection (name -> bytes) changed step by step, a Source that runs after each
change (quietly, killed at a write and made again, compacting, on a clock gone back), and
followers that join at any step by each route the Source offers. After every step, every
follower's next run leaves it holding what the Source's documents describe, and the documents
list each change once (:mod:`.audit`).

The defects it found are each a plain test in tests/model/test_found.py.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from airflow_provider_resourcesync.client.policy import ClientPolicy
from airflow_provider_resourcesync.client.sync_client import ResourceSyncClient
from airflow_provider_resourcesync.storage.local import LocalDestination
from airflow_provider_resourcesync.sync.baseline import run_baseline
from airflow_provider_resourcesync.sync.checkpoint import Checkpoint
from airflow_provider_resourcesync.sync.incremental import run_incremental
from tests.sync.conftest import held

from .audit import Audit
from .killing import KillAt
from .sources import Mirror, Route, Source

#: The names a collection may hold: the first twenty at the start (so a change or two stays
#: under a tenth, and more pass it), and names that need percent-encoding.
NAMES = (*(f"docs/{n:02d}.txt" for n in range(20)), *(f"new/{n}.txt" for n in range(6)),
         "a b/é.txt", "a b/ü ß.txt")
INITIAL = NAMES[:20]
FOLLOWERS = 3


def changes(least: int, most: int) -> st.SearchStrategy[list[tuple[int, bool]]]:
    """Changes to distinct names: each a name, and whether to delete it if it is there (else
    update it; create it if not)."""
    return st.lists(st.tuples(st.integers(0, len(NAMES) - 1), st.booleans()),
                    min_size=least, max_size=most, unique_by=lambda change: change[0])


#: A run's changes, under a tenth of the collection (it holds 20 names or more)...
few_changes = changes(1, 2)
#: ... and past a tenth of the collection (it holds 28 names at most).
many_changes = changes(3, 8)
#: The write a run is killed at, if it is.
kills = st.none() | st.integers(1, 50)


def bounded(examples: int, steps: int) -> settings:
    """Hypothesis's settings for a model run of ``examples`` sequences of ``steps`` steps at
    most: no deadline (a step runs a Source and its followers), and no example database (the
    run costs the same each time; a failing sequence is printed whole)."""
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                    database=None, suppress_health_check=[HealthCheck.too_slow])


def reader(*urls: str) -> ResourceSyncClient:
    """A follower's client, allowed to reach ``urls``, with fast retries."""
    return ResourceSyncClient(ClientPolicy(allow_private=True, backoff=0.01, max_backoff=1),
                              source_urls=urls)


@dataclass
class World:
    """What one example runs on: the Source, a follower's client (a new one each step: moto
    answers a conditional GET 304 by its date alone, to the second, and a document rewritten
    within that second would look unchanged to a client that cached it), a folder for
    followers, and what stops them."""

    source: Source
    client: Callable[[], ResourceSyncClient]
    folder: Path
    close: Callable[[], None]


@dataclass
class Follower:
    route: Route
    destination: LocalDestination
    checkpoint: Checkpoint


class WriterModel(RuleBasedStateMachine):
    """Subclassed with :attr:`world`, which builds a Source holding the initial collection."""

    world: ClassVar[Callable[[dict[str, bytes]], World]]

    def __init__(self) -> None:
        super().__init__()
        self.versions = itertools.count()
        self.collection = {name: self._body(name) for name in INITIAL}
        self.made = type(self).world(dict(self.collection))
        self.source = self.made.source
        self.audit = Audit(self.source.store, self.source.docs)
        self.published = dict(self.collection)  # what the Source's documents describe
        self.expected: defaultdict[str, list[str]] = defaultdict(list)
        self.followers: list[Follower] = []
        self.last: datetime | None = None  # the latest time a run was given
        self.changed: datetime | None = None  # the time given to the last run that changed
        self.pending = False  # the collection changed past what the documents describe

    # -- the Source --------------------------------------------------------------------------

    @initialize(kill=kills)
    def first_run(self, kill: int | None = None) -> None:
        self.run(self.tick(), kill)

    @rule(changed=few_changes, kill=kills)
    def change(self, changed: list[tuple[int, bool]], kill: int | None) -> None:
        self.apply(changed)
        self.run(self.tick(), kill)

    @rule(kill=kills)
    def quiet(self, kill: int | None) -> None:
        self.run(self.tick(), kill)

    @rule(changed=many_changes, kill=kills)
    def compact(self, changed: list[tuple[int, bool]], kill: int | None) -> None:
        self.apply(changed)
        self.run(self.tick(), kill)

    @precondition(lambda self: isinstance(self.source, Mirror))
    @rule(changed=changes(0, 2), kill=kills)
    def rebaseline(self, changed: list[tuple[int, bool]], kill: int | None) -> None:
        """The mirror baselines again (removing what the Source no longer lists): a compaction,
        its changes in its Change List too."""
        self.apply(changed)
        self.run(self.tick(), kill, rebaseline=True)

    @rule(changed=few_changes, kill=kills)
    def clock_back(self, changed: list[tuple[int, bool]], kill: int | None) -> None:
        """A run on a clock an hour behind the last run's, changes dated then (a publisher's
        inventory that old publishes nothing: its changes wait for the next run)."""
        assert self.last is not None
        when = self.last - timedelta(hours=1)
        self.apply(changed, when)
        self.run(when, kill)

    # -- followers ---------------------------------------------------------------------------

    @precondition(lambda self: not self.pending and len(self.followers) < FOLLOWERS)
    @rule(route=st.integers(0, 3))
    def join(self, route: int) -> None:
        """A follower baselines from the route's listing (not while the collection is ahead of
        the documents: the baseline would rightly refuse the bytes they do not describe)."""
        how = self.source.routes[route % len(self.source.routes)]
        destination = LocalDestination(self.made.folder / f"follower-{len(self.followers)}")
        with self.made.client() as client:
            checkpoint = run_baseline(client, destination, method=how[0],
                                      capability_list_url=self.source.capability_list)
        self.followers.append(Follower(how, destination, checkpoint))

    @invariant()
    def followers_hold_the_collection(self) -> None:
        view = self.view()
        with self.made.client() as client:
            for follower in self.followers:
                follower.checkpoint = run_incremental(
                    client, follower.destination, checkpoint=follower.checkpoint,
                    capability_list_url=self.source.capability_list, method=follower.route[1])
                assert held(follower.destination) == view, follower.route

    @invariant()
    def documents_list_each_change_once(self) -> None:
        listed = self.audit.check()
        for series in self.source.series:
            assert listed.get(series, {}) == self.expected, series

    def snapshot_current(self) -> bool:
        """Whether the Resource List describes the collection as published: a run compacted
        since the last change (resync reads no Change List Index: it baselines from the
        Resource List alone)."""
        return not self.pending and (self.changed is None
                                     or self.audit.snapshot_at() >= self.changed)

    def view(self) -> dict[str, bytes]:
        """What a follower holds: each published name's bytes at its URL at the follower."""
        return {self.source.url(name): body for name, body in self.published.items()}

    def teardown(self) -> None:
        self.made.close()

    # -- what a step is made of --------------------------------------------------------------

    def tick(self) -> datetime:
        """Now, and never the time a run was given before."""
        now = datetime.now(UTC)
        if self.last is not None:
            now = max(now, self.last + timedelta(milliseconds=1))
        self.last = now
        return now

    def _body(self, name: str) -> bytes:
        version = next(self.versions)
        return f"{name}, version {version}\n".encode() * (1 + version % 4)

    def apply(self, changed: list[tuple[int, bool]], when: datetime | None = None) -> None:
        """Make ``changed`` in the collection (dated ``when`` where it can be)."""
        for number, delete in changed:
            name = NAMES[number]
            body = None if name in self.collection and delete else self._body(name)
            self.source.change(name, body, when)
            if body is None:
                del self.collection[name]
            else:
                self.collection[name] = body

    def run(self, now: datetime, kill: KillAt | None, *, rebaseline: bool = False) -> None:
        """The Source runs as of ``now``; what it publishes, the model expects listed."""
        if not self.source.run(now, kill=kill, rebaseline=rebaseline):
            self.pending = True
            return
        for name in sorted(self.published.keys() | self.collection.keys()):
            before, after = self.published.get(name), self.collection.get(name)
            if before != after:
                self.changed = now
                self.expected[self.source.url(name)].append(
                    "created" if before is None else "deleted" if after is None else "updated")
        self.published = dict(self.collection)
        self.pending = False
