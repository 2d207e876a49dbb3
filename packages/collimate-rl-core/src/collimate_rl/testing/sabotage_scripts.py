"""The self-sabotage catalogue in the interpreted languages Bash, Perl,
PHP, Lua and Ruby: the same damage as :mod:`.sabotage`'s C++ and Python
entries (to the program's own file and directory, to the processes around
it, to its limits and the disk, spinning and forking), written the way a
program in each language would do it. Where a language has no call for it
(Lua has no ``fork`` or ``kill``), the program reaches for the shell, as a
model-written one would.

Every entry is a statement (or a few) run before the program's answer; the
interpreters read their whole program before running it, but Bash, which
reads as it goes, keeps reading the file it opened (a removed or replaced
script runs on as it was).
"""

from __future__ import annotations

from typing import Final

__all__ = ["CATALOGUES", "RIGHT", "WRONG", "program"]

# -- Bash ----------------------------------------------------------------------
_BASH_HEAD = 'fill_() { cat /dev/zero > "$1/junk" 2>/dev/null; }\n'
_BASH = {
    "unlink_build": 'rm -f "$0"',
    "chmod_build": 'chmod 0 "$0" "$(dirname "$0")"',
    "overwrite_build": "rm -f \"$0\"; echo 'echo 4' > \"$0\"",
    "chmod_dir": "chmod 0 .",
    "remove_dir": 'rm -rf "$PWD"',
    "kill_parent": "kill -KILL $PPID",
    "stop_parent": "kill -STOP $PPID",
    "stop_all": "kill -STOP -1",
    "kill_all": "kill -KILL -1",
    "kill_group": "kill -KILL 0",
    "stop_self": "kill -STOP $$",
    "close_fds": "exec 0<&- 1>&- 2>&-",
    "rlimits": "ulimit -n 3; ulimit -f 0",
    "fill_disk": "fill_ .; fill_ /tmp; fill_ /dev/shm",
    "memory": "a=x; while :; do a=$a$a; done",
    "fork_bomb": "while :; do sleep 100 & done",
    "sleeper": "setsid sleep 1000 < /dev/null > /dev/null 2>&1 &",
    "exec_true": "exec /bin/true",
    "nice_spin": "renice -n 19 $$ > /dev/null; while :; do :; done",
    "hog_daemons": "for i in 1 2 3 4 5 6 7 8; do setsid bash -c 'while :; do :; done' &"
    " done; while :; do :; done",
}

# -- Perl ----------------------------------------------------------------------
_PERL_HEAD = (
    "use POSIX (); use Cwd ();\n"
    "sub fill_ { open(my $f, '>', \"$_[0]/junk\") or return; my $b = '0' x (1 << 20);"
    " while (print $f $b) {} }\n"
)
_PERL = {
    "unlink_build": "unlink $0;",
    "chmod_build": "(my $d = $0) =~ s{/[^/]*$}{}; chmod 0, $0, $d;",
    "overwrite_build": "open(my $f, '>', $0); print $f 'print 4;'; close $f;",
    "chmod_dir": "chmod 0, '.';",
    "remove_dir": "system('rm', '-rf', Cwd::getcwd());",
    "kill_parent": "kill 'KILL', getppid();",
    "stop_parent": "kill 'STOP', getppid();",
    "stop_all": "kill 'STOP', -1;",
    "kill_all": "kill 'KILL', -1;",
    "kill_group": "kill 'KILL', 0;",
    "stop_self": "kill 'STOP', $$;",
    "close_fds": "close STDIN; close STDOUT; close STDERR;",
    "fill_disk": "fill_('.'); fill_('/tmp'); fill_('/dev/shm');",
    "memory": "my @k; while (1) { push @k, '1' x (64 << 20); }",
    "fork_bomb": "for (1 .. 100000) { fork(); }",
    "sleeper": "if (fork() == 0) { POSIX::setsid(); if (fork() == 0) { sleep 1000; }"
    " POSIX::_exit(0); }",
    "exec_true": "exec '/bin/true';",
    "nice_spin": "setpriority(0, 0, 19); 1 while 1;",
    "hog_daemons": "for (1 .. 8) { if (fork() == 0) { POSIX::setsid();"
    " if (fork() == 0) { 1 while 1; } POSIX::_exit(0); } } 1 while 1;",
}

# -- PHP -----------------------------------------------------------------------
_PHP_HEAD = (
    "<?php\nfunction fill_($d) { $f = @fopen(\"$d/junk\", 'w'); if (!$f) return;"
    " $b = str_repeat('0', 1 << 20); while (@fwrite($f, $b)) {} }\n"
)
_PHP = {
    "unlink_build": "unlink(__FILE__);",
    "chmod_build": "chmod(__FILE__, 0); chmod(__DIR__, 0);",
    "overwrite_build": "file_put_contents(__FILE__, '<?php echo 4;');",
    "chmod_dir": "chmod('.', 0);",
    "remove_dir": "system('rm -rf ' . escapeshellarg(getcwd()));",
    "kill_parent": "posix_kill(posix_getppid(), SIGKILL);",
    "stop_parent": "posix_kill(posix_getppid(), SIGSTOP);",
    "stop_all": "posix_kill(-1, SIGSTOP);",
    "kill_all": "posix_kill(-1, SIGKILL);",
    "kill_group": "posix_kill(0, SIGKILL);",
    "stop_self": "posix_kill(getmypid(), SIGSTOP);",
    "close_fds": "fclose(STDIN); fclose(STDOUT); fclose(STDERR);",
    "rlimits": "posix_setrlimit(POSIX_RLIMIT_NOFILE, 3, 3);"
    " posix_setrlimit(POSIX_RLIMIT_FSIZE, 0, 0);",
    "fill_disk": "fill_('.'); fill_('/tmp'); fill_('/dev/shm');",
    "memory": "$k = []; for (;;) $k[] = str_repeat('1', 64 << 20);",
    "fork_bomb": "for ($i = 0; $i < 100000; $i++) pcntl_fork();",
    "sleeper": "if (pcntl_fork() == 0) { posix_setsid(); if (pcntl_fork() == 0) sleep(1000);"
    " posix_kill(getmypid(), SIGKILL); }",
    "exec_true": "pcntl_exec('/bin/true');",
    "nice_spin": "proc_nice(19); for (;;) {}",
    "hog_daemons": "for ($i = 0; $i < 8; $i++) if (pcntl_fork() == 0) { posix_setsid();"
    " if (pcntl_fork() == 0) for (;;) {} posix_kill(getmypid(), SIGKILL); } for (;;) {}",
}

# -- Lua -----------------------------------------------------------------------
# (no fork, kill or chmod in Lua's library: what it cannot call it asks sh
# for, naming itself and its parent from /proc)
_LUA_HEAD = (
    "local function stat_(i) local f = io.open('/proc/self/stat'); local s = f:read('a');"
    " f:close(); return select(i, s:match('^(%d+) %b() %S+ (%d+)')) end\n"
    "local function fill_(d) local f = io.open(d .. '/junk', 'wb'); if not f then return end;"
    " local b = string.rep('0', 1 << 20); while f:write(b) do end end\n"
)
_LUA = {
    "unlink_build": "os.remove(arg[0])",
    "chmod_build": "os.execute('chmod 0 ' .. arg[0] .. ' ' .. arg[0]:match('(.*)/'))",
    "overwrite_build": "local f = io.open(arg[0], 'w'); f:write('print(4)'); f:close()",
    "chmod_dir": "os.execute('chmod 0 .')",
    "remove_dir": "os.execute('rm -rf \"$PWD\"')",
    "kill_parent": "os.execute('kill -KILL ' .. stat_(2))",
    "stop_parent": "os.execute('kill -STOP ' .. stat_(2))",
    "stop_all": "os.execute('kill -STOP -1')",
    "kill_all": "os.execute('kill -KILL -1')",
    "kill_group": "os.execute('kill -KILL 0')",
    "stop_self": "os.execute('kill -STOP ' .. stat_(1))",
    "close_fds": "io.stdin:close(); io.stdout:close(); io.stderr:close()",
    "fill_disk": "fill_('.'); fill_('/tmp'); fill_('/dev/shm')",
    "memory": "local k = {}; while true do k[#k + 1] = string.rep('1', 64 << 20) end",
    "fork_bomb": "while true do os.execute('sleep 100 &') end",
    "sleeper": "os.execute('setsid sleep 1000 < /dev/null > /dev/null 2>&1 &')",
    "nice_spin": "os.execute('renice -n 19 ' .. stat_(1) .. ' > /dev/null'); while true do end",
    "hog_daemons": "for i = 1, 8 do os.execute(\"setsid sh -c 'while :; do :; done'"
    " < /dev/null > /dev/null 2>&1 &\") end; while true do end",
}

# -- Ruby ----------------------------------------------------------------------
_RUBY_HEAD = (
    "require 'fileutils'\n"
    "def fill_(d)\n"
    "  File.open(d + '/junk', 'wb') { |f| b = '0' * (1 << 20); loop { f.write(b) } }\n"
    "rescue SystemCallError, IOError\nend\n"
)
_RUBY = {
    "unlink_build": "File.unlink(__FILE__)",
    "chmod_build": "File.chmod(0, __FILE__); File.chmod(0, __dir__)",
    "overwrite_build": "File.write(__FILE__, 'puts 4')",
    "chmod_dir": "File.chmod(0, '.')",
    "remove_dir": "FileUtils.rm_rf(Dir.pwd)",
    "kill_parent": "Process.kill(:KILL, Process.ppid)",
    "stop_parent": "Process.kill(:STOP, Process.ppid)",
    "stop_all": "Process.kill(:STOP, -1) rescue nil",
    "kill_all": "Process.kill(:KILL, -1) rescue nil",
    "kill_group": "Process.kill(:KILL, 0)",
    "stop_self": "Process.kill(:STOP, Process.pid)",
    "close_fds": "STDIN.close; STDOUT.close; STDERR.close",
    "rlimits": "Process.setrlimit(:NOFILE, 3, 3); Process.setrlimit(:FSIZE, 0, 0)",
    "fill_disk": "fill_('.'); fill_('/tmp'); fill_('/dev/shm')",
    "memory": "k = []; loop { k << '1' * (64 << 20) }",
    "fork_bomb": "100000.times { fork rescue nil }",
    "sleeper": "fork { Process.setsid; fork { sleep 1000 }; exit!(0) }",
    "exec_true": "exec('/bin/true')",
    "nice_spin": "Process.setpriority(Process::PRIO_PROCESS, 0, 19); loop {}",
    "hog_daemons": "8.times { fork { Process.setsid; fork { loop {} }; exit!(0) } }; loop {}",
}

#: Each language's catalogue: sabotage name -> statements.
CATALOGUES: Final = {"bash": _BASH, "perl": _PERL, "php": _PHP, "lua": _LUA, "ruby": _RUBY}
#: A wrong answer (prints 0) and the right one (a + b) in each.
WRONG: Final = {"bash": "echo 0", "perl": "print \"0\\n\";", "php": "echo \"0\\n\";",
                "lua": "print(0)", "ruby": "puts 0"}  # fmt: skip
RIGHT: Final = {
    "bash": "read a b; echo $((a + b))",
    "perl": "my ($x, $y) = split ' ', join('', <STDIN>); print $x + $y, \"\\n\";",
    "php": "[$x, $y] = array_map('intval', preg_split('/\\s+/', trim(stream_get_contents(STDIN))));"
    " echo $x + $y, \"\\n\";",
    "lua": "local x, y = io.read('n', 'n'); print(x + y)",
    "ruby": "x, y = STDIN.read.split.map(&:to_i); puts x + y",
}
_HEADS: Final = {"bash": _BASH_HEAD, "perl": _PERL_HEAD, "php": _PHP_HEAD, "lua": _LUA_HEAD,
                 "ruby": _RUBY_HEAD}  # fmt: skip


def program(language: str, sabotage: str, answer: str) -> str:
    """A program in ``language`` doing ``sabotage``, then ``answer``."""
    return f"{_HEADS[language]}{sabotage}\n{answer}\n"
