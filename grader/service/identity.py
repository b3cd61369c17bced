"""Whose a request to the grading service is: the one way a route learns the Unix account it acts for.

A request is attributed only from what is bound to its own connection, never from a later look at the machine:

* **At accept** (``accepted``): the connection's peer is looked up once, when the service accepts it, in the socket
  table (``/proc/net/tcp``), and only an exact entry that is still ESTABLISHED counts (the peer's address and port
  to the service's). A client that sent its request and closed at once has left an orphaned socket there, which the
  kernel lists as root's: that is not an account, and such a connection is ``UNKNOWN``. A peer on another host (a
  learner's server in its own network namespace) is keyed by its address; its account is not known at accept.
* **The hub's word** (``Hub``): under JupyterHub each learner's server holds a token the hub issued to its user for
  this service alone (``COURSE_GRADING_TOKEN``, scope: the user's name; ``grader.hub.jupyterhub_config``), sent as
  ``Authorization: token ...``. The service asks the hub whose it is (``HubAuth``, cached) and takes the hub name
  as the Unix account (PAM logins: the same name). This works across hosts.

``account`` decides: an ``UNKNOWN`` connection is refused whatever it carries; a token the hub does not vouch for, a
token of a service, or one of another account than the connection's (when that is known) is refused; without a
token the account at accept is taken; when neither tells, the request is refused with a sentence that says so. A
request is never recorded in root's, or anyone's, name because its account could not be told.
"""
from __future__ import annotations

import concurrent.futures
import os
import pwd
import socket
import struct
import threading

UNKNOWN = "unknown"  # a loopback connection whose account cannot be told (its socket was gone at accept)
HUB_TIMEOUT_S = 5.0
ESTABLISHED = "01"  # /proc/net/tcp's state column
CANNOT_TELL = ("the grading service cannot tell which account is asking (the connection closed before it was "
               "read, or it came from another machine without the hub's token); ask from your own server")


def _tcp_address(host: str, port: int) -> str:
    """An IPv4 address as ``/proc/net/tcp`` writes it (the address in host byte order, then the port, in hex)."""
    return f"{struct.unpack('=I', socket.inet_aton(host))[0]:08X}:{port:04X}"


def _is_loopback(host: str) -> bool:
    return host.startswith("127.")


def established_uid(connection) -> int | None:
    """The account owning the other end of a loopback connection, from its exact ESTABLISHED entry, or None."""
    try:
        peer, local = connection.getpeername(), connection.getsockname()
        wanted = (_tcp_address(*peer[:2]), _tcp_address(*local[:2]))
        with open("/proc/net/tcp", encoding="ascii") as table:
            for line in table:
                fields = line.split()
                if len(fields) > 7 and (fields[1], fields[2]) == wanted:
                    return int(fields[7]) if fields[3] == ESTABLISHED else None
    except (OSError, ValueError, struct.error, TypeError):
        pass
    return None


def accepted(connection) -> int | str:
    """The connection's key, read once as it is accepted: the peer's uid (a peer on this host, over loopback or to
    the service's site address), ``host ADDRESS`` for a peer on another host, or ``UNKNOWN``. Connection caps are
    counted per key; a route asks ``account`` with it."""
    try:
        host, here = connection.getpeername()[0], connection.getsockname()[0]
    except (OSError, IndexError):
        return UNKNOWN
    if not _is_loopback(host) and host != here:  # another host (on this one, a peer's address is the service's own)
        return f"host {host}"
    uid = established_uid(connection)
    return UNKNOWN if uid is None else uid


class Hub:
    """The hub that issued learners' tokens (``JUPYTERHUB_API_URL``, with this service's own token, as JupyterHub
    gives every managed service): ``uid(token)`` is the Unix account of the token's user."""

    def __init__(self, api_url: str, api_token: str, cache_s: int = 300):
        from jupyterhub.services.auth import HubAuth

        self.auth = HubAuth(api_url=api_url, api_token=api_token, cache_max_age=cache_s)
        self.asking = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="hub-auth")

    def uid(self, token: str) -> int | None:
        """The token's user's account; None when the hub vouches for no user's account. Raises ``OSError`` when the
        hub cannot be asked."""
        try:
            model = self.asking.submit(self.auth.user_for_token, token).result(timeout=HUB_TIMEOUT_S)
        except Exception as error:  # the hub down, slow or failing: said as such, never a guess
            raise OSError(f"the hub could not be asked ({type(error).__name__})") from error
        if not isinstance(model, dict) or model.get("kind") != "user" or not isinstance(model.get("name"), str):
            return None
        try:
            return pwd.getpwnam(model["name"]).pw_uid
        except KeyError:
            return None


_hubs: dict[tuple[str, str], Hub] = {}
_hubs_lock = threading.Lock()


def hub() -> Hub | None:
    """The hub this service runs under, or None outside JupyterHub (no hub to vouch for a token)."""
    url, token = os.environ.get("JUPYTERHUB_API_URL", ""), os.environ.get("JUPYTERHUB_API_TOKEN", "")
    if not url or not token:
        return None
    with _hubs_lock:
        if (url, token) not in _hubs:
            try:
                _hubs[(url, token)] = Hub(url, token)
            except ImportError:
                return None
        return _hubs[(url, token)]


def token_of(headers) -> str | None:
    """The token in ``Authorization: token ...`` (or ``Bearer``), or None."""
    said = (headers.get("Authorization") or "").strip().split(None, 1)
    return said[1].strip() if len(said) == 2 and said[0].lower() in ("token", "bearer") and said[1].strip() else None


def account(key: int | str, headers, vouching: Hub | None = None) -> tuple[int | None, int, str]:
    """(uid, 0, "") of the account a request acts for, or (None, HTTP status, why) when it cannot be told.
    ``key``: the connection's, from ``accepted``; ``headers``: the request's; ``vouching``: the hub (``hub()``)."""
    if key == UNKNOWN:  # on this machine, but gone at accept: not even a token is taken (it could be a stolen one
        return None, 403, CANNOT_TELL  # sent from a socket closed to dodge the check against its account)
    connected = key if isinstance(key, int) else None
    token = token_of(headers)
    if token is not None and vouching is not None:
        try:
            owner = vouching.uid(token)
        except OSError as error:
            if connected is not None:  # the account at accept is exact; the hub's word would only confirm it
                return connected, 0, ""
            return None, 503, f"the grading service cannot check your server's token now ({error}); try again soon"
        if owner is None:
            return None, 403, "the token your server sent is not one the hub issued to a user; restart your server"
        if connected is not None and owner != connected:
            return None, 403, "the token your server sent is another account's; nothing was recorded"
        return owner, 0, ""
    if connected is not None:
        return connected, 0, ""
    return None, 403, CANNOT_TELL
