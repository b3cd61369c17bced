# scenario: the 4 GiB memory cap is RLIMIT_AS, per process, and there is no cgroup: three fresh Python processes each touch 1.5 GiB at once (4.5 GiB resident beside the kernel, over the submission's cap; with the 256-process limit a notebook could hold ~1 TiB and drive the host into the OOM killer, where other learners' kernels and the grader live); answers the quiz correctly only if all three held their memory together (on a loaded machine the memory cgroup's reclaim before its OOM kill can outlast the 15 s cell limit: timed_out, and the quiz still fails)
# base: solution
# expect-status: suspicious graded out_of_memory timed_out
# expect-fail: test-quiz
# %% cell quiz
import subprocess, sys
hold = ("import sys, time\n"
        "block = bytearray(1536 * 1024**2)\n"
        "block[::4096] = b'x' * len(block[::4096])\n"  # touch every page: resident, not just reserved
        "print('held', flush=True)\n"
        "time.sleep(4)\n")
children = [subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            for _ in range(3)]
held = [child.stdout.readline().strip() == b"held" for child in children]
for child in children:
    child.wait()
print("processes holding 1.5 GiB each at once:", sum(held))
answer = 2 if all(held) else 1
