"""Access to the outside world: Kubernetes, Prometheus and Alertmanager.

Reading and mutating are separate modules and separate registries (`read.py` vs the mutate
registry); an import-linter contract keeps read modules from importing mutate modules, and
`tools` knows nothing of the agent (`triage`) or the judge.
"""
