"""Laundering attempts, counted for the table: judged programs that damage
what they were given or the processes around them, then answer wrong
(``collimate_rl.testing.sabotage``), each in a group beside right
siblings. An infra error on any of them would turn the program's 0.0 into
"no signal" for the trainer: the count that must be zero."""

from __future__ import annotations

from dataclasses import dataclass, field

from collimate_rl import CollimateClient, CollimateError, grade_batch
from collimate_rl.local_backend import LocalCollimateBackend
from collimate_rl.local_backend.toolchains import MissingToolchain, find_toolchains
from collimate_rl.testing.programs import OURS
from collimate_rl.testing.sabotage import CATALOGUE, UNRUNNABLE, right, spec, wrong

#: The languages of the short (CI) form: one native, one JIT, the server's own.
SHORT_LANGUAGES = ("cpp", "java", "python")


@dataclass
class LaunderingReport:
    attempts: int = 0
    infra_errors: int = 0
    rewarded: int = 0
    siblings_harmed: int = 0
    languages: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


def run_laundering(*, short: bool) -> LaunderingReport:
    """Every sabotage of each language (the short form's, or all) in one
    group per language, right siblings between them; and each build that
    yields nothing runnable."""
    report = LaunderingReport()
    found = find_toolchains()
    with (
        LocalCollimateBackend() as backend,
        CollimateClient(backend.base_url, timeout=900) as client,
    ):
        for language in SHORT_LANGUAGES if short else tuple(CATALOGUE):
            if isinstance(found[OURS.get(language, language)], MissingToolchain):
                report.missing.append(language)
                continue
            report.languages.append(language)
            _group(client, language, report)
    return report


def _group(client: CollimateClient, language: str, report: LaunderingReport) -> None:
    good = right(language)
    hostile = [(case, wrong(language, snippet)) for case, snippet in CATALOGUE[language].items()]
    if language in UNRUNNABLE:
        hostile.append(("nothing_runnable", UNRUNNABLE[language]))
    group = [good]
    for _case, source in hostile:
        group += [source, good]
    try:
        results = grade_batch(client, "py", group, spec(language))
    except CollimateError as exc:  # the whole group lost: every attempt laundered
        report.attempts += len(hostile)
        report.infra_errors += len(hostile)
        report.details.append(f"{language}: the group raised {exc!r}")
        return
    for at, result in enumerate(results):
        if at % 2 == 0:
            if result.reward != 1.0 or result.infra_error:
                report.siblings_harmed += 1
                report.details.append(f"{language}: a right sibling got {result.explain()}")
            continue
        case = hostile[at // 2][0]
        report.attempts += 1
        if result.infra_error:
            report.infra_errors += 1
            report.details.append(f"{language} {case}: infra error: {result.explain()}")
        elif result.reward != 0.0:
            report.rewarded += 1
            report.details.append(f"{language} {case}: rewarded {result.reward}")
