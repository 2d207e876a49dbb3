"""The version of the core distribution (read by hatchling at build time)."""

__version__ = "0.9.0"
