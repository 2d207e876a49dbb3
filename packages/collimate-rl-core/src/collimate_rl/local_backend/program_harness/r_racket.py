"""R and Racket (MultiPL-E's ``r`` and ``rkt``): a program run from source
whose harness reads the token and deletes the program's file before any of
the candidate's code runs, and prints the token once the tests ran to
their end.

How MultiPL-E's harness judges them, and where the tests end here:

* R: ``test_humaneval <- function() { candidate <- f; stopifnot(...) }``
  then ``test_humaneval()``; a failed check stops R (exit 1). MultiPL-E
  passes a run that exits 0. Here the tests and the token's print are one
  top-level expression (``{ tests; token }``): R's ``options(error=)``
  handler lets a script go on with the *next* top-level expression after
  an error, so a token printed by an expression of its own would follow a
  failed check. Before the tests, what the names check cannot see is
  undone (:data:`_R`'s ``reset``): bindings in the global environment of
  names the tests use or define (and their S3 methods, and the group
  generics'),
  environments put on the search path, base's own bindings of those names
  and S3 methods registered since the harness started, sinks, the error
  handler.
* Racket: ``(require rackunit)``, ``(define (test-humaneval) (let
  ((candidate f)) (check-equal? ...)))`` then ``(test-humaneval)``.
  rackunit's failed check prints to stderr and the program goes on, exit
  0: MultiPL-E fails a run that wrote anything to stderr (see
  :func:`~.interpreted.failed_by_output`). Here the checks the tests use
  are the harness's own (a submodule the candidate's definitions cannot
  reach, whose checks no parameter of rackunit redirects), a failed one
  keeps the token from being printed, and the token is printed in the
  same top-level form as the tests' last one (a module runs each form
  under a prompt: a continuation the candidate captured earlier would
  otherwise end that form and let the next one run). The token is read
  while the module is *expanded* (a macro of the candidate runs then, and
  stdin is the token: the harness's submodule, first in the module, reads
  it and deletes the file before any macro of the candidate is expanded).

The names check (:func:`shadowed`): a candidate that defines, at its top
level (R: also ``<<-`` and ``assign("name", ...)`` anywhere), a name the
tests use and neither the prompt nor the tests define is judged wrong
without running; in R also an S3 method of such a name or of a group
generic (``all.equal.foo``, ``Ops.foo``) and a call reading its callers
(``sys.call``, ``sys.function``, ``parent.frame``: the tests' expected
values are in the calls that reach the candidate); in Racket any ``#%``
name (``#%app``, ``#%datum`` change what every expression means).

What stays open: R reached through strings (``eval(parse(text = ...))``,
``get("sys.calls")``) escapes the names check, and R can rebind nearly
anything at run time; Racket's reflection (``module->namespace``) reaches
the harness's submodule. A candidate written against this harness can
find the token; a model does not stumble on it.
"""

from __future__ import annotations

import re
from typing import Final

from ..toolchains import Toolchain
from .common import Assembly, ProgramRejected, ProgramUnusable, tag

__all__ = ["R_RACKET", "assemble_r_racket", "shadowed"]

#: The languages of this module.
R_RACKET: Final = ("r", "racket")

# -- R ---------------------------------------------------------------------------

#: R's syntax and the primitives the harness and every test call: never a
#: binding of the candidate's (the harness removes them from the global
#: environment and restores base's before the tests).
_R_SYNTAX: Final = (
    "{", "(", "<-", "<<-", "=", "if", "for", "while", "repeat", "function", "return",
    "$", "[[", "[", "::", ":::", "!", "&&", "||", "==", "!=", "&", "|", "-", "+",
    "*", "/", "c", "list", "invisible", "stop", "stopifnot", "isTRUE", "all.equal",
    "identical", "is.logical", "length", "is.na", "all", "any",
)  # fmt: skip
#: S3 group generics, and the internal generics what the tests call uses:
#: a method of one (``Ops.foo``, ``length.foo``) changes what ``==``,
#: arithmetic or ``length`` mean for the candidate's values.
_R_GROUPS: Final = (
    "Ops", "Math", "Summary", "Complex", "matrixOps", "c", "length", "all", "any", "is.na",
    "as.character", "as.double", "as.numeric", "as.vector", "unlist", "rep",
)  # fmt: skip

#: ``{T}_reset`` and ``{T}_end``; the harness's environment's parent is
#: base, so nothing the candidate puts in the global environment (or on the
#: search path) is what the harness calls.
_R: Final = r"""local({
  con <- file("stdin")
  token <- paste(readLines(con, warn = FALSE), collapse = "")
  close(con)
  args <- commandArgs(FALSE)
  unlink(sub("^--file=", "", args[startsWith(args, "--file=")]))
  base <- baseenv()
  protected <- c({PROTECTED})
  prefixes <- paste0(c({GENERICS}, {GROUPS}), ".")
  in_base <- protected[vapply(protected, exists, NA, envir = base, inherits = FALSE)]
  held <- mget(in_base, envir = base)
  methods <- get(".__S3MethodsTable__.", envir = base)
  registered <- ls(methods, all.names = TRUE)
  path <- lapply(seq_along(search()), pos.to.env)
  error <- getOption("error")
  reset <- function() {
    while (sink.number() > 0L) sink()
    options(error = error)
    for (i in rev(seq_along(search()))[-1L]) {
      env <- pos.to.env(i)
      if (!any(vapply(path, identical, NA, env))) detach(pos = i)
    }
    g <- globalenv()
    own <- ls(g, all.names = TRUE)
    bad <- own %in% protected
    for (p in prefixes) bad <- bad | startsWith(own, p)
    rm(list = own[bad], envir = g)
    for (name in in_base) {
      if (!identical(get(name, envir = base), held[[name]])) {
        unlockBinding(name, base)
        assign(name, held[[name]], envir = base)
        lockBinding(name, base)
      }
    }
    rm(list = setdiff(ls(methods, all.names = TRUE), registered), envir = methods)
    invisible()
  }
  out <- stdout()
  end <- function() {
    cat("\n", token, "\n", sep = "", file = out)
    flush(out)
  }
  assign("{T}_reset", reset, envir = globalenv())
  assign("{T}_end", end, envir = globalenv())
  lockBinding("{T}_reset", globalenv())
  lockBinding("{T}_end", globalenv())
}, envir = new.env(parent = baseenv()))
"""

#: An R name: letters, digits, dots and underscores (not starting with a
#: digit or an underscore), or any text in backquotes.
_R_NAME: Final = r"(?:[A-Za-z.][\w.]*|`[^`\n]+`)"
#: ``name <- ``, ``name = `` (a line's first statement at the top level).
_R_TOP: Final = re.compile(rf"(?m)^[ \t;]*({_R_NAME})[ \t]*(?:<-|=(?!=))")
#: Where a name is bound anywhere: ``name <<-``, ``-> name``, ``->> name``,
#: ``assign("name"``, ``makeActiveBinding("name"``, ``delayedAssign("name"``.
_R_ANYWHERE: Final = re.compile(
    rf"({_R_NAME})[ \t]*<<-|->>?[ \t]*({_R_NAME})"
    r"|\b(?:assign|makeActiveBinding|delayedAssign)\(\s*[\"']([^\"'\n]+)[\"']"
)
#: Calls that read the candidate's callers (the tests' calls, holding the
#: expected values) or rebind what the tests call out of the names check's
#: sight.
_R_REFUSED: Final = re.compile(
    r"\b(sys\.calls?|sys\.functions?|sys\.frames?|sys\.status|parent\.frame|parent\.env"
    r"|unlockBinding|lockBinding|makeActiveBinding|assignInNamespace|assignInMyNamespace"
    r"|registerS3methods?|trace"
    r"|setMethod|setGeneric|attach)\s*\("
    r"|\b(environment|body|formals)\s*\([^()]*\)\s*<-"
)
_R_STRINGS: Final = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|#[^\n]*")
_R_COMMENTS: Final = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|(#[^\n]*)")


def _r_code(text: str, keep_strings: bool = False) -> str:
    """``text`` without comments (and, unless ``keep_strings``, with its
    strings blanked)."""
    if keep_strings:
        return _R_COMMENTS.sub(lambda m: " " if m.group(1) else m.group(0), text)
    return _R_STRINGS.sub(lambda m: " " if m.group(0).startswith("#") else '""', text)


def _r_declared(code: str, strings: str) -> set[str]:
    """Names ``code`` binds at its top level, and anywhere through ``<<-``
    and the like (``strings``: the same code with its strings kept)."""
    names = {m.group(1).strip("`") for m in _R_TOP.finditer(_top_level(code))}
    for m in _R_ANYWHERE.finditer(strings):
        names.update(g.strip("`") for g in m.groups() if g)
    return names


def _r_own(candidate: str, prompt: str | None) -> set[str]:
    """What the candidate binds past the prompt: at its top level (its
    depth counted from the prompt's start), and anywhere through ``<<-``
    and the like."""
    code, strings = _r_code(candidate), _r_code(candidate, keep_strings=True)
    start = begin = 0
    if prompt and candidate.startswith(prompt):
        start, begin = len(_r_code(prompt)), len(_r_code(prompt, keep_strings=True))
    names = {m.group(1).strip("`") for m in _R_TOP.finditer(_top_level(code)[start:])}
    for m in _R_ANYWHERE.finditer(strings[begin:]):
        names.update(g.strip("`") for g in m.groups() if g)
    return names


def _r_theirs(tests: str, prompt: str | None) -> set[str]:
    theirs = _r_declared(_r_code(tests), _r_code(tests, keep_strings=True))
    if prompt:
        theirs |= _r_declared(_r_code(prompt), _r_code(prompt, keep_strings=True))
    return theirs


def _r_shadowed(candidate: str, tests: str, prompt: str | None) -> list[str]:
    past = candidate[len(prompt) :] if prompt and candidate.startswith(prompt) else candidate
    refused = sorted({m.group(1) or m.group(2) for m in _R_REFUSED.finditer(_r_code(past))})
    if refused:
        raise ProgramRejected(
            f"the candidate calls {', '.join(refused)} (reading its callers, where its tests'"
            " expected values are, or rebinding what its tests call)"
        )
    own = _r_own(candidate, prompt)
    theirs = _r_theirs(tests, prompt)
    used = _r_used(_r_code(tests)) | set(_R_SYNTAX)
    generics = (_r_used(_r_code(tests)) - theirs) | set(_R_GROUPS)
    shadowed = {n for n in own - theirs if n in used}
    shadowed |= {n for n in own if any(n.startswith(g + ".") for g in generics)}
    return sorted(shadowed)


def _r_used(code: str) -> set[str]:
    return {m.group().strip("`") for m in re.finditer(_R_NAME, code)}


def _r_quoted(names: set[str]) -> str:
    return ", ".join('"' + n.replace("\\", "\\\\").replace('"', '\\"') + '"' for n in sorted(names))


def _assemble_r(tc: Toolchain, candidate: str, tests: str, prompt: str | None) -> Assembly:
    t = tag("r", candidate, tests, prompt or "")
    theirs = _r_theirs(tests, prompt)
    # what the tests use and the candidate must not have bound, and what
    # the tests define themselves (an active or locked binding of the
    # candidate's would outlive their definition)
    tests_define = _r_declared(_r_code(tests), _r_code(tests, keep_strings=True))
    used = _r_used(_r_code(tests)) - theirs
    protected = used | tests_define | set(_R_SYNTAX)
    head = (
        _R.replace("{PROTECTED}", _r_quoted(protected))
        .replace("{GENERICS}", _r_quoted(used | tests_define))
        .replace("{GROUPS}", _r_quoted(set(_R_GROUPS)))
        .replace("{T}", t)
    )
    body = f"{candidate}\n{t}_reset()\n{{\n{tests}\n{t}_end()\n}}\n"
    return Assembly(head + body, {}, tc)


# -- Racket ----------------------------------------------------------------------

#: rackunit's checks the harness defines itself (MultiPL-E's tests use
#: ``check-equal?``; SandboxFusion's ``check-within``), by what they test.
_RACKET_CHECKS: Final = (
    "check-equal?", "check-not-equal?", "check-eq?", "check-not-eq?", "check-eqv?",
    "check-not-eqv?", "check-=", "check-within", "check-true", "check-false",
    "check-not-false", "check-pred", "check",
)  # fmt: skip

#: The submodule ``{T}``: reads the token and deletes the program's file
#: while the module is expanded (before any macro of the candidate runs),
#: and provides the checks and the token's print. Its own scope: no
#: definition of the candidate reaches what it calls.
_RACKET: Final = r"""(module {T} racket/base
  (require (for-syntax racket/base racket/port))
  (provide {T}-end check-equal? check-not-equal? check-eq? check-not-eq? check-eqv?
           check-not-eqv? check-= check-within check-true check-false check-not-false
           check-pred check)
  (begin-for-syntax
    (define token (port->string (current-input-port)))
    (let ([src (syntax-source #'here)])
      (when (path? src)
        (with-handlers ([(lambda (e) #t) void]) (delete-file src)))))
  (define-syntax (the-token stx) (datum->syntax stx token))
  (define out (current-output-port))
  (define err (current-error-port))
  (define failed #f)
  (define (fail! name message)
    (set! failed #t)
    (fprintf err "--------------------\nFAILURE\nname: ~a\n~a\n--------------------\n"
             name message)
    (flush-output err))
  (define (run name thunk)
    (with-handlers ([(lambda (e) #t)
                     (lambda (e) (fail! name (format "raised: ~a"
                                                    (if (exn? e) (exn-message e) e))))])
      (thunk)))
  (define (within? a b eps)
    (cond [(and (number? a) (number? b)) (<= (magnitude (- a b)) eps)]
          [(and (pair? a) (pair? b)) (and (within? (car a) (car b) eps)
                                          (within? (cdr a) (cdr b) eps))]
          [(and (vector? a) (vector? b))
           (and (= (vector-length a) (vector-length b))
                (for/and ([x (in-vector a)] [y (in-vector b)]) (within? x y eps)))]
          [else (equal? a b)]))
  (define (compare name same? actual expected)
    (run name (lambda ()
                (let ([a (actual)] [e (expected)])
                  (unless (same? a e)
                    (fail! name (format "actual: ~e\nexpected: ~e" a e)))))))
  (define-syntax-rule (define-check (name actual expected) same?)
    (define-syntax-rule (name actual expected . message)
      (compare 'name same? (lambda () actual) (lambda () expected))))
  (define-check (check-equal? a e) equal?)
  (define-check (check-not-equal? a e) (lambda (x y) (not (equal? x y))))
  (define-check (check-eq? a e) eq?)
  (define-check (check-not-eq? a e) (lambda (x y) (not (eq? x y))))
  (define-check (check-eqv? a e) eqv?)
  (define-check (check-not-eqv? a e) (lambda (x y) (not (eqv? x y))))
  (define-syntax-rule (check-= actual expected eps . message)
    (compare 'check-= (let ([d eps]) (lambda (x y) (<= (abs (- x y)) d)))
             (lambda () actual) (lambda () expected)))
  (define-syntax-rule (check-within actual expected eps . message)
    (compare 'check-within (let ([d eps]) (lambda (x y) (within? x y d)))
             (lambda () actual) (lambda () expected)))
  (define-syntax-rule (check-true v . message)
    (compare 'check-true eq? (lambda () v) (lambda () #t)))
  (define-syntax-rule (check-false v . message)
    (compare 'check-false eq? (lambda () v) (lambda () #f)))
  (define-syntax-rule (check-not-false v . message)
    (compare 'check-not-false (lambda (x y) (and x #t)) (lambda () v) (lambda () #t)))
  (define-syntax-rule (check-pred pred v . message)
    (compare 'check-pred (lambda (x p) (and (p x) #t)) (lambda () v) (lambda () pred)))
  (define-syntax-rule (check op actual expected . message)
    (compare 'check (lambda (x y) (and (op x y) #t)) (lambda () actual) (lambda () expected)))
  (define ({T}-end)
    (unless failed
      (fprintf out "\n~a\n" (the-token))
      (flush-output out))))
(require '{T})
"""

#: ``(require rackunit)``: the harness's checks stand in for rackunit's.
_REQUIRE_RACKUNIT: Final = re.compile(r"\(\s*require\s+rackunit\s*\)")
#: Racket's comments, strings and character literals (``#\(`` is no paren).
_RACKET_SKIP: Final = re.compile(
    r'"(?:\\.|[^"\\])*"|#\|.*?\|#|;[^\n]*|#\\(?:[A-Za-z]+|.)', re.DOTALL
)
_RACKET_NAME: Final = r"[^\s()\[\]{}\",'`;|]+"
_RACKET_DEFINES: Final = re.compile(
    rf"\(\s*(?:define|define-syntax|define-syntax-rule|define-values|define-syntaxes"
    rf"|struct|define-struct)\s+[(\[]?\s*({_RACKET_NAME})((?:\s+{_RACKET_NAME})*)"
)


def _racket_code(text: str) -> str:
    """``text`` with its comments, strings and characters blanked, each
    as long as it was (offsets in it are offsets in ``text``)."""

    def blank(m: re.Match[str]) -> str:
        spaces = re.sub(r"[^\n]", " ", m.group())
        return f'"{spaces[1:-1]}"' if m.group().startswith('"') else spaces

    return _RACKET_SKIP.sub(blank, text)


def _racket_top_forms(code: str) -> list[tuple[int, int]]:
    """The (start, end) of each top-level parenthesized form of ``code``."""
    forms, depth, start = [], 0, 0
    for i, ch in enumerate(code):
        if ch in "([{":
            if depth == 0:
                start = i
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
            if depth == 0:
                forms.append((start, i + 1))
    return forms


def _racket_declared(code: str) -> set[str]:
    """Names defined by the top-level forms of ``code``, the last one
    perhaps unclosed (a prompt's); ``define-values`` binds each of its
    names."""
    names: set[str] = set()
    depth = 0
    starts = []
    for i, ch in enumerate(code):
        if ch in "([{":
            if depth == 0:
                starts.append(i)
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
    for start in starts:
        m = _RACKET_DEFINES.match(code, start)
        if m is None:
            continue
        names.add(m.group(1))
        if code[m.start() : m.end()].split()[0].lstrip("(") in ("define-values", "define-syntaxes"):
            names.update(m.group(2).split())
    return names


def _racket_shadowed(candidate: str, tests: str, prompt: str | None) -> list[str]:
    code = _racket_code(candidate)
    if "#%" in code:
        return sorted(set(re.findall(r"#%[^\s()\[\]{}\"]*", code)))
    own = _racket_declared(code)
    test_code = _racket_code(tests)
    theirs = _racket_declared(test_code)
    if prompt:
        theirs |= _racket_declared(_racket_code(prompt))
    used = set(re.findall(_RACKET_NAME, test_code)) | set(_RACKET_CHECKS)
    return sorted((own & used) - theirs)


def _assemble_racket(tc: Toolchain, candidate: str, tests: str, prompt: str | None) -> Assembly:
    t = tag("racket", candidate, tests, prompt or "")
    lang, _, rest = candidate.partition("\n")
    if not lang.startswith("#lang"):
        lang, rest = "#lang racket", candidate
    tests = _REQUIRE_RACKUNIT.sub(" ", tests)
    forms = _racket_top_forms(_racket_code(tests))
    if not forms:
        raise ProgramUnusable("the tests have no form to run")
    start, end = forms[-1]
    # the token in the same top-level form as the tests' last one
    tests = f"{tests[:start]}(let () {tests[start:end]} ({t}-end)){tests[end:]}"
    return Assembly(f"{lang}\n{_RACKET.replace('{T}', t)}{rest}\n{tests}\n", {}, tc)


# -- both ------------------------------------------------------------------------


def _top_level(code: str) -> str:
    """``code`` with what sits inside brackets blanked (R's function bodies
    and a call's arguments), its newlines kept."""
    depth, out = 0, []
    for ch in code:
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth = max(0, depth - 1)
        out.append(ch if depth == 0 or ch == "\n" else " ")
    return "".join(out)


def shadowed(language: str, candidate: str, tests: str, prompt: str | None) -> list[str]:
    """Names the candidate defines that its tests use (see the module)."""
    if language == "r":
        return _r_shadowed(candidate, tests, prompt)
    return _racket_shadowed(candidate, tests, prompt)


def assemble_r_racket(
    tc: Toolchain, candidate: str, tests: str, prompt: str | None, typecheck: bool
) -> Assembly:
    names = shadowed(tc.language, candidate, tests, prompt)
    if names:
        raise ProgramRejected(f"the candidate redefines {', '.join(names)}, which the tests use")
    if tc.language == "r":
        return _assemble_r(tc, candidate, tests, prompt)
    if tc.language == "racket":
        return _assemble_racket(tc, candidate, tests, prompt)
    raise ValueError(f"not a language of this module: {tc.language!r}")
