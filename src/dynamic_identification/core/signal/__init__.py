"""Signals: zero-phase filters, derivatives and decimation, stamps and gaps, alignment of topics, periodic averaging."""
