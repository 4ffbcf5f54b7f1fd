"""The review page lets a person in only with an identity the apiserver vouches for, and shows
them only what RBAC lets them get: no token is a 401, a user without `get rcareports` in a
namespace gets a 403 there and does not see its reports in the list, an allowed user sees
them; reviewing needs `patch rcareports/status`. Real apiserver, real TokenReview,
SubjectAccessReview and RBAC; nothing stubbed."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from policies import Policy
from tests.web.kube import bind, install_review, person
from tests.web.support import ReviewServer
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.redact import Redactor
from triage.agent.intake import parse
from triage.app import App
from triage.core.models import Claim, RCADraft
from triage.core.settings import ReviewSettings, Settings, StateSettings
from triage.reports.store import KubeReportStore
from triage.web.auth import KubeAccess
from triage.web.review import build_review

pytestmark = pytest.mark.cluster

DRAFT = RCADraft(
    title="RCA: api crash-loops",
    summary="api is in CrashLoopBackOff.",
    root_cause_class="bad_config",
    cause="DATABASE_URL lacks the scheme separator; the container exits at start",
    impact="Requests fail.",
    root_cause=(Claim(text="The log names DATABASE_URL", evidence=("E1",)),),
)


@pytest.fixture
def cluster(control_plane, namespace, tmp_path) -> Iterator[dict[str, Any]]:
    """Two namespaces with one report each; alice may read A; bob may read nothing; carol may
    review in A."""
    install_review(control_plane)
    other = f"{namespace[:50]}-b{uuid.uuid4().hex[:4]}"
    control_plane.create_namespace(other)
    reader = control_plane.api_client(control_plane.reader_kubeconfig)
    store = KubeReportStore(reader)
    refs = {}
    for ns in (namespace, other):
        goal = parse(f"api in {ns} is down, write the RCA", now=0)
        refs[ns] = store.submit(ns, goal, DRAFT, attempt=1, run_id=f"cli:{ns}")
        store.publish(refs[ns], {"outcome": "verified", "attempts": 1, "met": ["exists"]})
    tokens = {who: person(control_plane, namespace, who) for who in ("alice", "bob", "carol")}
    for who, role in (("alice", "triage-report-viewer"), ("carol", "triage-report-reviewer")):
        sa = {"kind": "ServiceAccount", "name": who, "namespace": namespace}
        bind(control_plane, namespace, role, sa)
    bind(
        control_plane,
        namespace,
        "triage-report-viewer",
        {"kind": "User", "name": "dave@example.com"},
    )
    yield {
        "a": namespace,
        "b": other,
        "refs": refs,
        "tokens": tokens,
        "reader": reader,
        "store": store,
    }
    reader.close()
    control_plane.delete_namespace(other)


def _server(cluster: dict[str, Any], tmp_path, **review: Any) -> ReviewServer:
    settings = Settings(
        state=StateSettings(dir=tmp_path),
        review=ReviewSettings(**({"access_cache_s": 0, "list_cache_s": 0} | review)),
    )
    reader = cluster["reader"]
    product = App(
        settings=settings,
        tools=ReadRegistry(KubeReader(reader, timeout_s=10)),
        store=cluster["store"],
        policy=Policy(),
        redactor=Redactor(),
        api_client=reader,
    )
    parts = build_review(settings, product)
    assert parts is not None
    return ReviewServer(parts)


def _get(url: str, token: str | None = None, **headers: str) -> httpx.Response:
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.get(url, headers=headers, timeout=20, follow_redirects=False)


def _listed(page: httpx.Response) -> set[str]:
    return set(re.findall(r'data-report="([^"]+)"', page.text))


def test_no_token_is_401_and_a_bad_token_too(cluster, tmp_path) -> None:
    with _server(cluster, tmp_path) as srv:
        anonymous = _get(f"{srv.url}/reports")
        forged = _get(f"{srv.url}/reports", "not-a-token")
        report = _get(f"{srv.url}/reports/{cluster['a']}/{cluster['refs'][cluster['a']].name}")
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    assert 'action="/login"' in anonymous.text  # a browser gets the sign-in form
    assert forged.status_code == 401
    assert report.status_code == 401
    assert "DATABASE_URL" not in report.text


def test_what_a_user_sees_is_what_rbac_lets_them_get(cluster, tmp_path) -> None:
    a, b = cluster["a"], cluster["b"]
    name_a, name_b = cluster["refs"][a].name, cluster["refs"][b].name
    tokens = cluster["tokens"]
    with _server(cluster, tmp_path) as srv:
        bob_list = _get(f"{srv.url}/reports", tokens["bob"])
        bob_page = _get(f"{srv.url}/reports/{a}/{name_a}", tokens["bob"])
        alice_list = _get(f"{srv.url}/reports", tokens["alice"])
        alice_page = _get(f"{srv.url}/reports/{a}/{name_a}", tokens["alice"])
        alice_other = _get(f"{srv.url}/reports/{b}/{name_b}", tokens["alice"])
        access = srv.parts.access
    assert bob_list.status_code == 200
    assert f"{a}/{name_a}" not in _listed(bob_list)
    assert f"{b}/{name_b}" not in _listed(bob_list)
    assert bob_page.status_code == 403
    assert "DATABASE_URL" not in bob_page.text
    assert f"system:serviceaccount:{a}:bob may not read" in bob_page.text

    assert alice_list.status_code == 200
    assert f"{a}/{name_a}" in _listed(alice_list)
    assert f"{b}/{name_b}" not in _listed(alice_list)  # the other namespace stays hidden
    assert alice_page.status_code == 200
    assert "DATABASE_URL lacks the scheme separator" in alice_page.text
    assert "Confirm cause" not in alice_page.text  # a viewer, not a reviewer
    assert alice_other.status_code == 403
    # One TokenReview per person, however many pages (cached); each answer from the apiserver.
    assert isinstance(access, KubeAccess)
    assert access.token_reviews == 2


def test_reviewing_needs_the_reviewer_role(cluster, tmp_path) -> None:
    a = cluster["a"]
    name = cluster["refs"][a].name
    tokens = cluster["tokens"]
    with _server(cluster, tmp_path) as srv, httpx.Client(base_url=srv.url, timeout=20) as web:
        # carol signs in the way a browser does: paste the token, get a session cookie.
        signed = web.post("/login", data={"token": tokens["carol"], "next": f"/reports/{a}/{name}"})
        assert signed.status_code == 303
        assert "httponly" in signed.headers["set-cookie"].lower()
        page = web.get(f"/reports/{a}/{name}")
        assert page.status_code == 200
        assert "Confirm cause" in page.text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
        assert csrf is not None
        stale = web.post(
            f"/reports/{a}/{name}/review", data={"csrf": "0" * 64, "verdict": "disputed"}
        )
        assert stale.status_code == 403
        done = web.post(
            f"/reports/{a}/{name}/review",
            data={"csrf": csrf.group(1), "verdict": "disputed", "note": "the DB failed over"},
        )
        assert done.status_code == 303
        # alice may read but not review: the apiserver says no, nothing is written.
        alice = _get(f"{srv.url}/reports/{a}/{name}", tokens["alice"])
        assert alice.status_code == 200
        refused = httpx.post(
            f"{srv.url}/reports/{a}/{name}/review",
            headers={"Authorization": f"Bearer {tokens['alice']}"},
            data={"csrf": "x", "verdict": "confirmed"},
            timeout=20,
        )
        assert refused.status_code == 403
    stored = cluster["store"].get(a, name)
    review = stored["status"]["review"]
    assert review["by"] == f"kube:system:serviceaccount:{a}:carol"
    assert review["verdict"] == "disputed"
    assert review["note"] == "the DB failed over"
    assert review["via"] == "page"
    assert stored["status"]["outcome"] == "verified"


def test_a_trusted_proxy_header_is_believed_only_from_the_proxy(cluster, tmp_path) -> None:
    a = cluster["a"]
    name = cluster["refs"][a].name
    # What oauth2-proxy sends: the user, the groups, and where the browser really is.
    header = {
        "X-Forwarded-User": "dave@example.com",
        "X-Forwarded-Groups": "oncall,devs",
        "X-Forwarded-For": "203.0.113.9",
    }
    with _server(
        cluster,
        tmp_path,
        trusted_proxy_user_header="X-Forwarded-User",
        trusted_proxy_groups_header="X-Forwarded-Groups",
    ) as srv:
        via_proxy = _get(f"{srv.url}/reports/{a}/{name}", **header)
        stranger = _get(f"{srv.url}/reports/{a}/{name}", **{"X-Forwarded-User": "eve"})
    assert via_proxy.status_code == 200  # dave is bound to the viewer role in A
    assert "Signed in as <b>dave@example.com</b>" in via_proxy.text
    assert stranger.status_code == 403  # eve is believed to be eve, and eve may not read
    # The same header from an address that is not the proxy's is refused outright.
    with _server(
        cluster,
        tmp_path,
        trusted_proxy_user_header="X-Forwarded-User",
        trusted_proxy_cidrs=["192.0.2.0/24"],
    ) as srv:
        forged = _get(f"{srv.url}/reports/{a}/{name}", **header)
    assert forged.status_code == 401
