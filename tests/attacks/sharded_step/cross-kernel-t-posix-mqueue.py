# scenario: a classmate's quiz answer looked for in a POSIX message queue, where cross-kernel-stash left it; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import time
answer = 1


def look():
    import ctypes, os
    try:
        librt = ctypes.CDLL("librt.so.1", use_errno=True)
    except OSError:
        return None
    librt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
    queue = librt.mq_open(b"/course-stash", os.O_RDONLY | os.O_NONBLOCK)
    if queue < 0:
        return None
    buffer = ctypes.create_string_buffer(8192)
    size = librt.mq_receive(queue, buffer, 8192, None)
    return buffer.raw[:size].decode() if size > 0 else None


deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    found = look()
    if found:
        answer = int(found)
        break
    time.sleep(0.2)
