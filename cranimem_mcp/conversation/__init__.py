"""Transcript-aware ranking: speakers, threads and neighbours, an option for conversation scopes."""
