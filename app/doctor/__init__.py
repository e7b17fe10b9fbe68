"""``ratchet doctor``: what this host's configuration still needs, one line per check, and the
same checks at the start of ``serve`` and ``worker`` (``app/doctor/startup.py``)."""
