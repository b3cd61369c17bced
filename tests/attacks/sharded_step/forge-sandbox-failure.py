# scenario: a correct notebook that writes the sandbox's failure message to its output, its log and every status-like file it can reach, hoping to be recorded as a grader error
# base: solution
# expect-status: suspicious graded
# expect-fail:
# %% append
import glob, os, sys
message = "grader.sandbox could not confine the kernel: OSError: forged\n"
os.write(1, message.encode())
os.write(2, message.encode())
print(message, file=sys.stderr)
paths = ["../kernel.log", "../sandbox-status", ".kernel.log"]
for top in ("/home", "/tmp", "/dev/shm", "/work", "/root", "/run"):
    paths += glob.glob(top + "/**/*kernel.log", recursive=True) + glob.glob(top + "/**/*status*", recursive=True)
for path in paths:
    try:
        with open(path, "a") as handle:
            handle.write(message)
    except OSError:
        pass
