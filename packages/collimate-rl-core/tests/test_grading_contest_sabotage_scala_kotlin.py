"""Self-sabotage by judged programs in Scala and Kotlin scripts: a program
that damages what it was given or the processes around it never turns its
own failure into an infra error ("no signal" for the trainer, so a
laundered 0.0). The catalogue, the checks and the tests are
``collimate_rl.testing.sabotage``'s (shared with the reliability table;
``slow``: started first)."""

from collimate_rl.testing import sabotage

LANGUAGES = ("scala", "kotlin")

# the module's backend and client, and each test over LANGUAGES
globals().update(sabotage.contest_tests(LANGUAGES))
