#!/usr/bin/env bash
# Install the compilers and runtimes the local backend's languages use,
# where they are missing: g++, a JDK, Node.js, rustc, Go, PHP, Lua 5.4 and
# Ruby (bash and perl are normally there) from Debian's packages, Chromium
# (the browser template) from Debian's too, TypeScript (with Node's type
# definitions) from npm, and the test libraries of MultiPL-E, HumanEval-X
<<<<<<< HEAD
# and MBXP (javatuples, testify, lodash, js-md5; Perl's Test::Deep and
# Data::Compare), and SandboxFusion's test frameworks (junit5 and
# python3-pytest from Debian, jest from npm).
=======
# and MBXP (javatuples, testify, lodash, js-md5; Perl's Test::Deep);
# Scala 2.11 and Kotlin 1.3 (for Kotlin scripts) from Debian's packages.
>>>>>>> 57e20ab (docs: Scala and Kotlin scripts on the languages page (toolchains, the JVM's flags and why, the memory limit against the heap, the first object Scala runs, the Kotlin script launcher and -ea, the compilers' class archive measured, MultiPL-E's Scala rows and what the names check guards and leaves open, /run_code's scala and kotlin_script), the wire's language lists, README and local-backend; install_toolchains.sh installs scala and kotlin and prints their versions; a test naming kotlin as a language no backend runs names cobol (kotlin runs now); lint)
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
<<<<<<< HEAD
  "$(lua5.4 -v 2>&1 | cut -d' ' -f1-2), $(ruby --version | cut -d' ' -f1-2)," \
  "jest $(node "$npm_root/jest/bin/jest.js" --version)," \
  "junit $(basename "$(ls /usr/share/java/junit-platform-console-standalone-*.jar | head -1)" .jar | sed 's/.*-//')"
=======
  "$(lua5.4 -v 2>&1 | cut -d' ' -f1-2), $(ruby --version | cut -d' ' -f1-2)"
say "scalac $(scalac -version 2>&1 | cut -d' ' -f4)," \
  "kotlinc $(dpkg-query -W -f='${Version}' kotlin 2>/dev/null || kotlinc -version 2>&1 | tail -1)"
>>>>>>> 57e20ab (docs: Scala and Kotlin scripts on the languages page (toolchains, the JVM's flags and why, the memory limit against the heap, the first object Scala runs, the Kotlin script launcher and -ea, the compilers' class archive measured, MultiPL-E's Scala rows and what the names check guards and leaves open, /run_code's scala and kotlin_script), the wire's language lists, README and local-backend; install_toolchains.sh installs scala and kotlin and prints their versions; a test naming kotlin as a language no backend runs names cobol (kotlin runs now); lint)
