from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# CI runs are reproducible (derandomize) and every property runs at least 1,000 examples.
settings.register_profile(
    "ci",
    max_examples=1000,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
