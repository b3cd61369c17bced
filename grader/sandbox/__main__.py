"""``python -m grader.sandbox ARGS [-- PROGRAM...]``: confine this process, then exec the kernel (or PROGRAM)."""
import os
import sys

from grader.sandbox.confine import confine

if __name__ == "__main__":
    _, command, env = confine(sys.argv[1:])
    os.execve(command[0], command, env)
