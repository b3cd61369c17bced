"""The grading service's port over TLS (``serve --host ADDR --tls-cert FILE --tls-key FILE``, which ``hub
--site-address`` sets up for learners' servers on other hosts), and the learner's side of it (``COURSE_GRADING_URL``
https, verified with ``COURSE_GRADING_CA``).

Tried as a site would be attacked: a client that is not the site's CA's cannot be fooled by another certificate, a
plain-http request to the TLS port gets nothing, a client that opens a connection and never shakes hands holds no
one else up, and who asks is still told from the connection and the hub's token, as over loopback."""
from __future__ import annotations

import os
import socket
import ssl
import time

import pytest

from grader.classroom.certs import make_certificates
from grader.learner import regrade
from grader.service.commands import listening_tls
from test_service_attacks import _appeals_service


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The course's CA and a certificate for 127.0.0.1, and another CA's (a certificate the site did not issue)."""
    base = tmp_path_factory.mktemp("tls")
    return make_certificates(base / "site", ["127.0.0.1"]), make_certificates(base / "stranger", ["127.0.0.1"])


def _context(deployment) -> ssl.SSLContext:
    return listening_tls("127.0.0.1", deployment.cluster_cert, deployment.cluster_key)


def test_a_learner_reaches_the_service_over_tls_and_is_told_apart_as_over_loopback(tmp_path, monkeypatch, site):
    ours, stranger = site
    with _appeals_service(tmp_path, monkeypatch, tls=_context(ours)) as (server, asked, serve):
        serve()
        url = f"https://127.0.0.1:{server.server_address[1]}/"
        monkeypatch.setenv(regrade.URL_VARIABLE, url)
        monkeypatch.setenv("COURSE_GRADING_CA", str(ours.ca))
        assert regrade.service_address() == url
        assert regrade.send(url, None) == (200, {"appeals": []})
        assert asked == [("mine", os.geteuid())]  # the connection's account, read at accept through TLS
        monkeypatch.setenv("COURSE_GRADING_TOKEN", "victim")  # another account's token: refused, as over loopback
        status, answer = regrade.send(url, "sharded_step", "test-a", "why")
        assert status == 403 and "another account" in answer["error"] and len(asked) == 1
        monkeypatch.delenv("COURSE_GRADING_TOKEN")

        # a certificate from a CA that is not the site's is refused by the learner's side, with words to pass on
        monkeypatch.setenv("COURSE_GRADING_CA", str(stranger.ca))
        with pytest.raises(ssl.SSLCertVerificationError) as refused:
            regrade.send(url, None)
        assert regrade._why(refused.value) == "its certificate is not the site's: tell your instructor"

        # a client that never shakes hands, and one that speaks plain http, hold nobody up and get nothing
        port = server.server_address[1]
        # (two idle and the plain one leave this account one of its CONNECTIONS_PER_ACCOUNT = 4 for the request: a
        # handshake made as the connection is accepted would block the accepting thread at the first idle one)
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        plain = socket.create_connection(("127.0.0.1", port), timeout=15)
        plain.sendall(b"GET /appeals HTTP/1.1\r\nHost: x\r\n\r\n")
        monkeypatch.setenv("COURSE_GRADING_CA", str(ours.ca))
        settled = time.monotonic() + 10  # the refused connection above is released by its own thread
        while server.accounts.get(os.geteuid(), 0) > 3 and time.monotonic() < settled:
            time.sleep(0.05)
        began = time.monotonic()
        assert regrade.send(url, None)[0] == 200 and time.monotonic() - began < 5
        assert b"appeals" not in plain.recv(4096)  # a TLS alert or nothing, never the answer
        for connection in [*idle, plain]:
            connection.close()
        assert [a for a in asked if a[0] == "mine"] == [("mine", os.geteuid())] * 2


def test_plain_http_is_only_for_loopback_on_both_sides(monkeypatch, site):
    ours, _ = site
    with pytest.raises(ValueError, match="--tls-cert and --tls-key"):
        listening_tls("10.77.0.1", None, None)  # the service refuses to serve the site's network in clear
    with pytest.raises(ValueError, match="go together"):
        listening_tls("127.0.0.1", ours.cluster_cert, None)
    assert listening_tls("127.0.0.1", None, None) is None
    monkeypatch.setenv(regrade.URL_VARIABLE, "http://10.77.0.1:47080/")  # and the learner's side to send it in clear
    with pytest.raises(ValueError, match="plain http only to this machine"):
        regrade.service_address()
    with pytest.raises(ValueError, match="plain http only"):
        regrade.send("http://10.77.0.1:47080/", None)
