"""Self-sabotage by judged programs in the interpreted languages (Bash,
Perl, PHP, Lua, Ruby): a program that damages what it was given or the
processes around it never turns its own failure into an infra error. The
catalogue is ``collimate_rl.testing.sabotage_scripts``'s, the checks and
tests ``collimate_rl.testing.sabotage``'s (``slow``: started first)."""

from collimate_rl.testing import sabotage

LANGUAGES = ("bash", "perl", "php", "lua", "ruby")

# the module's backend and client, and each test over LANGUAGES
globals().update(sabotage.contest_tests(LANGUAGES))
