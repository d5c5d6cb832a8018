"""The secrets guard: credentials never reach memory verbatim (runs before the gate)."""
