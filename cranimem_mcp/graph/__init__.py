"""The knowledge graph (paper B.4): the RDF store with provenance, local or in a SPARQL server."""
