#!/usr/bin/env bash
# Install the compilers and runtimes the local backend's languages use,
# where they are missing: g++, a JDK, Node.js, rustc, Go, PHP, Lua 5.4,
# Ruby (bash and perl are normally there), Mono's C#, LDC's D, R, Racket,
# Icarus Verilog, sqlite3, Scala 2.11 and Kotlin 1.3 (for Kotlin scripts)
# from Debian's packages, Chromium (the browser template) from Debian's
# too, TypeScript (with Node's type definitions) from npm, and the test
# libraries of MultiPL-E, HumanEval-X and MBXP (javatuples, testify,
# lodash, js-md5; Perl's Test::Deep and Data::Compare; C#'s
# System.Numerics), and SandboxFusion's test frameworks (junit5 and
# python3-pytest from Debian, jest from npm).
# Idempotent;
# run as root (apt-get, npm -g). The tests of every language need them; in
# CI (CI=true) a missing one fails its tests instead of skipping them.
#
#   bash tools/install_toolchains.sh
set -euo pipefail

say() { printf '[toolchains] %s\n' "$*"; }

apt_packages=()
command -v g++ >/dev/null 2>&1 || apt_packages+=(g++)
command -v javac >/dev/null 2>&1 || apt_packages+=(openjdk-17-jdk-headless)
command -v node >/dev/null 2>&1 || apt_packages+=(nodejs npm)
command -v npm >/dev/null 2>&1 || apt_packages+=(npm)
command -v rustc >/dev/null 2>&1 || apt_packages+=(rustc)
command -v go >/dev/null 2>&1 || apt_packages+=(golang-go)
# the interpreted languages (bash and perl are part of every Debian system)
command -v bash >/dev/null 2>&1 || apt_packages+=(bash)
command -v perl >/dev/null 2>&1 || apt_packages+=(perl)
command -v php >/dev/null 2>&1 || apt_packages+=(php-cli)
command -v lua5.4 >/dev/null 2>&1 || apt_packages+=(lua5.4)
command -v ruby >/dev/null 2>&1 || apt_packages+=(ruby)
# R, Racket, Icarus Verilog and SQLite's shell (SandboxFusion's R, racket,
# verilog and sql; MultiPL-E's r and rkt)
command -v Rscript >/dev/null 2>&1 || apt_packages+=(r-base-core)
command -v racket >/dev/null 2>&1 || apt_packages+=(racket)
command -v iverilog >/dev/null 2>&1 || apt_packages+=(iverilog)
command -v sqlite3 >/dev/null 2>&1 || apt_packages+=(sqlite3)
# the JVM's other languages (their programs run on the JDK's java)
command -v scalac >/dev/null 2>&1 || apt_packages+=(scala)
command -v kotlinc >/dev/null 2>&1 || apt_packages+=(kotlin)
# the libraries the multi-language benchmarks' tests import: MultiPL-E's
# Java tests use javatuples, HumanEval-X's and MBXP's Go tests testify
[[ -f /usr/share/java/javatuples.jar ]] || apt_packages+=(libjavatuples-java)
[[ -d /usr/share/gocode/src/github.com/stretchr/testify ]] ||
  apt_packages+=(golang-github-stretchr-testify-dev)
# MultiPL-E's Perl tests use Test::Deep (its Lua tests' luaunit is the
# harness's own, its Ruby tests' test-unit comes with Debian's ruby)
perl -MTest::Deep -e 1 >/dev/null 2>&1 || apt_packages+=(libtest-deep-perl)
# MBXP's Perl tests use Data::Compare
perl -MData::Compare -e 1 >/dev/null 2>&1 || apt_packages+=(libdata-compare-perl)
# SandboxFusion's test-framework modes: junit's JUnit 5 console launcher,
# and pytest for Debian's python3 (used when the server's Python has none)
[[ -f /usr/share/java/junit-platform-console-standalone.jar ]] || apt_packages+=(junit5)
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || apt_packages+=(python3-pytest)
# the browser template's headless Chromium (connect_browser and its tests)
[[ -x /usr/lib/chromium/chromium ]] || command -v chromium >/dev/null 2>&1 ||
  apt_packages+=(chromium)
# C# on Mono (mcs, mono; System.Numerics, which MultiPL-E's C# references)
# and D (LDC)
command -v mcs >/dev/null 2>&1 || apt_packages+=(mono-mcs)
command -v mono >/dev/null 2>&1 || apt_packages+=(mono-runtime)
[[ -f /usr/lib/mono/4.5/System.Numerics.dll ]] || apt_packages+=(libmono-system-numerics4.0-cil)
command -v ldc2 >/dev/null 2>&1 || apt_packages+=(ldc)
if ((${#apt_packages[@]})); then
  say "apt-get install ${apt_packages[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_packages[@]}" >/dev/null
fi

npm_root=$(npm root -g)
if [[ ! -f "$npm_root/typescript/lib/tsc.js" || ! -d "$npm_root/@types/node" ]]; then
  say "npm install -g typescript@5 @types/node@20"
  npm install -g --silent --no-fund --no-audit typescript@5 @types/node@20 >/dev/null
fi
# MBXP's JavaScript tests require lodash, HumanEval-X's JavaScript/162 js-md5
if [[ ! -d "$npm_root/lodash" || ! -d "$npm_root/js-md5" ]]; then
  say "npm install -g lodash@4 js-md5@0.8"
  npm install -g --silent --no-fund --no-audit lodash@4 js-md5@0.8 >/dev/null
fi

# SandboxFusion's jest mode: jest and babel's TypeScript and CommonJS transforms
jest_parts=(jest @babel/preset-typescript @babel/plugin-transform-modules-commonjs)
for part in "${jest_parts[@]}"; do
  if [[ ! -f "$npm_root/$part/package.json" ]]; then
    say "npm install -g jest@29 @jest/globals@29 @babel/core@7 @babel/preset-typescript@7" \
      "@babel/plugin-transform-modules-commonjs@7"
    npm install -g --silent --no-fund --no-audit jest@29 @jest/globals@29 @babel/core@7 \
      @babel/preset-typescript@7 @babel/plugin-transform-modules-commonjs@7 >/dev/null
    break
  fi
done

say "g++ $(g++ -dumpfullversion), $(javac -version 2>&1), node $(node --version)," \
  "$(rustc --version | cut -d' ' -f1-2), $(go version | cut -d' ' -f3)," \
  "tsc $(node "$npm_root/typescript/lib/tsc.js" --version | cut -d' ' -f2)," \
  "$( (/usr/lib/chromium/chromium --version || chromium --version) 2>/dev/null | head -1)," \
  "bash ${BASH_VERSION%%(*}, perl $(perl -e 'print substr($^V, 1)'), $(php -r 'echo "php ", PHP_VERSION;')," \
  "$(lua5.4 -v 2>&1 | cut -d' ' -f1-2), $(ruby --version | cut -d' ' -f1-2)," \
  "jest $(node "$npm_root/jest/bin/jest.js" --version)," \
  "junit $(basename "$(ls /usr/share/java/junit-platform-console-standalone-*.jar | head -1)" .jar | sed 's/.*-//')," \
  "mcs $(mcs --version | cut -d' ' -f5), mono $(mono --version | head -1 | cut -d' ' -f5)," \
  "ldc2 $(ldc2 --version | head -1 | tr -d '():' | cut -d' ' -f7)"
say "$(Rscript --version 2>&1 | sed 's/.*version \([0-9.]*\).*/R \1/'), $(racket --version | sed 's/.*v\([0-9.]*\).*/racket \1/')," \
  "$(iverilog -V 2>&1 | head -1 | cut -d' ' -f1-4), sqlite3 $(sqlite3 --version | cut -d' ' -f1)"
say "scalac $(scalac -version 2>&1 | cut -d' ' -f4)," \
  "kotlinc $(dpkg-query -W -f='${Version}' kotlin 2>/dev/null || kotlinc -version 2>&1 | tail -1)"
