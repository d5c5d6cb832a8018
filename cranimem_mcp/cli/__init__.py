"""The command line: ``cranimem-mcp`` and its subcommands."""
