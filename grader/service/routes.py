"""The grading service's loopback routes: ``GET /status``, ``POST /validate`` (Validate's named diagnoses), and
``POST /appeal`` and ``GET /appeals`` (regrade requests, in the name of the Unix account that connects: ``appeals``),
and ``GET /duedates`` (the asking account's own due dates, with its extension: ``accommodations.mine``).

Every learner on the machine can connect, so a request is bounded before any work: at most ``CONNECTIONS_AT_ONCE``
open connections (more are closed as they are accepted), ``REQUEST_DEADLINE_S`` for a whole request, a body of at
most ``MAX_REQUEST_BYTES`` read completely before a judging slot is taken, ``VALIDATE_AT_ONCE`` requests judged at
once, and a request that fails is answered 500 without stopping anything. Of those connections, one Unix account
holds at most ``CONNECTIONS_PER_ACCOUNT`` (the peer's account as the connection is accepted, ``identity.accepted``),
so one learner's idle sockets cannot shut every other learner out of Validate.

Whose a request is comes from ``identity`` alone (the account at accept, or the hub's word on the token the learner's
server sends): a connection whose account cannot be told is answered 403 on every route but ``/status``, and nothing
is recorded in anyone's name.
"""
from __future__ import annotations

import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from grader.service import enrolment, identity

MAX_REQUEST_BYTES = 4 * 1024 * 1024  # Validate's requests (grader.service.validation.MAX_BODY_BYTES)
VALIDATE_AT_ONCE = 2  # Validate requests judged at the same time; more wait (briefly) or are told to retry
CONNECTIONS_AT_ONCE = 32  # open connections; more are closed at once (descriptors stay for grading)
CONNECTIONS_PER_ACCOUNT = 4  # open connections of one Unix account (Validate sends one request at a time)
REQUEST_DEADLINE_S = 10.0  # a whole request (headers and body) must arrive within this


class Server(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a cap on open connections and a deadline on each: a client that trickles bytes
    is cut off when its deadline passes, and beyond ``CONNECTIONS_AT_ONCE`` a connection is closed as it is
    accepted, so idle clients can neither take every descriptor of the service nor a thread each for ever."""

    daemon_threads = True

    def __init__(self, address, handler, tls=None):
        super().__init__(address, handler)
        self.tls = tls  # an ssl.SSLContext: each connection's handshake in its own thread, under its deadline
        self.slots = threading.BoundedSemaphore(CONNECTIONS_AT_ONCE)
        self.accounts: dict[int | str, int] = {}  # open connections per connection key (identity.accepted)
        self.owners: dict[int, int | str] = {}  # id(connection): its key, read once as it was accepted
        self.accounts_lock = threading.Lock()

    def process_request(self, request, client_address):
        account = identity.accepted(request)
        with self.accounts_lock:
            mine = self.accounts.get(account, 0)
            if mine >= CONNECTIONS_PER_ACCOUNT or not self.slots.acquire(blocking=False):
                self.shutdown_request(request)
                return
            self.accounts[account] = mine + 1
            self.owners[id(request)] = account
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(request)
            raise

    def _release(self, request) -> None:
        with self.accounts_lock:
            account = self.owners.pop(id(request))
            self.accounts[account] -= 1
            if not self.accounts[account]:
                del self.accounts[account]
            self.slots.release()

    def get_request(self):
        connection, address = super().get_request()
        if self.tls is not None:  # wrapped, not shaken hands: a client that stalls the handshake stalls only its thread
            connection = self.tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return connection, address

    def process_request_thread(self, request, client_address):
        cut = threading.Timer(REQUEST_DEADLINE_S, _cut, args=(request,))
        cut.daemon = True
        cut.start()
        try:
            if self.tls is not None:
                try:
                    request.do_handshake()
                except (OSError, ValueError):  # not TLS, a bad certificate, cut off at the deadline: not news
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            cut.cancel()
            self._release(request)

    def handle_error(self, request, client_address):  # a client that went away or was cut off: not news
        pass


def _cut(connection) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


def _read_body(rfile, length: int) -> bytes | None:
    """``length`` bytes of body, or None when the connection closed (or was cut at the deadline) first."""
    chunks, left = [], length
    while left > 0:
        chunk = rfile.read1(min(left, 1 << 16)) if hasattr(rfile, "read1") else rfile.read(min(left, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def handler(service) -> type[BaseHTTPRequestHandler]:
    """The routes, for ``service`` (anything with ``course`` and ``status()``)."""
    judging = threading.BoundedSemaphore(VALIDATE_AT_ONCE)
    members = tuple(getattr(getattr(service, "options", None), "members", ()) or ())  # serve --members

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_DEADLINE_S  # a single read; the whole request has the same deadline (Server)
        def _answer(self, code: int, data: dict) -> None:
            body = json.dumps(data).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _key(self) -> int | str:  # the connection's key, as it was accepted
            return getattr(self.server, "owners", {}).get(id(self.request), identity.UNKNOWN)

        def _account(self) -> tuple[int | None, int, str]:
            """Whose this request is: the one way every route that acts for an account learns it (``identity``); with
            ``serve --members``, an account of none of the course's groups is refused (``enrolment``)."""
            uid, code, why = identity.account(self._key(), self.headers, identity.hub())
            if uid is not None and members and not enrolment.member(uid, members):
                return None, 403, enrolment.NOT_ENROLLED
            return uid, code, why

        def do_GET(self):  # http.server's name
            if self.path == "/status":
                return self._answer(200, service.status())
            if self.path == "/appeals":  # the asking account's own regrade requests and answers
                from grader.service import appeals

                uid, code, why = self._account()
                if uid is None:
                    return self._answer(code, {"error": why})
                return self._answer(*appeals.mine(service.options.out, uid))
            if self.path == "/duedates":  # the asking account's own due dates, its extension included; no name taken
                from grader.service import accommodations

                uid, code, why = self._account()
                if uid is None:
                    return self._answer(code, {"error": why})
                try:
                    return self._answer(*accommodations.mine(service, uid))
                except Exception as error:  # noqa: BLE001 - a request must never stop the service
                    return self._answer(500, {"error": f"the due dates could not be read ({type(error).__name__})"})
            return self._answer(404, {"error": "no such route"})

        def do_POST(self):
            if self.path not in ("/validate", "/appeal"):
                return self._answer(404, {"error": "no such route"})
            if self._key() == identity.UNKNOWN:  # counted in no account's connections: judged for nobody either
                return self._answer(403, {"error": identity.CANNOT_TELL})
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                return self._answer(411, {"error": "a Content-Length is needed"})
            if not 0 <= length <= MAX_REQUEST_BYTES:
                return self._answer(413, {"error": f"the request is over {MAX_REQUEST_BYTES} bytes"})
            body = _read_body(self.rfile, length)  # the whole body first: a slow client holds no judging slot
            if body is None:
                return None
            if self.path == "/appeal":  # a regrade request, in the name of the account that connected
                from grader.service import appeals

                uid, code, why = self._account()
                if uid is None:
                    return self._answer(code, {"error": why})
                try:
                    return self._answer(*appeals.request(service.options.out, uid, body))
                except Exception as error:  # noqa: BLE001 - a request must never stop the service
                    return self._answer(500, {"error": f"the request could not be recorded ({type(error).__name__})"})
            if members:  # a course's service judges for its own members only
                uid, code, why = self._account()
                if uid is None:
                    return self._answer(code, {"error": why})
            if not judging.acquire(timeout=5):
                return self._answer(503, {"error": "the grading service is busy; Validate again in a moment"})
            try:
                from grader.service.validation import handle

                code, answer = handle(service.course, body)
            except ImportError:
                code, answer = 503, {"error": "this grading service cannot judge Validate's checks"}
            except Exception as error:  # noqa: BLE001 - a request must never stop the service
                code, answer = 500, {"error": f"the grading service failed on this request ({type(error).__name__})"}
            finally:
                judging.release()
            return self._answer(code, answer)

        def log_message(self, format, *args):  # noqa: A002 - quiet: one line per submission is printed instead
            pass

    return Handler


