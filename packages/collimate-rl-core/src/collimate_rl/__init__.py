"""collimate-rl: Collimate microVMs as the sandboxed reward grader for RL.

``collimate_rl`` is shared by several distributions: core ships this file and
the plugins ship only their subpackage (``collimate_rl.skyrl``, ...), so the
path is extended to find them wherever they were installed, editable or not.

Every public name is importable from here directly, as in the earlier
single-package release.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

# ruff: noqa: E402, I001
from .__about__ import __version__
from . import errors as _errors
from .errors import *  # noqa: F403 (the typed error family: errors.__all__)

# --- transports (client/, gateway/, nodes/, transport/) ---
from .client import AsyncCollimateClient, CollimateClient
from .gateway import AsyncGatewayClient, GatewayClient
from .nodes import AsyncMultiNodeClient, MultiNodeClient
from .nodes import renamed as _renamed
from .transport import SessionClient, connect, connect_async
# --- end transports ---

# --- plugins ---
from .plugins import get_plugin_manager, hookimpl, hookspec
# --- end plugins ---

# --- grading and sandbox (seeds.py, rewards/, sandbox/, manifest) ---
from .seeds import DET_SEED, fresh_seed, group_seeds, is_valid_seed, seed_from_key
from .rewards import (
    AssertReward,
    CallReward,
    ContestReward,
    GuestReward,
    ProgramReward,
    PropertyReward,
    PytestReward,
    RewardSpec,
    RowTask,
    RowTasks,
    StdinStdoutReward,
    StdioReward,
    UnitTestReward,
    candidate_program,
    extract_code,
    normalize_value,
    prompt_code,
    reward_spec_from_ground_truth,
    row_task,
)
from .batch import grade_batch, grade_batch_async
from .grading import GradeResult, grade, grade_async
from .sandbox import AsyncSandbox, ExecResult, Sandbox, rollout_once, rollout_once_async
from .kernel import AsyncKernel, CellError, CellResult, Kernel
from .python_tool import AsyncPythonTool, PythonTool, cell_text
from .manifest import ReplayManifest, ReplayReport, record_manifest, replay_manifest
# --- end grading ---

# --- gateway flows (gateway_flows/, egress.py) ---
from .egress import RL_LEAKAGE, egress_policy
from .gateway_flows import (
    AsyncEnv,
    AsyncForkGroup,
    AsyncSession,
    AsyncTemplate,
    AsyncTemplateHandle,
    Env,
    ForkGroup,
    Ready,
    Session,
    Template,
    TemplateHandle,
    TemplateStatus,
)
from .template import open_session
# --- end gateway flows ---

# --- fleet (fleetview.py over the gateway; fleet.py, kubectl.py self-hosted) ---
from .fleetview import FleetStatus, FleetView, NodePool
from .fleet import Fleet, RolloutHandle
# --- end fleet ---

# --- services reached from outside (tunnel.py) ---
from .tunnel import PortForward, open_port_forward
# --- end services reached from outside ---

# --- browser (browser.py; Playwright is imported only when it is called) ---
from .browser import connect_browser
# --- end browser ---

__all__ = [
    "__version__",
    # --- transports ---
    "CollimateClient",
    "AsyncCollimateClient",
    "GatewayClient",
    "AsyncGatewayClient",
    "MultiNodeClient",
    "AsyncMultiNodeClient",
    "SessionClient",
    "connect",
    "connect_async",
    # --- plugins ---
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    # --- grading ---
    "DET_SEED",
    "fresh_seed",
    "group_seeds",
    "is_valid_seed",
    "seed_from_key",
    "RewardSpec",
    "RowTask",
    "RowTasks",
    "GuestReward",
    "UnitTestReward",
    "PropertyReward",
    "StdioReward",
    "AssertReward",
    "PytestReward",
    "CallReward",
    "StdinStdoutReward",
    "ContestReward",
    "ProgramReward",
    "candidate_program",
    "extract_code",
    "normalize_value",
    "prompt_code",
    "reward_spec_from_ground_truth",
    "row_task",
    "GradeResult",
    "grade",
    "grade_batch",
    "grade_async",
    "grade_batch_async",
    "Sandbox",
    "AsyncSandbox",
    "ExecResult",
    "Kernel",
    "AsyncKernel",
    "CellResult",
    "CellError",
    "PythonTool",
    "AsyncPythonTool",
    "cell_text",
    "rollout_once",
    "rollout_once_async",
    "ReplayManifest",
    "ReplayReport",
    "record_manifest",
    "replay_manifest",
    # --- gateway flows ---
    "RL_LEAKAGE",
    "egress_policy",
    "Env",
    "AsyncEnv",
    "Session",
    "AsyncSession",
    "ForkGroup",
    "AsyncForkGroup",
    "Ready",
    "Template",
    "AsyncTemplate",
    "TemplateHandle",
    "AsyncTemplateHandle",
    "TemplateStatus",
    "open_session",
    # --- fleet ---
    "FleetView",
    "FleetStatus",
    "NodePool",
    "Fleet",
    "RolloutHandle",
    # --- services reached from outside ---
    "PortForward",
    "open_port_forward",
    # --- browser ---
    "connect_browser",
]
__all__ += _errors.__all__


def __getattr__(name: str) -> object:
    # AsyncNodePool was the async many-node client until 0.9.0 (now
    # AsyncMultiNodeClient): still importable, with a DeprecationWarning.
    # NodePool is not here: it is the 0.8.0 fleet-view row again.
    if name == "AsyncNodePool":
        return _renamed(name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
