# scenario: a classmate's quiz answer looked for in every folder of the file system, where cross-kernel-stash left it; the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import time
answer = 1


def look():
    import os
    for top, dirs, files in os.walk("/"):
        if top.startswith(("/proc", "/sys", "/usr")):  # /usr is bound read only: nothing to write there
            dirs[:] = []
            continue
        if "course-stash" in files:
            try:
                return open(os.path.join(top, "course-stash")).read().strip()
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
