"""The bounded episodic buffer (paper B.2): the LanceDB table of every memory, its records and
working set."""
