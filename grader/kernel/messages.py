"""The kernel's messages, as the grader accepts them: bounded, well-formed, or dropped.

The kernel holds its connection key, so it can sign and send anything on its
channels: truncated JSON, 5,000-digit integers, deep nesting, replayed
signatures, fields of the wrong type, lone UTF-16 surrogates (which make a
notebook unrenderable), or one message of gigabytes. None of that may reach
nbclient, nbformat or the grader's memory as is:

- ``BoundedKernelClient`` sets ZeroMQ's ``MAXMSGSIZE`` on every channel, so an
  oversized message is refused by ZeroMQ before it is buffered (the peer is
  disconnected; ``oversized`` notices that and the run ends ``too_much_output``);
- ``harden_session`` makes any message that cannot be deserialized a
  ``malformed`` message belonging to no request, which nbclient ignores, and
  counts the bytes of every message on every channel before anything filters
  it (``received_too_much``): messages for requests the grader never made, which
  nbclient drops unseen, still count against the output cap;
- ``clean`` checks an output message's fields against what nbformat expects
  and drops it otherwise, replacing lone surrogates in every string.
"""
from __future__ import annotations

import zmq
from jupyter_client.asynchronous import AsyncKernelClient

MALFORMED = {"header": {"msg_id": "", "msg_type": "malformed"}, "msg_id": "", "msg_type": "malformed",
             "parent_header": {}, "metadata": {}, "content": {}, "buffers": []}
MARGIN = 1 << 20  # room above the output cap for a message's envelope


class BoundedKernelClient(AsyncKernelClient):
    """A kernel client whose sockets refuse messages larger than ``max_message_bytes``."""

    max_message_bytes: int = 64 << 20
    monitors: list

    def _create_connected_socket(self, channel, identity=None):
        url = self._make_url(channel)
        sock = self.context.socket(zmq.SUB if channel == "iopub" else zmq.DEALER)
        sock.linger = 1000
        sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        if identity:
            sock.identity = identity
        if not hasattr(self, "monitors"):
            self.monitors = []
        self.monitors.append(sock.get_monitor_socket(zmq.EVENT_DISCONNECTED))
        sock.connect(url)
        return sock

    def oversized(self) -> bool:
        """Whether a channel was cut since the start (ZeroMQ does that to a peer sending too much)."""
        return any(m.getsockopt(zmq.EVENTS) & zmq.POLLIN for m in getattr(self, "monitors", []))


def _size(frame) -> int:
    try:
        return len(frame)
    except TypeError:
        return len(getattr(frame, "bytes", b""))


def harden_session(session) -> None:
    """Any message that does not deserialize becomes MALFORMED instead of an exception; every message's bytes
    are counted in ``session.received_bytes`` first."""
    deserialize = session.deserialize
    session.received_bytes = 0

    def tolerant(msg_list, content=True, copy=True):
        session.received_bytes += sum(_size(frame) for frame in msg_list)
        try:
            message = deserialize(msg_list, content=content, copy=copy)
        except Exception:  # noqa: BLE001 - malformed JSON, huge integers, replays, bad signatures, deep nesting
            return dict(MALFORMED)
        if not isinstance(message.get("content"), dict) or not isinstance(message.get("parent_header"), dict):
            return dict(MALFORMED)
        return message

    session.deserialize = tolerant


def received_too_much(session, max_output_bytes: int) -> bool:
    """Whether the kernel sent more than its outputs may hold (twice the cap, plus envelopes and echoes of the
    cells' source), counted on every channel before any message was filtered."""
    return getattr(session, "received_bytes", 0) > 2 * max_output_bytes + 4 * MARGIN


def _text(value) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "".join(value)
    if not isinstance(value, str):
        raise TypeError
    return value.encode("utf-8", "replace").decode("utf-8")


def _plain(value, depth: int = 0):
    """JSON data with strings made encodable; raises TypeError for anything else or too deep."""
    if depth > 64:
        raise TypeError
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, (bool, float)) or (isinstance(value, int) and abs(value) < 1 << 63):
        return value
    if isinstance(value, list):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {_text(k): _plain(v, depth + 1) for k, v in value.items()}
    raise TypeError


def _bundle(content: dict) -> dict:
    data, metadata = content.get("data", {}), content.get("metadata", {})
    if not isinstance(data, dict) or not isinstance(metadata, dict):
        raise TypeError
    cleaned = {}
    for mime, value in data.items():
        cleaned[_text(mime)] = _plain(value) if mime.endswith("json") else _text(value)
    return {**content, "data": cleaned, "metadata": _plain(metadata)}


def clean(msg: dict) -> dict | None:
    """The message with well-formed content, or None to drop it."""
    kind, content = msg.get("msg_type"), msg.get("content")
    if not isinstance(content, dict):
        return None
    try:
        if kind == "stream":
            if content.get("name") not in ("stdout", "stderr"):
                return None
            content = {"name": content["name"], "text": _text(content.get("text", ""))}
        elif kind in ("display_data", "update_display_data"):
            content = _bundle(content)
            transient = content.get("transient")
            if transient is not None and not isinstance(transient, dict):
                return None
        elif kind == "execute_result":
            content = _bundle(content)
            count = content.get("execution_count")
            if count is not None and (type(count) is not int or not 0 <= count < 1 << 31):
                return None
        elif kind == "error":
            content = {"ename": _text(content.get("ename", "")), "evalue": _text(content.get("evalue", "")),
                       "traceback": [_text(line) for line in content.get("traceback", [])]}
        elif kind == "clear_output":
            content = {"wait": bool(content.get("wait", False))}
        elif kind == "status":
            if content.get("execution_state") not in ("busy", "idle", "starting"):
                return None
        elif kind == "execute_input":
            count = content.get("execution_count")
            if count is not None and type(count) is not int:
                return None
        elif kind == "malformed":
            return None
    except (TypeError, KeyError, AttributeError):
        return None
    return {**msg, "content": content}
