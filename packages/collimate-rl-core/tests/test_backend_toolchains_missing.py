"""A language whose toolchain the host lacks: its finder says so, naming
the language and the Debian packages that would install it (what a request
for it, ``/v1/health`` and ``collimate doctor`` then tell the user)."""

from __future__ import annotations

import pytest

from collimate_rl.local_backend.toolchains import _FINDERS, MissingToolchain

#: Each language run from the host's own toolchain, and its Debian packages.
PACKAGES = {
    "bash": "bash",
    "perl": "perl",
    "php": "php-cli",
    "lua": "lua5.4",
    "ruby": "ruby",
    "csharp": "mono-mcs mono-runtime",
    "d": "ldc",
    "d_ut": "ldc",
    "r": "r-base-core",
    "racket": "racket",
    "verilog": "iverilog",
    "sql": "sqlite3",
    "scala": "scala",
    "kotlin": "kotlin",
}


@pytest.mark.parametrize(("language", "package"), PACKAGES.items())
def test_a_missing_toolchain_names_its_package(
    monkeypatch: pytest.MonkeyPatch, language: str, package: str
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    missing = _FINDERS[language]()
    assert isinstance(missing, MissingToolchain)
    assert f"apt-get install {package}" in missing.message() and repr(language) in missing.message()
