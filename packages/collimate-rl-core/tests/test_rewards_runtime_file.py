"""The grader runtime as templates preload it: the file (named by its
content, in a directory private to the user, shared by every server of one
version) and the module it becomes in a bare interpreter."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from collimate_rl.rewards.program import runtime_file, runtime_id, shared_runtime_file


def test_the_preloaded_runtime_reports_the_id_the_sdk_expects() -> None:
    """As a template preloads it: the file run as a module, by a bare
    interpreter (no collimate_rl package), hashes itself to the SDK's id."""
    from collimate_rl.rewards import guest_runtime

    assert runtime_id() == guest_runtime.RUNTIME_ID
    path = runtime_file()
    probe = (
        "import sys, types\n"
        "m = types.ModuleType('collimate_rl.rewards.guest_runtime'); m.__file__ = sys.argv[1]\n"
        "exec(compile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec', dont_inherit=True),"
        " m.__dict__)\n"
        "print(m.RUNTIME_ID, callable(m.main), callable(m._grade_pytest),"
        " 'hashlib' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, path], capture_output=True, text=True, check=True
    )
    # (without OpenSSL: every process forked from the template would map it)
    assert out.stdout.split() == [runtime_id(), "True", "True", "False"]


def test_the_runtime_file_is_shared_by_content_and_leaves_nothing_per_process(
    tmp_path: Path,
) -> None:
    """Named by its content in a directory private to this user: two
    servers of one version share it, a killed server leaves nothing behind,
    and a half-written or altered file is written again."""
    text = b"RUNTIME = 1\n"
    first = shared_runtime_file(tmp_path, text)
    assert first is not None and first.read_bytes() == text
    folder = first.parent
    assert folder.name == f"collimate-rl-{os.getuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert shared_runtime_file(tmp_path, text) == first  # reused, not a second copy
    first.write_bytes(b"RUNTIME = 2  # altered\n")
    assert shared_runtime_file(tmp_path, text) == first and first.read_bytes() == text
    other = shared_runtime_file(tmp_path, b"RUNTIME = 3\n")  # another version
    assert other is not None and other != first
    assert sorted(p.name for p in folder.iterdir()) == sorted([first.name, other.name])


def test_a_runtime_folder_that_is_not_private_is_not_used(tmp_path: Path) -> None:
    folder = tmp_path / f"collimate-rl-{os.getuid()}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)  # (mkdir's mode is masked by the umask)
    assert shared_runtime_file(tmp_path, b"RUNTIME = 1\n") is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / f"collimate-rl-{os.getuid()}").symlink_to(elsewhere)
    assert shared_runtime_file(linked, b"RUNTIME = 1\n") is None
    assert list(elsewhere.iterdir()) == []


def test_the_server_runtime_file_is_the_shared_one() -> None:
    path = Path(runtime_file())
    assert path.parent.name == f"collimate-rl-{os.getuid()}"
    assert path.name == f"grader_{runtime_id()}.py"
