"""The languages the local backend compiles and runs, found on the host.

Each :class:`Toolchain` says how a contest judge builds and runs a program
in its language (the flags are the judges', see ``docs/languages.md``):
the compile command (None for a language run from source), the run
command, the environment both get and the source file's name. ``{src}``,
``{build}`` and ``{dir}`` in a command are the source file, the build
directory and the run's directory inside the clone. :func:`toolchain_trees`
names the host trees a clone must see for them to work (a rustup toolchain
lives under ``/root``, which clones do not otherwise see).

:func:`find_toolchains` looks for each on the host once, with its version
(part of every compile-cache key: a new compiler never serves an old
build). A language that is not installed is a :class:`MissingToolchain`
that names what to install, which is what a request for it is told.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from .go_cache import GO_LIBRARIES, seed_dir
from .host_tools import run_tool
from .jvm_archive import QUIET, archive_flag
from .jvm_languages import KOTLIN_LAUNCHER, KOTLIN_LAUNCHER_CLASS
from .precompiled import pch_dir, pch_root

#: The built-in template compiles and runs happen in.
LANGUAGE_TEMPLATE: Final = "lang"
#: Where a compiled program is started from, and what its processes see.
_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
#: The names SandboxFusion (and so verl) gives the languages, to ours.
ALIASES: Final = {
    "cpp": "cpp",
    "c++": "cpp",
    "java": "java",
    "nodejs": "javascript",
    "javascript": "javascript",
    "js": "javascript",
    "typescript": "typescript",
    "ts": "typescript",
    "rust": "rust",
    "rs": "rust",
    "go": "go",
    "golang": "go",
    "python": "python",
    "python3": "python",
    "py": "python",
    "bash": "bash",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "ruby": "ruby",
    "rb": "ruby",
    "pytest": "pytest",
    "junit": "junit",
    "jest": "jest",
    "go_test": "go_test",
    # SandboxFusion's languages no registry here supplies (see _UNSUPPLIED)
    "julia": "julia",
    "jl": "julia",
    "swift": "swift",
    "lean": "lean",
    "lean4": "lean",
    "cuda": "cuda",
    "python_gpu": "python_gpu",
    "csharp": "csharp",
    "cs": "csharp",
    "c#": "csharp",
    "d": "d",
    "d_ut": "d_ut",
    "r": "r",
    "racket": "racket",
    "rkt": "racket",
    "verilog": "verilog",
    "sql": "sql",
    "scala": "scala",
    "kotlin": "kotlin",
    "kotlin_script": "kotlin",
    "kt": "kotlin",
}
#: Our languages, in the order they are listed.
LANGUAGES: Final = (
    "cpp", "java", "javascript", "typescript", "rust", "go", "python",
    "bash", "perl", "php", "lua", "ruby",
    "pytest", "junit", "jest", "go_test",
    "julia", "swift", "lean", "cuda", "python_gpu",
    "csharp", "d", "d_ut",
    "r", "racket", "verilog", "sql",
    "scala", "kotlin",
)  # fmt: skip
#: SandboxFusion's test-framework modes: the code runs its own tests
#: (D_ut: its own ``unittest`` blocks).
TEST_MODES: Final = ("pytest", "junit", "jest", "go_test", "d_ut")


@dataclass(frozen=True)
class Toolchain:
    """How one language is built and run on this host."""

    language: str
    compiler: str  # what it is, with its version: "g++ 12.2.0"
    source: str  # the source file's name: "main.cpp", "Main.java"
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def compiled(self) -> bool:
        return self.compile is not None

    def describe(self) -> dict[str, Any]:
        """What ``/v1/health`` and the banner say of it."""
        return {
            "available": True,
            "compiler": self.compiler,
            "compile": " ".join(self.compile) if self.compile else None,
            "run": " ".join(self.run),
        }

    def wire(self) -> dict[str, Any]:
        """What the in-clone runner needs of it (see ``language_runner``)."""
        return {
            "source": self.source,
            "compile": list(self.compile or ()),
            "run": list(self.run),
            "env": dict(self.env),
        }


@dataclass(frozen=True)
class MissingToolchain:
    """A language this host cannot build or run, and what would fix that."""

    language: str
    install: str

    def describe(self) -> dict[str, Any]:
        return {"available": False, "install": self.install}

    def message(self) -> str:
        return f"language {self.language!r} is not installed on this backend's host: {self.install}"


Found = Toolchain | MissingToolchain


def resolve_language(name: str) -> str | None:
    """Our name for ``name`` (SandboxFusion's included), or None."""
    return ALIASES.get(name.strip().lower()) if isinstance(name, str) else None


def judged_language(name: str) -> str | None:
    """Our name for a language ``/v1/judge`` judges programs in: not one of
    SandboxFusion's test-framework modes (``TEST_MODES``), whose runs are
    judged by the candidate's own tests (``/run_code`` only)."""
    found = resolve_language(name)
    return None if found in TEST_MODES else found


def _version(argv: list[str], line: int = 0) -> str:
    try:
        out = run_tool(argv, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[line].strip() if len(text) > line else "unknown"


def _cpp() -> Found:
    gxx = shutil.which("g++")
    if gxx is None:
        return MissingToolchain("cpp", "install g++ (Debian: apt-get install g++)")
    version = _version([gxx, "-dumpfullversion"])
    return Toolchain(
        "cpp",
        f"g++ {version}",
        "main.cpp",
        run=("{build}/main",),
        # as open-r1's Codeforces judge (and Codeforces) compile; -s: the
        # build, kept and sent to every run, carries no symbols
        compile=(
            os.path.realpath(gxx),
            "-std=c++17",
            "-O2",
            "-pipe",
            "-DONLINE_JUDGE",
            "-s",
            # bits/stdc++.h precompiled (see precompiled.py), used when there
            "-I",
            str(pch_dir(gxx)),
            "{src}",
            "-o",
            "{build}/main",
        ),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


def _java() -> Found:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        return MissingToolchain(
            "java", "install a JDK 17 or later (Debian: apt-get install openjdk-17-jdk-headless)"
        )
    javac, java = os.path.realpath(javac), os.path.realpath(java)
    home = os.path.dirname(os.path.dirname(javac))
    version = _version([javac, "-version"])
    return Toolchain(
        "java",
        version,
        "Main.java",
        compile=(
            javac,
            "-encoding",
            "UTF-8",
            "-J-XX:+UseSerialGC",
            "-J-Xshare:auto",
            "-d",
            "{build}",
            "{src}",
        ),
        run=(java, "-XX:+UseSerialGC", "-Xss256m", "-ea", "-cp", "{build}", "Main"),
        env={"PATH": _PATH, "LANG": "C.UTF-8", "JAVA_HOME": home},
    )


def _javascript() -> Found:
    node = shutil.which("node")
    if node is None:
        return MissingToolchain("javascript", "install Node.js (Debian: apt-get install nodejs)")
    version = _version([node, "--version"])
    return Toolchain(
        "javascript",
        f"node {version}",
        "main.js",
        run=(os.path.realpath(node), "{src}"),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


def _npm_root() -> str | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        out = run_tool([npm, "root", "-g"], timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    root = out.stdout.strip()
    return root if out.returncode == 0 and os.path.isdir(root) else None


#: Where ``npm install -g`` puts packages on Debian (and most Linux hosts).
_GLOBAL_NODE_MODULES: Final = ("/usr/local/lib/node_modules", "/usr/lib/node_modules")


def node_module_roots(with_npm: bool) -> list[str]:
    """Where typescript may be installed: ``COLLIMATE_NODE_MODULES``, the
    usual global roots, and (``with_npm``: it costs a process) npm's own."""
    roots = [os.environ.get("COLLIMATE_NODE_MODULES") or "", *_GLOBAL_NODE_MODULES]
    if with_npm:
        roots.append(_npm_root() or "")
    return [r for r in roots if r and os.path.isdir(r)]


def _typescript() -> Found:
    node = shutil.which("node")
    install = "install Node.js and then: npm install -g typescript @types/node"
    if node is None:
        return MissingToolchain("typescript", install)
    for root in node_module_roots(with_npm=True):
        tsc = os.path.join(root, "typescript", "lib", "tsc.js")
        types = os.path.join(root, "@types")
        if os.path.isfile(tsc) and os.path.isdir(os.path.join(types, "node")):
            break
    else:
        return MissingToolchain("typescript", install)
    node = os.path.realpath(node)
    version = _version([node, tsc, "--version"])
    return Toolchain(
        "typescript",
        f"tsc {version.removeprefix('Version ')} on node {_version([node, '--version'])}",
        "main.ts",
        compile=(
            node,
            tsc,
            "--target",
            "es2020",
            "--module",
            "commonjs",
            "--typeRoots",
            types,
            "--types",
            "node",
            # the program is type-checked, not the libraries' declarations,
            # against the language and Node (no DOM): 4.4 s of a compile -> 1.2
            "--skipLibCheck",
            "--lib",
            "es2020",
            "--outDir",
            "{build}",
            "{src}",
        ),
        run=(node, "{build}/main.js"),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


def _rust() -> Found:
    rustc = shutil.which("rustc")
    install = "install rustc (Debian: apt-get install rustc, or rustup)"
    if rustc is None:
        return MissingToolchain("rust", install)
    # rustup's rustc is a proxy reading ~/.rustup: run the toolchain's own
    sysroot = _version([rustc, "--print", "sysroot"])
    real = os.path.join(sysroot, "bin", "rustc")
    if not os.path.isfile(real):
        return MissingToolchain("rust", install)
    version = _version([real, "--version"])
    return Toolchain(
        "rust",
        version,
        "main.rs",
        compile=(
            real,
            "--edition",
            "2021",
            "-O",
            "-C",
            "strip=symbols",
            "-o",
            "{build}/main",
            "{src}",
        ),
        run=("{build}/main",),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


def _go() -> Found:
    go = shutil.which("go")
    if go is None:
        return MissingToolchain("go", "install Go (Debian: apt-get install golang-go)")
    go = os.path.realpath(go)
    goroot = _version([go, "env", "GOROOT"])
    version = _version([go, "version"])
    return Toolchain(
        "go",
        version,
        "main.go",
        compile=(go, "build", "-ldflags=-s -w", "-o", "{build}/main", "{src}"),
        run=("{build}/main",),
        # no module mode, no proxy: a build never reaches for the network
        env={
            "PATH": _PATH,
            "LANG": "C.UTF-8",
            "GOROOT": goroot,
            "GO111MODULE": "off",
            "GOPROXY": "off",
            "GOTOOLCHAIN": "local",
            "CGO_ENABLED": "0",
            "GOCACHE": "{dir}/.gocache",
            "GOPATH": "{dir}/.gopath",
            # the warm build cache a compile starts from (go_cache)
            "COLLIMATE_GO_SEED": str(seed_dir(go)),
        },
    )


def _outside_usr(path: str | None, up: int) -> list[str]:
    """``path`` resolved, ``up`` levels up, unless clones see it anyway."""
    if path is None:
        return []
    tree = os.path.realpath(path)
    for _ in range(up):
        tree = os.path.dirname(tree)
    return [] if tree.startswith("/usr/") or not os.path.isdir(tree) else [tree]


def toolchain_trees() -> tuple[str, ...]:
    """Host trees the language template's clones must see for the
    toolchains to work, beyond the system dirs every clone sees (cheap: no
    process started, so it can run at every server start)."""
    trees: list[str] = []
    rustc = shutil.which("rustc")
    if rustc is not None and os.path.basename(os.path.realpath(rustc)) == "rustup":
        home = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
        trees += _outside_usr(os.path.join(home, "toolchains", "x"), 1)
    else:
        trees += _outside_usr(rustc, 2)
    for tool in ("javac", "go", "node"):
        trees += _outside_usr(shutil.which(tool), 2)
    modules = os.environ.get("COLLIMATE_NODE_MODULES")
    if modules:
        trees += _outside_usr(os.path.join(modules, "x"), 1)
    if shutil.which("g++") is not None or any(map(shutil.which, _JVM_TOOLS)):
        # made now, filled on the first C++ compile (and the JVM compilers'
        # class archives on their first): a tree must exist to be shown
        with contextlib.suppress(OSError):
            pch_root().mkdir(parents=True, exist_ok=True)
            trees.append(str(pch_root()))
    return tuple(dict.fromkeys(trees))


def _python() -> Found:
    """The server's own interpreter (every clone sees it): for programs and
    checkers judged like the other languages (open-r1's checkers are
    Python)."""
    exe = os.path.realpath(sys.executable)
    return Toolchain(
        "python",
        f"CPython {sys.version.split()[0]}",
        "main.py",
        run=(exe, "-I", "{src}"),
        env={"PATH": _PATH, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"},
    )


def _interpreter(
    language: str, names: tuple[str, ...], package: str, source: str, flags: tuple[str, ...]
) -> Found:
    """A language run from source by the first of ``names`` on PATH (run
    as ``interpreter *flags {src}``), or what to install for it."""
    found = next((w for w in map(shutil.which, names) if w is not None), None)
    if found is None:
        return MissingToolchain(language, f"install {names[0]} (Debian: apt-get install {package})")
    exe = os.path.realpath(found)
    return Toolchain(
        language,
        _INTERPRETER_VERSIONS[language](exe),
        source,
        run=(exe, *flags, "{src}"),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


_INTERPRETER_VERSIONS: Final = {
    "bash": lambda exe: "bash " + _version([exe, "-c", "echo $BASH_VERSION"]).split("(")[0],
    "perl": lambda exe: "perl " + _version([exe, "-e", "print substr($^V, 1)"]),
    "php": lambda exe: "php " + _version([exe, "-n", "-r", "echo PHP_VERSION;"]),
    "lua": lambda exe: _version([exe, "-v"]).split("  ")[0],
    "ruby": lambda exe: " ".join(_version([exe, "--version"]).split()[:2]),
    "r": lambda exe: "R " + _version([exe, "--version"]).split("version ")[-1].split(" (")[0],
    # "Welcome to Racket v8.7 [cs]."
    "racket": lambda exe: "racket " + _version([exe, "--version"]).split(" v")[-1].split()[0],
    "sql": lambda exe: "sqlite3 " + _version([exe, "--version"]).split()[0],
}


def _bash() -> Found:
    # a script's bash reads no startup file but $BASH_ENV's, which a run's
    # environment never has; --norc --noprofile say so whatever it holds
    return _interpreter("bash", ("bash",), "bash", "main.sh", ("--norc", "--noprofile"))


def _perl() -> Found:
    # perl reads no startup file; what could change it (PERL5OPT,
    # PERL5LIB) is environment, which a run's is not
    return _interpreter("perl", ("perl",), "perl", "main.pl", ())


def _php() -> Found:
    # the system's php.ini is read (Debian loads ctype, iconv, tokenizer
    # ... from it, which programs use), but nothing else: PHPRC and
    # PHP_INI_SCAN_DIR are environment, which a run's is not, and the CLI
    # reads no php.ini from the working directory. The judge's memory
    # limit is the only one (php.ini's memory_limit would end a run as a
    # PHP fatal error, a runtime error, before it), and warnings go to
    # stderr, never into the output judged
    flags = ("-d", "memory_limit=-1", "-d", "display_errors=stderr", "-d", "log_errors=0")
    return _interpreter("php", ("php",), "php-cli", "main.php", flags)


def _lua() -> Found:
    # -E: LUA_INIT (code run first), LUA_PATH and LUA_CPATH ignored
    return _interpreter("lua", ("lua5.4",), "lua5.4", "main.lua", ("-E",))


def _ruby() -> Found:
    # RUBYOPT ignored; gems stay enabled: MultiPL-E's tests require
    # test/unit, a gem bundled with Ruby (--disable-gems would hide it)
    return _interpreter("ruby", ("ruby",), "ruby", "main.rb", ("--disable=rubyopt",))


# -- SandboxFusion's test-framework modes ---------------------------------
# pytest, junit, jest and go_test: the code holds its own tests, run by the
# framework, and the run passes when the framework's process exits 0 (as in
# SandboxFusion, whose /run_code conveniences they are: see
# docs/languages.md). Only /run_code takes them.

#: JUnit 5's console launcher with the Jupiter and Vintage engines, whole
#: (Debian's junit5; SandboxFusion ships junit-platform-console-standalone).
JUNIT_STANDALONE: Final = "/usr/share/java/junit-platform-console-standalone.jar"
#: What a jest run needs under a global node_modules (npm install -g).
_JEST_PARTS: Final = (
    "jest/package.json",
    "@babel/preset-typescript/package.json",
    "@babel/plugin-transform-modules-commonjs/package.json",
)
_JEST_INSTALL: Final = (
    "install Node.js and then: npm install -g jest@29 @jest/globals@29 @babel/core@7 "
    "@babel/preset-typescript@7 @babel/plugin-transform-modules-commonjs@7"
)
#: SandboxFusion's name for a Java file's class (``find_java_public_class_name``).
_PUBLIC_CLASS: Final = re.compile(r"\bpublic\s+(abstract\s+|final\s+)?class\s+(\w+)")


def _pytest_dirs() -> tuple[str, ...]:
    """Where the interpreters the pytest mode may run keep pytest (stamped
    in the probe's fingerprint, so that installing it is seen): the
    server's base interpreter's site-packages (a virtualenv's are not the
    ``python`` language's: it runs the interpreter itself), Debian's."""
    base = {"base": sys.base_prefix, "platbase": sys.base_prefix}
    site = sysconfig.get_path("purelib", vars=base)
    return (os.path.join(site, "pytest"), "/usr/lib/python3/dist-packages/pytest")


def _pytest() -> Found:
    """pytest in the interpreter the ``python`` language runs (the
    server's, as SandboxFusion's pytest is its python's), else in Debian's
    python3."""
    install = (
        "install pytest into the server's Python (pip install pytest), "
        "or Debian's (apt-get install python3-pytest)"
    )
    candidates = dict.fromkeys([os.path.realpath(sys.executable), "/usr/bin/python3"])
    for exe in candidates:
        if not os.path.isfile(exe):
            continue
        # (one process, importing pytest alone: faster than pytest --version)
        probe = "import sys, pytest; print(pytest.__version__, sys.version.split()[0])"
        try:
            out = run_tool([exe, "-I", "-c", probe], timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode != 0 or len(out.stdout.split()) != 2:
            continue
        version, python = out.stdout.split()
        return Toolchain(
            "pytest",
            f"pytest {version} on CPython {python}",
            "test_main.py",
            # no cache written, no plugin but pytest's own loaded (the
            # environment's PYTEST_DISABLE_PLUGIN_AUTOLOAD), no ini file or
            # conftest.py read from above the run's directory: -c names an
            # empty config, the run's directory is the rootdir and where
            # conftest.py files stop being looked for
            run=(
                exe,
                "-I",
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-c",
                "/dev/null",
                "--rootdir={dir}",
                "--confcutdir={dir}",
                "{src}",
            ),
            env={
                "PATH": _PATH,
                "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            },
        )
    return MissingToolchain("pytest", install)


def _junit_version() -> str:
    """The console launcher's version: Debian names it in a versioned link
    beside the jar (its manifest has none); else the manifest's."""
    real = os.path.realpath(JUNIT_STANDALONE)
    folder, name = os.path.split(JUNIT_STANDALONE)
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(folder)):
            stem = name.removesuffix(".jar") + "-"
            linked = os.path.realpath(os.path.join(folder, entry)) == real
            if entry.startswith(stem) and entry.endswith(".jar") and linked:
                return entry[len(stem) : -len(".jar")]
    with contextlib.suppress(OSError, KeyError, zipfile.BadZipFile):
        with zipfile.ZipFile(JUNIT_STANDALONE) as jar:
            manifest = jar.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
        for line in manifest.splitlines():
            if line.startswith("Implementation-Version:"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def _jdk_version(home: str) -> str:
    """The JDK's version from its ``release`` file (no JVM started: the
    java language's probe starts one already)."""
    with contextlib.suppress(OSError), open(os.path.join(home, "release"), encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    return "unknown"


def junit_source(code: str) -> str:
    """The file a junit run's code is written to: its public class's, as
    SandboxFusion names it (``Main.java`` when it has none)."""
    found = _PUBLIC_CLASS.search(code)
    return f"{found.group(2) if found else 'Main'}.java"


def _junit() -> Found:
    javac, java, sh = shutil.which("javac"), shutil.which("java"), shutil.which("sh")
    if javac is None or java is None or sh is None:
        return MissingToolchain(
            "junit", "install a JDK 17 or later (Debian: apt-get install openjdk-17-jdk-headless)"
        )
    if not os.path.isfile(JUNIT_STANDALONE):
        return MissingToolchain("junit", "install JUnit 5 (Debian: apt-get install junit5)")
    javac, java = os.path.realpath(javac), os.path.realpath(java)
    # as SandboxFusion: every .java file of the run compiled together (the
    # code's, under its public class's name, and the request's), against
    # the launcher and the request's jars; javac's JVM with its quick JIT
    # only (the same classes, in 0.7 CPU seconds instead of 1.1)
    classpath = f"{JUNIT_STANDALONE}:{{dir}}:{{dir}}/*"
    script = (
        'exec "$0" -encoding UTF-8 -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1'
        ' -cp "$1" -d "$2" ./*.java'
    )
    home = os.path.dirname(os.path.dirname(javac))
    return Toolchain(
        "junit",
        f"JUnit Platform {_junit_version()} on javac {_jdk_version(home)}",
        "Main.java",  # (the public class's name: see junit_source)
        compile=(os.path.realpath(sh), "-c", script, javac, classpath, "{build}"),
        # the launcher scans the classpath's directories (the build) for
        # tests; it exits 1 when one failed, 0 when none did
        run=(
            java,
            "-XX:+UseSerialGC",
            "-cp",
            f"{JUNIT_STANDALONE}:{{build}}:{{dir}}/*",
            "org.junit.platform.console.ConsoleLauncher",
            "--scan-class-path",
        ),
        env={
            "PATH": _PATH,
            "LANG": "C.UTF-8",
            "JAVA_HOME": os.path.dirname(os.path.dirname(javac)),
        },
    )


def _jest_config(root: str, babel_jest: str) -> str:
    """jest's whole configuration (given on its command line, so that no
    jest.config, package.json or babel config is looked for): the run's
    directory as the root, TypeScript and ES modules compiled by babel (as
    SandboxFusion's babel.config.js, less preset-env, which for the
    current Node only turns imports into requires: that plugin alone starts
    0.4 s faster), modules resolved from the global node_modules too, the
    cache inside the run's directory, no watchman, no ``find``
    process. Braces doubled: the runner fills in ``{dir}``."""
    dir_ = "@@RUN-DIR@@"
    config = {
        "rootDir": dir_,
        "cacheDirectory": f"{dir_}/.jest-cache",
        "watchman": False,
        "haste": {"forceNodeFilesystemAPI": True},
        "modulePaths": [root],
        "transform": {
            r"\.[cm]?[jt]sx?$": [
                babel_jest,
                {
                    "babelrc": False,
                    "configFile": False,
                    "presets": [os.path.join(root, "@babel/preset-typescript")],
                    "plugins": [os.path.join(root, "@babel/plugin-transform-modules-commonjs")],
                },
            ]
        },
    }
    text = json.dumps(config, separators=(",", ":"))
    return text.replace("{", "{{").replace("}", "}}").replace(dir_, "{dir}")


def _jest_roots() -> Iterator[str]:
    """Where jest may be installed: the usual roots, then npm's own (a
    process: asked only when those have none)."""
    yield from node_module_roots(with_npm=False)
    npm = _npm_root()
    if npm is not None:
        yield npm


def _jest() -> Found:
    node = shutil.which("node")
    if node is None:
        return MissingToolchain("jest", _JEST_INSTALL)
    for root in _jest_roots():
        parts = [os.path.join(root, p) for p in _JEST_PARTS]
        babel_jest = next(
            (
                b
                for b in (
                    os.path.join(root, "jest", "node_modules", "babel-jest"),
                    os.path.join(root, "babel-jest"),
                )
                if os.path.isfile(os.path.join(b, "package.json"))
            ),
            None,
        )
        if all(map(os.path.isfile, parts)) and babel_jest is not None:
            break
    else:
        return MissingToolchain("jest", _JEST_INSTALL)
    with open(parts[0], encoding="utf-8") as fh:
        version = json.load(fh).get("version", "unknown")
    node = os.path.realpath(node)
    return Toolchain(
        "jest",
        f"jest {version} on node {_version([node, '--version'])}",
        # SandboxFusion's name (tmpXXXX.test.ts): jest's default testMatch
        # finds it, and the request's own test files beside it
        "main.test.ts",
        # --ci: no snapshot written; in band: one process, whose CPU and
        # memory are the run's (a worker would start a second jest)
        run=(
            node,
            os.path.join(root, "jest", "bin", "jest.js"),
            "--ci",
            "--runInBand",
            "--no-cache",
            "--config",
            _jest_config(root, babel_jest),
        ),
        env={"PATH": _PATH, "LANG": "C.UTF-8", "FORCE_COLOR": "0"},
    )


#: How ``go test`` runs the test binary it built and reports it, for the
#: binary ``go test -c`` built (cached): its output (stdout and stderr) kept
#: and shown only when it fails, a summary line, exit 1 on any failure.
#: Braces doubled: the runner fills in the command's fields.
_GO_TEST_RUN: Final = """\
start=$EPOCHREALTIME
"$0" -test.paniconexit0 -test.timeout=10m0s >.go-test.out 2>&1
code=$?
ms=$(( (10#${{EPOCHREALTIME/./}} - 10#${{start/./}}) / 1000 ))
took=$(printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)))
if [ $code -eq 0 ]; then
  printf 'ok  \\tcommand-line-arguments\\t%s\\n' "$took"
  exit 0
fi
cat .go-test.out
printf 'FAIL\\tcommand-line-arguments\\t%s\\nFAIL\\n' "$took"
exit 1
"""


def _go_test() -> Found:
    go, bash = _go(), shutil.which("bash")
    if isinstance(go, MissingToolchain):
        return MissingToolchain("go_test", go.install)
    if bash is None:
        return MissingToolchain("go_test", "install bash (Debian: apt-get install bash)")
    assert go.compile is not None
    return Toolchain(
        "go_test",
        go.compiler,
        # SandboxFusion's name is tmpXXXX_test.go; the package is the file
        # alone (go test's command-line-arguments), with no module: Debian's
        # Go libraries (testify) are found on GOPATH, nothing is downloaded
        "main_test.go",
        compile=(go.compile[0], "test", "-c", "-ldflags=-s -w", "-o", "{build}/main.test", "{src}"),
        run=(
            os.path.realpath(bash),
            "--norc",
            "--noprofile",
            "-c",
            _GO_TEST_RUN,
            "{build}/main.test",
        ),
        env={**go.env, "GOPATH": f"{{dir}}/.gopath:{GO_LIBRARIES}"},
    )


#: The assembly MultiPL-E's C# programs reference (``-r:System.Numerics.dll``,
#: for ``BigInteger``); Debian's mono-mcs does not always bring it.
MONO_NUMERICS: Final = "/usr/lib/mono/4.5/System.Numerics.dll"


def _csharp() -> Found:
    mcs, mono = shutil.which("mcs"), shutil.which("mono")
    install = (
        "install Mono's C# compiler and runtime "
        "(Debian: apt-get install mono-mcs mono-runtime libmono-system-numerics4.0-cil)"
    )
    if mcs is None or mono is None or not os.path.isfile(MONO_NUMERICS):
        return MissingToolchain("csharp", install)
    mcs, mono = os.path.realpath(mcs), os.path.realpath(mono)
    version = _version([mcs, "--version"]).removeprefix("Mono C# compiler version ")
    runtime = _version([mono, "--version"]).removeprefix("Mono JIT compiler version ")
    return Toolchain(
        "csharp",
        f"mcs {version} on mono {runtime.split()[0]}",
        "main.cs",
        # an optimized build with the symbol online judges define;
        # Debug.Assert is compiled out (no DEBUG), System.Numerics
        # referenced for BigInteger
        compile=(
            mcs,
            "-optimize+",
            "-define:ONLINE_JUDGE",
            f"-r:{MONO_NUMERICS}",
            "-out:{build}/main.exe",
            "{src}",
        ),
        run=(mono, "{build}/main.exe"),
        env={
            "PATH": _PATH,
            "LANG": "C.UTF-8",
            # no /dev/shm/mono.<pid> performance-counter area per process
            # (mcs is a Mono program too), and the registry (if a program
            # uses Microsoft.Win32.Registry) in the run's own directory
            "MONO_DISABLE_SHARED_AREA": "1",
            "MONO_REGISTRY_PATH": "{dir}/.mono/registry",
            # the runtime's own log, which Mono writes to stdout, away from
            # the output judged: a run may not change its scheduling (see
            # language_runner), and every Mono thread start warns of that
            "MONO_LOG_DEST": "/dev/null",
        },
    )


def _ldc(language: str, flags: tuple[str, ...]) -> Found:
    ldc2 = shutil.which("ldc2")
    if ldc2 is None:
        install = "install LDC, the LLVM D compiler (Debian: apt-get install ldc)"
        return MissingToolchain(language, install)
    ldc2 = os.path.realpath(ldc2)
    lines = _version([ldc2, "--version"]), _version([ldc2, "--version"], 1)
    version = lines[0].removeprefix("LDC - the LLVM D compiler ").strip("():")
    return Toolchain(
        language,
        f"ldc2 {version} ({lines[1].removeprefix('based on ').split(' and ')[0]})",
        "main.d",
        compile=(ldc2, *flags, "-of={build}/main", "{src}"),
        run=("{build}/main",),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


def _d() -> Found:
    # the optimized release build online judges make of D: asserts and
    # contracts off, bounds checked in @safe code only
    return _ldc("d", ("-O", "-release", "--d-version=ONLINE_JUDGE"))


def _d_ut() -> Found:
    # SandboxFusion's D_ut: ``dmd -unittest``, unoptimized, asserts on; the
    # unittest blocks run before main (and main not at all when there are
    # any: druntime's default), a failing one exits 1
    return _ldc("d_ut", ("-unittest",))


def _r() -> Found:
    # --vanilla: no site or user profile (Rprofile.site, ~/.Rprofile), no
    # Renviron files, no workspace restored or saved; R_PROFILE and the like
    # are environment, which a run's is not
    return _interpreter("r", ("Rscript",), "r-base-core", "main.R", ("--vanilla",))


def _racket() -> Found:
    # racket reads no startup file running a module (only its REPL reads
    # ~/.racketrc); PLT_* settings are environment, which a run's is not
    return _interpreter("racket", ("racket",), "racket", "main.rkt", ())


def _verilog() -> Found:
    """Icarus Verilog as SandboxFusion (after VerilogEval) runs it: the
    program's ``tb`` module elaborated as SystemVerilog 2012, every warning
    on, then simulated by ``vvp`` non-interactively (``$stop`` ends it)."""
    iverilog, vvp = shutil.which("iverilog"), shutil.which("vvp")
    if iverilog is None or vvp is None:
        return MissingToolchain("verilog", "install iverilog (Debian: apt-get install iverilog)")
    line = _version([iverilog, "-V"])
    version = line.removeprefix("Icarus Verilog version ").split(" (")[0]
    return Toolchain(
        "verilog",
        f"Icarus Verilog {version}",
        "main.sv",
        compile=(
            os.path.realpath(iverilog),
            "-Wall",
            "-Winfloop",
            "-Wno-timescale",
            "-g2012",
            "-s",
            "tb",
            "-o",
            "{build}/test.vvp",
            "{src}",
        ),
        run=(os.path.realpath(vvp), "-n", "{build}/test.vvp"),
        env={"PATH": _PATH, "LANG": "C.UTF-8"},
    )


def _sql() -> Found:
    """SQLite's shell on an in-memory database: the program read as a file
    (the shell's read command), its stdin left to it (its import command
    on /dev/stdin loads the input as a table); ``-bail``: the first error
    ends it (exit 1), as an uncaught error ends a program in the other
    languages. SandboxFusion names ``sql`` but has no runner for it."""
    found = _interpreter("sql", ("sqlite3",), "sqlite3", "main.sql", ())
    if isinstance(found, MissingToolchain):
        return found
    exe = found.run[0]
    return dataclasses.replace(found, run=(exe, "-batch", "-bail", ":memory:", ".read {src}"))




def _jar_entry(jar: str, name: str) -> str:
    """A text file inside a jar (its version, without starting a JVM)."""
    try:
        with zipfile.ZipFile(jar) as z:
            return z.read(name).decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return ""


def _jvm_home(java: str) -> tuple[str, str]:
    """The JDK ``java`` belongs to, and its version (from its ``release``
    file: no JVM started)."""
    home = os.path.dirname(os.path.dirname(java))
    try:
        text = Path(home, "release").read_text(encoding="utf-8")
    except OSError:
        text = ""
    found = re.search(r'^JAVA_VERSION="([^"]+)"', text, re.M)
    return home, found.group(1) if found else "unknown"


#: How a JVM language's programs run, as Java's do: the serial collector
#: (one GC thread, no parallel-GC heap reservations; the judge's memory
#: limit is on the resident set, not on the heap, so a program past it is
#: ``memory_limit`` rather than an OutOfMemoryError) and a main-thread
#: stack deep enough for contest recursion.
_JVM_RUN: Final = ("-XX:+UseSerialGC", "-Xss256m")
#: How the JVM compilers start: C1 alone (a short compile is over before
#: C2 pays: scalac 3.2 -> 2.1 s), the serial collector, and the class
#: archive (``jvm_archive``), quiet when the JVM cannot use it.
_JVM_COMPILE: Final = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", *QUIET)


def _scala() -> Found:
    scalac, java = shutil.which("scalac"), shutil.which("java")
    if scalac is None or java is None:
        return MissingToolchain("scala", "install scala (Debian: apt-get install scala)")
    java = os.path.realpath(java)
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(scalac))), "lib")
    jars = {n: os.path.join(lib, f"{n}.jar") for n in ("scala-compiler", "scala-library",
            "scala-reflect", "scala-xml", "scala-parser-combinators")}  # fmt: skip
    if not all(os.path.isfile(jars[n]) for n in ("scala-compiler", "scala-library")):
        return MissingToolchain("scala", "install scala (Debian: apt-get install scala)")
    # what programs may use at run time: the library and the modules the
    # scala launcher also puts on the class path (not the compiler)
    runtime = [j for n, j in jars.items() if n != "scala-compiler" and os.path.isfile(j)]
    properties = _jar_entry(jars["scala-compiler"], "compiler.properties")
    version = re.search(r"^version\.number=(\S+)", properties, re.M)
    home, java_version = _jvm_home(java)
    return Toolchain(
        "scala",
        f"scalac {version.group(1) if version else 'unknown'} on java {java_version}",
        "main.scala",
        # scalac as its launcher starts it (the compiler's class path is the
        # program's: scala.usejavacp), from the JVM directly
        compile=(
            java,
            *_JVM_COMPILE,
            archive_flag("scalac", [java, jars["scala-compiler"], *runtime]),
            "-cp",
            ":".join([jars["scala-compiler"], *runtime]),
            "-Dscala.usejavacp=true",
            "scala.tools.nsc.Main",
            "-encoding",
            "UTF-8",
            # class files for Java 8 (2.11's default is 6): a program may
            # call a JDK interface's static method (ProcessHandle.current)
            "-target:jvm-1.8",
            "-d",
            "{build}",
            "{src}",
        ),
        # plain java, not the scala launcher (0.5 s a start against 0.2);
        # the library first: no class of the program replaces one of it.
        # The main class is the program's first object (jvm_languages)
        run=(java, *_JVM_RUN, "-cp", ":".join([*runtime, "{build}"]), "Main"),
        env={"PATH": _PATH, "LANG": "C.UTF-8", "JAVA_HOME": home},
    )


def _kotlin() -> Found:
    kotlinc, java = shutil.which("kotlinc"), shutil.which("java")
    if kotlinc is None or java is None:
        return MissingToolchain("kotlin", "install kotlin (Debian: apt-get install kotlin)")
    java = os.path.realpath(java)
    kotlin_home = os.path.dirname(os.path.dirname(os.path.realpath(kotlinc)))
    lib = os.path.join(kotlin_home, "lib")
    jar = {n: os.path.join(lib, f"{n}.jar") for n in ("kotlin-preloader", "kotlin-compiler",
           "kotlin-stdlib", "kotlin-script-runtime", "kotlin-reflect")}  # fmt: skip
    if not all(os.path.isfile(j) for j in jar.values()):
        return MissingToolchain("kotlin", "install kotlin (Debian: apt-get install kotlin)")
    manifest = _jar_entry(jar["kotlin-compiler"], "META-INF/MANIFEST.MF")
    version = re.search(r"^Implementation-Version:\s*(\S+)", manifest, re.M)
    home, java_version = _jvm_home(java)
    runtime = [jar["kotlin-stdlib"], jar["kotlin-script-runtime"], jar["kotlin-reflect"]]
    return Toolchain(
        "kotlin",
        f"kotlinc {version.group(1) if version else 'unknown'} on java {java_version}",
        "main.kts",
        # kotlinc as its launcher starts it (the preloader: the compiler's
        # script support needs it), the script and its launcher together
        compile=(
            java,
            *_JVM_COMPILE,
            archive_flag("kotlinc", [java, jar["kotlin-preloader"], jar["kotlin-compiler"]]),
            f"-Dkotlin.home={kotlin_home}",
            "-cp",
            jar["kotlin-preloader"],
            "org.jetbrains.kotlin.preloading.Preloader",
            "-cp",
            jar["kotlin-compiler"],
            "org.jetbrains.kotlin.cli.jvm.K2JVMCompiler",
            "{src}",
            f"{{dir}}/{KOTLIN_LAUNCHER}",
            "-d",
            "{build}",
        ),
        # -ea: a script's assert() checks (Kotlin's assert is the JVM's)
        run=(java, *_JVM_RUN, "-ea", "-cp", ":".join([*runtime, "{build}"]), KOTLIN_LAUNCHER_CLASS),
        env={"PATH": _PATH, "LANG": "C.UTF-8", "JAVA_HOME": home},
    )


_FINDERS: Final[dict[str, Callable[[], Found]]] = {
    "cpp": _cpp,
    "java": _java,
    "javascript": _javascript,
    "typescript": _typescript,
    "rust": _rust,
    "go": _go,
    "python": _python,
    "bash": _bash,
    "perl": _perl,
    "php": _php,
    "lua": _lua,
    "ruby": _ruby,
    "pytest": _pytest,
    "junit": _junit,
    "jest": _jest,
    "go_test": _go_test,
    "julia": lambda: _unsupplied("julia"),
    "swift": lambda: _unsupplied("swift"),
    "lean": lambda: _unsupplied("lean"),
    "cuda": lambda: _unsupplied("cuda"),
    "python_gpu": lambda: _unsupplied("python_gpu"),
    "csharp": _csharp,
    "d": _d,
    "d_ut": _d_ut,
    "r": _r,
    "racket": _racket,
    "verilog": _verilog,
    "sql": _sql,
    "scala": _scala,
    "kotlin": _kotlin,
}


#: The interpreters the script languages are found as.
_SCRIPT_TOOLS: Final = (
    "bash", "perl", "php", "lua5.4", "ruby",
    "Rscript", "racket", "iverilog", "vvp", "sqlite3",
)  # fmt: skip
#: What the test-framework modes are found as, beyond the languages' tools
#: (jest's install is in node_module_roots' stamps below, pytest's in
#: _pytest_dirs'): the launcher, Debian's python3
_MODE_FILES: Final = (JUNIT_STANDALONE, "/usr/bin/python3")
#: C#'s compiler and runtime, D's compiler.
_MONO_LDC_TOOLS: Final = ("mcs", "mono", "ldc2")
#: The JVM languages' compilers, found as these.
_JVM_TOOLS: Final = ("scalac", "kotlinc")


def _fingerprint() -> str:
    """What the probe's outcome depends on, cheaply (paths and stats, no
    process): the tools on PATH, where they lead, the typescript install,
    rustup's home, and this module's own source."""
    parts: list[Any] = [_source_hash()]
    compilers = ("g++", "javac", "java", "node", "npm", "rustc", "go")
    for tool in (*compilers, *_SCRIPT_TOOLS, *_MONO_LDC_TOOLS, *_JVM_TOOLS):
        found = shutil.which(tool)
        if found is None:
            parts.append([tool, None])
            continue
        real = os.path.realpath(found)
        st = os.stat(real)
        parts.append([tool, found, real, st.st_mtime_ns, st.st_size])
    for path in (*_MODE_FILES, *_pytest_dirs()):
        parts.append([path, os.stat(path).st_mtime_ns if os.path.exists(path) else None])
    for root in node_module_roots(with_npm=False):
        for sub in ("typescript/package.json", "@types/node/package.json", *_JEST_PARTS):
            path = os.path.join(root, sub)
            parts.append([path, os.stat(path).st_mtime_ns if os.path.exists(path) else None])
    rustup = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
    settings = os.path.join(rustup, "settings.toml")
    parts.append([settings, os.stat(settings).st_mtime_ns if os.path.exists(settings) else None])
    parts.append([MONO_NUMERICS, os.path.exists(MONO_NUMERICS)])
    parts.append(os.environ.get("PATH", ""))
    parts.append(os.path.realpath(sys.executable))
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


@lru_cache(maxsize=1)
def _source_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def _cache_file(fingerprint: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "collimate-rl" / f"toolchains-{fingerprint}.json"


def _load(path: Path) -> dict[str, Found] | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        found: dict[str, Found] = {}
        for name in LANGUAGES:
            entry = raw[name]
            if entry.get("missing"):
                found[name] = MissingToolchain(name, entry["install"])
            else:
                compile_ = entry["compile"]
                found[name] = Toolchain(
                    name,
                    entry["compiler"],
                    entry["source"],
                    tuple(entry["run"]),
                    tuple(compile_) if compile_ is not None else None,
                    dict(entry["env"]),
                )
        return found
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _save(path: Path, found: dict[str, Found]) -> None:
    raw: dict[str, Any] = {}
    for name, t in found.items():
        if isinstance(t, MissingToolchain):
            raw[name] = {"missing": True, "install": t.install}
        else:
            raw[name] = {
                "compiler": t.compiler,
                "source": t.source,
                "run": list(t.run),
                "compile": list(t.compile) if t.compile is not None else None,
                "env": dict(t.env),
            }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(raw, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # (a read-only home: probed again next time)


@lru_cache(maxsize=1)
def find_toolchains() -> dict[str, Found]:
    """Every language, found or missing. Asking each compiler its version
    takes seconds (a JVM starts for javac), so the outcome is kept on disk
    under a fingerprint of the tools (their paths and file stats): probed
    once per machine and toolchain change, not once per server."""
    path = _cache_file(_fingerprint())
    found = _load(path)
    if found is None:
        found = {name: _FINDERS[name]() for name in LANGUAGES}
        _save(path, found)
    return found


def available() -> dict[str, Toolchain]:
    return {n: t for n, t in find_toolchains().items() if isinstance(t, Toolchain)}


#: SandboxFusion's languages that no package registry this backend's hosts
#: install from (Debian 12, PyPI, npm) supplies, or that need a GPU: what a
#: host would need. This backend has no runner for them, so they are always
#: missing: a request for one is the backend's failure (``SandboxError``,
#: an infra error), never the program's.
_UNSUPPLIED: Final = {
    "julia": ("Julia (julia)", "Debian 12 has no julia package"),
    "swift": ("Swift (swiftc)", "Debian 12 has no swift package"),
    "lean": ("Lean 4 with lake and Mathlib", "they come from elan, in no registry here"),
    "cuda": ("the CUDA toolkit (nvcc)", "it needs an NVIDIA GPU and its driver"),
    "python_gpu": ("CUDA and a CUDA build of PyTorch", "it needs an NVIDIA GPU and its driver"),
}


def _unsupplied(language: str) -> MissingToolchain:
    what, why = _UNSUPPLIED[language]
    return MissingToolchain(
        language, f"install {what} ({why}); this backend has no {language} runner yet either"
    )
