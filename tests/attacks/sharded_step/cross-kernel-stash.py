# scenario: leaves the quiz answer for a later classmate's kernel in every shared place it can reach (/dev/shm, /tmp, SysV and POSIX IPC, an abstract Unix socket, a loopback port, any writable folder) and keeps serving it; the rest is correct
# base: solution
# expect-status: suspicious graded
# expect-fail:
# %% append setup
import ctypes, os, socket, threading
STASH = b"2"
for folder in ["/dev/shm", "/tmp", "/var/tmp", "/run", "/run/lock", "/dev/mqueue", "/home", "/"]:
    try:
        with open(os.path.join(folder, "course-stash"), "wb") as handle:
            handle.write(STASH)
    except OSError:
        pass
for top, dirs, files in os.walk("/"):
    if top.startswith(("/proc", "/sys", "/usr")):  # /usr is bound read only: nothing to write there
        dirs[:] = []
        continue
    if os.access(top, os.W_OK):
        try:
            with open(os.path.join(top, "course-stash"), "wb") as handle:
                handle.write(STASH)
        except OSError:
            pass
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget(0x5EED0001, 4096, 0o1666)  # IPC_CREAT | 0666
if segment >= 0:
    address = libc.shmat(segment, None, 0)
    if address not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(address, STASH + b"\0", 2)
try:
    librt = ctypes.CDLL("librt.so.1", use_errno=True)
    librt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    queue = librt.mq_open(b"/course-stash", os.O_CREAT | os.O_RDWR, 0o666, None)
    for _ in range(5):
        librt.mq_send(queue, STASH, 1, 0)
except OSError:
    pass


def serve(listener):
    while True:
        try:
            connection, _ = listener.accept()
            connection.sendall(STASH)
            connection.close()
        except OSError:
            return


for family, address in [(socket.AF_UNIX, "\0course-stash"), (socket.AF_INET, ("127.0.0.1", 47011)),
                        (socket.AF_INET, ("0.0.0.0", 47013))]:
    try:
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen(8)
        threading.Thread(target=serve, args=(listener,), daemon=True).start()
    except OSError:
        pass
# %% append
import time
time.sleep(8)  # keep serving while the next kernels start
