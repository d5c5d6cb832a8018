"""The benchmark harness: ``cranimem-mcp eval hotpotqa`` (quality under noise, paper Section 4),
``eval temporal`` (changing facts), ``eval locomo`` and ``eval longmemeval`` (evidence recall@k on
LoCoMo conversations and LongMemEval histories) and ``cranimem-mcp bench`` (latency and memory
at 1k/10k/100k memories).

Nothing in the package imports this one; it drives the engine through its public API.
"""
