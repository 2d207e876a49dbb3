"""Baking: ``Template.bake`` -> a handle whose ``wait`` follows the bake.

A bake (``POST /v1/templates``) walks ``Pending -> Converting -> Distributing
-> Live`` and then fills its pool to the declared width; or it ends
``Failed`` with the build's error. :meth:`TemplateHandle.wait` polls
``GET /v1/templates/{id}``, shows each reading to ``on_update`` (the CLI's
live view), and with ``fail_fast`` turns ``Failed`` into
:class:`~collimate_rl.TemplateBakeFailed` at once instead of at the timeout.
``Template.status`` and ``Template.attach`` serve a process that did not bake
(a second terminal, a restarted job). :class:`AsyncTemplate` and
:class:`AsyncTemplateHandle` are the coroutine twins.
"""

from __future__ import annotations

from ._async.templates import AsyncTemplate, AsyncTemplateHandle
from ._sync.templates import Template, TemplateHandle

__all__ = ["AsyncTemplate", "AsyncTemplateHandle", "Template", "TemplateHandle"]

# Their public home: reprs, docs and pickles name this module. (The async
# ones are written in collimate_rl/gateway_flows/_async/templates.py; the blocking ones are
# generated from it by tools/unasync.py.)
for _cls in (Template, TemplateHandle, AsyncTemplate, AsyncTemplateHandle):
    _cls.__module__ = __name__
del _cls
