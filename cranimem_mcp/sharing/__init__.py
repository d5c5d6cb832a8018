"""Sharing a data directory between processes: the owner opens the engine, others bridge."""
