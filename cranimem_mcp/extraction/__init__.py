"""Facts from sentences: the parser, the heuristic extractor and its rules, the linkage into the
graph."""
