"""The client of the code environment (``AutoEnv`` imports ``CollimateCodeEnv``
from here, as OpenEnv's discovery expects ``<module>.client``)."""

from __future__ import annotations

from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import State

from .models import CollimateCodeAction, CollimateCodeObservation

__all__ = ["CollimateCodeAction", "CollimateCodeEnv", "CollimateCodeObservation"]


class CollimateCodeEnv(EnvClient[CollimateCodeAction, CollimateCodeObservation, State]):  # type: ignore[misc]
    """Episodes over ``/ws``: ``reset()`` poses a problem (``reset(row=...)``
    a row of yours, ``reset(index=i)`` the server's i-th), ``step(
    CollimateCodeAction(code=...))`` grades a submission."""

    def _step_payload(self, action: CollimateCodeAction) -> dict[str, Any]:
        return {"code": action.code}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CollimateCodeObservation]:
        fields = dict(payload.get("observation") or {})
        fields.pop("metadata", None)
        observation = CollimateCodeObservation(
            **fields,
            done=bool(payload.get("done", False)),
            reward=payload.get("reward"),
            metadata=payload.get("metadata") or {},
        )
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
        )

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)
