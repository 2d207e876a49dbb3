"""``collimate grade``: the argparse glue over :mod:`.rows`, :mod:`.results`,
:mod:`.runner` and :mod:`.summary`.

Registered by the built-in plugin :mod:`.builtin_commands` through the
``collimate_rl_cli_commands`` hook. Building the parser imports nothing but
argparse and the plugin layer's exit codes (``collimate plugins`` should not
pay for grading); the run imports the rest.

Exit codes (the README lists them too):

* 0: every row has a reward (or, with ``--skip-invalid``, is an invalid row);
* 1: rows are left without a reward because of the infrastructure (flagged
  rows, rows not written with ``--on-infra-error skip``, a stop with
  ``raise``, an unreachable target): run the same command again;
* 2: a usage or input error (bad rows, an output file that is not this
  input's, an unknown template); nothing was graded;
* 130 (SIGINT) / 143 (SIGTERM): interrupted; the file holds every row graded
  so far and the same command finishes it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, NoReturn

from ..plugins.events import EXIT_INTERRUPTED, EXIT_USAGE

if TYPE_CHECKING:
    from ..plugins.events import Subcommands
    from ..transport import SessionClient
    from .results import ResultWriter, ResumePlan
    from .rows import InputRow, ReadResult
    from .runner import GradeSettings, Halt, RunStats
    from .summary import SourceTally, Summary

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_TEMPLATE",
    "EXIT_INFRA",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_grade_command",
    "run_grade",
]

EXIT_OK: Final = 0
EXIT_INFRA: Final = 1
#: The python template the local backend serves under the name of the real
#: daemon's python image, so that one command works on both.
DEFAULT_TEMPLATE: Final = "dkr-python311"
#: Rows graded together (one ``grade_batch`` call when it takes a spec per
#: candidate). Packs are sized to the target, so a chunk
#: is in flight all at once: this bounds how long a Ctrl-C waits and what a
#: crash loses. Larger chunks were not measurably faster on the local backend
#: (2,000 rows: 128 to 1,024 rows per chunk all within the noise, 4-5 s).
DEFAULT_CHUNK_SIZE: Final = 256
#: How many bad rows are listed before "... and N more".
_SHOWN_PROBLEMS: Final = 20

_DESCRIPTION = """\
Grade a JSONL or Parquet file: one candidate per row, against the row's
ground truth.

A row: {"id": 7, "completion": "```python\\ndef solve(x): ...```",
        "ground_truth": [{"input": [2], "output": 4}], "data_source": "apps",
        "prompt_id": "p3"}

A file ending in .parquet is read as Parquet (pyarrow, one record batch at a
time; --format overrides); rows are numbered from 1 in either format. Rows
as `datasets` and the Hub export them work as they are.

Code is read from "completion"/"response" (the fenced block is extracted; a
chat message list works), else "code" (as is: in MBPP's export, the
reference solution). The ground truth is read from the first of
"ground_truth", "reward_spec.ground_truth" (SkyRL),
"reward_model.ground_truth" (verl), then the Hub's own test columns
"verification_info" (open-r1), "input_output" (APPS), "test_list" (MBPP,
with "test_setup_code"), "test" (HumanEval, KodCode), in any shape a reward
kind accepts. The entry point is the row's "entry_point"/"entry"/"fn_name"
column, else what the ground truth names, else --entry. A HumanEval-style
row (its "prompt" is code defining the entry point) is graded as prompt +
completion (--no-join-prompt: the completion alone). The id is "id", else
"task_id", else "problem_id", else the line (row) number. Rows of one group
("group", "uid", "prompt_id" or "prompt") share one seed.

Results go to -o FILE, one line per row, as they are graded; Ctrl-C keeps
every line written and the same command resumes. Every row is checked
before grading starts: a bad row stops the run (exit 2) unless
--skip-invalid is given.
"""

_EPILOG = """\
exit codes:
  0    every row graded
  1    rows left without a reward by infrastructure errors (rerun to retry them)
  2    usage or input error (nothing graded)
  130  interrupted (SIGINT; 143 for SIGTERM): rerun the same command to finish
"""


def add_grade_command(subparsers: Subcommands) -> None:
    """Add ``grade`` to the ``collimate`` parser."""
    p = subparsers.add_parser(
        "grade",
        help="grade a JSONL or Parquet file of completions against their ground truths",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", help="JSONL or Parquet file, one row per candidate")
    p.add_argument(
        "-o", "--output", required=True, help="JSONL results (appended; a rerun resumes it)"
    )
    _add_target_options(p)
    _add_row_options(p)
    _add_grading_options(p)
    _add_output_options(p)
    p.set_defaults(func=run_grade)


def _add_target_options(p: argparse.ArgumentParser) -> None:
    """Where to grade: a daemon, the gateway or a plugin's transport (else
    the environment decides, as ``connect()`` reads it)."""
    target = p.add_argument_group(
        "target (default: the environment, as connect() reads it: "
        "$COLLIMATE_SERVE_SOCKET, $COLLIMATE_API_KEY, $COLLIMATE_SERVE_URL, ...)"
    )
    target.add_argument("--url", help="a daemon's URL (or the gateway's, with --api-key)")
    target.add_argument("--socket", help="a daemon's unix socket")
    target.add_argument(
        "--api-key", help="the gateway (prefer $COLLIMATE_API_KEY: argv is visible to ps)"
    )
    target.add_argument("--transport", help="a transport a plugin registered, by name")


def _add_row_options(p: argparse.ArgumentParser) -> None:
    """How a row is read: where its code, ground truth, group, id and entry
    are when not where the usual exports put them, and what a bad row does."""
    rows = p.add_argument_group("rows")
    rows.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        help="the input's format (default: parquet for a .parquet file, else jsonl)",
    )
    rows.add_argument(
        "--ground-truth-field", metavar="NAME", help="where the ground truth is (dotted path)"
    )
    rows.add_argument(
        "--code-field",
        metavar="NAME",
        help="a field holding code, taken as is (HumanEval's canonical_solution: a body, "
        "joined to the prompt; a list of solutions, as APPS's 'solutions': the first)",
    )
    rows.add_argument(
        "--completion-field", metavar="NAME", help="a field holding a completion (code extracted)"
    )
    rows.add_argument(
        "--group-field",
        metavar="NAME",
        help="the CRN group key (default: the first of group, uid, prompt_id, prompt)",
    )
    rows.add_argument(
        "--id-field",
        metavar="NAME",
        help="the row id (default: the first of id, task_id, problem_id; rows without one "
        "are numbered by line or row)",
    )
    rows.add_argument(
        "--entry",
        default="solve",
        help="the function to call when neither the row nor its ground truth names one (solve)",
    )
    rows.add_argument(
        "--no-join-prompt",
        dest="join_prompt",
        action="store_false",
        help="grade a HumanEval-style row's completion alone, not its prompt + the completion",
    )
    rows.add_argument(
        "--skip-invalid",
        action="store_true",
        help="write bad rows as error rows (verdict 'invalid') and grade the rest, "
        "instead of stopping before grading",
    )


#: What each ``--seed-mode`` means (the first: the default).
_SEED_MODES: Final = {
    "crn": "one seed per group, derived from its key",
    "vanilla": "the target draws each",
    "deterministic": "one fixed seed",
}
#: What each ``--on-infra-error`` does (the first: the default).
_ON_INFRA_ERROR: Final = {
    "zero": "write the row flagged, reward null",
    "skip": "write nothing for it",
    "raise": "stop at the first",
}


def _add_grading_options(p: argparse.ArgumentParser) -> None:
    """How rows are graded: the template, limits, packing, chunks, seeds, and
    what an infrastructure error does to a row."""
    grading = p.add_argument_group("grading")
    grading.add_argument(
        "--template", default=DEFAULT_TEMPLATE, help=f"template to grade in ({DEFAULT_TEMPLATE})"
    )
    grading.add_argument("--timeout", type=_positive_int, metavar="S", help="seconds per grade")
    grading.add_argument(
        "--concurrency", type=_positive_int, metavar="N", help="execs in flight (default: 24)"
    )
    grading.add_argument(
        "--pack",
        type=_pack,
        metavar="N|auto|off",
        help="candidates per exec (default: grade_batch's own)",
    )
    grading.add_argument(
        "--chunk-size",
        type=_positive_int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help="rows graded together; Ctrl-C waits for the chunk in flight, and the "
        f"file is made durable between two ({DEFAULT_CHUNK_SIZE})",
    )
    _add_choice(grading, "--seed-mode", ("crn", "vanilla", "deterministic"), _SEED_MODES)
    grading.add_argument("--seed-salt", default="", help="salt of the crn seeds (new draws)")
    _add_choice(
        grading,
        "--on-infra-error",
        ("raise", "zero", "skip"),
        _ON_INFRA_ERROR,
        ". A rerun grades such rows again",
    )


def _add_choice(
    group: argparse._ArgumentGroup,
    flag: str,
    choices: tuple[str, ...],
    meanings: dict[str, str],
    note: str = "",
) -> None:
    """An option of a few named choices, the first of ``meanings`` its
    default; its help says what each means, in the order of ``meanings``."""
    default = next(iter(meanings))
    said = (f"{c}: {m}" + (" (default)" if c == default else "") for c, m in meanings.items())
    group.add_argument(flag, choices=choices, default=default, help="; ".join(said) + note)


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """What is written besides the results: resuming or not, progress, the
    summary as JSON."""
    out = p.add_argument_group("output")
    out.add_argument(
        "--overwrite", action="store_true", help="start over instead of resuming the output"
    )
    out.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )
    out.add_argument(
        "--json-summary",
        metavar="FILE",
        help="also write the summary as JSON to FILE ('-': stdout, the table then goes to stderr)",
    )
    out.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write an HTML report to FILE: pass rate per data source, rows by outcome "
        "(infra errors apart from wrong answers), the rewards' histogram; one file, no "
        "external assets",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _pack(text: str) -> int | str:
    if text in ("auto", "off"):
        return text
    return _positive_int(text)


class _UsageError(Exception):
    """Exit 2: said on stderr, nothing graded."""


def _err(message: str) -> None:
    print(f"collimate grade: {message}", file=sys.stderr, flush=True)


def run_grade(args: argparse.Namespace) -> int:
    """``collimate grade``'s ``func``: the exit code (see the module docstring)."""
    try:
        return _run(args)
    except _UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except _Unreachable as exc:
        _err(str(exc))
        return EXIT_INFRA
    except KeyboardInterrupt:  # before or after grading (during it, a handler halts)
        _err("interrupted")
        return EXIT_INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    """``collimate grade``: the exit code (see the module docstring). Every
    refusal (a usage error: exit 2) comes before the output is touched, and
    the target is checked before it too (see ``_grade``)."""
    src, dst = _checked_paths(args)
    settings = _settings(args)
    read = _read_input(args, src)
    plan, start = _resume_plan(args, src, dst, read, settings.template)
    pending = [row for row in read.rows if row.key not in plan.done]
    halt, stats = _grade(args, dst, start, read, pending, settings)
    interrupted = halt.signum is not None
    summary = _summarize(read, _read_back(dst, read, interrupted))
    code = _exit_code(summary.total, halt)
    table_out = _write_json_summary(args, summary, src, dst, code, interrupted, stats)
    _write_report(args, summary, src, dst, code, interrupted)
    _show_summary(summary, table_out, src)
    _final_notes(summary.total, stats, interrupted, settings.on_infra_error, dst)
    return code


def _checked_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The input and the output; a missing input, or an output that is the
    input (its rows would be overwritten by their results), is refused."""
    src, dst = Path(args.input), Path(args.output)
    if not src.is_file():
        raise _UsageError(f"no such input file: {src}")
    if dst.exists() and dst.resolve() == src.resolve():
        raise _UsageError("the output file is the input file")
    if args.report is not None and Path(args.report).resolve() in (src.resolve(), dst.resolve()):
        raise _UsageError("the report file is the input or the output file")
    return src, dst


def _same_named(cls: type[Any], args: argparse.Namespace, **given: Any) -> dict[str, Any]:
    """The fields of ``cls`` (a dataclass) from the options of the same
    names, but for those ``given`` (an option named otherwise, a value
    converted)."""
    from dataclasses import fields

    named = {f.name: getattr(args, f.name) for f in fields(cls) if f.name not in given}
    return {**named, **given}


def _settings(args: argparse.Namespace) -> GradeSettings:
    """How to grade, from the options; a setting out of range, or one this
    ``grade_batch`` does not take, is refused before any row is read."""
    from .runner import GradeSettings, check_supported

    pack: int | str | None = 1 if args.pack == "off" else args.pack  # 1: each alone
    try:
        settings = GradeSettings(
            **_same_named(GradeSettings, args, timeout_seconds=args.timeout, pack=pack)
        )
        check_supported(settings)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    return settings


def _read_input(args: argparse.Namespace, src: Path) -> ReadResult:
    """Every row of the input, read and checked before anything is graded:
    bad rows stop the run (``_refuse_bad_rows``) unless --skip-invalid;
    rows holding both a completion and a 'code' are pointed out (the
    completion is graded, which may not be what was meant)."""
    from .rows import InputError, RowOptions, read_rows

    options = RowOptions(**_same_named(RowOptions, args, file_format=args.format))
    try:
        read = read_rows(src, options, pm=getattr(args, "plugin_manager", None))
    except InputError as exc:
        raise _UsageError(str(exc)) from None
    except OSError as exc:
        raise _UsageError(f"cannot read {src}: {exc}") from None
    if read.completion_over_code:
        _err(
            f"{read.completion_over_code} rows have both a completion and a 'code' field: "
            "the completion is graded (--code-field code grades 'code')"
        )
    if read.problems and not args.skip_invalid:
        _refuse_bad_rows(read, src)
    return read


def _refuse_bad_rows(read: ReadResult, src: Path) -> NoReturn:
    """The first bad rows on stderr (``file:line: why``), then the usage
    error: nothing is graded while the input has rows that cannot be."""
    for problem in read.problems[:_SHOWN_PROBLEMS]:
        print(f"{src}:{problem}", file=sys.stderr)
    more = len(read.problems) - _SHOWN_PROBLEMS
    raise _UsageError(
        (f"... and {more} more; " if more > 0 else "")
        + f"{len(read.problems)} of {len(read.rows) + len(read.problems)} rows cannot be "
        "graded; nothing was graded (fix them, or --skip-invalid to write them as "
        "error rows and grade the rest)"
    )


def _resume_plan(
    args: argparse.Namespace, src: Path, dst: Path, read: ReadResult, template: str
) -> tuple[ResumePlan, list[dict[str, Any]] | None]:
    """What an existing output keeps (``plan.done``: rows not graded again)
    and what the writer starts the file with: ``None`` appends to it as it
    is, a list rewrites it first (records dropped to be graded again, a
    torn last line), ``[]`` empties it (--overwrite). An output that is not
    this input's results is refused: grading into it would mix two runs."""
    from .results import OutputMismatchError, ResumePlan, load_existing, plan_resume

    plan = ResumePlan()
    start: list[dict[str, Any]] | None = None
    if dst.exists() and not args.overwrite:
        try:
            plan = plan_resume(
                load_existing(dst),
                read.rows,
                template,
                output_name=str(dst),
                input_name=str(src),
            )
        except OutputMismatchError as exc:
            raise _UsageError(str(exc)) from None
        if plan.rewrite:
            start = plan.keep
        if plan.keep or plan.rewrite:
            _err(_resume_note(plan, len(read.rows), dst))
    elif dst.exists():
        start = []  # --overwrite
    return plan, start


def _grade(
    args: argparse.Namespace,
    dst: Path,
    start: list[dict[str, Any]] | None,
    read: ReadResult,
    pending: list[InputRow],
    settings: GradeSettings,
) -> tuple[Halt, RunStats | None]:
    """Write the output: the bad rows as error rows (--skip-invalid), then
    the pending rows as they are graded. The target is checked before the
    output is touched: an unreachable one must not cost an --overwrite's
    file, nor leave an empty one behind. Returns the halt (set by a signal
    that stopped grading) and the run's figures (None: nothing to grade)."""
    from .results import ResultWriter, invalid_record
    from .runner import Halt

    client = _connect_checked(args, settings.template) if pending else None
    halt = Halt()
    stats = None
    try:
        with ResultWriter(dst, start=start) as writer:
            if args.skip_invalid:
                for problem in read.problems:
                    writer.write(invalid_record(problem, settings.template))
            if client is not None:
                stats = _grade_rows(args, client, pending, read, settings, writer, halt)
    finally:
        if client is not None:
            client.close()
    return halt, stats


def _grade_rows(
    args: argparse.Namespace,
    client: SessionClient,
    pending: list[InputRow],
    read: ReadResult,
    settings: GradeSettings,
    writer: ResultWriter,
    halt: Halt,
) -> RunStats:
    """Grade the pending rows into ``writer``, a progress bar on stderr
    (--progress, else when it is a terminal). SIGINT and SIGTERM set
    ``halt`` instead of killing the run: it stops after the chunk in
    flight, with every graded row written."""
    from .runner import Progress, grade_rows, halting_on_signals

    show = args.progress if args.progress is not None else sys.stderr.isatty()
    with halting_on_signals(halt):
        return grade_rows(
            client,
            pending,
            read.specs,
            settings,
            writer,
            halt=halt,
            progress=Progress(show, len(pending)),
        )


def _read_back(dst: Path, read: ReadResult, interrupted: bool) -> list[dict[str, Any]]:
    """The output's records as the run left them. A finished file is then
    rewritten in input order (graded rows arrive as they finish): an
    interrupted one is left as it is, for the rerun that finishes it."""
    from .results import read_records, rewrite_records

    records = read_records(dst)
    if not interrupted:  # a finished file lists its rows in input order
        order = {row.key: row.line for row in read.rows}
        sorted_records = sorted(records, key=lambda r: _line_of(r, order))
        if sorted_records != records:
            rewrite_records(dst, sorted_records)
    return records


def _summarize(read: ReadResult, records: list[dict[str, Any]]) -> Summary:
    """Every input row tallied by what the output says of it."""
    from .summary import summarize

    return summarize(read.rows, read.problems, records)


def _exit_code(total: SourceTally, halt: Halt) -> int:
    """128 + the signal when one stopped grading; 1 when rows are left
    without a reward by the infrastructure (a rerun grades them); else 0."""
    if halt.signum is not None:
        return 128 + (halt.signum or 2)
    if total.infra_errors or total.not_graded:
        return EXIT_INFRA
    return EXIT_OK


def _write_json_summary(
    args: argparse.Namespace,
    summary: Summary,
    src: Path,
    dst: Path,
    code: int,
    interrupted: bool,
    stats: RunStats | None,
) -> IO[str]:
    """--json-summary: the summary with the run's figures and exit code, to
    FILE, or to stdout ('-'), the table then going to stderr so that stdout
    stays JSON. Returns where the table goes."""
    table_out: IO[str] = sys.stdout
    if args.json_summary is None:
        return table_out
    payload = {
        **summary.as_dict(),
        "input": str(src),
        "output": str(dst),
        "exit_code": code,
        "interrupted": interrupted,
        "graded_this_run": stats.graded if stats is not None else 0,
        "elapsed_s": round(stats.elapsed_s, 3) if stats is not None else 0.0,
    }
    text = json.dumps(payload, indent=2)
    if args.json_summary == "-":
        print(text, flush=True)
        table_out = sys.stderr
    else:
        Path(args.json_summary).write_text(text + "\n")
    return table_out


def _write_report(
    args: argparse.Namespace, summary: Summary, src: Path, dst: Path, code: int, interrupted: bool
) -> None:
    """--report: the summary as a self-contained HTML page (see :mod:`.report`)."""
    if args.report is None:
        return
    from datetime import datetime, timezone

    from .report import ReportContext, write_report

    ctx = ReportContext(
        input_name=str(src),
        output_name=str(dst),
        exit_code=code,
        interrupted=interrupted,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    try:
        write_report(Path(args.report), summary, ctx)
    except OSError as exc:
        _err(f"cannot write the report {args.report}: {exc}")


def _show_summary(summary: Summary, table_out: IO[str], src: Path) -> None:
    """The summary table, or, for an input without rows, a line saying so
    (an empty table would say nothing)."""
    from .summary import render_summary

    if summary.total.rows:
        render_summary(summary, table_out)
    else:
        _err(f"{src} has no rows")


class _Unreachable(Exception):
    """Exit 1: the target did not answer; nothing was graded."""


def _connect_checked(args: argparse.Namespace, template: str) -> SessionClient:
    """A client of the target, which answered and serves ``template``."""
    from ..errors import CollimateError
    from ..transport import connect
    from .runner import preflight

    try:
        client = connect(
            args.url, api_key=args.api_key, unix_socket=args.socket, transport=args.transport
        )
    except (ValueError, TypeError) as exc:
        raise _UsageError(f"cannot connect: {exc}") from None
    try:
        preflight(client, template)
    except LookupError as exc:
        client.close()
        raise _UsageError(str(exc)) from None
    except CollimateError as exc:
        client.close()
        raise _Unreachable(f"cannot reach the target: {exc}") from None
    except BaseException:
        client.close()
        raise
    return client


def _line_of(record: dict[str, Any], order: dict[str, int]) -> int:
    from .rows import id_key

    line = record.get("line")
    fallback = line if isinstance(line, int) else 0
    if record.get("verdict") == "invalid":
        return fallback
    return order.get(id_key(record.get("id")), fallback)


def _resume_note(plan: ResumePlan, total: int, dst: Path) -> str:
    parts = [f"resuming {dst}: {len(plan.keep)} of {total} rows already graded"]
    if plan.infra_retried:
        parts.append(f"{plan.infra_retried} rows flagged with infra errors are graded again")
    if plan.torn_bytes:
        parts.append(
            f"a torn last line ({plan.torn_bytes} bytes, left by a killed run) was dropped"
        )
    if plan.invalid_dropped:
        parts.append(f"{plan.invalid_dropped} invalid-row records are written again")
    return "; ".join(parts)


def _final_notes(
    total: SourceTally, stats: RunStats | None, interrupted: bool, infra_mode: str, dst: Path
) -> None:
    if stats is not None and stats.stopped_on_infra:
        _err(
            f"stopped at the first infrastructure error (--on-infra-error raise): "
            f"{stats.first_infra_error}"
        )
    if interrupted:
        _err(
            f"interrupted: {total.graded + total.infra_errors} of {total.rows} rows are in "
            f"{dst}; run the same command again to grade the rest"
        )
        return
    if total.infra_errors:
        first = f" (first: {stats.first_infra_error})" if stats and stats.first_infra_error else ""
        _err(
            f"{total.infra_errors} rows hit infrastructure errors{first}: written with "
            '"infra_error": true, "reward": null (no reward was computed). Run the same '
            "command again to grade them again."
        )
    if total.not_graded:
        why = (
            "infrastructure errors, not written (--on-infra-error skip)"
            if infra_mode == "skip"
            else "not graded"
        )
        _err(f"{total.not_graded} rows have no result ({why}); run the same command again.")
