"""Intake: the user's message becomes a `Goal`, keeping their words verbatim.

Deterministic on purpose: the same message gives the same goal with or without a model, and
the judge later reads `Goal.words` (what was asked), not our interpretation of it. Things the
message names are only candidates here; the investigation checks they exist and reports the
ones that don't. Which changes the message commands is decided by the command grammar
(triage/agent/intent/): typed `Goal.commands` for explicit imperatives, `Goal.offers` for
changes it only mentions.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from tools.redact import DEFAULT
from triage.agent import asks, intent
from triage.core.models import Alert, Command, Deliverable, Goal, RequestKind, Scope, Workload

_CASUAL = re.compile(
    r"^\s*((thanks?( you)?|thx|ty|cheers|hi|hello|hey|ok(ay)?|cool|nice|great|good (job|bot)|"
    r"👍|🙏|lol)[\s!.,🙏👍]*)+$",
    re.I,
)
_RCA = re.compile(r"\b(rca|root[- ]cause|post-?mortem|incident report)\b", re.I)
_WRITE = re.compile(r"\b(write|draft|file|submit|create|produce)\b", re.I)
_NAME = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_NS_PATTERNS = (
    re.compile(rf"\b{_NAME}\.(?P<ns>{_NAME})\.svc\b", re.I),
    re.compile(rf"(?<![\w-])namespace[:= ]+[`'\"]?(?P<ns>{_NAME})\b", re.I),
    re.compile(rf"\b-n\s+(?P<ns>{_NAME})\b"),
    re.compile(rf"\b(?P<ns>{_NAME})\s+namespace(?![\w-])", re.I),
    re.compile(rf"\bin\s+[`'\"]?(?P<ns>{_NAME})[`'\"]?(?=[\s,.;:!?)]|$)", re.I),
    re.compile(
        rf"\b(deploy(ed)?|rolled out|shipped|released|pushed)\b[^.?!]*?\b(to|into)\s+"
        rf"[`'\"]?(?P<ns>{_NAME})[`'\"]?(?=[\s,.;:!?)]|$)",
        re.I,
    ),
)
_KIND_WORDS = {
    "deployment": "Deployment",
    "deploy": "Deployment",
    "service": "Service",
    "svc": "Service",
    "job": "Job",
    "pod": "Pod",
    "statefulset": "StatefulSet",
    "hpa": "HorizontalPodAutoscaler",
    "pvc": "PersistentVolumeClaim",
}
_KIND_NAME = re.compile(
    rf"(?<![\w-])((?P<kind>deployment|service|statefulset|daemonset)\s+|"
    rf"(?P<kind2>{'|'.join(_KIND_WORDS)})/)(?P<quote>[`'\"])?(?P<name>{_NAME})\b",
    re.I,
)
_SVC_DNS = re.compile(rf"\b(?P<name>{_NAME})\.{_NAME}\.svc\b", re.I)
_HYPHENATED = re.compile(r"(?<![\w/.-])(?P<name>[a-z][a-z0-9]*(-[a-z0-9]+)+)(?![\w/-])(?!\.\w)")
_NOT_NAMES = {
    "crash-loop",
    "crash-looping",
    "read-only",
    "root-cause",
    "post-mortem",
    "on-call",
    "follow-up",
    "roll-back",
    "re-deploy",
    "out-of-memory",
    "time-out",
    "so-called",
    "up-to-date",
    "in-flight",
    "right-now",
    "non-zero",
    "half-open",
    "long-running",
}
# Words that follow a kind word in prose ("the service are fine", "deployment is stuck")
# and are never the object's name: function words and the verbs of a status sentence.
_STOP_NAMES = {
    "account",
    "accounts",
    "mesh",
    "in",
    "is",
    "on",
    "at",
    "of",
    "for",
    "was",
    "has",
    "and",
    "to",
    "keeps",
    "seems",
    "are",
    "were",
    "be",
    "been",
    "being",
    "it",
    "its",
    "itself",
    "that",
    "which",
    "they",
    "we",
    "you",
    "i",
    "he",
    "she",
    "this",
    "these",
    "those",
    "there",
    "here",
    "still",
    "now",
    "then",
    "too",
    "also",
    "just",
    "not",
    "never",
    "all",
    "both",
    "each",
    "every",
    "any",
    "some",
    "no",
    "yes",
    "or",
    "but",
    "so",
    "if",
    "as",
    "by",
    "with",
    "from",
    "into",
    "looks",
    "looked",
    "went",
    "got",
    "gets",
    "returns",
    "returned",
    "answers",
    "answered",
    "works",
    "worked",
    "fails",
    "failed",
    "failing",
    "started",
    "stopped",
    "kept",
    "did",
    "does",
    "do",
    "doing",
    "can",
    "cannot",
    "cant",
    "could",
    "would",
    "should",
    "will",
    "wont",
    "might",
    "may",
    "must",
    "had",
    "have",
    "having",
    "up",
    "down",
    "out",
    "over",
    "again",
    "already",
}
_STOP_NS = {
    "the",
    "a",
    "an",
    "my",
    "our",
    "this",
    "that",
    "it",
    "there",
    "here",
    "production",
    "order",
    "time",
    "minutes",
    "hours",
    "seconds",
    "progress",
    "between",
    "front",
    "general",
    "place",
}
_SINCE_CLOCK = re.compile(r"\bsince\s+(?P<h>\d{1,2}):(?P<m>\d{2})\b", re.I)
_LAST = re.compile(
    r"\b(last|past)\s+(?P<n>\d+)\s*(?P<u>m|min|mins|minutes?|h|hrs?|hours?|d|days?)\b", re.I
)


def _kind(
    words: str, mutations: tuple[Command, ...]
) -> tuple[RequestKind, tuple[Deliverable, ...]]:
    if _CASUAL.match(words):
        return RequestKind.CASUAL, ()
    deliverables: list[Deliverable] = []
    if _RCA.search(words) and _WRITE.search(words):
        deliverables.append(Deliverable.RCA)
    if mutations:
        deliverables.append(Deliverable.MUTATION)
    if deliverables:
        return RequestKind.KEEP_SEND_CHANGE, tuple(deliverables)
    return RequestKind.FIND_TELL, (Deliverable.ANSWER,)


def _namespaces(words: str) -> list[str]:
    """Every name the words may give as the namespace, the phrasing's likeliest first."""
    found: list[str] = []
    for pattern in _NS_PATTERNS:
        for m in pattern.finditer(words):
            ns = m.group("ns").lower()
            if ns not in _STOP_NS and not ns.isdigit() and ns not in found:
                found.append(ns)
    return found


def _namespace(words: str) -> str | None:
    found = _namespaces(words)
    return found[0] if found else None


def _workloads(
    words: str, namespace: str | None, commands: tuple[Command, ...] = ()
) -> tuple[Workload, ...]:
    found: dict[str, Workload] = {}
    for c in commands:
        if c.target.kind != "Alert" and c.namespace in (None, namespace):
            found[c.target.name] = Workload(kind=c.target.kind, name=c.target.name)
    for m in _SVC_DNS.finditer(words):
        found[m.group("name").lower()] = Workload(kind="Service", name=m.group("name").lower())
    for m in _KIND_NAME.finditer(words):
        name = m.group("name").lower()
        if name != namespace and name not in _STOP_NS and name not in _STOP_NAMES:
            kind = (m.group("kind") or m.group("kind2")).lower()
            # "service checkout" names a Service only as far as the cluster has one: a plain
            # word after a kind word may be prose ("did the Service lose its endpoints"), so
            # it is reported missing only when written as a name (kind/name, quoted, or
            # shaped like one: a hyphen or a digit)
            shaped = bool(m.group("kind2") or m.group("quote")) or any(
                ch == "-" or ch.isdigit() for ch in name
            )
            found[name] = Workload(kind=_KIND_WORDS[kind], name=name, explicit=shaped)
    for m in _HYPHENATED.finditer(words):
        name = m.group("name").lower()
        if name not in found and name != namespace and name not in _NOT_NAMES:
            found[name] = Workload(name=name)
    return tuple(found.values())


def _window(words: str, now: float, default_window_s: float) -> tuple[float, float]:
    m = _LAST.search(words)
    if m:
        unit = m.group("u").lower()[0]
        seconds = int(m.group("n")) * {"m": 60, "h": 3600, "d": 86400}[unit]
        return now - seconds, now
    m = _SINCE_CLOCK.search(words)
    if m:
        current = datetime.fromtimestamp(now, UTC)
        hour, minute = int(m.group("h")), int(m.group("m"))
        if hour < 24 and minute < 60:
            start = current.replace(hour=hour, minute=minute, second=0, microsecond=0)
            if start > current:
                start -= timedelta(days=1)
            # look a little before the reported start: causes precede symptoms
            return start.timestamp() - 1800, now
    return now - default_window_s, now


def parse(
    words: str,
    *,
    now: float,
    namespace: str | None = None,
    default_namespace: str | None = None,
    cluster: str | None = None,
    default_window_s: float = 3 * 3600.0,
    alert: Alert | None = None,
    bot_user_id: str | None = None,
    commands: bool = True,
) -> Goal:
    """Turn a message into a Goal. An explicit `namespace` (a -n flag) wins over one found in
    the text, which wins over `default_namespace` (the Slack channel's, the kube context's).

    The words are kept verbatim except for secrets, which are masked first: a password pasted
    into a question must not reach a model, the judge, Slack or storage either. `bot_user_id`
    is the bot's own Slack id when the words still hold its mention (the command grammar
    reads any other mention as another addressee). `commands=False` says the words are not a
    person's (an Alertmanager notification): they command nothing and offer nothing, whatever
    they say.
    """
    words = DEFAULT.text(words)
    alert = alert or asks.alert_in(words)
    alert_ns = alert.labels.get("namespace") if alert is not None else None
    understood = intent.parse(words, bot_user_id=bot_user_id)
    kind, deliverables = _kind(words, understood.commands if commands else ())
    casual = kind is RequestKind.CASUAL
    commanded = () if casual or not commands else understood.commands
    offered = () if casual or not commands else understood.offers
    commanded_ns = next((c.namespace for c in commanded if c.namespace), None)
    named = namespace or _namespace(words) or commanded_ns or alert_ns
    ns = named or default_namespace
    # Anything else that could be a namespace (the cluster decides which exists): other
    # phrasings, the alert's label, and the name-shaped words.
    candidates = [] if namespace else [*_namespaces(words)]
    if alert is not None and alert.labels.get("namespace"):
        candidates.append(alert.labels["namespace"])
    candidates += [m.group("name").lower() for m in _HYPHENATED.finditer(words)]
    if default_namespace:
        candidates.append(default_namespace)
    # an explicit namespace (-n) is final, as kubectl's is: nothing else is tried
    candidates = [] if namespace else [c for c in dict.fromkeys(candidates) if c != ns][:6]
    since, until = _window(words, now, default_window_s)
    return Goal(
        words=words,
        kind=kind,
        scope=Scope(
            cluster=cluster,
            namespace=ns,
            namespace_candidates=tuple(candidates),
            namespace_is_default=named is None and ns is not None,
            workloads=_workloads(words, ns, commanded) if not casual else (),
            since=since,
            until=until,
        ),
        deliverables=deliverables,
        commands=commanded,
        offers=offered,
        checks=asks.checks_in(words),
        alert=alert,
    )
