"""Alertmanager writes (API v2): create a silence, expire one, find ours again.

Alertmanager cannot create a silence conditionally and lets no client choose its ID, so the
operation ID travels in the silence's comment (`[triage-operation:<id>]`): after a lost
response, listing the silences tells whether ours exists. The ledger's claim keeps a second
process from creating one at the same time. Every call has a timeout; none is retried here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tools.errors import TimedOut, Unreachable, error_for_status

Json = dict[str, Any]

_MARKER = "[triage-operation:{}]"
_MARKER_RX = re.compile(r"\[triage-operation:([a-z0-9-]+)\]")


def marker(op_id: str) -> str:
    return _MARKER.format(op_id)


def operation_of(silence: Json) -> str | None:
    """The operation ID written in a silence's comment, if any."""
    m = _MARKER_RX.search(str(silence.get("comment") or ""))
    return m.group(1) if m else None


class AlertmanagerMutator:
    """Silences over HTTP; `transport` lets tests put a fault-injecting layer at the wire."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        created_by: str = "triage",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.created_by = created_by
        self._client = httpx.Client(base_url=self.url, timeout=timeout_s, transport=transport)
        self.timeout_s = timeout_s

    def close(self) -> None:
        self._client.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        what = f"alertmanager {method} {path}"
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as e:
            raise TimedOut(f"{what}: no answer within {self.timeout_s:g}s") from e
        except httpx.TransportError as e:
            raise Unreachable(f"{what}: unreachable ({e})") from e
        if response.status_code >= 400:
            raise error_for_status(response.status_code, response.text, what=what)
        return response

    def silences(self) -> list[Json]:
        data = self._request("GET", "/api/v2/silences").json()
        return list(data) if isinstance(data, list) else []

    def silence(self, silence_id: str) -> Json | None:
        for s in self.silences():
            if s.get("id") == silence_id:
                return s
        return None

    def find(self, op_id: str) -> list[Json]:
        """Silences whose comment carries `op_id`, in any state."""
        return [s for s in self.silences() if operation_of(s) == op_id]

    def create(self, *, op_id: str, matchers: list[Json], duration_s: int, comment: str) -> str:
        """Create a silence from now (this machine's clock) for `duration_s`; returns its ID."""
        now = datetime.now(UTC)
        body = {
            "matchers": matchers,
            "startsAt": now.astimezone(UTC).isoformat(),
            "endsAt": (now + timedelta(seconds=duration_s)).astimezone(UTC).isoformat(),
            "createdBy": self.created_by,
            "comment": f"{comment} {marker(op_id)}".strip(),
        }
        data = self._request("POST", "/api/v2/silences", json=body).json()
        return str(data.get("silenceID") or "")

    def expire(self, silence_id: str) -> None:
        self._request("DELETE", f"/api/v2/silence/{silence_id}")
