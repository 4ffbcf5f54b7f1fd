"""The Slack app manifest (helm/slack-app-manifest.yaml) asks for exactly the scopes the code
needs: every Web API method the bot calls is in triage/slack/client.py's METHOD_SCOPES (read
from the source, so a new call without its scope fails here), every event it listens to in
EVENT_SCOPES, the manifest's scopes and events are their union, and the README's scope list
is the manifest's."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from triage.slack.client import EVENT_SCOPES, METHOD_SCOPES

ROOT = Path(__file__).resolve().parents[2]
SLACK = ROOT / "triage" / "slack"
MANIFEST = ROOT / "helm" / "slack-app-manifest.yaml"
# slack_sdk client methods the code calls by their Python names, and the API methods they are
_SDK = {
    "auth_test": ("auth.test",),
    "views_open": ("views.open",),
    "files_upload_v2": ("files.getUploadURLExternal", "files.completeUploadExternal"),
}


def _called() -> set[str]:
    called: set[str] = set()
    for path in SLACK.glob("*.py"):
        text = path.read_text()
        called |= set(re.findall(r'_call\(\s*"([a-z]+\.[A-Za-z.]+)"', text))
        for name, methods in _SDK.items():
            if re.search(rf"\.{name}\(", text):
                called |= set(methods)
    return called


def _events() -> set[str]:
    return {
        e for p in SLACK.glob("*.py") for e in re.findall(r'\.event\("([a-z_]+)"\)', p.read_text())
    }


def test_every_call_and_event_has_its_scopes_listed() -> None:
    called = _called()
    assert called, "the scan finds the calls"
    assert called == set(METHOD_SCOPES), (
        f"not listed: {sorted(called - set(METHOD_SCOPES))}; "
        f"listed but never called: {sorted(set(METHOD_SCOPES) - called)}"
    )
    assert _events() == set(EVENT_SCOPES)


def test_the_manifest_asks_for_exactly_those_scopes_and_events() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    needed = {s for scopes in [*METHOD_SCOPES.values(), *EVENT_SCOPES.values()] for s in scopes}
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == needed
    assert "channels:history" in needed  # crash recovery reads the thread
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == set(EVENT_SCOPES)
    assert settings["interactivity"]["is_enabled"] is True  # approval and review buttons
    for url in (
        settings["event_subscriptions"]["request_url"],
        settings["interactivity"]["request_url"],
    ):
        assert url.endswith("/slack/events")


def test_the_readme_lists_the_manifest_scopes() -> None:
    readme = (ROOT / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if "TRIAGE_SLACK__BOT_TOKEN=xoxb" in ln]
    listed = set(re.findall(r"[a-z_]+:[a-z_]+", line.partition("scopes:")[2]))
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert listed == set(manifest["oauth_config"]["scopes"]["bot"])
    assert "helm/slack-app-manifest.yaml" in readme
