"""The judge: decides, separately from the worker, whether a deliverable really went through.

It holds only the read registry (an import-linter contract forbids the mutate tools and the
ledger). Its gates and verdicts are specified in ../shared/DESIGN.md, "The judge".
"""
