"""Registers ``collimate_code`` with skyrl-gym when ``skyrl_gym`` is imported.

Run at interpreter start by ``collimate_rl_skyrl_autoregister.pth`` (which
``collimate-rl-skyrl`` installs next to it in site-packages), so a Ray
worker that imports ``skyrl_gym`` finds the env without any user import.

It must cost nothing in processes that never import ``skyrl_gym``: it is a
top-level module (importing ``collimate_rl`` would load core), it imports
only modules the interpreter has already loaded at start, and all it does
is put one finder at the front of ``sys.meta_path``. That finder answers
for ``skyrl_gym`` only: it asks the other finders for the real spec and
wraps its loader, so that right after ``skyrl_gym`` has run, the env is
registered (with a string entry point: nothing more is imported until
``make``). Then the finder removes itself.

``COLLIMATE_RL_SKYRL_AUTOREGISTER=0`` (or ``false``, ``no``, ``off``), read
when ``skyrl_gym`` is first imported, leaves skyrl-gym's registry alone. A
failure here never breaks ``import skyrl_gym``: it becomes a warning.
"""

# Only modules every interpreter has loaded before site-packages' .pth files
# run (no typing, not even __future__): this module must add no imports.
import os
import sys

TYPE_CHECKING = False  # mypy reads it as True; typing itself is not imported
if TYPE_CHECKING:
    from typing import Any

TARGET = "skyrl_gym"
ENV_VAR = "COLLIMATE_RL_SKYRL_AUTOREGISTER"
OFF = frozenset({"0", "false", "no", "off"})
ENV_ID = "collimate_code"
ENTRY_POINT = "collimate_rl.skyrl.env:CollimateCodeEnv"


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "1").strip().lower() not in OFF


def register(module: "Any") -> None:
    """Register the env in a freshly imported ``skyrl_gym`` (idempotent)."""
    if not enabled():
        return
    try:
        if ENV_ID not in module.envs.registration.registry:
            module.register(id=ENV_ID, entry_point=ENTRY_POINT)
    except Exception as exc:  # never break the user's import
        import warnings

        warnings.warn(
            f"collimate-rl-skyrl could not register {ENV_ID!r} with skyrl_gym ({exc!r}); "
            "call collimate_rl.skyrl.register() yourself",
            RuntimeWarning,
            stacklevel=2,
        )


class _Loader:
    """Runs the real loader, then registers; everything else is the real loader's."""

    def __init__(self, loader: "Any") -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> "Any":
        return getattr(self._loader, name)

    def create_module(self, spec: "Any") -> "Any":
        return self._loader.create_module(spec)

    def exec_module(self, module: "Any") -> None:
        # the module keeps the real loader (importlib.resources, reloads, pickling)
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        register(module)


class Finder:
    """A ``sys.meta_path`` finder that answers only for ``skyrl_gym``, once."""

    #: how a finder of ours is recognised, even from a reloaded copy of this module
    collimate_rl_skyrl_autoregister = True

    def find_spec(self, fullname: str, path: "Any" = None, target: "Any" = None) -> "Any":
        if fullname != TARGET:
            return None
        uninstall()  # once is enough; also keeps the lookup below from finding us
        for finder in list(sys.meta_path):
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def uninstall() -> None:
    sys.meta_path[:] = [
        f for f in sys.meta_path if not getattr(f, "collimate_rl_skyrl_autoregister", False)
    ]


def install() -> None:
    """Put the finder first (once; ``skyrl_gym`` already imported: register now)."""
    module = sys.modules.get(TARGET)
    if module is not None:
        register(module)
        return
    if not any(getattr(f, "collimate_rl_skyrl_autoregister", False) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder())


install()
