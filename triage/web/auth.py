"""Who is looking at the review page, and what they may see: decided by Kubernetes, not by us.

Authentication: a bearer token the apiserver accepts (a `TokenReview`: ServiceAccount tokens
from `kubectl create token`, OIDC id tokens when the apiserver trusts the issuer — which is
what oauth2-proxy passes with `--pass-authorization-header`), or the user's name in a header
set by an authenticating proxy, believed only from the configured peer addresses (a proxy in
the same pod: loopback). Nothing else gets in: no token, a refused token, or a proxy header
from anywhere else is a 401.

Authorisation: a `SubjectAccessReview` for the user (name, groups, uid, extra) — `get
rcareports` in a namespace to see its reports, `patch rcareports/status` there to review one,
`get operations` in the ledger's namespace for a ledger entry. The page itself reads as its
own identity (which needs `system:auth-delegator` for the two reviews) and shows a person only
what the apiserver says they may get, so the page can never show more than `kubectl` would.

Both answers are cached briefly (settings.review.token_cache_s / access_cache_s), keyed by the
token's sha256 and by the exact review, so a page view costs no apiserver call once warm.
An apiserver that cannot answer is a 503 (AuthUnavailable), never a silent allow.
"""

from __future__ import annotations

import hashlib
import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

REPORTS_GROUP = "triage.dev"
MAX_CACHED = 10_000
T = TypeVar("T")


class AuthError(Exception):
    """The request cannot be let in; `status` is the HTTP status to answer."""

    status = 401


class Unauthenticated(AuthError):
    status = 401


class AuthUnavailable(AuthError):
    """The apiserver could not say (unreachable, or the page's identity may not ask)."""

    status = 503


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    how: str = "token"  # token | proxy | local

    @property
    def identity(self) -> str:
        """How a review records this user."""
        return f"kube:{self.name}"


@dataclass(frozen=True)
class Resource:
    verb: str
    namespace: str
    resource: str = "rcareports"
    subresource: str = ""
    group: str = REPORTS_GROUP


def see(namespace: str) -> Resource:
    return Resource("get", namespace)


def review_in(namespace: str) -> Resource:
    return Resource("patch", namespace, subresource="status")


def ledger_entry(namespace: str) -> Resource:
    return Resource("get", namespace, resource="operations")


class Access(Protocol):
    def authenticate(self, token: str | None, headers: Mapping[str, str], peer: str | None) -> User:
        """The user behind a request, or Unauthenticated / AuthUnavailable."""
        ...

    def allowed(self, user: User, what: Resource) -> bool:
        """Whether the apiserver lets `user` do `what`; AuthUnavailable when it cannot say."""
        ...


class _TTLCache:
    """A small, thread-safe cache of answers, each for `ttl_s`, at most MAX_CACHED."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._items: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or(self, key: Any, produce: Callable[[], T]) -> T:
        now = time.monotonic()
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]  # type: ignore[no-any-return]
        value = produce()
        if self.ttl_s > 0:
            with self._lock:
                self._items[key] = (now + self.ttl_s, value)
                self._items.move_to_end(key)
                while len(self._items) > MAX_CACHED:
                    self._items.popitem(last=False)
        return value


def _networks(cidrs: Iterable[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(c, strict=False) for c in cidrs]


def _from(peer: str | None, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    if not peer:
        return False
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in n for n in networks)


class KubeAccess:
    """TokenReview / trusted proxy header, then SubjectAccessReview, as `api_client`."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        timeout_s: float = 10.0,
        token_cache_s: float = 60.0,
        access_cache_s: float = 30.0,
        proxy_user_header: str | None = None,
        proxy_groups_header: str | None = None,
        proxy_cidrs: Iterable[str] = ("127.0.0.1/32", "::1/128"),
    ) -> None:
        self.authn = k8s.AuthenticationV1Api(api_client)
        self.authz = k8s.AuthorizationV1Api(api_client)
        self.timeout_s = timeout_s
        self.proxy_user_header = (proxy_user_header or "").lower() or None
        self.proxy_groups_header = (proxy_groups_header or "").lower() or None
        self.proxy_networks = _networks(proxy_cidrs)
        self._tokens = _TTLCache(token_cache_s)
        self._access = _TTLCache(access_cache_s)
        self.token_reviews = 0  # apiserver calls made (the tests count them)
        self.access_reviews = 0

    def _call(self, what: str, fn: Callable[..., Any], body: Any) -> Any:
        try:
            return fn(body, _request_timeout=self.timeout_s)
        except ApiException as e:
            if e.status in (401, 403):
                raise AuthUnavailable(
                    f"the review page's own identity may not {what} (HTTP {e.status}): bind it "
                    "to the ClusterRole system:auth-delegator"
                ) from e
            raise AuthUnavailable(f"{what}: the apiserver answered HTTP {e.status}") from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise AuthUnavailable(f"{what}: the apiserver is unreachable ({e})") from e

    def authenticate(self, token: str | None, headers: Mapping[str, str], peer: str | None) -> User:
        lowered = {k.lower(): v for k, v in headers.items()}
        if self.proxy_user_header and lowered.get(self.proxy_user_header):
            if not _from(peer, self.proxy_networks):
                raise Unauthenticated(
                    f"the {self.proxy_user_header} header is only believed from the "
                    "authenticating proxy's address"
                )
            groups = lowered.get(self.proxy_groups_header, "") if self.proxy_groups_header else ""
            return User(
                name=lowered[self.proxy_user_header].strip()[:250],
                groups=tuple(g.strip() for g in groups.split(",") if g.strip()),
                how="proxy",
            )
        if not token:
            raise Unauthenticated("no token: sign in with a Kubernetes token")
        key = hashlib.sha256(token.encode()).hexdigest()
        user: User | None = self._tokens.get_or(key, lambda: self._review_token(token))
        if user is None:
            raise Unauthenticated("the apiserver did not accept this token")
        return user

    def _review_token(self, token: str) -> User | None:
        self.token_reviews += 1
        review = k8s.V1TokenReview(spec=k8s.V1TokenReviewSpec(token=token))
        result = self._call("create tokenreviews", self.authn.create_token_review, review)
        status = result.status
        if status is None or not status.authenticated or status.user is None:
            return None
        info = status.user
        return User(
            name=str(info.username or ""),
            groups=tuple(info.groups or ()),
            uid=str(info.uid or ""),
            extra={k: tuple(v) for k, v in (info.extra or {}).items()},
            how="token",
        )

    def allowed(self, user: User, what: Resource) -> bool:
        key = (user.name, user.groups, user.uid, tuple(sorted(user.extra.items())), what)
        return self._access.get_or(key, lambda: self._review_access(user, what))

    def _review_access(self, user: User, what: Resource) -> bool:
        self.access_reviews += 1
        review = k8s.V1SubjectAccessReview(
            spec=k8s.V1SubjectAccessReviewSpec(
                user=user.name,
                groups=list(user.groups) or None,
                uid=user.uid or None,
                extra={k: list(v) for k, v in user.extra.items()} or None,
                resource_attributes=k8s.V1ResourceAttributes(
                    group=what.group,
                    resource=what.resource,
                    subresource=what.subresource or None,
                    verb=what.verb,
                    namespace=what.namespace,
                ),
            )
        )
        result = self._call(
            "create subjectaccessreviews", self.authz.create_subject_access_review, review
        )
        return bool(result.status is not None and result.status.allowed)


class LocalAccess:
    """`review.auth: none`: one local user who may see everything (a laptop or the demo; the
    server refuses this unless it listens on loopback only)."""

    def authenticate(self, token: str | None, headers: Mapping[str, str], peer: str | None) -> User:
        return User(name="local", how="local")

    def allowed(self, user: User, what: Resource) -> bool:
        return True


def loopback(host: str) -> bool:
    """Whether `host` (a listen address) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
