"""A host name the user writes ("timesheets.corp.example.com answers 503") is found in the
words, lower-cased, with or without a scheme, and matched with Ingress rules as the Ingress
API matches them: exactly, or by a wildcard standing for one label in front. A cluster name
(svc.ns, svc.ns.svc.cluster.local), a file's name and a version number are not hosts."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tools.read.kube_kinds import routes_host
from triage.agent.planners.rules.text import public_hosts

label = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)
tld = st.sampled_from(["com", "io", "net", "org", "dev", "example"])
host = st.builds(lambda ls, t: ".".join([*ls, t]), st.lists(label, min_size=2, max_size=4), tld)
frames = st.sampled_from(
    [
        "{} has been answering 503 since noon",
        "why is https://{}/cart slow?",
        "users say {}, and only it, times out.",
        "(see http://{}:8443/healthz)",
        "{} is down",
    ]
)


@given(h=host, frame=frames, upper=st.booleans())
@example(h="a0.svc.com", frame="{} has been answering 503 since noon", upper=False)
def test_a_written_host_is_found(h: str, frame: str, upper: bool) -> None:
    words = frame.format(h.upper() if upper else h)
    assert public_hosts(words) == [h]


@given(svc=label, ns=label, frame=frames)
def test_a_cluster_name_is_not_a_public_host(svc: str, ns: str, frame: str) -> None:
    for name in (f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"):
        assert public_hosts(frame.format(name)) == []


@given(stem=label, ending=st.sampled_from(["yaml", "json", "py", "log", "conf"]))
def test_a_file_or_a_version_is_not_a_host(stem: str, ending: str) -> None:
    assert public_hosts(f"I changed config.{stem}.{ending} and values.{ending}") == []
    assert public_hosts("we rolled out 2.19.4 at 10.96.41.7") == []


@given(h=host, front=label)
def test_a_wildcard_rule_covers_one_label_in_front(h: str, front: str) -> None:
    assert routes_host(h, h)
    assert routes_host(f"*.{h}", f"{front}.{h}")
    assert not routes_host(f"*.{h}", h)  # the wildcard must stand for a label
    assert not routes_host(f"*.{h}", f"{front}.{front}.{h}")  # and for one only
    assert not routes_host("", h)  # a rule without a host is not matched by name
