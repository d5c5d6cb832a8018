"""Dual-path recall (paper B.5): the episodic and graph paths into one labelled context."""
