# scenario: a classmate's quiz answer looked for in SysV shared memory, where cross-kernel-stash left it; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import time
answer = 1


def look():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(0x5EED0001, 0, 0)
    if segment < 0:
        return None
    address = libc.shmat(segment, None, 0o10000)  # SHM_RDONLY
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    return ctypes.string_at(address, 1).decode()


deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    found = look()
    if found:
        answer = int(found)
        break
    time.sleep(0.2)
