"""Before each test cell, put the kernel's execution hooks back as they were before any learner code ran.

A learner cell can register IPython hooks (``pre_run_cell``, ``post_run_cell``,
...), AST or input transformers, or rebind the recorder, so that code of
theirs runs inside a test cell's execution and publishes records there (a
quiz answer that was never set, values for a test that crashed). The grader
sends ``SNAPSHOT`` silently before the first cell and ``restore(...)`` silently
before every test cell: both run with ``silent=True`` and
``store_history=False``, so no hook fires for them and they appear in no
history; ``restore()`` puts back the hook lists, transformers, display
functions, the recorder and the program exporter exactly as ``SNAPSHOT`` saw them. Nothing is
added to the learner's namespace (the saved state hangs on the shell object).

This closes IPython's documented extension points, not every way Python code
can change its own process: a kernel is the learner's. Where the lesson is a
program, the evidence is the program itself, run outside the kernel
(``grader.programs``).
"""
from __future__ import annotations

SNAPSHOT = r'''
def _snapshot():
    import sys
    import IPython.core.display_functions as functions
    import IPython.display as display
    import coursekit.programs as exporter
    import coursekit.record as recorder
    shell = get_ipython()

    def _formatters(display_formatter):
        # The display formatter formats the reset's own value (a user expression) after the reset ran, so a printer
        # the learner registered there would run between the reset and the test cell.
        kept = []
        for formatter in [*display_formatter.formatters.values(), display_formatter.ipython_display_formatter,
                          display_formatter.mimebundle_formatter]:
            registries = {name: dict(getattr(formatter, name)) for name in
                          ("type_printers", "deferred_printers", "singleton_printers") if hasattr(formatter, name)}
            kept.append((formatter, registries, formatter.enabled))
        return (display_formatter, dict(display_formatter.formatters), display_formatter.ipython_display_formatter,
                display_formatter.mimebundle_formatter, kept)

    def _put_formatters_back(shell, saved):
        display_formatter, formatters, ipython_display, mimebundle, kept = saved
        shell.display_formatter = display_formatter
        display_formatter.formatters = dict(formatters)
        display_formatter.ipython_display_formatter = ipython_display
        display_formatter.mimebundle_formatter = mimebundle
        for formatter, registries, enabled in kept:
            for name, registry in registries.items():
                setattr(formatter, name, dict(registry))
            formatter.enabled = enabled

    saved = {
        "events": {name: list(hooks) for name, hooks in shell.events.callbacks.items()},
        "ast": list(shell.ast_transformers),
        "input_post": list(shell.input_transformers_post),
        "cleanup": list(shell.input_transformer_manager.cleanup_transforms),
        "line": list(shell.input_transformer_manager.line_transforms),
        "token": list(shell.input_transformer_manager.token_transformers),
        "display": (display.display, functions.display, functions.publish_display_data),
        "publish": (shell.display_pub, type(shell.display_pub).publish, sys.displayhook, shell.displayhook),
        "recorder": dict(vars(recorder)),
        "exporter": dict(vars(exporter)),
        "formatter": _formatters(shell.display_formatter),
    }

    def restore():
        for name, hooks in saved["events"].items():
            shell.events.callbacks[name] = list(hooks)
        shell.ast_transformers[:] = saved["ast"]
        shell.input_transformers_post[:] = saved["input_post"]
        shell.input_transformer_manager.cleanup_transforms[:] = saved["cleanup"]
        shell.input_transformer_manager.line_transforms[:] = saved["line"]
        shell.input_transformer_manager.token_transformers[:] = saved["token"]
        display.display, functions.display, functions.publish_display_data = saved["display"]
        shell.display_pub, publish, sys.displayhook, shell.displayhook = saved["publish"]
        type(shell.display_pub).publish = publish
        vars(shell.display_pub).pop("publish", None)
        vars(recorder).update(saved["recorder"])
        vars(exporter).update(saved["exporter"])
        shell.user_ns["record"] = recorder.record
        _put_formatters_back(shell, saved["formatter"])

    return restore


get_ipython()._hooks_snapshot = _snapshot()
del _snapshot
'''

IDENTITY = "id(get_ipython()._hooks_snapshot)"  # asked for with SNAPSHOT (a user expression), before learner code


def restore(identity: int | None) -> str:
    """The code that puts the hooks back: it calls the snapshot's function only if it is still the object SNAPSHOT
    made (``identity``), and fails otherwise, so a notebook that replaced it fails the test cell it ran before
    (``grader.kernel_run``) instead of running that test with its own hooks in place."""
    call = "__import__('IPython').get_ipython()._hooks_snapshot"
    if identity is None:
        return f"{call}()"
    return f"(lambda r: r() if id(r) == {int(identity)} else 1 / 0)({call})"
