"""The Dramatiq broker module (what `ratchet worker` hands to Dramatiq's CLI).

Importing it reads the settings once, builds the broker of RATCHET_BROKER_URL and declares the
``advance_run`` actor on it; each worker process also runs a reaper.
"""

from __future__ import annotations

from app.settings import load_settings
from app.worker import build_wakeups

wakeups = build_wakeups(load_settings(), reaper=True)
broker = wakeups.broker
