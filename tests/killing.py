"""Run a function in a child process that is killed for real (SIGKILL: no ``finally`` or
``__exit__`` of the killed code runs), forked from a fork server that imported the heavy
libraries once (:data:`WARM`), so that a child starts in milliseconds, not in a second.

The fork server is single-threaded, so forking it is safe (forking pytest, which runs server
threads, is not); each pytest process, an xdist worker too, starts its own on first use. Python
3.11's fork server imports :data:`WARM` with its own ``sys.path`` (it ignores the parent's): the
checkout's root is on it through the editable install's ``.pth`` file, and ``''``, the directory
pytest started in. It ignores an ImportError there: each child checks that :data:`WARM` was
imported, and :func:`run_child` raises if not. A child runs with the parent's ``sys.path`` and
working directory, but the fork server's environment and standard streams.
"""

from __future__ import annotations

import importlib
import multiprocessing
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from time import monotonic
from typing import Any

#: The module the fork server imports once: the heavy libraries and the child functions' modules.
WARM = "tests.warmed"

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload([WARM])

#: In a child: the pipe :func:`report` writes to.
_parent: Connection | None = None


@dataclass(frozen=True)
class Ended:
    """How a child ended: its exit code (``-signal.SIGKILL`` killed, 0 ran to the end, 1 raised),
    what it reported (a line per :func:`report`), and the traceback if it raised."""

    exitcode: int
    said: str
    traceback: str


def report(text: str) -> None:
    """In a child of :func:`run_child`: tell the parent ``text``; it arrives even if the child is
    killed the next instant."""
    if _parent is None:
        raise RuntimeError("report() is for a child started by run_child()")
    _parent.send(("said", text))


def run_child(function: Callable[..., object], *args: Any, timeout: float = 300) -> Ended:
    """Run ``function(*args)`` (a module-level function: the child imports it by name) in a child
    forked from the fork server, and wait for it to end. A child still running after
    ``timeout`` seconds is killed, and TimeoutError raised."""
    ours, theirs = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_run, args=(theirs, function, args))
    child.start()
    theirs.close()
    deadline = monotonic() + timeout
    messages: list[tuple[str, str]] = []
    with ours:
        while wait([ours, child.sentinel], timeout=max(0.0, deadline - monotonic())):
            try:
                if not ours.poll():
                    break  # the child ended, its end of the pipe held open by a child of its own
                messages.append(ours.recv())
            except EOFError:
                break
    child.join(max(0.0, deadline - monotonic()))
    said = "\n".join(text for kind, text in messages if kind == "said")
    if child.exitcode is None:
        child.kill()
        child.join()
        raise TimeoutError(f"{function.__qualname__}{args} ran past {timeout} s and was killed; "
                           f"it said: {said!r}")
    cold = [text for kind, text in messages if kind == "cold"]
    if cold:
        raise RuntimeError(f"the fork server did not import {WARM}:\n{cold[0]}")
    raised = "".join(text for kind, text in messages if kind == "raised")
    return Ended(child.exitcode, said, raised)


def _run(parent: Connection, function: Callable[..., object], args: tuple[Any, ...]) -> None:
    """In the child: run ``function(*args)``, sending a traceback to ``parent`` if it raises."""
    global _parent
    _parent = parent
    if WARM not in sys.modules:  # the fork server ignored an ImportError, or another started it
        try:
            importlib.import_module(WARM)
            cold = f"{WARM} imports here: the fork server was started without it"
        except BaseException:
            cold = traceback.format_exc()
        parent.send(("cold", cold))
        sys.exit(1)
    try:
        function(*args)
    except BaseException:
        parent.send(("raised", traceback.format_exc()))
        sys.exit(1)
