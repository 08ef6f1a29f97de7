"""Credentials bound to their origin: an httpx auth flow that never sends them elsewhere."""

from __future__ import annotations

import base64
from collections.abc import Generator

import httpx

from .policy import Credentials, origin

__all__ = ["OriginBoundAuth"]


class OriginBoundAuth(httpx.Auth):
    """Adds the credentials (and their headers) to requests for their own origin, and only those.

    A request to any other origin (a mirror, a redirect target) goes out without them, and any
    ``Authorization`` header it carries is removed. No I/O: the same flow serves both clients.
    """

    def __init__(self, credentials: Credentials) -> None:
        self._origin = origin(credentials.origin_url)
        self._headers = dict(credentials.headers)
        if credentials.token is not None:
            self._headers["Authorization"] = f"Bearer {credentials.token}"
        elif credentials.username is not None:
            pair = f"{credentials.username}:{credentials.password or ''}".encode()
            self._headers["Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self.apply(request)
        yield request

    def apply(self, request: httpx.Request) -> None:
        """Add the credentials to ``request`` if it goes to their origin, else remove any
        ``Authorization`` header it carries."""
        if origin(str(request.url)) == self._origin:
            request.headers.update(self._headers)
        else:
            request.headers.pop("Authorization", None)
