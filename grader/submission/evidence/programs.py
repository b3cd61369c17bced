"""Checks of the programs a test cell exported, as the grader ran them outside the kernel (``grader.programs``)."""
from __future__ import annotations

import re

import numpy as np

from grader.programs import Expect, Program, ProgramRun
from grader.programs.expectations import words
from grader.programs.structure import too_many
from grader.submission.evidence.reading import Records
from grader.submission.evidence.values import differs
from grader.submission.mistakes import Mismatch, Mistake, diagnose, shown_shape
from grader.submission.references import Reference

# An HLO sharding as XLA prints a plain one ({replicated}, {devices=[4,1]<=[4]}); anything longer or with other
# characters (metadata holds any text) is the program's own text and is not quoted.
_PLAIN_SHARDING = re.compile(r"\{[a-z_]*(=\[[0-9,]{1,20}\](<=\[[0-9,]{1,12}\](T\([0-9,]{1,12}\))?)?)?( last_tile_dim_replicate)?\}")


def _kinds(counts: dict[str, int]) -> str:
    """Collective counts as a message says them: "2 all_gather, 1 all_reduce" (the runner's own names only)."""
    from grader.programs.structure import COLLECTIVES, COMPILED_OPCODES

    known = set(COLLECTIVES) | set(COMPILED_OPCODES.values())
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())
                     if kind in known and type(n) is int and n > 0) or "none"


class ProgramChecks(Records):
    """Each check raises ``Mismatch`` with a message in the lesson's words."""

    #: record key -> the rubric's declaration of the program recorded there (set by ``Rubric.verdict``)
    declared: dict[str, Program] = {}

    def program(self, key: str, *, what: str | None = None) -> ProgramRun:
        """The run of the program recorded under ``key`` on the grader's own inputs; ``Mismatch`` if it did not run."""
        name = self.name(key, what)
        run = self._programs.get(key)
        if run is None:
            raise Mismatch(f"{name}: no program was recorded (the test stopped before exporting it)")
        if run.error:
            raise Mismatch(f"{name}: {run.error}")
        return run

    def program_inputs(self, key: str, *, what: str | None = None) -> ProgramRun:
        """The program's run, after checking that it takes its inputs split as the course says."""
        name = self.name(key, what)
        run = self.program(key, what=what)
        for index, (actual, expected) in enumerate(zip(run.in_shardings, run.expected_in_shardings)):
            if actual is not None and actual != expected:
                actual = actual if _PLAIN_SHARDING.fullmatch(actual) else "another placement"
                raise Mismatch(f"{name}: argument {index + 1} is placed as {actual}, the course places it as "
                               f"{expected} (use the shardings the notebook defines, on the mesh they name)")
        return run

    def program_expected(self, key: str, *, what: str | None = None, expect: Expect | None = None) -> ProgramRun:
        """The program's run, after checking everything its declaration's ``Expect`` says (``expect``: instead of
        the declared one), in ``Expect``'s order; each failure in its standard words or the lesson's."""
        name = self.name(key, what)
        expect = expect or getattr(self.declared.get(key), "expect", None) or Expect()
        run = self.program_inputs(key, what=what)

        def check(condition: bool, failed: str, **fields) -> None:
            if not condition:
                raise Mismatch(words(expect, failed, name, **fields))

        if expect.outputs is not None:
            check(len(run.outputs) == len(expect.outputs), "output_count", count=len(run.outputs),
                  expected=len(expect.outputs))
            for index, (output, replicated) in enumerate(zip(run.outputs, expect.outputs), start=1):
                check(output.shards_consistent, "output_shards", index=index)
                if replicated:
                    check(output.replicated, "output_replicated", index=index, sharding=output.sharding)
                else:
                    check(not output.replicated, "output_split", index=index)
        if expect.region is not None:
            wanted = f"stablehlo.{expect.region}"
            check(run.manual, "no_region", wanted=wanted)
            check(run.manual_only, "not_one_region", wanted=wanted)
            check(run.collectives.get(expect.region, 0) >= 1, "missing", wanted=wanted)
            for other, count in run.collectives.items():
                check(other == expect.region or count == 0, "other", wanted=wanted, other=other)
        if not expect.compiled_gather:
            check(run.compiled_collectives.get("all_gather", 0) == 0, "gathers")
        if expect.reduce_once:  # before moves_data: a collective in a loop carries an unbounded payload too
            check(not run.looped, "in_loop")
            check(not run.carries_more, "reduces_often")
        if expect.collectives is not None:  # its own check (with reduce_once, ``carries_more`` says it first)
            written = sum(n for n in run.collectives.values() if type(n) is int)
            check(not too_many(run.collectives, expect.collectives), "collectives", count=written,
                  expected=expect.collectives, kinds=_kinds(run.collectives))
        if expect.compiled_collectives is not None:
            check(not too_many(run.compiled_collectives, expect.compiled_collectives), "compiled_collectives",
                  expected=expect.compiled_collectives, kinds=_kinds(run.compiled_collectives))
        if expect.no_data_moved:
            check(not run.moves_data, "moves_data")
        return run

    def program_close(self, key: str, index: int, expected, *, rtol: float = 1e-4, atol: float = 1e-5,
                      what: str | None = None, mistakes: list[Mistake] | None = None) -> None:
        """Output ``index`` of the program's run equals ``expected`` (computed by the rubric from ``run.inputs``)."""
        name = self.name(key, what)
        run = self.program(key, what=what)
        self.require(index < len(run.outputs), f"{name}: returns {len(run.outputs)} value(s), not {index + 1}")
        actual = run.outputs[index].value
        expected = np.asarray(expected, dtype=np.float64)
        if actual.shape != expected.shape:
            raise Mismatch(f"{name}: has shape {shown_shape(actual.shape)} on the grader's inputs, expected "
                           f"{expected.shape}")
        if not np.allclose(actual, expected, rtol=rtol, atol=atol):
            said = diagnose(actual, mistakes or [], rtol=rtol, atol=atol)
            raise Mismatch(f"{name}: wrong on inputs it had not seen" + (f": {said}" if said else differs(actual, expected)),
                           named=said is not None)

    def program_check(self, key: str, index: int, reference: Reference, case: tuple, *, rtol: float = 1e-4,
                      atol: float = 1e-5, what: str | None = None, **context) -> None:
        """``program_close``: output ``index`` of the program's run against ``reference`` on ``case`` (built by the
        judge from ``run.inputs``), with the mistakes it names there."""
        expected, mistakes = reference.on(*case, **context)
        self.program_close(key, index, expected, rtol=rtol, atol=atol, what=what, mistakes=mistakes)
