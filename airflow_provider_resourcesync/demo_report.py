"""What the demo did, read back from Airflow's database and the mirror's directory, and its
printed report."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .storage.keys import RESERVED_PREFIX

__all__ = ["Arrival", "DemoResult", "RunSummary", "held_files", "summarize"]

_SHOWN = 3


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One DAG run: its id and final state, each task's final state (in the order they ran),
    the tasks' XComs, and the URIs of the Asset events it emitted."""

    dag_id: str
    run_id: str
    state: str
    tasks: dict[str, str]
    xcoms: dict[str, Any]
    assets: list[str]

    @property
    def succeeded(self) -> bool:
        return self.state == "success"

    def line(self) -> str:
        tasks = ", ".join(f"{task} {state}" for task, state in self.tasks.items())
        return f"DAG run      {self.dag_id} {self.run_id}: {self.state} ({tasks})"


def summarize(run: Any) -> RunSummary:
    """A finished ``dag.test()`` run, read from the metadata database."""
    # imports airflow: not before the demo set its environment
    from .run_records import asset_events, states, xcoms

    pushed = {task: value for (task, _), value in xcoms(run).items()}
    assets = [uri for uri, _ in asset_events(run)]
    return RunSummary(run.dag_id, run.run_id, str(run.state), states(run), pushed, assets)


def held_files(destination: Path) -> tuple[dict[str, int], list[str]]:
    """The mirrored files (path relative to ``destination`` -> size) and the mirror's own files
    (under ``.resourcesync/``)."""
    files, own = {}, []
    for path in sorted(destination.rglob("*")):
        if path.is_file():
            relative = path.relative_to(destination).as_posix()
            if relative.startswith(RESERVED_PREFIX):
                own.append(relative)
            else:
                files[relative] = path.stat().st_size
    return files, own


@dataclass(frozen=True, slots=True)
class Arrival:
    """A change made at the Source after the baseline, and whether the mirror shows it."""

    change: str
    path: str
    arrived: bool

    def line(self) -> str:
        seen = {"created": "now in the mirror", "updated": "the mirror holds the new version",
                "deleted": "gone from the mirror"}[self.change]
        return f"  {self.change} {self.path}: {seen if self.arrived else 'NOT in the mirror'}"


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What the demo did.

    :param source: the Source's base URL.
    :param listed: how many resources the Source listed at first.
    :param destination: the mirror's directory.
    :param baseline: the ``mirror_to_local`` run (baseline, then audit).
    :param files: the files mirrored by it, path relative to the destination -> size.
    :param own_files: the mirror's own files, path relative to the destination.
    :param incremental: the ``incremental_mirror`` run after the changes (None: not run, the
        baseline having failed).
    :param arrivals: the changes made at the Source, and whether each reached the mirror.
    """

    source: str
    listed: int
    destination: Path
    baseline: RunSummary
    files: dict[str, int]
    own_files: list[str]
    incremental: RunSummary | None
    arrivals: list[Arrival]

    @property
    def mirrored(self) -> int:
        return len(self.files)

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        return self.baseline.xcoms.get("baseline")

    @property
    def audit(self) -> dict[str, Any] | None:
        return self.baseline.xcoms.get("audit")

    @property
    def succeeded(self) -> bool:
        return (self.baseline.succeeded and self.incremental is not None
                and self.incremental.succeeded and all(a.arrived for a in self.arrivals))

    def render(self) -> str:
        """The report printed by the demo."""
        folders = Counter(path.rpartition("/")[0] + "/" for path in self.files)
        own = Counter(_first_part(path.removeprefix(RESERVED_PREFIX)) for path in self.own_files)
        clean = self.audit is not None and self.audit["clean"]
        lines = [
            f"Source       {self.source} ({self.listed} resources, served on 127.0.0.1)",
            self.baseline.line(),
            f"Destination  {self.destination}",
            f"  {self.mirrored} files mirrored, {sum(self.files.values())} bytes, in:",
            *(f"    {folder}  ({count} files)" for folder, count in sorted(folders.items())),
            *(f"  e.g. {path}" for path in sorted(self.files)[:_SHOWN]),
            f"  {RESERVED_PREFIX}  the mirror's own state: " + ", ".join(
                name if count == 1 else f"{name} ({count} files)"
                for name, count in sorted(own.items())),
            f"Asset events {', '.join(self.baseline.assets) or 'none'}",
            "Checkpoint   (XCom of task baseline)",
            _indented(self.checkpoint),
            "Audit        (XCom of task audit)",
            _indented(self.audit),
            f"Mirrored {self.mirrored} of {self.listed} resources into {self.destination}; the "
            f"audit {'found the mirror clean' if clean else 'did not find the mirror clean'}.",
        ]
        if self.incremental is not None:
            arrived = sum(arrival.arrived for arrival in self.arrivals)
            lines += [
                "",
                f"Then {len(self.arrivals)} changes at the Source, and the hourly DAG:",
                self.incremental.line(),
                *(arrival.line() for arrival in self.arrivals),
                "Checkpoint   (XCom of task sync: the next run starts here)",
                _indented(self.incremental.xcoms.get("sync")),
                f"{arrived} of {len(self.arrivals)} changes arrived in the mirror.",
            ]
        return "\n".join(lines)


def _first_part(path: str) -> str:
    """``a`` of ``a``; ``a/`` of ``a/b/c``."""
    first, slash, _ = path.partition("/")
    return first + slash


def _indented(data: dict[str, Any] | None) -> str:
    text = json.dumps(data, indent=2) if data is not None else "(none: the task failed)"
    return "\n".join(f"  {line}" for line in text.splitlines())
