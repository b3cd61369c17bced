"""The keys collectives' test cells record under, each with the words a learner knows for its value.

Declared beside the hidden cases (``rubric_cases.py``), not in that module: the hidden parts handed out with the
lesson record under these keys' text, and ``rubric_cases.py``'s own text is part of what draws the inputs of the
programs the grader runs, so it stays as it was released. A new lesson declares its keys in ``rubric_cases.py`` and
its hidden parts import them.
"""
from coursekit.record import Key

LESSON_TERMS = Key("lesson.terms", "the local contributions on the lesson data")
LESSON_OWN_SUM = Key("lesson.own_sum", "the sum of your local contributions")
PROGRAM_OWN_SUM = Key("program.own_sum", "the sum of your local contributions on the grader's batch")
HIDDEN_OWN_SUM = Key("hidden.mesh{size}.own_sum", "the sum of your local contributions on a mesh of {size} device(s)")
LESSON_ALL_REDUCE = Key("lesson.all_reduce", "the all-reduced gradient")
LESSON_REDUCE_SCATTER = Key("lesson.reduce_scatter", "the reduce-scattered gradient")
QUIZ = Key("quiz.answer", "the multiple-choice answer")
SAMPLE_COUNT = Key("timing.sample_count", "the number of samples by default")
PAYLOAD_LESSON = Key("payload.lesson", "the payload at G = 32 bytes, p = 4")
PAYLOAD_HIDDEN = Key("payload.hidden", "ring_payload at other sizes and rank counts")
PAYLOAD_BUDGET_SIZES = Key("payload.budget_sizes", "ring_payload at the transfer budget's sizes")
BUDGET_LESSON = Key("budget.lesson", "the 1 MiB transfer budget")
BUDGET_HIDDEN = Key("budget.hidden", "transfer_budget at another size and rank counts")
BUDGET_OWN_PAYLOADS = Key("budget.own_payloads", "the payloads of your ring_payload at the 1 MiB budget's sizes")
BUDGET_HIDDEN_OWN_PAYLOADS = Key("budget.hidden.own_payloads",
                                 "the payloads of your ring_payload at another size and rank counts")
MOMENTUM_TRACEABLE = Key("momentum.traceable", "whether momentum_step traces under jax.jit")
MOMENTUM_HOST_ROUND_TRIP = Key("momentum.host_round_trip", "the host transfers of momentum_step")
#: the make-it-yours reversal, on the lesson's data (``data="yours"``) and an unseen batch (``data="hidden.yours"``)
REVERSED_ALL_REDUCED = Key("{data}.all_reduced", "the all-reduced gradient of {reversed}")
REVERSED_GATHERED = Key("{data}.gathered", "the gathered gradient of {reversed}")
ORIGINAL_ALL_REDUCED = Key("{data}.original_all_reduced", "all_gradient on {original}")
ORIGINAL_GATHERED = Key("{data}.original_gathered", "gather(shard_gradient(...)) on {original}")
LABEL_ONLY = Key("{data}.label_only", "the label-only reversal gradient{of}")
REVERSAL_WORDS = {"yours": {"reversed": "the jointly reversed data", "original": "the original order", "of": ""},
                  "hidden.yours": {"reversed": "an unseen reversed batch",
                                   "original": "an unseen batch in its original order", "of": " of an unseen batch"}}
