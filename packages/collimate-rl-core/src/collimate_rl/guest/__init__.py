"""Code that runs inside a sandbox, never in the SDK's process.

Every program the SDK or the local backend sends into a sandbox, or starts
there, is written here, and only here:

* ``grader/``: the grader of a grade's exec (shipped by
  :mod:`collimate_rl.rewards.program`, joined into one program);
* ``kernel_program.py``: the stateful kernel behind ``Sandbox.kernel()``
  (shipped by :mod:`collimate_rl.kernel._state` as one file);
* ``language_runner.py``: compiles and runs one language in the local
  backend's ``lang`` template (shipped by ``local_backend/language_runs.py``);
* ``sandbox_fusion_runner.py``: runs one SandboxFusion ``/run_code``
  request (shipped by ``local_backend/sandbox_fusion.py``);
* ``zygote/``: the warm interpreter of a local-backend template, its clones
  and exec children (loaded by ``local_backend/engine/_zygote.py`` in a
  ``python -I -S`` that never imports ``collimate_rl``);
* what several programs share, each a module named for its one job:
  ``separation.py`` (keeping one process of a sandbox apart from the
  others: Landlock, seccomp, ``oom_score_adj``; the grader's candidates,
  the language runner's runs, the kernel), ``request_paths.py`` (where a
  request's paths are, and writing and reading files there; the language
  and SandboxFusion runners), ``zygote/exit_code.py`` (a ``SystemExit``'s
  exit status; the exec child and the SandboxFusion runner).

The naming rule: a program is named for what it is in the sandbox, as a
module when it is one file and as a subpackage when it is several
(``grader``, ``kernel_program``, ``language_runner``,
``sandbox_fusion_runner``, ``zygote``); a module two programs share is a
module of this package named for its one job (``separation``,
``request_paths``), and each program that needs it imports it relatively,
as any module would. What is shipped as one file is joined at shipping time
(:func:`collimate_rl._guest_source.joined_source` reads these files as
text: a relative import of a module of this package is the place that
module's code goes, once), so each piece exists once here however many
programs carry it. A shared module the zygote needs lives in ``zygote/``
(``exit_code``): that package is loaded on its own, without this one, and
imports nothing outside itself.

Rules that follow from running elsewhere (``tests/test_guest_code.py``
checks the first): every module imports only the standard library and
modules of this package, never the SDK around it (the sandbox may have
neither ``collimate_rl`` nor its dependencies, or the wrong version of
them); this file holds no code (the zygote never executes it, nor
``zygote/__init__.py``); and each program keeps to the Python versions and
the imports its own docstring names.
"""
