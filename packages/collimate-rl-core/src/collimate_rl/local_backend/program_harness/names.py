"""Names a candidate declares at its top level and its tests use: a
candidate redefining one is judged wrong without running."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["BASH_BUILTINS", "IDENT", "code_only", "shadowed_names"]

_COMMENTS: Final = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRINGS: Final = re.compile(r'"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`')
_CHARS: Final = re.compile(r"'(?:\\[^'\n]{1,10}|[^'\\\n])'")
_JS_STRINGS: Final = re.compile(r"'(?:\\.|[^'\\\n])*'")
IDENT: Final = re.compile(r"[A-Za-z_$][\w$]*")

_DECLARES: Final = {
    "rust": re.compile(
        r"\b(?:struct|enum|union|trait|type|mod|fn|const|static|macro_rules\s*!)\s+"
        r"(?:mut\s+)?([A-Za-z_]\w*)|\bas\s+([A-Za-z_]\w*)\s*[;,}]"
    ),
    "go": re.compile(r"\b(?:func|type|var|const)\s+([A-Za-z_]\w*)"),
    "java": re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_]\w*)"),
    "javascript": re.compile(r"\b(?:function\s*\*?|class|var|let|const)\s*([A-Za-z_$][\w$]*)"),
    "typescript": re.compile(
        r"\b(?:function\s*\*?|class|var|let|const|type|interface|enum|namespace)\s*"
        r"([A-Za-z_$][\w$]*)"
    ),
    # a function, or an alias (aliases expand only where the candidate
    # turns that on: the harness turns it off before the tests)
    "bash": re.compile(
        r"(?m)^[ \t]*(?:function[ \t]+)?([A-Za-z_][\w-]*)[ \t]*\([ \t]*\)"
        r"|\bfunction[ \t]+([A-Za-z_][\w-]*)|\balias[ \t]+([A-Za-z_][\w-]*)="
    ),
    # a sub, or a glob assigned (``*CORE::GLOBAL::exit = sub {}``)
    "perl": re.compile(r"\bsub\s+(?:\w+::)*(\w+)|\*\{?[\"']?(?:\w+::)*(\w+)[\"']?\}?\s*="),
    "php": re.compile(
        r"\b(?:function|class|interface|trait|enum)\s+&?\s*([A-Za-z_]\w*)", re.IGNORECASE
    ),
    # a function (its last name: ``function lu.assertEquals``)
    "lua": re.compile(r"\bfunction\s+(?:[A-Za-z_]\w*[.:])*([A-Za-z_]\w*)"),
    # a method (anywhere: a class reopened overrides what tests call), a
    # class or module, an alias
    "ruby": re.compile(
        r"\bdef\s+(?:self\.)?([A-Za-z_]\w*)|\b(?:class|module)\s+(?:[A-Z]\w*::)*([A-Z]\w*)"
        r"|\b(?:alias_method|define_method)\s*\(?\s*:([A-Za-z_]\w*)|\balias\s+:?([A-Za-z_]\w*)"
    ),
    # a type (nested ones too) or a using alias; members in _CSHARP_MEMBER
    "csharp": re.compile(
        r"\b(?:class|struct|interface|enum|record|delegate\s+[\w<>\[\],.?\s]+?)\s+([A-Za-z_]\w*)"
        r"|\busing\s+(?:static\s+)?([A-Za-z_]\w*)\s*="
    ),
}
#: Comments of the interpreted languages (a ``#`` that starts a word: not
#: Perl's ``$#a`` nor bash's ``${#a}``).
_SCRIPT_COMMENTS: Final = {
    "bash": re.compile(r"(?m)(?:^|(?<=[ \t;]))#[^\n]*"),
    "perl": re.compile(r"(?m)(?:^|(?<=[ \t;]))#[^\n]*"),
    "ruby": re.compile(r"(?m)(?:^|(?<=[ \t;]))#[^\n]*"),
    "php": re.compile(r"(?m)(?:^|(?<=[ \t;]))#[^\n]*|//[^\n]*|/\*.*?\*/", re.DOTALL),
    "lua": re.compile(r"--\[(=*)\[.*?\]\1\]|--[^\n]*", re.DOTALL),
}
#: Where declaring a name anywhere shadows it for the tests (not only at
#: the top level): Java's nested classes, Perl's subs (package-wide), Lua's
#: functions and Ruby's reopened classes.
_ANYWHERE: Final = ("java", "perl", "lua", "ruby", "csharp")
#: Bash's builtins and keywords: a function of the candidate named as one
#: changes what every later line means (``set() { :; }`` drops the tests'
#: ``set -e``), so it shadows whether or not the tests name it.
BASH_BUILTINS: Final = frozenset(
    {
        ".",
        ":",
        "[",
        "alias",
        "bg",
        "bind",
        "break",
        "builtin",
        "caller",
        "cd",
        "command",
        "compgen",
        "complete",
        "compopt",
        "continue",
        "declare",
        "dirs",
        "disown",
        "echo",
        "enable",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "fc",
        "fg",
        "getopts",
        "hash",
        "help",
        "history",
        "jobs",
        "kill",
        "let",
        "local",
        "logout",
        "mapfile",
        "popd",
        "printf",
        "pushd",
        "pwd",
        "read",
        "readarray",
        "readonly",
        "return",
        "set",
        "shift",
        "shopt",
        "source",
        "suspend",
        "test",
        "times",
        "trap",
        "true",
        "type",
        "typeset",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
    }
)
#: Bash's ``enable -n set``: a builtin turned off (it cannot be told apart
#: from the candidate's own use, which no solution needs).
_BASH_ENABLE: Final = re.compile(r"(?m)(?:^|[;&|(`{]|\$\()[ \t]*enable\b")
#: A C# member (method, field, property) or local: a type's last token,
#: then the name. In the tests' class a member shadows what the tests name
#: (a field ``Tuple`` is what ``Tuple.Create`` then means).
_CSHARP_MEMBER: Final = re.compile(r"(\w+|[\]>?])\s+([A-Za-z_]\w*)\s*(?:=>|[=;({])")
#: Words before a name that make it no declaration (``return F(x)``).
_CSHARP_NOT_TYPES: Final = frozenset({
    "return", "new", "else", "throw", "await", "case", "in", "is", "as", "out", "ref", "yield",
    "goto", "using", "namespace", "params", "this", "base", "typeof", "nameof", "sizeof",
    "default", "checked", "unchecked", "lock", "fixed", "when", "where", "select", "from", "let",
    "orderby", "group", "by", "into", "on", "equals", "join", "ascending", "descending", "not",
    "and", "or", "if", "while", "for", "foreach", "switch", "catch", "do", "try", "finally",
})  # fmt: skip
#: Go's grouped declarations: ``var ( a = 1; b = 2 )``.
_GO_GROUP: Final = re.compile(r"\b(?:var|const|type)\s*\(([^()]*)\)")


def code_only(text: str, language: str) -> str:
    """``text`` with comments and string / character literals blanked
    (their words are not names); newlines and braces of code kept."""
    scripted = _SCRIPT_COMMENTS.get(language)
    if scripted is not None:
        text = scripted.sub(" ", text)
        return _JS_STRINGS.sub("''", _STRINGS.sub('""', text))
    text = _COMMENTS.sub(" ", text)
    text = _STRINGS.sub('""', text)
    chars = _JS_STRINGS if language in ("javascript", "typescript") else _CHARS
    return chars.sub("''", text)


def _top_level(code: str, start: int) -> str:
    """The text of ``code`` from ``start`` that sits at brace depth 0 (the
    depth counted from the beginning of ``code``)."""
    depth, out = 0, []
    for i, ch in enumerate(code):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and i >= start:
            out.append(ch)
            continue
        if i >= start:
            out.append(" " if depth else ch)
    return "".join(out)


def _declared(code: str, language: str) -> set[str]:
    names: set[str] = set()
    for m in _DECLARES[language].finditer(code):
        names.update(g for g in m.groups() if g)
    if language == "csharp":
        names.update(
            m.group(2) for m in _CSHARP_MEMBER.finditer(code) if m.group(1) not in _CSHARP_NOT_TYPES
        )
    if language == "go":
        for group in _GO_GROUP.finditer(code):
            for line in group.group(1).splitlines():
                first = IDENT.match(line.strip())
                if first:
                    names.add(first.group())
    return names


def shadowed_names(language: str, candidate: str, tests: str, prompt: str | None) -> list[str]:
    """Names the candidate declares at its top level (past the prompt) that
    the tests use and neither the prompt nor the tests declare."""
    if language == "scala":
        return _scala_shadowed(candidate, tests, prompt)
    if language not in _DECLARES:
        return []
    code = code_only(candidate, language)
    start = 0
    if prompt and candidate.startswith(prompt):
        start = len(code_only(prompt, language))
    if language in _ANYWHERE:  # see _ANYWHERE
        own = _declared(code[start:], language)
    else:
        own = _declared(_top_level(code, start), language)
    tests_code = code_only(tests, language)
    used = set(IDENT.findall(tests_code))
    theirs = _declared(tests_code, language)
    if prompt:
        theirs |= _declared(code_only(prompt, language), language)
    shadowed = (own & used) - theirs
    if language == "bash":
        shadowed |= own & BASH_BUILTINS
        if _BASH_ENABLE.search(code[start:]):
            shadowed.add("enable")
    return sorted(shadowed)


# -- Scala ----------------------------------------------------------------------
#: scalac reads ``\u0065`` as ``e`` anywhere in a source, before parsing.
_SCALA_UNICODE: Final = re.compile(r"(?<!\\)((?:\\\\)*)\\u+([0-9a-fA-F]{4})")
_SCALA_NAME: Final = r"(?:`([^`\n]+)`|([A-Za-z_$][\w$]*))"
#: A definition's name: ``def``, ``object``, ``class``, ``trait``,
#: ``type``, a simple ``val`` / ``var`` (backquoted names included).
_SCALA_DEFINES: Final = re.compile(
    r"\b(?:def|object|class|trait|type)\s+" + _SCALA_NAME
    + r"|\b(?:val|var)\s+" + _SCALA_NAME + r"(?![\w$])(?!\s*\()"
)
#: A ``val`` / ``var`` binding a pattern: ``val (a, b) = ...`` (up to the
#: ``=``, on its line).
_SCALA_PATTERN_VAL: Final = re.compile(r"\b(?:val|var)\s*(?:[A-Za-z_$][\w$.]*\s*)?\(([^=\n]*)=")
#: Comments and string literals (triple-quoted too); backquoted names stay.
_SCALA_STRINGS: Final = re.compile(r'"""(?s:.*?)"""|"(?:\\.|[^"\\\n])*"')
_SCALA_IMPORT: Final = re.compile(r"\bimport\s+([^\n;]+)")
#: Names used in code, not a numeric literal's suffix (``0l``, ``1.0f``).
_SCALA_USED: Final = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*|(?<=\.)[A-Za-z_$][\w$]*")
#: What comparing values calls on the candidate's own classes: a
#: definition of it is a forged equality whether or not the tests name it.
_SCALA_EQUALITY: Final = frozenset({"equals", "canEqual"})


def scala_source(text: str) -> str:
    """``text`` with its Unicode escapes read as scalac reads them."""
    return _SCALA_UNICODE.sub(lambda m: m.group(1) + chr(int(m.group(2), 16)), text)


def _scala_code(text: str) -> str:
    """``text`` as scalac reads it, comments and literals blanked."""
    text = _COMMENTS.sub(" ", scala_source(text))
    return _CHARS.sub("''", _SCALA_STRINGS.sub('""', text))


def _scala_binders(pattern: str) -> set[str]:
    """Variables a pattern binds: its lowercase names, up to a type
    ascription at its top level (``(a, b): (Int, Int)``)."""
    depth, end = 0, len(pattern)
    for i, ch in enumerate(pattern):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == ":" and depth <= 0:
            end = i
            break
    return {n for n in re.findall(r"(?<![\w$.])[a-z_$][\w$]*", pattern[:end]) if n != "_"}


def _scala_imported(clause: str) -> set[str]:
    """Names an import clause binds (``a.b.c``: c; ``a.{b, c => d}``: b, d;
    never a wildcard's unknown names, see the Scala harness)."""
    names: set[str] = set()
    for selector in re.findall(r"\{([^}]*)\}", clause):
        for part in selector.split(","):
            bound = part.split("=>")[-1].strip().strip("`")
            if bound and bound != "_":
                names.add(bound)
    for path in re.sub(r"\{[^}]*\}", "", clause).split(","):
        last = path.strip().rsplit(".", 1)[-1].strip().strip("`")
        if last and last != "_" and "." in path:
            names.add(last)
    return names


def _scala_declared(code: str) -> set[str]:
    names = {n for found in _SCALA_DEFINES.findall(code) for n in found if n}
    for pattern in _SCALA_PATTERN_VAL.findall(code):
        names |= _scala_binders(pattern)
    for clause in _SCALA_IMPORT.findall(code):
        names |= _scala_imported(clause)
    return names


def _scala_shadowed(candidate: str, tests: str, prompt: str | None) -> list[str]:
    """Scala's names check: what the candidate declares anywhere (a
    definition nested in an object is what the tests' calls find), binds
    by an import, and the tests use; minus what the prompt declares (its
    function). A name the tests declare too is not spared: a ``main`` of
    the candidate's is a redefinition (a duplicate is a compile error
    anyway), and ``equals`` always is (see ``_SCALA_EQUALITY``)."""
    code, prompt_code = _scala_code(candidate), _scala_code(prompt or "")
    start = len(prompt_code) if prompt and candidate.startswith(prompt) else 0
    own = _scala_declared(code[start:])
    used = set(_SCALA_USED.findall(_scala_code(tests)))
    return sorted(((own & used) | (own & _SCALA_EQUALITY)) - _scala_declared(prompt_code))
