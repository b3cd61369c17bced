# scenario: a classmate's quiz answer looked for in a port on the loopback interface, where cross-kernel-stash left it; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import time
answer = 1


def look():
    import socket
    for port in (47011, 47013):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                return sock.recv(16).decode().strip()
        except OSError:
            pass
    return None


deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    found = look()
    if found:
        answer = int(found)
        break
    time.sleep(0.2)
