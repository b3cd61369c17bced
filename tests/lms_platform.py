"""An LMS for the tests: a small LTI 1.3 platform on loopback, built around ``lti1p3platform`` 0.1.8 (written by
others): its ``LTI1P3PlatformConfAbstract.get_access_token`` checks the tool's signed assertion and issues the access
token, its ``validate_token`` checks the token on every service call, its ``AssignmentsGradesService`` handles the
line items and scores; here are only the storage and the HTTP routes (stdlib ``http.server``).

Where lti1p3platform 0.1.8 falls short of the specifications, the routes here hold the line the specification draws,
so the tool is tested against the published messages and not against the library's gaps:

* token endpoint (IMS Security Framework 1.0 §4.1, RFC 7523 §3): the library decodes the client assertion with
  ``verify_aud`` off and checks neither ``iss``/``sub`` = the client id, nor ``jti`` reuse, nor that ``exp`` is
  present, nor ``client_assertion_type``; its errors are exceptions, not RFC 6749 §5.2 error bodies;
* a forged or expired bearer token makes ``validate_token`` raise (PyJWT's errors, ``LtiException``) where the
  service should answer 401; its token carries every supported scope asked for, not the registration's;
* the line items container comes back as ``{"content", "has_next", "next"}``: AGS 2.0 §3.2 has a JSON array
  (``application/vnd.ims.lis.v2.lineitemcontainer+json``) with paging in a ``Link: <...>; rel="next"`` header;
  its ``page`` query value is used as a number without converting it;
* a score is stored unchecked ("TODO: validate score"): AGS 2.0 §3.4 requires ``userId``, ``timestamp``,
  ``activityProgress``, ``gradingProgress`` (from fixed lists), ``scoreMaximum`` with a ``scoreGiven``, the
  ``application/vnd.ims.lis.v1.score+json`` media type, and that a score older than the one held is not applied;
  its reply to a score is labelled with the line item's media type; ``TScore.userId`` is typed ``int`` (a string
  in the specification); a new line item's required ``label`` and positive ``scoreMaximum`` are not checked.

The launch (LTI 1.3 core §5.1, IMS Security Framework §5.1.1, OIDC third-party initiated login then an id_token
``form_post``): the library's ``OIDCLoginAbstract`` builds the login initiation URL, its ``MessageLaunchAbstract``
checks the tool's authentication request and signs the id_token (``nonce``, ``iss``, ``aud``, ``azp``,
``deployment_id``, ``exp``, the user's claims, the platform key's ``kid``). Here are the routes: the course's page
(``/course?user=NAME``, a link a person clicks), ``/launch`` (to the tool's login initiation), ``/authorize`` (the
form that posts the id_token to the tool) and ``/jwks``. Where 0.1.8 falls short: it does not check the
authentication request's ``redirect_uri`` against the tool's registered ones (Security Framework §5.1.1.2), nor
``response_type=id_token``, ``scope=openid``, ``response_mode=form_post`` and ``prompt=none`` (§5.1.1.2); the
routes here do.
"""
from __future__ import annotations

import datetime
import html
import json
import threading
import time
import typing as t
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import jwt
from jwcrypto.jwk import JWK
from lti1p3platform.exceptions import LineItemNotFoundException, LtiServiceException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import MessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService

ISSUER, CLIENT_ID, DEPLOYMENT = "https://lms.example.test", "grader-tool-1", "1"
COURSE = "/api/lti/courses/7/line_items"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
ACTIVITY = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}
GRADING = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}


def score_problems(score: t.Any) -> list[str]:
    """What an AGS 2.0 score message (§3.4, the Score publish service) lacks or gets wrong."""
    if not isinstance(score, dict):
        return ["the body is not a JSON object"]
    problems = [f"{name} is required" for name in ("userId", "timestamp", "activityProgress", "gradingProgress")
                if name not in score]
    if "userId" in score and not isinstance(score["userId"], str):
        problems.append("userId must be a string")
    if score.get("activityProgress", "Completed") not in ACTIVITY:
        problems.append(f"activityProgress {score['activityProgress']!r} is not one of {sorted(ACTIVITY)}")
    if score.get("gradingProgress", "FullyGraded") not in GRADING:
        problems.append(f"gradingProgress {score['gradingProgress']!r} is not one of {sorted(GRADING)}")
    if "scoreGiven" in score:
        if not isinstance(score.get("scoreMaximum"), (int, float)) or score["scoreMaximum"] <= 0:
            problems.append("scoreMaximum (a positive number) is required with scoreGiven")
        if not isinstance(score["scoreGiven"], (int, float)) or score["scoreGiven"] < 0:
            problems.append("scoreGiven must be a number, 0 or more")
    try:
        stamp = datetime.datetime.fromisoformat(str(score.get("timestamp")).replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            problems.append("timestamp needs its time zone")
    except ValueError:
        problems.append(f"timestamp {score.get('timestamp')!r} is not ISO 8601")
    return problems


def _stamp(score: dict) -> datetime.datetime:
    return datetime.datetime.fromisoformat(str(score["timestamp"]).replace("Z", "+00:00"))


class Conf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: t.Any) -> None:
        self.registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: t.Any) -> Registration:
        return self.registration


class Ags(AssignmentsGradesService):
    """The course's line items and results, kept in the platform's memory."""

    def __init__(self, request, platform, lms: Platform):
        super().__init__(request, platform.conf, lineitems_url=platform.url + COURSE)
        self.lms = lms

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None, tag=None):
        items = [i for i in self.lms.lineitems.values() if (resource_id is None or i.get("resourceId") == resource_id)
                 and (tag is None or i.get("tag") == tag)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id):
        if line_item_id not in self.lms.lineitems:
            raise LineItemNotFoundException(line_item_id)
        return self.lms.lineitems[line_item_id]

    def create_lineitem(self, creation_data):
        if not creation_data.get("label") or not isinstance(creation_data.get("scoreMaximum"), (int, float)) \
                or creation_data["scoreMaximum"] <= 0:
            raise LtiServiceException("a line item needs a label and a positive scoreMaximum", 400)
        number = len(self.lms.lineitems) + 1
        item = {**creation_data, "id": f"{self.lms.url}{COURSE}/{number}"}
        self.lms.lineitems[item["id"]] = item
        return item

    def update_lineitem(self, update_data):
        return self.lms.lineitems.setdefault(update_data["id"], {}).update(update_data)

    def delete_lineitem(self, line_item_id):
        self.lms.lineitems.pop(line_item_id, None)

    def update_score(self, line_item_id, score):
        item = self.find_lineitem(f"{self.lms.url}{COURSE}/{line_item_id}")
        self.lms.received.append((item["id"], dict(score)))
        held = self.lms.results.get((item["id"], score["userId"]))
        if held is not None and _stamp(held) > _stamp(score):  # AGS 2.0: never over a newer score
            return UpdateScoreStatus.OLD_TIMESTAMP
        self.lms.results[(item["id"], score["userId"])] = dict(score)
        return UpdateScoreStatus.SUCCESS if held else UpdateScoreStatus.CREATED

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        return {"content": [], "has_next": False, "next": None}


class HttpRequest(Request):
    def build_metadata(self, request):
        return request


class Login(OIDCLoginAbstract):
    """The library's login initiation: the URL of the tool's OIDC login with iss, login_hint, target_link_uri,
    lti_message_hint, client_id and lti_deployment_id."""

    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url):
        return url


class Launch(MessageLaunchAbstract):
    """The library's launch message: the preflight (the tool's authentication request) checked, the id_token signed."""

    def render_launch_form(self, launch_data, **kwargs):
        return launch_data


ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"


class Platform:
    """The LMS on ``127.0.0.1:port``: ``start``, ``stop`` (it refuses connections) and ``start`` again on the same
    port, its gradebook (``results``) and every score it received (``received``) kept across."""

    _key = None  # the platform's own key pair, made once for the test session

    def __init__(self, tool_jwks: dict):
        key = Platform._key = Platform._key or JWK.generate(kty="RSA", size=2048)
        self.registration = (Registration().set_iss(ISSUER).set_client_id(CLIENT_ID).set_deployment_id(DEPLOYMENT)
                             .set_platform_private_key(key.export_to_pem(private_key=True, password=None).decode())
                             .set_platform_public_key(key.export_to_pem().decode()).set_tool_key_set(tool_jwks))
        self.conf = Conf(registration=self.registration)
        self.conf.get_registration()
        self.lineitems: dict[str, dict] = {}
        self.results: dict[tuple[str, str], dict] = {}
        self.received: list[tuple[str, dict]] = []
        self.jtis: set[str] = set()
        self.port, self.server = 0, None
        self.people: dict[str, dict] = {}  # login_hint -> sub, roles, name, email, custom (the LMS's users)
        self.redirect_uris: set[str] = set()

    def register_tool(self, login_url: str, redirect_uri: str, target_link_uri: str) -> None:
        """The tool's registration as the LMS's administrator enters it (the how-to's fields)."""
        self.registration.set_oidc_login_url(login_url).set_launch_url(target_link_uri)
        self.redirect_uris = {redirect_uri}

    def login_initiation(self, person: str, deployment: str | None = None) -> str:
        """Where the LMS sends the browser of ``person`` who clicks the course's link."""
        login = Login(None, self.conf)
        login.set_lti_message_hint(hint="course-link-1")
        url = login.initiate_login(person)
        return url.replace(f"lti_deployment_id={DEPLOYMENT}", f"lti_deployment_id={deployment}") if deployment else url

    def launch(self, request: dict, claims: dict | None = None, expiration: int = 300) -> dict:
        """The id_token for the tool's authentication request ``request`` (its query), as the library signs it:
        ``{"id_token", "state", "launch_url"}``; ``claims`` replace the message's own (a test's tampering)."""
        problems = [f"{name} must be {value}" for name, value in (("response_type", "id_token"), ("scope", "openid"),
                    ("response_mode", "form_post"), ("prompt", "none")) if request.get(name) != value]
        if request.get("redirect_uri") not in self.redirect_uris:
            problems.append(f"redirect_uri {request.get('redirect_uri')!r} is not registered")
        person = self.people.get(request.get("login_hint", ""))
        if problems or person is None:
            raise ValueError("; ".join(problems) or "unknown login_hint")
        launch = Launch(HttpRequest({"method": "GET", "get_data": dict(request), "form_data": {}}), self.conf)
        launch.set_user_data(person["sub"], person["roles"], person.get("name"), person.get("email"))
        launch.set_resource_link_claim("course-link-1", title="JAX distributed training")
        launch.set_launch_context_claim("course-7", context_label="JAX", context_title="Distributed training")
        launch.set_custom_parameters_claim(dict(person.get("custom") or {}))
        launch.set_extra_claims(dict(claims or {}))
        launch.set_id_token_expiration(expiration)
        return launch.lti_launch()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Platform:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def gradebook(self) -> dict[tuple[str, str], tuple[float | None, str]]:
        """(line item's resourceId, userId) -> (scoreGiven, gradingProgress), as the LMS's gradebook shows."""
        return {(self.lineitems[item]["resourceId"], user): (s.get("scoreGiven"), s["gradingProgress"])
                for (item, user), s in self.results.items()}

    # -- the token endpoint -----------------------------------------------------------------------------------------
    def token(self, form: dict) -> tuple[int, dict]:
        assertion = form.get("client_assertion", "")
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return 400, {"error": "invalid_request", "error_description": "client_assertion_type"}
        try:
            claims = jwt.decode(assertion, options={"verify_signature": False})
        except jwt.PyJWTError as error:
            return 400, {"error": "invalid_request", "error_description": str(error)}
        if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID or claims.get("aud") not in (
                self.url + "/token", [self.url + "/token"]) or "exp" not in claims or not claims.get("jti") \
                or claims["jti"] in self.jtis:
            return 401, {"error": "invalid_client", "error_description": "iss, sub, aud, exp or jti"}
        try:
            granted = self.conf.get_access_token(form)  # the library checks the signature against the tool's JWKS
        except Exception as error:  # noqa: BLE001 - the library raises anything: an RFC 6749 error body
            return 401, {"error": "invalid_client", "error_description": f"{type(error).__name__}: {error}"}
        self.jtis.add(claims["jti"])
        return 200, dict(granted)


def _handler(lms: Platform):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, body=None, media="application/json", headers=()):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _request(self, body: bytes) -> HttpRequest:
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            for name in ("page", "limit"):  # the library does arithmetic on them
                if name in query:
                    query[name] = int(query[name])
            try:
                payload = json.loads(body) if body else None
            except ValueError:
                payload = None
            return HttpRequest({"method": self.command, "form_data": {}, "get_data": query, "path": parts.path,
                                "headers": dict(self.headers), "content_type": self.headers.get("Content-Type"),
                                "json": payload})

        def _serve(self, ags: Ags, call, **kwargs):
            try:
                response = ags.handle_resp(call, **kwargs)
            except Exception as error:  # noqa: BLE001 - a forged token raises out of the library: 401
                return self._send(401, {"error": "invalid_token", "error_description": f"{type(error).__name__}"})
            if response.code >= 400:
                return self._send(response.code, {"error": response.message})
            return self._send(response.code, response.result, response.media_type)

        def _page(self, code: int, text: str, headers=()):
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _launch_routes(self, path: str, query: dict) -> bool:
            """The course's page, its link, the authorization endpoint and the platform's keys; False: not one."""
            if path == "/jwks":
                self._send(200, {"keys": lms.registration.get_jwks()})
            elif path == "/course":
                self._page(200, "<!doctype html><html lang=en><title>JAX course - LMS</title><main><h1>Distributed "
                                f"training</h1><a id=launch href='/launch?user={html.escape(query.get('user', ''))}'>"
                                "Open the JAX course</a></main></html>")
            elif path == "/launch":
                self._page(302, "", [("Location", lms.login_initiation(query.get("user", "")))])
            elif path == "/authorize":
                try:
                    data = lms.launch(query)
                except Exception as error:  # noqa: BLE001 - the library raises anything: the LMS's error page
                    self._page(400, f"<p>launch refused by the LMS: {html.escape(str(error))}</p>")
                    return True
                fields = "".join(f"<input type=hidden name={name} value='{html.escape(data[name])}'>"
                                 for name in ("id_token", "state"))
                self._page(200, f"<!doctype html><html lang=en><title>Launching</title><form id=lti method=post "
                                f"action='{html.escape(data['launch_url'])}'>{fields}</form>"
                                "<script>document.getElementById('lti').submit()</script></html>")
            else:
                return False
            return True

        def do_GET(self):
            path = urlsplit(self.path).path
            if self._launch_routes(path, dict(parse_qsl(urlsplit(self.path).query))):
                return
            if path == COURSE:
                ags = Ags(self._request(b""), lms, lms)
                try:
                    response = ags.handle_resp(ags.handle_get_lineitems)
                except Exception:  # noqa: BLE001
                    return self._send(401, {"error": "invalid_token"})
                if response.code != 200:
                    return self._send(response.code, {"error": response.message})
                page = response.result  # the library's page, answered as AGS 2.0 has it: an array, paged by Link
                link = [("Link", f'<{page["next"]}>; rel="next"')] if page.get("next") else []
                return self._send(200, page["content"], CONTAINER_TYPE, link)
            return self._send(404, {"error": "not found"})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path
            if path == "/token":
                code, answer = lms.token(dict(parse_qsl(body.decode())))
                return self._send(code, answer)
            if path == "/authorize" and self._launch_routes(path, dict(parse_qsl(body.decode()))):
                return
            request = self._request(body)
            ags = Ags(request, lms, lms)
            if path == COURSE:
                return self._serve(ags, ags.handle_create_lineitem)
            if path.startswith(COURSE + "/") and path.endswith("/scores"):
                number = path[len(COURSE) + 1:-len("/scores")]
                if (self.headers.get("Content-Type") or "").split(";")[0].strip() != SCORE_TYPE:
                    return self._send(415, {"error": f"a score is {SCORE_TYPE}"})
                problems = score_problems(request.json)
                if problems:
                    return self._send(400, {"error": "; ".join(problems)})
                return self._serve(ags, ags.handle_update_score, line_item_id=number)
            return self._send(404, {"error": "not found"})

    return Handler


def wait_for(predicate, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
