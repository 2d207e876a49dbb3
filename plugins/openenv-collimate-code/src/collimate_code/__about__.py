"""The version of the code environment distribution (read by hatchling)."""

__version__ = "0.1.0"
