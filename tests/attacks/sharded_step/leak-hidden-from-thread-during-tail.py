# scenario: a thread started in the learner's first cell prints every new input IPython holds (with its hex) as it appears, and a garbage-collector callback prints the running input; the hidden parts run after the learner's last cell, so whatever these print while they run belongs to them and is withheld from the feedback page (the learner cells' outputs are shown); the rest is correct
# base: solution
# expect-status: suspicious
# expect-fail:
# %% append setup
import gc
import threading
import time

_shell = get_ipython()
_seen = set()


def _spy():
    while True:
        for source in list(_shell.user_ns.get("_ih", [])):
            if source not in _seen:
                _seen.add(source)
                print("spy:", source, source.encode().hex())
        time.sleep(0.001)


threading.Thread(target=_spy, daemon=True).start()
_gc_seen = set()


def _on_gc(phase, info):
    inputs = _shell.user_ns.get("_ih", [])
    if phase == "start" and inputs and inputs[-1] not in _gc_seen:
        _gc_seen.add(inputs[-1])
        print("gc:", inputs[-1])


gc.callbacks.append(_on_gc)
# %% append
time.sleep(0.5)
print("the learner's last cell saw", len(_seen), "inputs")
