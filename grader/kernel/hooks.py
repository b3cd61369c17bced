"""Before each test cell, put the kernel's execution hooks back as they were before any learner code ran.

A learner cell can register IPython hooks (``pre_run_cell``, ``post_run_cell``,
...), AST or input transformers, replace IPython's own methods or objects, or
rebind the recorder, so that code of theirs runs inside a test cell's execution
and publishes records there (a quiz answer that was never set, values for a test
that crashed). The grader sends ``SNAPSHOT`` silently before the first cell, asks
for ``IDENTITY`` with it, and evaluates ``restore(identity)`` as a user expression
of an empty cell before every test cell (``grader.kernel.run``).

What the reset resolves, and how:

* **No name.** The reset expression and the function it calls look up no name
  in the learner's namespace or in builtins: the expression starts from the
  literal ``()`` and reaches ``object`` (``().__class__.__base__``), its
  ``__repr__`` and ``__subclasses__`` through attributes of built-in types,
  which no Python code can change; the function uses only its arguments and one
  closure cell (``tests/test_hooks.py`` checks the bytecode for global, builtin
  and name lookups). Shadowing ``id``, ``__import__``, ``get_ipython`` or
  ``__builtins__``, in the namespace or in the ``builtins`` module, changes
  nothing.
* **Identity by address.** The expression finds the grader's holder class among
  ``object``'s subclasses by ``object.__repr__`` (type and address), and calls
  its function only if the function, its code object and the closure's saved
  state are the very objects ``SNAPSHOT`` made (their addresses, reported by
  ``IDENTITY`` before any learner code ran). A swapped ``__code__``, a rewritten
  closure cell or a look-alike class makes the reset fail, so the test cell is
  not judged and the notebook is flagged (``hooks_not_reset``). The four objects
  hold one reference that nothing releases, so learner code cannot free them and
  place an object of its own at one of their addresses.
* **No code of the learner's in every frame.** An audit hook installed last (CPython offers no way to remove
  one) refuses later audit hooks, ``sys.settrace`` and ``sys.setprofile`` (threads' too), rewriting any
  function's ``__code__``, and the introspection that would reach the hook (``gc.get_objects``,
  ``gc.get_referrers``, ``gc.get_referents``, ``sys._current_frames``): the learner's cell that tries fails with the
  reason (``tests/attacks/sharded_step/redteam-audit-hook-quiz.py``, ``redteam-setprofile-quiz.py``).
* **Objects, not only contents.** The saved state is tuples (immutable); the reset
  puts back the class dictionaries of IPython's shell and of the objects it runs
  a cell through (methods replaced on the class), the shell's ``__class__``,
  instance attributes that shadow a method, the event manager, transformer
  lists and display objects themselves, the display formatters and their printers,
  the recorder, the program exporter and the course's checks (``coursekit.checks``).

What holds only inside the kernel: the kernel process is the learner's. Code
that rewrites ipykernel's own handling of the grader's request before the reset
runs (the kernel's ``do_execute``, the shell's ``user_expressions``), or edits
memory through ``ctypes``, can answer the reset itself. Where the lesson is a
program, the evidence is the program itself, run outside the kernel
(``grader.programs``); the scan flags the names such code needs
(``grader.submission.scan``).
"""
from __future__ import annotations

import re

SNAPSHOT = r'''
def _snapshot():
    import sys
    import types
    import IPython.core.display_functions as functions
    import IPython.display as display
    import coursekit.checks as checks
    import coursekit.programs as exporter
    import coursekit.record as recorder
    shell = get_ipython()
    heap = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class Python code can change

    def classes_of(*objects):
        seen = []
        for thing in objects:
            for cls in type(thing).__mro__:
                if cls.__flags__ & heap and cls not in seen:
                    seen.append(cls)
        return tuple((cls, tuple(vars(cls).items())) for cls in seen)

    def formatters(display_formatter):
        kept = []
        for formatter in [*display_formatter.formatters.values(), display_formatter.ipython_display_formatter,
                          display_formatter.mimebundle_formatter]:
            registries = tuple((name, tuple(getattr(formatter, name).items())) for name in
                               ("type_printers", "deferred_printers", "singleton_printers") if hasattr(formatter, name))
            kept.append((formatter, registries, formatter.enabled))
        return (display_formatter, tuple(display_formatter.formatters.items()),
                display_formatter.ipython_display_formatter, display_formatter.mimebundle_formatter, tuple(kept))

    manager = shell.input_transformer_manager
    objects = [shell, shell.events, manager, shell.display_pub, shell.displayhook, shell.display_formatter,
               *shell.display_formatter.formatters.values()]
    state = (
        # 0: the builtins the reset uses, as they were before any learner code ran
        (list, dict, vars, type, object.__setattr__, object.__delattr__, type.__setattr__, type.__delattr__,
         dict.clear, dict.update, hasattr, callable),
        # 1: the class dictionaries of the shell and of what it runs a cell through
        classes_of(*objects),
        # 2: the shell, its class, and the objects it holds
        (shell, type(shell), shell.events, shell.events.callbacks, manager, shell.display_pub, shell.displayhook,
         shell._trait_values),
        # 3: the hook lists
        (tuple((name, tuple(hooks)) for name, hooks in shell.events.callbacks.items()),
         tuple(shell.ast_transformers), tuple(shell.input_transformers_post),
         tuple(manager.cleanup_transforms), tuple(manager.line_transforms), tuple(manager.token_transformers)),
        # 4: display functions and hooks
        (display, functions, sys, display.display, functions.display, functions.publish_display_data,
         type(shell.display_pub).publish, sys.displayhook),
        # 5: the recorder, the program exporter and the checks the hidden tests call (host transfers, inputs kept)
        ((recorder, tuple(vars(recorder).items())), (exporter, tuple(vars(exporter).items())),
         (checks, tuple(vars(checks).items())), types.ModuleType),
        # 6: the display formatters and their printers
        formatters(shell.display_formatter),
    )

    def run(R, expected):
        # Names here are this function's arguments, its locals and `state` (a closure cell): nothing resolves
        # through the learner's namespace or builtins. `state` is checked to be the tuple SNAPSHOT made first.
        if R(state) != expected:
            return 1 // 0
        (list_, dict_, vars_, type_, setattr_, delattr_, type_setattr, type_delattr, clear, update, hasattr_,
         callable_) = state[0]
        for cls, items in state[1]:  # methods and descriptors put back on IPython's classes
            now = vars_(cls)
            saved = dict_(items)
            for name, value in items:
                if name not in now or now[name] is not value:
                    type_setattr(cls, name, value)
            for name in list_(now):
                if name not in saved and (callable_(now[name]) or hasattr_(now[name], "__get__")):
                    type_delattr(cls, name)
        shell, shell_class, events, callbacks, manager, display_pub, displayhook, trait_values = state[2]
        setattr_(shell, "__class__", shell_class)
        if vars_(shell).get("_trait_values") is not trait_values:
            update(trait_values, vars_(shell).get("_trait_values") or {})
            vars_(shell)["_trait_values"] = trait_values
        methods = dict_()
        for cls, items in state[1]:
            for name, value in items:
                if callable_(value) and name not in methods:
                    methods[name] = value
        for name in list_(vars_(shell)):  # an instance attribute that shadows a method of the shell
            if name in methods and not name.startswith("__"):
                delattr_(shell, name)
        event_hooks, ast, input_post, cleanup, line, token = state[3]
        shell.events = events
        setattr_(events, "callbacks", callbacks)
        clear(callbacks)
        for name, hooks in event_hooks:
            callbacks[name] = list_(hooks)
        shell.ast_transformers = list_(ast)
        shell.input_transformers_post = list_(input_post)
        shell.input_transformer_manager = manager
        setattr_(manager, "cleanup_transforms", list_(cleanup))
        setattr_(manager, "line_transforms", list_(line))
        setattr_(manager, "token_transformers", list_(token))
        display, functions, sys, show, show_function, publish_data, publish, sys_displayhook = state[4]
        (recorder, recorder_items), (exporter, exporter_items), (checks, checks_items), module_type = state[5]
        for module in (display, functions, sys, recorder, exporter, checks):
            setattr_(module, "__class__", module_type)
        setattr_(display, "display", show)
        setattr_(functions, "display", show_function)
        setattr_(functions, "publish_display_data", publish_data)
        shell.display_pub = display_pub
        type_setattr(type_(display_pub), "publish", publish)
        vars_(display_pub).pop("publish", None)
        setattr_(sys, "displayhook", sys_displayhook)
        shell.displayhook = displayhook
        update(vars_(recorder), dict_(recorder_items))
        update(vars_(exporter), dict_(exporter_items))
        update(vars_(checks), dict_(checks_items))
        shell.user_ns["record"] = vars_(recorder)["record"]
        display_formatter, formatters_, ipython_display, mimebundle, kept = state[6]
        shell.display_formatter = display_formatter
        display_formatter.formatters = dict_(formatters_)
        display_formatter.ipython_display_formatter = ipython_display
        display_formatter.mimebundle_formatter = mimebundle
        for formatter, registries, enabled in kept:
            for name, registry in registries:
                setattr_(formatter, name, dict_(registry))
            formatter.enabled = enabled
        return None

    class _GraderHooks:  # a direct subclass of object: the reset finds it among object.__subclasses__() by address
        __slots__ = ()

    _GraderHooks.run = run
    shell._grader_hooks = _GraderHooks
    try:  # one reference leaked on purpose: learner code cannot free these, so no object of theirs takes an address
        import ctypes
        for thing in (_GraderHooks, run, run.__code__, state):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(thing))
    except Exception:  # noqa: BLE001 - without ctypes the shell's attribute keeps them alive until the learner drops it
        pass
    R = object.__repr__
    identity = "|".join([R(_GraderHooks), R(run), R(run.__code__), R(state)])

    # Last, an audit hook, which nothing can remove: it refuses every later audit hook (CPython drops a hook whose
    # addition an earlier hook refuses), tracing and profiling functions (they run learner code inside every frame,
    # test cells included), rewriting any function's code (the reset's own included), and the introspection that
    # would reach this hook itself (the garbage collector's object lists, other threads' frames): nothing but
    # CPython holds it, so its defaults are out of reach. It names nothing.
    def _audit(event, args, _refused=frozenset({"sys.addaudithook", "sys.settrace", "sys.setprofile",
                                                "sys._current_frames", "gc.get_objects", "gc.get_referrers",
                                                "gc.get_referents"}), _error=RuntimeError):
        if event in _refused or (event == "object.__setattr__" and args[1] == "__code__"):
            raise _error("the grading kernel refuses " + event + (" of __code__" if event[0] == "o" else "")
                         + ": graded notebooks may not trace, profile, audit, list every object or rewrite code")

    sys.addaudithook(_audit)
    return identity


get_ipython()._grader_hooks_identity = _snapshot()
del _snapshot
'''

#: asked for with SNAPSHOT (a user expression), before any learner code: the addresses of the grader's objects
IDENTITY = "get_ipython()._grader_hooks_identity"

_REPR = re.compile(r"<[a-z_]+ object at 0x[0-9a-f]{1,16}>")


def parse_identity(text: object) -> tuple[str, str, str, str] | None:
    """The four ``object.__repr__`` strings ``SNAPSHOT`` reported (holder class, function, code, state), or None.
    The text is the formatted value of ``IDENTITY`` (a quoted string)."""
    if not isinstance(text, str) or len(text) > 400:
        return None
    value = text.strip().strip("'\"")
    parts = value.split("|")
    if len(parts) != 4 or not all(_REPR.fullmatch(part) for part in parts):
        return None
    return tuple(parts)  # type: ignore[return-value]


def restore(identity: tuple[str, str, str, str] | None) -> str:
    """The user expression that puts the hooks back. It names nothing: it starts from the literal ``()``, reaches
    ``object``, its ``__repr__`` and ``__subclasses__`` through attributes of built-in types, finds the holder class
    by its address, and calls its function only if the function, its code object and its saved state are the
    objects ``SNAPSHOT`` made; otherwise it fails (``1 // 0``, an IndexError), and so does the test cell it ran
    before (``grader.kernel.run``)."""
    if identity is None:
        return "1 // 0"  # no snapshot was taken: the reset cannot be trusted, so every test cell is flagged
    holder, function, code, state = (repr(part) for part in identity)
    return ("(lambda O: (lambda R: (lambda f: f(R, " + state + ") if R(f) == " + function
            + " and R(f.__code__) == " + code + " else 1 // 0)("
            "[k for k in O.__subclasses__() if R(k) == " + holder + "][0].__dict__['run']))"
            "(O.__repr__))(().__class__.__base__)")
