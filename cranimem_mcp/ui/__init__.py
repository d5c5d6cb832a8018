"""The inspector: a small web UI over the memory service."""
