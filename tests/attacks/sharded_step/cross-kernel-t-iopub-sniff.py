# scenario: a classmate's quiz answer sniffed from sibling kernels' IOPub channels (ports in /proc/net/tcp, Unix sockets in /proc/net/unix and on disk, connection files of other processes); the answer of its own is wrong
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import glob, json, os, re, time
import zmq
answer = 1


def endpoints():
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(table).read().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A":
                    found.add("tcp://127.0.0.1:%d" % int(local.split(":")[1], 16))
        except OSError:
            pass
    try:
        for line in open("/proc/net/unix").read().splitlines()[1:]:
            parts = line.split()
            if len(parts) > 7 and parts[7].startswith("/"):
                found.add("ipc://" + parts[7])
    except OSError:
        pass
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            argv = open(path, "rb").read().split(b"\0")
            info = json.load(open(argv[argv.index(b"-f") + 1]))
            joiner = "-" if info["transport"] == "ipc" else ":"
            found.add("%s://%s%s%d" % (info["transport"], info["ip"], joiner, info["iopub_port"]))
        except Exception:
            pass
    own = os.path.expanduser("~")
    for top in ("/tmp", "/home", "/root", "/run", "/dev/shm", "/work"):
        for path in glob.glob(top + "/**/ipc-*", recursive=True):
            if not path.startswith(own):
                found.add("ipc://" + path)
    return found


sub = zmq.Context.instance().socket(zmq.SUB)
sub.setsockopt(zmq.SUBSCRIBE, b"")
connected = set()
deadline = time.monotonic() + 6
while time.monotonic() < deadline:
    for endpoint in endpoints() - connected:
        try:
            sub.connect(endpoint)
            connected.add(endpoint)
        except zmq.ZMQError:
            pass
    if sub.poll(200):
        match = re.search(r"answer = ([123])", b" ".join(sub.recv_multipart()).decode(errors="replace"))
        if match:
            answer = int(match.group(1))
            break
