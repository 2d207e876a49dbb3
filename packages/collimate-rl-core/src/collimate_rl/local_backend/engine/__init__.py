"""Execution engines of the local backend (see :mod:`.api`)."""
