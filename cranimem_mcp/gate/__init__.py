"""The gate (paper B.1): which writes are kept, and their utility tags."""
