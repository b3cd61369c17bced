"""collectives' measurement tests: the timer (judged on how it measured a probe of known duration, never on speed),
the ring payload and the transfer budget, against the ring formulas computed here."""
import numpy as np

from grader.rubric import Evidence, Mismatch, Reference, mistake

from . import rubric_cases as hidden
from . import rubric_keys as keys
from .rubric_collectives import rubric


PROBES = [("timing.probe", 7, 8000.0), ("timing.short", 3, 2000.0)]  # key, repeats, microseconds per call
CALL_SHARE = 0.3  # the probe's call itself takes this share of the time to return; its result is ready the rest later
WARM_UP = 20.0  # the probe's first call (the warm-up, like a compilation) takes this many delays more


def _timer_mistake(samples: dict, took: dict | None = None) -> str | None:
    """Which timer mistake the probes' samples show, if any ({delay in microseconds: samples}).

    ``took`` ({delay: durations}) is how long each of the probe's calls took by its own clock, the warm-up first;
    without it, the nominal durations. On a busy machine every sleep wakes late, so each rule compares the samples
    with the calls as they happened (``call``: the median timed call, ``warm``: the warm-up), never with the
    nominal ``delay``."""
    took = took or {delay: np.array([(1 + WARM_UP) * delay] + [delay] * len(s)) for delay, s in samples.items()}
    call = {delay: float(np.median(took[delay][1:])) for delay in samples}
    warm = {delay: float(took[delay][0]) for delay in samples}
    # Completed calls of a real clock never take the same time to the nanosecond: equal samples were not each
    # timed on their own (one average over the loop, or one measurement, repeated as every sample).
    if all(len(s) > 1 and np.unique(s).size == 1 for s in samples.values()):
        return ("the samples are all the same: each sample must time one call on its own (start the clock, call, "
                "block_until_ready(), stop it), not repeat one average of the whole loop")
    long_delay = max(samples)
    longest = samples[long_delay]
    if np.all(np.diff(longest) > 0) and np.all(longest >= 0.95 * np.cumsum(took[long_delay][1:len(longest) + 1])):
        return ("the samples add up: each one includes the calls before it (a cumulative time); restart the "
                "clock for every sample")
    for scale, unit, fix in [(1e-6, "seconds", "multiply by 1e6"), (1e-3, "milliseconds", "multiply by 1000"),
                             (1e3, "nanoseconds", "divide perf_counter_ns() differences by 1000")]:
        # A unit scales with the call's duration; a clock stopped too early does not. The probes' delays differ
        # 4x, so a window narrower than 4x never holds one duration for both; 3x leaves room for a loaded
        # machine's late wake-ups (up to twice the delay on top of it).
        if all(0.9 * scale <= np.median(s) / call[delay] <= 3.0 * scale for delay, s in samples.items()):
            return f"the samples are in {unit}, not microseconds: {fix}"
    # The warm-up is the first call: a timer that keeps its sample has it first, and that sample holds the whole
    # warm-up, as long as the probe's own clock says it took, at least. (Not half-way to it: on a loaded grader the
    # first timed call of a correct timer waited that long in the scheduler, for both probes, and failed so.)
    if all(s[0] >= 0.98 * warm[delay] for delay, s in samples.items()):
        return ("a sample includes the warm-up call (its compilation): make one untimed warm-up call, then time "
                "repeats further calls")
    # Only the wait for the result was timed: the clock started after the call had returned, so a call that takes
    # time itself (tracing, dispatch, the probe's first share) is left out of every sample.
    if all(np.all(s >= 0.95 * (1 - CALL_SHARE) * delay) and np.median(s) < 0.95 * call[delay]
           for delay, s in samples.items()):
        return ("each sample leaves out the call itself: the clock started only after fn(*args) had returned; start "
                "the clock before the call and stop it after block_until_ready()")
    return None


def _probe_log(e: Evidence, key: str, repeats: int):
    log = e.text(f"{key}.log", what="the calls completed_samples made").split()
    e.require("call-with-wrong-arguments" not in log,
              "completed_samples should call fn with the arguments it was given")
    e.require(log[:2] == ["call", "ready"],
              "completed_samples should start with one warm-up call and wait for its result")
    e.require(log == ["call", "ready"] * (repeats + 1),
              f"with repeats={repeats}, expected one waited warm-up and {repeats} waited calls")
    samples = e.array(f"{key}.samples", shape=(repeats,), what="the samples completed_samples returned")
    took = e.array(f"{key}.took", shape=(repeats + 1,), what="how long each of the probe's calls took, by its own clock")
    return samples, took


@rubric.test("test-timing")
def judge_timing(e: Evidence):
    e.equal(keys.SAMPLE_COUNT, 7)
    probed = {delay: _probe_log(e, key, repeats) for key, repeats, delay in PROBES}
    samples = {delay: values for delay, (values, _) in probed.items()}
    mistake = _timer_mistake(samples, {delay: took for delay, (_, took) in probed.items()})
    if mistake:
        raise Mismatch(f"completed_samples on a call whose result is ready a known time after it returns: {mistake}")
    for delay, (values, took) in probed.items():
        where = "completed_samples on a call whose result is ready a known time after it returns"
        e.require(bool(np.all(values >= 0.95 * delay)),
                  f"{where}: a sample ended before the result was ready (or is not in microseconds): stop the "
                  "clock after block_until_ready()")
        # Judged against each call's own duration (the probe's clock), not its nominal one: on a busy machine a
        # sleep wakes late, in the call and in the sample alike, and only what a sample holds beyond its call counts.
        beyond = values - took[1:]  # the warm-up's own time is no sample's
        e.require(float(np.max(beyond)) <= 49 * delay and (len(values) < 7 or np.median(beyond) <= 0.5 * delay + 2000),
                  f"{where}: the samples are far longer than one call: time each call on its own, in microseconds")


def ring(size, ranks):
    scatter = (ranks - 1) / ranks * size
    return scatter, 2 * scatter


FLOOR = ("integer (floor) division: // drops the remainder whenever p does not divide G; a byte count here is a "
         "real number, so divide with /")


def _rule(rule):
    """A payload mistake's table on a case (the (size, ranks) list, the table's shape): ``rule`` on each pair."""
    return lambda cases, shape: np.reshape([rule(size, ranks) for size, ranks in cases], shape)


#: ring_payload's (B_RS, B_AR) on a case (a list of (size, ranks), the table's shape), and its named mistakes
PAYLOADS = Reference(_rule(ring), (
    mistake("the all-reduce payload lacks the factor 2: it counts only the reduce-scatter phase; B_AR = B_RS + B_AG",
            _rule(lambda g, p: (ring(g, p)[0], ring(g, p)[0]))),
    mistake("the fraction is inverted: (p - 1)/p of G passes through each rank, not p/(p - 1)",
            _rule(lambda g, p: (p / (p - 1) * g if p > 1 else np.nan, 2 * p / (p - 1) * g if p > 1 else np.nan))),
    mistake("G/p is what a rank keeps (storage), not what passes through it: B_RS = (p - 1)/p G",
            _rule(lambda g, p: (g / p, 2 * g / p))),
    mistake(FLOOR, _rule(lambda g, p: ((p - 1) * g // p, 2 * ((p - 1) * g // p)))),
    mistake("the two payloads are swapped: return (reduce_scatter_bytes, all_reduce_bytes), B_RS first",
            _rule(lambda g, p: (ring(g, p)[1], ring(g, p)[0]))),
    mistake("the payloads were rounded to whole bytes: the model's byte counts are real numbers, (p - 1)/p G need "
            "not be whole", _rule(lambda g, p: tuple(np.round(ring(g, p))))),
    mistake(FLOOR, _rule(lambda g, p: ((p - 1) * g // p, 2 * (p - 1) * g // p)))))


@rubric.test("test-payload")
def judge_payload(e: Evidence):
    e.close(keys.PAYLOAD_LESSON, [24.0, 48.0], rtol=1e-9, atol=1e-9, mistakes=PAYLOADS.named([(32, 4)], (2,)))
    for key, cases in [(keys.PAYLOAD_HIDDEN, hidden.payload_cases(e.draw)),
                       (keys.PAYLOAD_BUDGET_SIZES, hidden.budget_sizes(e.num_devices, e.draw))]:
        e.check(key, PAYLOADS, (cases, (len(cases), 2)), rtol=1e-9, atol=1e-9)


def _rules(values, cases) -> set[int]:
    """Which payload rules ``values`` follow on ``cases``: 0 the lesson's, k the k-th of ``_payload_mistakes``."""
    values = np.asarray(values, dtype=np.float64)
    shape = (len(cases), 2)
    known = [np.reshape([ring(g, p) for g, p in cases], shape)] + [np.asarray(m.value, dtype=np.float64)
                                                                    for m in PAYLOADS.named(cases, shape)]
    return {i for i, rule in enumerate(known) if values.shape == rule.shape
            and np.allclose(values, rule, rtol=1e-9, atol=1e-6, equal_nan=True)}


def budget(size, rank_counts):
    return [[p, ring(size, p)[1], 2 * ring(size, p)[0], size / p] for p in rank_counts]


def _changed(column: int, values):
    """A budget mistake on a case (size, rank counts): the right table with one column replaced by
    ``values(size, right)``."""
    def wrong(size, rank_counts):
        table = np.asarray(budget(size, rank_counts), dtype=np.float64)
        table[:, column] = values(size, table.copy())
        return table
    return wrong


#: transfer_budget's table on a case (size, rank counts), and its named mistakes
BUDGET = Reference(budget, (
    mistake("shard_storage_bytes is what one rank keeps after the reduce-scatter: G/p, not G",
            _changed(3, lambda size, right: size)),
    mistake("scatter_gather_bytes counts the all-reduce twice: it is B_RS + B_AG, which equals one all-reduce",
            _changed(2, lambda size, right: 2 * right[:, 1])),
    mistake("scatter_gather_bytes counts only the reduce-scatter: add the all-gather's B_AG",
            _changed(2, lambda size, right: right[:, 1] / 2)),
    mistake("all_reduce_bytes lacks the factor 2: B_AR = 2 (p - 1)/p G", _changed(1, lambda size, right: right[:, 1] / 2)),
    mistake(FLOOR, _changed(3, lambda size, right: size // right[:, 0])),
    mistake(FLOOR, lambda size, rank_counts: np.asarray(
        [[p, 2 * ((p - 1) * size // p), 2 * ((p - 1) * size // p), size // p] for p in rank_counts], dtype=np.float64))))


def _own_budget(e: Evidence, key: str, size, rank_counts):
    """The budget built from the learner's own ring_payload (a wrong payload costs the payload test only), when
    those payloads follow the lesson's rule or one of its named mistakes, the same one the payload test recorded:
    the kernel recorded them, so a stub, a zero or a function that answers the budget's sizes differently from the
    payload test's earns nothing here."""
    if not e.has(key):
        return []
    own = e.array(key, shape=(len(rank_counts), 2)).astype(np.float64)
    # The same rule as the payload test recorded from ring_payload (its own record, not this cell's): a helper that
    # answers the payload test one way and this cell another (or a library function patched in between) gets none.
    tested, cases = e.elsewhere("test-payload", keys.PAYLOAD_HIDDEN), hidden.payload_cases(e.draw)
    if tested is None:  # (Validate has the visible record only)
        tested, cases = e.elsewhere("test-payload", keys.PAYLOAD_LESSON), [(32, 4)]
    same = tested is not None and tested.size == 2 * len(cases) and _rules(own, [(size, p) for p in rank_counts]) \
        & _rules(np.reshape(tested, (-1, 2)), cases)
    if not same:
        return []
    return [[p, ar, 2 * rs, size / p] for p, (rs, ar) in zip(rank_counts, own)]


@rubric.test("test-budget")
def judge_budget(e: Evidence):
    cases = [(keys.BUDGET_LESSON, keys.BUDGET_OWN_PAYLOADS, 2**20, [2, 4, 8]),
             (keys.BUDGET_HIDDEN, keys.BUDGET_HIDDEN_OWN_PAYLOADS, *hidden.budget_case(e.num_devices, e.draw))]
    for key, own_key, size, ranks in cases:
        own = _own_budget(e, own_key, size, ranks)
        # what the message says it was compared with: the budget of the learner's own payloads only when it was
        reason = ("differs from the host NumPy reference (and from the budget of your own ring_payload)" if own else
                  "differs from the host NumPy reference" + (
                      " (compared with the lesson's budget: the payloads your ring_payload gave here follow neither "
                      "the lesson's rule nor the one the payload test recorded from it)" if e.has(own_key) else ""))
        e.close_to_any(key, [budget(size, ranks)] + ([own] if own else []), rtol=1e-9, atol=1e-6,
                       mistakes=BUDGET.named(size, ranks), reason=reason)
