"""``python -m cranimem_mcp.cli``: the command line."""

from cranimem_mcp.cli.main import main

main()
