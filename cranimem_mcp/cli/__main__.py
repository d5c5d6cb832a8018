"""``python -m cranimem_mcp.cli``: the command line."""

import sys

from cranimem_mcp.cli.main import main

sys.exit(main())
