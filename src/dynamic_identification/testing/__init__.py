"""Ground truth for tests and benches: realistic robot logs, stick-slip and direct-drive simulations, payload runs.

Nothing the package runs for its users imports this subpackage (``test/test_layers.py`` checks it); it may use
``core`` and ``io``. It ships with the package so that benches and users' own tests can simulate the logs the
identification is judged on (stamp jitter and hiccups, gaps, stiction, coloured noise).
"""
