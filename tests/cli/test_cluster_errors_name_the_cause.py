"""A cluster that cannot be used is named for what is wrong, with the next step: credentials
rejected (401), a CA that cannot verify the apiserver, a server that does not speak TLS, an
apiserver nobody answers at. The apiserver is faked at the wire (a local HTTP(S) server
answering as kube-apiserver does), the client is the product's own."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from triage.app import App, Request
from triage.core.errors import (
    EXIT_CLUSTER,
    ClusterUnreachable,
    CredentialsRejected,
    TLSInvalid,
    TriageError,
)
from triage.core.settings import Settings


class _Unauthorized(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": "Unauthorized",
                "reason": "Unauthorized",
                "code": 401,
            }
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _serve(tls: ssl.SSLContext | None = None) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port
    server.shutdown()
    server.server_close()


@pytest.fixture
def http_apiserver() -> Iterator[int]:
    yield from _serve()


def _pem(tmp: Path, name: str) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp / f"{name}.crt", tmp / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.fixture
def tls_apiserver(tmp_path: Path) -> Iterator[int]:
    cert, key = _pem(tmp_path, "server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    yield from _serve(context)


def _product(tmp: Path, server: str, **cluster: Any) -> App:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": {"token": "a-token-the-apiserver-rejects"}}],
    }
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    settings = Settings()
    settings.kube.kubeconfig = path
    settings.kube.timeout_s = 3
    return App.live(settings, changes=False)


def _preflight(product: App) -> TriageError:
    goal = product.intake(Request(words="why is checkout down", namespace="shop"))
    with pytest.raises(TriageError) as caught:
        product.preflight(goal)
    assert caught.value.exit_status == EXIT_CLUSTER
    return caught.value


def test_a_rejected_token_says_the_credentials_were_rejected(tmp_path, http_apiserver) -> None:
    error = _preflight(_product(tmp_path, f"http://127.0.0.1:{http_apiserver}"))
    assert isinstance(error, CredentialsRejected)
    assert "reachable" not in str(error)


def test_a_ca_that_did_not_sign_the_server_says_so(tmp_path, tls_apiserver) -> None:
    other_ca, _ = _pem(tmp_path, "other")
    product = _product(
        tmp_path, f"https://127.0.0.1:{tls_apiserver}", **{"certificate-authority": str(other_ca)}
    )
    error = _preflight(product)
    assert isinstance(error, TLSInvalid)
    assert "certificate-authority" in str(error)
    assert "cannot reach" not in str(error)


def test_a_ca_that_is_no_certificate_says_so(tmp_path, tls_apiserver) -> None:
    broken = tmp_path / "broken-ca.crt"
    broken.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
    product = _product(
        tmp_path, f"https://127.0.0.1:{tls_apiserver}", **{"certificate-authority": str(broken)}
    )
    error = _preflight(product)
    assert isinstance(error, TLSInvalid)
    assert "certificate-authority" in str(error)


def test_a_server_that_does_not_speak_tls_says_so(tmp_path, http_apiserver) -> None:
    error = _preflight(_product(tmp_path, f"https://127.0.0.1:{http_apiserver}"))
    assert isinstance(error, TLSInvalid)
    assert "does not answer TLS" in str(error)


def test_nobody_listening_says_unreachable(tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    error = _preflight(_product(tmp_path, f"http://127.0.0.1:{port}"))
    assert isinstance(error, ClusterUnreachable)
    assert not isinstance(error, TLSInvalid)
