"""Replay (paper B.3): consolidation by ReplayScore, pruning, forgetting, the consolidation
lease."""
