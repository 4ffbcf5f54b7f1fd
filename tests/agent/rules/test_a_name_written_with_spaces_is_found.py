"""A name the question writes with spaces where it has hyphens ("the orders-pg backup" for the
CronJob orders-pg-backup) is the object so named, and the words inside it are not names of
their own: a StatefulSet orders-pg is not what "the orders-pg backup" asks about. Only what
the reader listed decides; a run of words that names nothing stays words."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from tools.redact import DEFAULT
from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.agent.planners.rules.context import resolve
from triage.agent.planners.rules.facts import Facts
from triage.core.models import Evidence

NS = "shop"
word = st.from_regex(r"[a-z][a-z0-9]{1,7}", fullmatch=True)
frames = st.sampled_from(
    [
        "why did the {} fail last night?",
        "{} is stuck, can you look",
        "is {} ok in namespace shop?",
        "the {}: nothing since 3am",
    ]
)
kinds = st.sampled_from(
    [("k8s.cronjobs", "CronJob"), ("k8s.deployments", "Deployment"), ("k8s.jobs", "Job")]
)


def _facts(listed: dict[str, list[str]]) -> Facts:
    return Facts(
        Evidence(
            id=f"e{i}",
            tool=tool,
            args={"namespace": NS},
            status=ToolStatus.OK,
            excerpt="",
            digest="",
            data=[{"name": n} for n in names],
        )
        for i, (tool, names) in enumerate(listed.items())
    )


def _asked(words: str, facts: Facts) -> set[tuple[str, str]]:
    refs, _ = resolve(parse(words, now=0.0, namespace=NS), facts, NS)
    return {(r.kind, r.name) for r in refs}


@given(parts=st.lists(word, min_size=2, max_size=4, unique=True), frame=frames, kind=kinds)
def test_words_spelling_a_listed_name_resolve_to_it(
    parts: list[str], frame: str, kind: tuple[str, str]
) -> None:
    name = "-".join(parts)
    tool, k = kind
    # the first part is listed on its own too (a StatefulSet orders-pg beside orders-pg-backup)
    facts = _facts({tool: [name], "k8s.statefulsets": [parts[0]]})
    words = frame.format(" ".join(parts))
    # words the secret redactor masks before anything reads them ("pw a00000" is said like a
    # password) are not there to resolve, by design: secrets never reach the planner
    assume(DEFAULT.text(words) == words)
    asked = _asked(words, facts)
    assert (k, name) in asked
    assert ("StatefulSet", parts[0]) not in asked


@given(parts=st.lists(word, min_size=2, max_size=4, unique=True), frame=frames)
def test_a_part_written_alone_is_still_a_name(parts: list[str], frame: str) -> None:
    facts = _facts({"k8s.cronjobs": ["-".join(parts)], "k8s.statefulsets": [parts[0]]})
    assert ("StatefulSet", parts[0]) in _asked(frame.format(parts[0]), facts)


@given(parts=st.lists(word, min_size=2, max_size=3, unique=True), frame=frames)
def test_words_across_punctuation_or_naming_nothing_stay_words(
    parts: list[str], frame: str
) -> None:
    name = "-".join(parts)
    facts = _facts({"k8s.cronjobs": [name]})
    # a comma between the words: they were not written as one name
    assert ("CronJob", name) not in _asked(frame.format(", ".join(parts)), facts)
    # words that spell no listed name resolve to nothing (unless the frame's own words spell
    # it: "is {}" around "a0 is" reads "is a0 is", which does write is-a0)
    reversed_words = frame.format(" ".join(reversed(parts)))
    assume(" ".join(parts) not in reversed_words)
    assert _asked(reversed_words, facts) == set()
