"""The benchmark harness: ``cranimem-mcp eval hotpotqa`` (quality under noise, paper Section 4)
and ``cranimem-mcp bench`` (latency and memory at 1k/10k/100k memories).

Nothing in the package imports this one; it drives the engine through its public API.
"""
