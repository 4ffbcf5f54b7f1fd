"""The Slack bot: bolt app (app.py), inbox (inbox.py), worker (worker.py), the ticket
(ticket.py), Block Kit (blocks.py), approvals (approvals.py) and every string it says
(messages.py). `triage serve` (triage/server.py) runs it."""
