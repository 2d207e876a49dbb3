"""A tiny third-party reward plugin for collimate-rl (see ``plugin``)."""

__version__ = "0.1.0"
