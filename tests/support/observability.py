"""Real Prometheus and Alertmanager for the test suite (pytest plugin + helpers).

Why: the product must tell "no data" from "Prometheus is down" and must read real PromQL
results, so tests run the real servers from Debian's packages (tests/support/install_debs.sh)
instead of a fake of our own.

How the data gets in: scenario series are rendered as OpenMetrics text with absolute timestamps
(seconds, relative to a caller-chosen "now"), backfilled with `promtool tsdb create-blocks-from
openmetrics` into a fresh data dir, and only then is Prometheus started on that dir. promtool cuts
the samples into blocks aligned to 2 h boundaries, the newest one ending at the last sample; the
head starts empty (there are no scrape targets), so nothing overlaps and range queries over the
last hours, including the most recent minutes, are served from the blocks. Retention is set far
beyond any scenario. Each server gets its own free 127.0.0.1 port and data dir.

Time keeps running during a session while the data stops at "now": an instant query sees the
newest sample only within Prometheus' 5 min lookback. So the factory, by default, continues each
series for an hour past "now" (counters at their last rate, gauges flat; `extend_for=0` turns
that off; a series that ended before "now" is left ended), and tests that need exact figures
query at `server.now`.

Python API:
- `Series` / `openmetrics_from_series(series, now)` render series for the backfill.
- `start_prometheus(openmetrics, workdir=...) -> PrometheusServer` (`.url`, `.stop()`, `.kill()`,
  `.restart()`).
- `start_alertmanager(workdir) -> AlertmanagerServer` (`.url`, `.stop()`, `.post_alerts()`, ...).

Fixtures: `prometheus_factory` (session), `prometheus` (session, `BUILTIN_SERIES` backfilled),
`alertmanager` (session).
"""

from __future__ import annotations

import atexit
import itertools
import math
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "BUILTIN_SERIES",
    "DEFAULT_EXTEND_FOR",
    "AlertmanagerServer",
    "ObservabilityError",
    "PrometheusFactory",
    "PrometheusServer",
    "Series",
    "openmetrics_from_series",
    "start_alertmanager",
    "start_prometheus",
]

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_READY_TIMEOUT_S = 30.0
_HTTP_TIMEOUT_S = 2.0
# Far beyond any scenario; Prometheus measures retention from the newest block, not the clock.
_RETENTION = "3650d"


class ObservabilityError(RuntimeError):
    """A test server could not be prepared or started (message carries its log tail)."""


class _PortTakenError(ObservabilityError):
    """Someone else answers on the port we picked; start again on another one."""


# --------------------------------------------------------------------------------------------
# Series -> OpenMetrics
# --------------------------------------------------------------------------------------------


class Series(BaseModel):
    """One metric series of a scenario, with samples relative to "now".

    - `name`: the metric name exactly as PromQL will query it (counters conventionally end in
      `_total`, e.g. `http_requests_total`).
    - `type`: `counter` or `gauge` (written as the OpenMetrics `# TYPE`; every series sharing a
      name must share the type).
    - `labels`: label name -> value (no `__` prefixed names; `__name__` comes from `name`).
    - `samples`: `(offset_seconds, value)` pairs; offsets are <= 0 seconds relative to "now"
      (e.g. `-3600` is one hour ago), strictly increasing once sorted; counter values must not be
      negative (a drop is a counter reset, as in real data).

    Loads from YAML/dicts with `Series.model_validate({...})`; samples may be given as 2-item lists.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: Literal["counter", "gauge"]
    labels: dict[str, str] = Field(default_factory=dict)
    samples: list[tuple[float, float]]

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _METRIC_NAME.match(value):
            msg = f"invalid metric name {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("labels")
    @classmethod
    def _check_labels(cls, value: dict[str, str]) -> dict[str, str]:
        for label in value:
            if not _LABEL_NAME.match(label) or label.startswith("__"):
                msg = f"invalid label name {label!r}"
                raise ValueError(msg)
        return value

    @field_validator("samples")
    @classmethod
    def _check_samples(cls, value: list[tuple[float, float]]) -> list[tuple[float, float]]:
        if not value:
            msg = "a series needs at least one sample"
            raise ValueError(msg)
        ordered = sorted(value, key=lambda s: s[0])
        for (offset, _), (next_offset, _) in itertools.pairwise(ordered):
            if offset == next_offset:
                msg = f"two samples at offset {offset}"
                raise ValueError(msg)
        for offset, _ in ordered:
            if offset > 0 or not math.isfinite(offset):
                msg = f"sample offset {offset} must be a finite number of seconds <= 0"
                raise ValueError(msg)
        return ordered

    @model_validator(mode="after")
    def _check_counter(self) -> Series:
        if self.type == "counter" and any(v < 0 for _, v in self.samples):
            msg = f"counter {self.name} has a negative value"
            raise ValueError(msg)
        return self


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _format_timestamp(ts: float) -> str:
    # Millisecond precision is all the TSDB keeps.
    text = f"{ts:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _extended(series: Series, extend_for: float) -> list[tuple[float, float]]:
    """The samples plus a continuation up to `extend_for` seconds after "now": same step as the
    last two samples (60 s for a single sample); counters keep their last slope (0 after a
    reset), gauges hold their last value. A series whose samples end more than a step before
    "now" stopped (a renamed metric, a target gone) and stays stopped."""
    samples = list(series.samples)
    if extend_for <= 0:
        return samples
    last_offset, last_value = samples[-1]
    step, slope = 60.0, 0.0
    if len(samples) > 1:
        prev_offset, prev_value = samples[-2]
        step = last_offset - prev_offset
        if series.type == "counter" and last_value >= prev_value:
            slope = (last_value - prev_value) / step
    if last_offset + step < 0:
        return samples
    k = 1
    while last_offset + k * step <= extend_for:
        samples.append((last_offset + k * step, last_value + slope * k * step))
        k += 1
    return samples


def openmetrics_from_series(
    series: Sequence[Series], now: float, *, extend_for: float = 0.0
) -> str:
    """Render `series` as OpenMetrics text for promtool, with timestamps `now + offset` (seconds).

    Series sharing a name are grouped into one metric family (OpenMetrics requires families to be
    contiguous); the text always ends with `# EOF`. Raises ValueError if two series with the same
    name disagree on the type, or the same name and labels appear twice.

    `extend_for` (seconds, default 0 = exactly the given samples) continues every series past
    "now" (counters at their last rate, gauges flat), so queries at the wall clock still find
    current data while a long test session runs: without it an instant query sees the newest
    sample only within Prometheus' 5 min lookback, and `rate(x[5m])` at `now + 5m` is empty.
    """
    families: dict[str, list[Series]] = {}
    for s in series:
        family = families.setdefault(s.name, [])
        if family and family[0].type != s.type:
            msg = f"metric {s.name} is both {family[0].type} and {s.type}"
            raise ValueError(msg)
        if any(other.labels == s.labels for other in family):
            msg = f"series {s.name}{s.labels} given twice"
            raise ValueError(msg)
        family.append(s)

    lines: list[str] = []
    for name, members in families.items():
        lines.append(f"# TYPE {name} {members[0].type}")
        for s in members:
            label_text = ",".join(
                f'{k}="{_escape_label_value(v)}"' for k, v in sorted(s.labels.items())
            )
            selector = f"{name}{{{label_text}}}" if label_text else name
            lines.extend(
                f"{selector} {_format_value(value)} {_format_timestamp(now + offset)}"
                for offset, value in _extended(s, extend_for)
            )
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _metric_names(openmetrics: str) -> set[str]:
    names: set[str] = set()
    for line in openmetrics.splitlines():
        if line and not line.startswith("#"):
            match = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
            if match:
                names.add(match.group(0))
    return names


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------


def _binary(*candidates: str) -> str:
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    msg = f"none of {candidates} on PATH; run tests/support/install_debs.sh"
    raise ObservabilityError(msg)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


_LIVE: set[_ManagedProcess] = set()


def _kill_leftovers() -> None:
    # Last resort when pytest dies without running fixture finalizers.
    for server in list(_LIVE):
        server.kill()


atexit.register(_kill_leftovers)


class _ManagedProcess:
    """A server process on a free loopback port, with its log in `workdir`.

    The port is picked once and kept across `restart()`, so `.url` stays valid for a client that
    outlives an outage.
    """

    _name = "server"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = 0
        self.log_path = workdir / f"{self._name}.log"
        self._process: subprocess.Popen[bytes] | None = None
        self.startup_seconds = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _wait_extra(self, deadline: float) -> None:
        """Hook: block until the server is usable beyond /-/ready."""

    def _is_ours(self, client: httpx.Client) -> bool:
        """Hook: whether the server answering on our port is the process we started (another
        test session may have grabbed the port between our probe and our bind)."""
        del client
        return True

    def start(self) -> None:
        if self.running:
            return
        began = time.monotonic()
        attempts = 1 if self.port else 3
        for attempt in range(attempts):
            if not self.port or attempt:
                self.port = _free_port()
            self._spawn()
            try:
                self._wait_ready(time.monotonic() + _READY_TIMEOUT_S)
            except ObservabilityError as error:
                self.kill()
                port_taken = isinstance(error, _PortTakenError) or (
                    "address already in use" in self.log_tail()
                )
                if attempt + 1 == attempts or not port_taken:
                    raise
            else:
                break
        self.startup_seconds = time.monotonic() - began

    def _spawn(self) -> None:
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self._command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                start_new_session=True,
            )
        _LIVE.add(self)

    def _wait_ready(self, deadline: float) -> None:
        with httpx.Client(timeout=_HTTP_TIMEOUT_S) as client:
            while True:
                if self._process is None or self._process.poll() is not None:
                    msg = f"{self._name} exited during startup:\n{self.log_tail()}"
                    raise ObservabilityError(msg)
                try:
                    if client.get(f"{self.url}/-/ready").status_code == 200:
                        if not self._is_ours(client):
                            msg = f"port {self.port} answered by another {self._name}"
                            raise _PortTakenError(msg)
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    msg = f"{self._name} not ready in time:\n{self.log_tail()}"
                    raise ObservabilityError(msg)
                time.sleep(0.05)
        self._wait_extra(deadline)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _signal_and_wait(self, sig: signal.Signals, timeout: float) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
        self._process = None
        _LIVE.discard(self)

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful shutdown (SIGTERM), SIGKILL if it takes longer than `timeout` seconds."""
        self._signal_and_wait(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """Abrupt death (SIGKILL): for "the server went away mid-run" tests."""
        self._signal_and_wait(signal.SIGKILL, 10.0)

    def restart(self) -> None:
        """Stop if running, then start again on the same port and data dir."""
        self.stop()
        self.start()

    def __enter__(self) -> _ManagedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url} running={self.running}>"


class PrometheusServer(_ManagedProcess):
    """A real Prometheus serving backfilled data from `data_dir` (no scrape targets).

    `now` and `series` are set when the server was started from `Series` (by the factory), so a
    test can compute expected values; they are None/empty for raw OpenMetrics.
    """

    _name = "prometheus"

    def __init__(self, workdir: Path, *, expected_metrics: set[str]) -> None:
        super().__init__(workdir)
        self.data_dir = workdir / "data"
        self.config_path = workdir / "prometheus.yml"
        self.expected_metrics = expected_metrics
        self.now: float | None = None
        self.series: list[Series] = []

    def _command(self) -> list[str]:
        return [
            _binary("prometheus"),
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--storage.tsdb.retention.time={_RETENTION}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]

    def _wait_extra(self, deadline: float) -> None:
        # Blocks load before /-/ready, but make "queryable" an explicit, checked condition.
        if not self.expected_metrics:
            return
        with httpx.Client(timeout=_HTTP_TIMEOUT_S) as client:
            while True:
                response = client.get(f"{self.url}/api/v1/label/__name__/values")
                names = set(response.json().get("data") or [])
                if self.expected_metrics <= names:
                    return
                if time.monotonic() > deadline:
                    missing = sorted(self.expected_metrics - names)
                    msg = f"prometheus is up but misses {missing}:\n{self.log_tail()}"
                    raise ObservabilityError(msg)
                time.sleep(0.1)

    def _is_ours(self, client: httpx.Client) -> bool:
        flags = client.get(f"{self.url}/api/v1/status/flags").json().get("data") or {}
        return bool(flags.get("storage.tsdb.path") == str(self.data_dir))

    def query(self, promql: str, *, at: float | None = None) -> list[dict[str, Any]]:
        """Instant query via raw HTTP (a convenience for tests; raises on error status)."""
        params: dict[str, str] = {"query": promql}
        if at is not None:
            params["time"] = _format_timestamp(at)
        response = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=_HTTP_TIMEOUT_S)
        response.raise_for_status()
        result: list[dict[str, Any]] = response.json()["data"]["result"]
        return result


_PROMETHEUS_CONFIG = """\
# Written by tests/support/observability.py: no scrape targets, the data is backfilled.
global:
  scrape_interval: 1m
  evaluation_interval: 1m
"""


def start_prometheus(openmetrics: str, *, workdir: Path) -> PrometheusServer:
    """Backfill `openmetrics` (must end with `# EOF`) into a fresh TSDB and start Prometheus.

    `workdir` must be empty or absent; it gets `metrics.om`, `data/`, `prometheus.yml` and
    `prometheus.log`. Returns once Prometheus is ready and every metric name in the text is
    queryable. Raises ObservabilityError with the log tail on failure.
    """
    if openmetrics.rstrip().splitlines()[-1:] != ["# EOF"]:
        msg = "OpenMetrics text must end with '# EOF'"
        raise ValueError(msg)
    workdir.mkdir(parents=True, exist_ok=True)
    if any(workdir.iterdir()):
        msg = f"{workdir} is not empty; every Prometheus needs a fresh data dir"
        raise ObservabilityError(msg)
    server = PrometheusServer(workdir, expected_metrics=_metric_names(openmetrics))
    server.config_path.write_text(_PROMETHEUS_CONFIG)
    server.data_dir.mkdir()
    if server.expected_metrics:
        source = workdir / "metrics.om"
        source.write_text(openmetrics)
        result = subprocess.run(
            [
                _binary("promtool"),
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                "--quiet",
                # one block for the whole span: promtool reads the input once per block, and
                # at its default (2h) a week-long series (a volume filling over days) made it
                # read a 70 MB corpus 84 times (78 s of CPU; 2.7 s like this)
                "--max-block-duration=240h",
                str(source),
                str(server.data_dir),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,  # checked below, with promtool's output in the message
        )
        if result.returncode != 0:
            msg = f"promtool backfill failed ({result.returncode}):\n{result.stderr[-4000:]}"
            raise ObservabilityError(msg)
    server.start()
    return server


# --------------------------------------------------------------------------------------------
# Alertmanager
# --------------------------------------------------------------------------------------------

_ALERTMANAGER_CONFIG = """\
# Written by tests/support/observability.py: alerts are kept and listed, never delivered.
# The receiver's name is unique per server, to recognise our own process on its port.
route:
  receiver: {receiver}
  group_by: [alertname]
receivers:
  - name: {receiver}
"""


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class AlertmanagerServer(_ManagedProcess):
    """A real Alertmanager (clustering off) with its own storage dir; API v2 helpers."""

    _name = "alertmanager"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.storage_dir = workdir / "storage"
        self.config_path = workdir / "alertmanager.yml"
        self.receiver = f"blackhole-{secrets.token_hex(6)}"

    def _command(self) -> list[str]:
        return [
            _binary("prometheus-alertmanager", "alertmanager"),
            f"--config.file={self.config_path}",
            f"--storage.path={self.storage_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ]

    def _is_ours(self, client: httpx.Client) -> bool:
        status = client.get(f"{self.url}/api/v2/status").json()
        return self.receiver in str(status.get("config", {}).get("original", ""))

    def post_alerts(self, alerts: Sequence[Mapping[str, Any]]) -> None:
        """POST /api/v2/alerts. Each alert: `labels` (needs `alertname`), optional `annotations`,
        `startsAt`, `endsAt`, `generatorURL`. Use `AlertmanagerServer.alert()` to build one."""
        response = httpx.post(
            f"{self.url}/api/v2/alerts", json=list(alerts), timeout=_HTTP_TIMEOUT_S
        )
        response.raise_for_status()

    @staticmethod
    def alert(
        alertname: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        active_for: timedelta = timedelta(hours=1),
    ) -> dict[str, Any]:
        """Build an API v2 alert that started 5 minutes ago and is active for `active_for`."""
        now = datetime.now(UTC)
        return {
            "labels": {"alertname": alertname, **(labels or {})},
            "annotations": dict(annotations or {}),
            "startsAt": _rfc3339(now - timedelta(minutes=5)),
            "endsAt": _rfc3339(now + active_for),
        }

    def alerts(self) -> list[dict[str, Any]]:
        """GET /api/v2/alerts (all alerts Alertmanager holds, silenced ones included)."""
        response = httpx.get(f"{self.url}/api/v2/alerts", timeout=_HTTP_TIMEOUT_S)
        response.raise_for_status()
        result: list[dict[str, Any]] = response.json()
        return result

    def silences(self) -> list[dict[str, Any]]:
        """GET /api/v2/silences (every state: active, pending, expired)."""
        response = httpx.get(f"{self.url}/api/v2/silences", timeout=_HTTP_TIMEOUT_S)
        response.raise_for_status()
        result: list[dict[str, Any]] = response.json()
        return result

    def expire_all_silences(self) -> None:
        """Expire every silence that is not expired yet (isolation between tests)."""
        for silence in self.silences():
            if silence["status"]["state"] != "expired":
                httpx.delete(
                    f"{self.url}/api/v2/silence/{silence['id']}", timeout=_HTTP_TIMEOUT_S
                ).raise_for_status()


def start_alertmanager(workdir: Path, config: str | None = None) -> AlertmanagerServer:
    """Start Alertmanager on a free 127.0.0.1 port with storage and config in `workdir`.

    `config`: an alertmanager.yml of the test's own (e.g. a webhook receiver), with
    `{receiver}` where the receiver's name goes (the name tells our process on its port)."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = AlertmanagerServer(workdir)
    text = (config or _ALERTMANAGER_CONFIG).replace("{receiver}", server.receiver)
    server.config_path.write_text(text)
    server.storage_dir.mkdir(exist_ok=True)
    server.start()
    return server


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------

#: The small series set behind the `prometheus` fixture (three hours, one sample a minute):
#: - `triage_test_requests_total{service="checkout-api", code="200"}` grows 6/min (rate 0.1/s);
#: - `triage_test_requests_total{service="checkout-api", code="503"}` grows 60/min (rate 1/s)
#:   during the last 30 minutes and is flat before (the "5xx after a deploy" shape);
#: - `triage_test_queue_depth{queue="orders"}` is a gauge equal to minutes-ago (180 .. 0).
BUILTIN_SERIES: list[Series] = [
    Series(
        name="triage_test_requests_total",
        type="counter",
        labels={"service": "checkout-api", "code": "200"},
        samples=[(-60.0 * m, 6.0 * (180 - m)) for m in range(180, -1, -1)],
    ),
    Series(
        name="triage_test_requests_total",
        type="counter",
        labels={"service": "checkout-api", "code": "503"},
        samples=[(-60.0 * m, 60.0 * max(0, 30 - m)) for m in range(180, -1, -1)],
    ),
    Series(
        name="triage_test_queue_depth",
        type="gauge",
        labels={"queue": "orders"},
        samples=[(-60.0 * m, float(m)) for m in range(180, -1, -1)],
    ),
]


#: How long the factory continues series past "now" by default (seconds): one hour covers a
#: long test session, so the product's queries at the wall clock keep seeing "current" data.
DEFAULT_EXTEND_FOR = 3600.0


class PrometheusFactory:
    """Starts Prometheus servers for tests; every server is stopped at session end."""

    def __init__(self, make_workdir: Callable[[str], Path]) -> None:
        self._make_workdir = make_workdir
        self.servers: list[PrometheusServer] = []

    def __call__(
        self,
        series: Sequence[Series] | str,
        *,
        now: float | None = None,
        name: str = "prom",
        extend_for: float = DEFAULT_EXTEND_FOR,
    ) -> PrometheusServer:
        """Start a server with `series` (rendered at `now`) or with raw OpenMetrics text.

        `now` defaults to the current time truncated to whole seconds, so queries at integer
        timestamps (what most clients send) land exactly on samples. `extend_for` continues the
        series past `now` (see `openmetrics_from_series`); pass 0 for exactly the given samples.
        """
        if isinstance(series, str):
            text, used_now, kept = series, now, []
        else:
            used_now = float(math.floor(time.time())) if now is None else now
            text = openmetrics_from_series(series, used_now, extend_for=extend_for)
            kept = list(series)
        server = start_prometheus(text, workdir=self._make_workdir(name))
        server.now, server.series = used_now, kept
        self.servers.append(server)
        return server

    def stop_all(self) -> None:
        for server in self.servers:
            server.stop()


@pytest.fixture(scope="session")
def prometheus_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusFactory]:
    """Session-wide factory: `prometheus_factory(series, now=...) -> PrometheusServer`."""
    factory = PrometheusFactory(lambda name: tmp_path_factory.mktemp(name, numbered=True))
    yield factory
    factory.stop_all()


@pytest.fixture(scope="session")
def prometheus(prometheus_factory: PrometheusFactory) -> PrometheusServer:
    """A session Prometheus holding `BUILTIN_SERIES`, rendered at session start (`.now`).

    Tests that kill or restart a server should start their own via `prometheus_factory`.
    """
    return prometheus_factory(BUILTIN_SERIES, name="prom-builtin")


@pytest.fixture(scope="session")
def alertmanager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AlertmanagerServer]:
    """A session Alertmanager (API v2 at `.url`); tests expire the silences they create."""
    server = start_alertmanager(tmp_path_factory.mktemp("alertmanager"))
    yield server
    server.stop()
