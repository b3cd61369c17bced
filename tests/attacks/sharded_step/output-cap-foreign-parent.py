# scenario: sends 256 MiB on IOPub (256 stream messages of 1 MiB, signed with the kernel's own session) whose parent_header names a request the grader never made; nbclient drops them before CountingClient.process_message counts a byte, so the 4 MiB output cap never sees them and the grader still receives, verifies and parses every one; answers the quiz correctly only if the kernel was not stopped
# base: solution
# expect-status: too_much_output
# expect-fail: test-quiz
# %% cell quiz
kernel = get_ipython().kernel
chunk = "x" * (1 << 20)
fake_parent = {"msg_id": "not-a-request", "session": "x", "username": "x", "msg_type": "execute_request",
               "version": "5.3", "date": "2026-01-01T00:00:00Z"}
for _ in range(256):
    kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": chunk}, parent=fake_parent)
import time
time.sleep(2)
answer = 2
