"""Shared test settings.

Hypothesis runs without deadlines: a verdict must never depend on how fast the machine is (CI machines
are shared and slow at times), so no test here fails for taking long, and no example is refused as too slow.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("relavium", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("relavium")
