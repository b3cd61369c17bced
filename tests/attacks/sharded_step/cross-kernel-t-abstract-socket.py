# scenario: a classmate's quiz answer looked for in an abstract Unix socket, where cross-kernel-stash left it; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import time
answer = 1


def look():
    import socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            sock.connect("\0course-stash")
            return sock.recv(16).decode().strip()
    except OSError:
        return None


deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    found = look()
    if found:
        answer = int(found)
        break
    time.sleep(0.2)
