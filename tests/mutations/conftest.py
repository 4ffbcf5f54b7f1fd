from tests.mutations.cluster import agent, ledger_cluster, target_ns

__all__ = ["agent", "ledger_cluster", "target_ns"]
