"""The MCP face: tools, resources, roots and the HTTP transport."""
