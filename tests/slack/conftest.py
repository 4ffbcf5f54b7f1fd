from tests.mutations.cluster import ledger_cluster, target_ns

__all__ = ["ledger_cluster", "target_ns"]
