"""What else a request asks for besides its subject: checks the user wants made ("check the
logs"), and an alert pasted into the words ("[FIRING:1] CheckoutApiHighLatency …").

Both are read from the user's own words and only widen what is *read* and what the answer
must explain (a "no fault" answer is verified only when what was asked to be checked was read
and explained); neither can ask for a change. Alert text is untrusted data: only its name and
label-like `key=value` pairs are kept, clipped.
"""

from __future__ import annotations

import re

from triage.core.models import Alert

_CHECKS = (
    ("logs", re.compile(r"\blogs?\b|\bstack ?traces?\b|\berror lines?\b", re.I)),
    ("metrics", re.compile(r"\bmetrics?\b|\bdashboards?\b|\bgrafana\b|\bp9[59]\b", re.I)),
    ("events", re.compile(r"\bevents?\b", re.I)),
)
_FIRING = re.compile(
    r"\[(?:FIRING|RESOLVED)(?::\d+)?\]\s*(?P<name>[A-Za-z][A-Za-z0-9_:]{2,100})"
    r"|\balertname\s*[=:]\s*\"?(?P<name2>[A-Za-z][A-Za-z0-9_:]{2,100})"
    r"|\balert\s+(?P<name3>[A-Z][A-Za-z0-9_:]{2,100})\b"
    r"|\b(?P<name4>[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*){1,8})\s+(?:alert\s+)?(?:is\s+)?(?:firing|fired)\b",
)
_LABEL = re.compile(
    r"\b(?P<k>namespace|pod|deployment|statefulset|daemonset|service|container|job|cronjob|"
    r"severity|node|instance)\s*[=:]\s*\"?(?P<v>[A-Za-z0-9][A-Za-z0-9._/-]{0,120})"
)
_IN_PARENS = re.compile(r"\((?P<ns>[a-z0-9-]{1,63})/(?P<name>[a-z0-9][-a-z0-9.]{0,252})\)")


def checks_in(words: str) -> tuple[str, ...]:
    return tuple(name for name, rx in _CHECKS if rx.search(words))


def alert_in(words: str) -> Alert | None:
    """An alert pasted into the words, or None."""
    m = _FIRING.search(words)
    if m is None:
        return None
    name = next(g for g in m.group("name", "name2", "name3", "name4") if g)
    labels = {lm.group("k"): lm.group("v").strip('".,;') for lm in _LABEL.finditer(words)}
    paren = _IN_PARENS.search(words)
    if paren is not None:
        labels.setdefault("namespace", paren.group("ns"))
        labels.setdefault("service", paren.group("name"))
    status = "resolved" if "[RESOLVED" in words else "firing"
    return Alert(name=name, labels=dict(list(labels.items())[:20]), status=status)
