"""The error tree. Every failure the engine anticipates is one of these::

    CranimemError
     ├── ConfigError          bad configuration, or a store opened with the wrong embedder
     ├── InvalidInput         a caller's argument is malformed; nothing was changed
     ├── NotFound             an id or scope that does not exist
     ├── StoreError           LanceDB or the graph store failed
     │    └── LeaseLost       this replica lost the consolidation lease: commit refused
     ├── BackendUnavailable   a model backend (Ollama) cannot be reached or timed out
     ├── ModelOutputError     a model answered, but not in the contract
     └── LeaseHeld            another replica holds the consolidation lease (lease.py)

Third-party exceptions are translated once, where they arise (``raise X(...) from exc``);
the MCP layer maps the whole tree to ``ToolError`` once.
"""


class CranimemError(Exception):
    """Base of every error cranimem-mcp raises on purpose."""


class ConfigError(CranimemError):
    pass


class InvalidInput(CranimemError):
    pass


class NotFound(CranimemError):
    pass


class StoreError(CranimemError):
    pass


class BackendUnavailable(CranimemError):
    pass


class ModelOutputError(CranimemError):
    pass


class LeaseHeld(CranimemError):
    pass


class LeaseLost(StoreError):
    pass
