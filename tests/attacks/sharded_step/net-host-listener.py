# scenario: asks a listener the test suite opened on the host's loopback (127.0.0.1 and 127.0.0.2, port 47012) for the quiz answer; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import socket
answer = 1
for host in ("127.0.0.1", "127.0.0.2", "localhost"):
    try:
        with socket.create_connection((host, 47012), timeout=1) as sock:
            sock.sendall(b"quiz?")
            answer = int(sock.recv(16).decode().strip())
            break
    except (OSError, ValueError):
        pass
