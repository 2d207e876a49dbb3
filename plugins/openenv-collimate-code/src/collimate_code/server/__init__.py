"""The code environment's server: OpenEnv's ``create_app`` around
:class:`~.environment.CollimateCodeEnvironment` (``python -m collimate_code.server``)."""
