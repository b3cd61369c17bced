"""The keys sharded_step's test cells record under, each with the words a learner knows for its value.

Declared beside the hidden cases (``rubric_cases.py``), not in that module: the hidden parts handed out with the
lesson record under these keys' text, and ``rubric_cases.py``'s own text is part of what draws the inputs of the
programs the grader runs, so it stays as it was released (editing it would change how far off a wrong program's
values are said to be). A new lesson declares its keys in ``rubric_cases.py`` and its hidden parts import them.
"""
from coursekit.record import Key

#: the loss and the gradient, on the lesson batch and on an unseen batch
LESSON = {"loss": Key("lesson.loss", "the initial loss"), "gradient": Key("lesson.gradient", "the gradient at w = 0")}
HIDDEN = {"loss": Key("hidden.loss", "the loss on an unseen batch"),
          "gradient": Key("hidden.gradient", "the gradient on an unseen batch")}
STEP_PROGRAM = Key("program.step", "your jitted training step, run by the grader on a batch it drew")
MESH_STEP_PROGRAM = Key("program.mesh{size}.step",
                        "your training step on a mesh of {size} device(s), run by the grader on a batch it drew")
RATE_STEP_PROGRAM = Key("program.step_{rate:g}", "your make_train_step({rate:g}), run by the grader on a batch it drew")
LESSON_NEW_W = Key("lesson.new_w", "the weights after one step")
LESSON_STEP_GRADIENT = Key("lesson.step_gradient", "the gradient your step returned")
HIDDEN_NEW_W = Key("hidden.new_w", "the new weights on an unseen batch at another learning rate")
HIDDEN_STEP_GRADIENT = Key("hidden.step_gradient", "the gradient your step returned on an unseen batch")
#: the placed step's results (new weights, loss, gradient), on the lesson batch and on an unseen batch
LESSON_PLACED = (Key("lesson.new_w.shards", "the new weights"), Key("lesson.loss.shards", "the loss"),
                 Key("lesson.gradient.shards", "the gradient"))
HIDDEN_PLACED = (Key("hidden.placed.new_w", "the new weights on an unseen batch"),
                 Key("hidden.placed.loss", "the loss on an unseen batch"),
                 Key("hidden.placed.gradient", "the gradient on an unseen batch"))
DEVICE_COUNT = Key("hidden.device_count", "the number of devices")
HOST_ROUND_TRIP = Key("hidden.host_round_trip", "the host transfers of your training step")
ONE_PROGRAM = Key("hidden.one_program", "how your training step runs")
JITTED_STEP = Key("hidden.jitted_step", "whether make_train_step returns the jitted step")
PLACED_PROGRAM = Key("program.placed", "your jitted training step's shardings")
LESSON_TRAJECTORY = Key("lesson.trajectory", "ten steps on the lesson batch")
HIDDEN_TRAJECTORY = Key("hidden.trajectory", "ten steps on an unseen batch")
TRANSFER_SHARDED = Key("transfer.sharded", "transfer_step's sharded weights")
TRANSFER_OWN_STEP = Key("transfer.own_step", "one step of your make_train_step on the new labels")
TRANSFER_HOST = Key("transfer.host", "transfer_step's host weights")
OTHER_SHARDED = Key("transfer.other.sharded", "transfer_step's sharded weights for another target")
OTHER_GIVEN_RATE = Key("transfer.other.given_rate",
                       "the learning rate transfer_step gave make_train_step for another target")
OTHER_GIVEN_START = Key("transfer.other.given_start", "the start transfer_step gave its step for another target")
OTHER_GIVEN_LABELS = Key("transfer.other.given_labels", "the labels transfer_step gave its step for another target")
OTHER_OWN_STEP = Key("transfer.other.own_step", "your make_train_step inside transfer_step")
OTHER_OWN_GRADIENT = Key("transfer.other.own_gradient", "the gradient of your make_train_step inside transfer_step")
OTHER_HOST = Key("transfer.other.host", "transfer_step's host weights for another target")
QUIZ = Key("quiz.answer", "the multiple-choice answer")
