"""Text from tool output or from users, made inert for Slack.

Slack reads `<…>` as markup: `<!channel>` pings a whole channel, `<@U123>` pings a person,
`<http://x|y>` plants a link that says something else. A log line, an event message, a model's
draft or the user's own words quoted back can hold any of these, so every such text is
escaped as Slack's formatting guide asks (`&`, `<`, `>` as entities) before it joins a
message; our own markup (the ticket's owner, links we build) is added afterwards. Slack sends
a user's text already escaped: `unescape` gives back what they typed, once, on the way in.
"""

from __future__ import annotations


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
