"""Triage: the agent. Intake, investigation, drafting, and the surfaces people use.

The graph lives in `graph.py`, its state in `state.py`, the planners in `planner_*.py`; the
checker is a separate package (`judge/`) and access to the outside world is `tools/`.
"""

__version__ = "0.1.0"
