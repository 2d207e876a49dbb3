"""Bash, Perl, PHP, Lua and Ruby (MultiPL-E's ``sh``, ``pl``, ``php``,
``lua``, ``rb``): a program run from source, whose harness reads the token
and deletes the program's file before the candidate runs, and prints the
token once the tests ran to their end.

Where each language's tests end, and how they fail (MultiPL-E's harness
passes a program that exits 0; its Perl one also fails a run that prints
``ERROR``, see :func:`failed_by_output`):

* Bash: ``set -e`` then ``run_test``, whose failed ``[[ ... ]]`` exits
  nonzero; the token is the program's last statement.
* Perl: ``testhumaneval();``, whose failed check calls ``exit 1``; the
  token is the program's last statement.
* PHP: ``test();``, whose failed check throws (PHP exits 255); the token is
  the program's last statement.
* Lua: ``os.exit(lu.LuaUnit.run())``: the token is printed by
  ``LuaUnit.run`` once every test passed. ``luaunit`` is the harness's
  own, not the host's (Debian has none): its ``assertEquals`` compares
  tables deeply, ``LuaUnit.run`` runs the global functions named
  ``test*`` and returns how many failed. It runs once, and only from the
  tests (the harness arms it between the candidate and the tests).
* Ruby: ``Test::Unit`` runs its test cases at exit; here the harness loads
  it first, turns that off and runs them itself after the tests (with the
  runner it held before the candidate ran), printing the token when all
  passed.

Between the candidate and the tests, what the names check of
:mod:`.names` cannot see is undone: Bash's functions named as builtins
(one defined through ``eval``), Perl's compile-time override of ``exit``,
a metatable on Lua's ``_G``; Ruby's harness holds ``Process.exit``.

What stays open: these are
dynamic languages sharing the process with their tests, and each can list
its own variables (bash's ``set``, PHP's ``$GLOBALS``, Ruby's constants,
Lua's ``debug``) or reach its still-open stdin: a candidate written
against this harness can find the token. A model does not stumble on it.
"""

from __future__ import annotations

import re
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, tag
from .names import BASH_BUILTINS as _BASH_BUILTINS

__all__ = ["INTERPRETED", "assemble_interpreted", "failed_by_output"]

#: The languages of this module.
INTERPRETED: Final = ("bash", "perl", "php", "lua", "ruby")

_BASH: Final = r"""{T}_token=$(cat)
exec </dev/null
rm -f -- "$0"
readonly {T}_token
{T}() { printf '\n%s\n' "${T}_token"; }
readonly -f {T}
"""

#: Between the candidate and the tests: in POSIX mode (an assignment, which
#: no function can stand in for) ``unset`` is the builtin whatever the
#: candidate defined, and every function named as a builtin goes (one
#: defined through ``eval`` escapes the names check); aliases off.
_BASH_RESET: Final = (
    "POSIXLY_CORRECT=y\nunset -f " + " ".join(sorted(_BASH_BUILTINS - {".", ":", "["}))
    + "\nunset POSIXLY_CORRECT\nshopt -u expand_aliases\n"
)

_PERL: Final = r"""my ${T};
BEGIN { local $/; ${T} = <STDIN>; close STDIN; open STDIN, '<', '/dev/null'; unlink $0; }
"""
#: Between the candidate and the tests: an override of ``exit`` (the
#: tests' way to fail) installed at compile time is gone before the tests
#: are compiled.
_PERL_RESET: Final = "BEGIN { delete $CORE::GLOBAL::{exit}; }\n"
_PERL_END: Final = '{ local $\\ = ""; local $, = ""; print STDOUT "\\n${T}\\n"; }\n'

_PHP: Final = r"""<?php
${T} = (function () {
    $token = stream_get_contents(STDIN);
    fclose(STDIN);
    @unlink(__FILE__);
    return function () use ($token) { echo "\n", $token, "\n"; };
})();
?>"""

_LUA: Final = r"""local {T} = (function()
  local token = io.read("a")
  io.input("/dev/null")
  os.remove(arg[0])
  -- what the tests' run uses, held before the candidate can replace it
  local setmeta, pcall_, pairs_, ipairs_, type_ = debug.setmetatable, pcall, pairs, ipairs, type
  local rawget_, tostring_, error_, abs = rawget, tostring, error, math.abs
  local write, flush, sort, concat = io.write, io.stdout.flush, table.sort, table.concat
  local lower, sub, format = string.lower, string.sub, string.format
  local stdout = io.stdout
  local armed, ran = false, false
  local function equal(a, b, depth)
    if a == b then return true end
    if type_(a) ~= "table" or type_(b) ~= "table" or depth > 100 then return false end
    for k, v in pairs_(a) do
      if not equal(v, rawget_(b, k), depth + 1) then return false end
    end
    for k in pairs_(b) do
      if rawget_(a, k) == nil then return false end
    end
    return true
  end
  local function show(v, depth)
    if type_(v) == "string" then return format("%q", v) end
    if type_(v) ~= "table" or depth > 5 then return tostring_(v) end
    local parts = {}
    for k, x in pairs_(v) do
      parts[#parts + 1] = "[" .. show(k, depth + 1) .. "]=" .. show(x, depth + 1)
    end
    sort(parts)
    return "{" .. concat(parts, ", ") .. "}"
  end
  local function check(ok, message) if not ok then error_(message, 3) end end
  local lu = {}
  function lu.assertEquals(actual, expected)
    check(equal(actual, expected, 0),
      "expected: " .. show(expected, 0) .. ", actual: " .. show(actual, 0))
  end
  function lu.assertNotEquals(actual, expected)
    check(not equal(actual, expected, 0), "expected anything but " .. show(expected, 0))
  end
  function lu.assertTrue(v) check(v == true, "expected true, actual: " .. show(v, 0)) end
  function lu.assertFalse(v) check(v == false, "expected false, actual: " .. show(v, 0)) end
  function lu.assertNil(v) check(v == nil, "expected nil, actual: " .. show(v, 0)) end
  function lu.assertNotNil(v) check(v ~= nil, "expected a value, actual: nil") end
  function lu.assertAlmostEquals(actual, expected, margin)
    check(type_(actual) == "number" and abs(actual - expected) <= (margin or 1e-11),
      "expected " .. show(expected, 0) .. " (almost), actual: " .. show(actual, 0))
  end
  lu.assert_equals = lu.assertEquals
  lu.LuaUnit = {}
  function lu.LuaUnit.run()
    if not armed or ran then return 1 end
    ran = true
    local names = {}
    for name, value in pairs_(_G) do
      if type_(name) == "string" and sub(lower(name), 1, 4) == "test"
          and type_(value) == "function" then
        names[#names + 1] = name
      end
    end
    sort(names)
    local failures = 0
    for _, name in ipairs_(names) do
      local ok, err = pcall_(rawget_(_G, name))
      if not ok then
        failures = failures + 1
        write(name, " failed: ", tostring_(err), "\n")
      end
    end
    write("Ran ", #names, " tests: ", failures == 0 and "OK" or (failures .. " failed"), "\n")
    if failures == 0 and #names > 0 then write("\n", token, "\n") end
    flush(stdout)
    return failures
  end
  local proxy = setmeta({}, {__index = lu, __newindex = function() end, __metatable = false})
  return function()
    setmeta(_G, nil)
    package.loaded.luaunit, package.preload.luaunit = nil, function() return proxy end
    armed = true
  end
end)()
"""

_RUBY: Final = r"""{T} = (lambda do
  token = $stdin.read
  $stdin.reopen("/dev/null")
  begin
    File.delete(__FILE__)
  rescue SystemCallError
  end
  require "test/unit"
  Test::Unit::AutoRunner.need_auto_run = false
  run = Test::Unit::AutoRunner.method(:run)
  write = $stdout.method(:write)
  quit = Process.method(:exit)
  lambda do
    quit.call(1) unless run.call
    write.call("\n#{token}\n")
    $stdout.flush
  end
end).call
"""

#: What a run that exited 0 must not print, per language (MultiPL-E fails
#: a Perl program whose output holds ``ERROR``).
_FAILS_ON: Final = {"perl": b"ERROR"}


def failed_by_output(language: str, stdout: bytes, stderr: bytes) -> bool:
    """Whether a run that exited 0 failed its dataset's harness anyway by
    what it printed."""
    if language == "racket":  # (MultiPL-E fails a Racket run that wrote to stderr)
        return bool(stderr)
    mark = _FAILS_ON.get(language)
    return mark is not None and (mark in stdout or mark in stderr)


def assemble_interpreted(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    language = tc.language
    t = tag(language, candidate, tests, prompt or "")
    if language == "bash":
        head = ""
        if candidate.startswith("#!"):  # the prompt's shebang stays its first line
            head, _, candidate = candidate.partition("\n")
            head += "\n"
        # MultiPL-E's tests open with the "}" closing the candidate's
        # function: the reset goes after it, at the top level
        closing = re.match(r"\s*\}[ \t]*\n", tests)
        at = closing.end() if closing else 0
        body = f"{candidate}\n{tests[:at]}{_BASH_RESET}{tests[at:]}\n{t}\n"
        return Assembly(head + _BASH.replace("{T}", t) + body, {}, tc)
    if language == "perl":
        end = _PERL_END.replace("{T}", t)
        head = _PERL.replace("{T}", t)
        return Assembly(f"{head}{candidate}\n{_PERL_RESET}{tests}\n{end}", {}, tc)
    if language == "php":
        body = candidate if candidate.lstrip().startswith("<?php") else f"<?php\n{candidate}"
        # (tests that leave PHP with ``?>`` get the token's call in PHP all the same)
        end = f"<?php ${t}();\n" if tests.rstrip().endswith("?>") else f"${t}();\n"
        return Assembly(f"{_PHP.replace('{T}', t)}{body}\n{tests}\n{end}", {}, tc)
    if language == "lua":
        return Assembly(f"{_LUA.replace('{T}', t)}{candidate}\n{t}()\n{tests}\n", {}, tc)
    if language == "ruby":
        return Assembly(f"{_RUBY.replace('{T}', t)}{candidate}\n{tests}\n{t}.call\n", {}, tc)
    raise ValueError(f"not an interpreted language of this module: {language!r}")
