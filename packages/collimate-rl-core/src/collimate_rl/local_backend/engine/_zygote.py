"""Entry point of a warm interpreter: ``python -I -S _zygote.py CONFIG``.

Loads the package ``collimate_rl/guest/zygote`` (the zygote, clone and
exec-child code) without importing ``collimate_rl`` or any package around
it, and runs the zygote. The
package is registered under its real name so its modules import each other
as usual; only its own modules are ever executed.
"""

import os
import sys
import types

GUEST = "collimate_rl.guest.zygote"


def load_guest() -> types.ModuleType:
    package = types.ModuleType(GUEST)
    here = os.path.dirname(os.path.abspath(__file__))  # collimate_rl/local_backend/engine
    package.__path__ = [os.path.normpath(os.path.join(here, "..", "..", "guest", "zygote"))]
    package.__package__ = GUEST
    sys.modules[GUEST] = package
    # (a fromlist, so that the top-level package is not imported as well)
    zygote: types.ModuleType = __import__(GUEST + ".zygote", fromlist=["main"])
    return zygote


if __name__ == "__main__":
    load_guest().main()
