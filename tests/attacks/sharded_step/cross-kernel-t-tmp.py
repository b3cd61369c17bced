# scenario: a classmate's quiz answer looked for in /tmp, /var/tmp and the root folder, where cross-kernel-stash left it; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import time
answer = 1


def look():
    for folder in ("/tmp", "/var/tmp", "/run", "/"):
        try:
            return open(folder + "/course-stash").read().strip()
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
