"""LTI 1.3 launch into the hub (``python -m grader hub --lti FILE``; docs/how-to/connect-your-lms.md): a learner clicks
the course's link in the LMS and lands in their own server, logged in. jupyterhub-ltiauthenticator (1.6) does the
OpenID Connect launch (``/hub/lti13/oauth_login``, ``/hub/lti13/oauth_callback``: the id_token's signature against
the LMS's key set, its issuer, audience, ``exp``, age and claims, its nonce against the browser's login cookie).
What it leaves undone is done here, in small subclasses:

* **deployments**: it reads no ``deployment_id``; one not in the LTI file is refused (at login initiation too);
* **replay**: its nonce check binds a launch to the browser that started it, but nothing remembers a nonce, so a
  launch replayed with its cookies would pass again: each nonce is accepted once (``lti-nonces.json`` in the hub's
  root-only state folder, kept across restarts until the token could no longer pass anyway);
* **refusals** are pages in plain words (forged, expired, replayed, unknown deployment or LMS, not this browser's),
  each logged with the address it came from;
* **the account** is a Unix account, keyed by the LMS's stable user id (``sub``; ``lti-accounts.json``), so a changed
  login keeps it. A ``sub`` seen the first time gets the account the LTI file's ``account`` names (``login_id``, the
  custom parameter: the roster's account; ``person_sourcedid``; ``email``'s local part; ``sub``'s hash), lower-cased
  and refused unless ``useradd`` takes it everywhere (``grader.hub.roster.ACCOUNT``), unless it is new or one of the
  course's, and when it is the course's ``instructor``, another ``sub``'s, or deactivated by the roster. The name and
  e-mail are data in that file only: accounts are made with argv, never a shell, and nothing of them reaches a page;
* **roles** (the context's ``membership`` roles) set the account's groups at every launch: Instructor (Primary,
  Secondary, Lecturer) or Administrator: instructors and graders; another Instructor sub-role (Teaching assistant,
  Grader): graders; Learner: learners; anything else is refused.

The hub's password form stays for staff only (``jdt-graders``), so formgrader is reachable while the LMS is down.
``/hub/lti13/config`` is the tool's configuration (Canvas's JSON), ``/hub/lti13/jwks`` its public key set.
"""
from __future__ import annotations

import asyncio
import csv
import datetime
import hashlib
import json
import os
import pwd
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from grader.hub import accounts
from grader.hub.install import HubRefused, run

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DEPLOYMENT, ROLES, CUSTOM, LIS = CLAIM + "deployment_id", CLAIM + "roles", CLAIM + "custom", CLAIM + "lis"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
LEADS = {"PrimaryInstructor", "SecondaryInstructor", "Lecturer"}
GROUPS = {"instructor": (accounts.INSTRUCTORS, accounts.GRADERS), "grader": (accounts.GRADERS,),
          "learner": (accounts.LEARNERS,)}
REQUIRED = ("issuer", "client_id", "key_set_url", "auth_login_url", "deployment_ids")
OPTIONAL = ("account", "key_folder")
ACCOUNT_FROM = {"login_id": "custom parameter login_id", "person_sourcedid": "LIS person_sourcedid (the SIS id)",
                "email": "e-mail address", "sub": "user id (sub)"}
PLAIN = {"login_id": "login id", "person_sourcedid": "student id (SIS id)", "email": "e-mail address",
         "sub": "user id"}  # the same, in a learner's words
AGAIN = "open the course again from your LMS"


class LtiError(ValueError):
    """The LTI file cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class LtiConfig:
    path: Path
    issuer: str
    client_ids: tuple[str, ...]
    key_set_url: str
    auth_login_url: str
    deployment_ids: tuple[str, ...]
    account: str = "login_id"
    key_folder: Path | None = None

    @property
    def keys(self) -> Path:
        """The tool's key pair (grader.lms.keys): the LMS file's default folder too, so one file pair, one key."""
        return self.key_folder or self.path.parent / "lti-keys"


def _strings(path: Path, name: str, value) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip() for v in values):
        raise LtiError(f"{path}: {name} must be a string or a list of strings, none empty")
    return tuple(str(v).strip() for v in values)


def load(path: Path) -> LtiConfig:
    """The LTI file (TOML, its fields at the top or in an ``[lti]`` table); raises LtiError naming what is wrong."""
    from grader.lms.config import read_table

    path = Path(path)
    data = read_table(path, "lti", REQUIRED + OPTIONAL, LtiError)
    missing = [name for name in REQUIRED if name not in data or data[name] in ("", [])]
    if missing:
        raise LtiError(f"{path}: missing {', '.join(missing)} (the LMS's registration of the tool gives them)")
    for name in ("issuer", "key_set_url", "auth_login_url", "account", "key_folder"):
        if name in data and not isinstance(data[name], str):
            raise LtiError(f"{path}: {name} must be a string")
    for name in ("key_set_url", "auth_login_url"):
        parts = urlsplit(data[name])
        if parts.scheme not in ("https", "http") or not parts.netloc or (
                parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1")):
            raise LtiError(f"{path}: {name} = {data[name]!r} is not an https URL (http only on loopback)")
    account = data.get("account", "login_id")
    if account not in ACCOUNT_FROM:
        raise LtiError(f"{path}: account = {account!r}: one of {', '.join(ACCOUNT_FROM)}")
    folder = (path.parent / data["key_folder"]).resolve() if data.get("key_folder") else None
    return LtiConfig(path.resolve(), data["issuer"].strip(), _strings(path, "client_id", data["client_id"]),
                     data["key_set_url"], data["auth_login_url"],
                     _strings(path, "deployment_ids", data["deployment_ids"]), account, folder)


def announce(path: Path, hub_url: str) -> list[str]:
    """What the LMS administrator registers, printed when the hub starts (raises LtiError for a bad file)."""
    from grader.lms.keys import jwks

    config = load(path)
    hub = hub_url.rstrip("/")
    return [f"LTI 1.3 launch from {config.issuer} (client id {', '.join(config.client_ids)}; deployment(s) "
            f"{', '.join(config.deployment_ids)}; accounts from the launch's {ACCOUNT_FROM[config.account]})",
            f"for the LMS: OpenID Connect initiation (login) URL {hub}/hub/lti13/oauth_login; redirect URI "
            f"{hub}/hub/lti13/oauth_callback; target link URI {hub}/; tool configuration (JSON) {hub}/hub/lti13/config; "
            f"public key set (JWKS) URL {hub}/hub/lti13/jwks (behind https: the same paths on the hub's public address)",
            f"the tool's public key (JWKS, from {config.keys}): {json.dumps(jwks(config.keys), sort_keys=True)}",
            "the hub's password form admits the staff only (jdt-graders); learners enter from the LMS"]


def course_role(roles) -> str | None:
    """'instructor', 'grader' or 'learner' from the launch's context roles (module docstring); None: no access."""
    found: set[tuple[str, str]] = set()
    for role in roles if isinstance(roles, list) else []:
        if isinstance(role, str) and role.startswith(MEMBERSHIP):  # membership#Role, membership/Role#Sub, #Role#Sub
            main, _, sub = role[len(MEMBERSHIP):].lstrip("#/").partition("#")
            found.add((main, sub))
    mains = {main for main, _ in found}
    if "Administrator" in mains:
        return "instructor"
    if "Instructor" in mains:
        assistant = any(main == "Instructor" and sub and sub not in LEADS for main, sub in found)
        return "grader" if assistant else "instructor"
    return "learner" if "Learner" in mains else None


class Refused(Exception):
    """A launch the course turns away: ``status``, the page's words, what the log says besides."""

    def __init__(self, status: int, kind: str, message: str, detail: str = ""):
        super().__init__(message)
        self.status, self.kind, self.message, self.detail = status, kind, message, detail


def account_name(claims: dict, how: str, issuer: str) -> str:
    """The Unix account a ``sub`` seen the first time gets (module docstring); raises Refused."""
    from grader.hub.roster import ACCOUNT

    if how == "sub":
        return "lti-" + hashlib.sha256(f"{issuer}\n{claims['sub']}".encode()).hexdigest()[:12]
    value = {"login_id": (claims.get(CUSTOM) or {}).get("login_id") if isinstance(claims.get(CUSTOM), dict) else None,
             "person_sourcedid": (claims.get(LIS) or {}).get("person_sourcedid") if isinstance(claims.get(LIS), dict)
             else None, "email": claims.get("email")}[how]
    if not isinstance(value, str) or not value.strip() or value.startswith("$"):  # "$X": a variable left unfilled
        raise Refused(400, "no account claim", f"Your LMS did not send your {PLAIN[how]}, which names your account "
                      "in this course. Ask the course's staff: the LMS's administrator sets it to be sent with the "
                      f"course's link. Then {AGAIN}.", f"no {ACCOUNT_FROM[how]} in the launch")
    name = (value.strip().partition("@")[0] if how == "email" else value.strip()).lower()
    if not ACCOUNT.fullmatch(name):
        raise Refused(403, "unsafe account", f"Your {PLAIN[how]} in the LMS cannot be an account name on the course's "
                      "machine (a letter, then at most 31 letters, digits, _ or -). Ask the course's staff.",
                      f"{how} {value[:80]!r}")
    return name


def _write_json(path: Path, data) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=True)
    os.replace(temporary, path)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def first_use(state: Path, nonce: str, until: float) -> bool:
    """True the first time ``nonce`` is seen; it is remembered until its token could no longer pass anyway."""
    file, now, key = Path(state) / "lti-nonces.json", time.time(), hashlib.sha256(nonce.encode()).hexdigest()
    held = {n: t for n, t in _read_json(file).items() if isinstance(t, (int, float)) and t > now}
    if key in held:
        return False
    _write_json(file, {**held, key: until})
    return True


def _clean(text) -> str:
    return "".join(ch for ch in text.strip() if ch.isprintable())[:200] if isinstance(text, str) else ""


def _groups_of(name: str) -> set[str]:
    course = {accounts.LEARNERS, accounts.GRADERS, accounts.INSTRUCTORS}
    return {group for group in course if name in accounts.members(group)}


def provision(claims: dict, state: Path, how: str, issuer: str) -> dict:
    """The launch's account made or matched, its course groups set from its role (module docstring): JupyterHub's
    authentication model. Raises Refused. Runs as root, one launch at a time."""
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub.strip() or len(sub) > 255 or not sub.isprintable():
        raise Refused(400, "no user", "This launch names no LMS user (an anonymous launch): the course needs to know "
                      f"who you are. Sign in to your LMS, then {AGAIN}.")
    role = course_role(claims.get(ROLES))
    if role is None:
        raise Refused(403, "role", "Your role in this LMS course gives no access to the course: it admits its "
                      "learners, teaching assistants and instructors.", f"roles {str(claims.get(ROLES))[:300]}")
    store, state = Path(state) / "lti-accounts.json", Path(state)
    known = _read_json(store)
    entry = known.get(sub) if isinstance(known.get(sub), dict) else None
    name = entry["account"] if entry else account_name(claims, how, issuer)
    roster = _read_json(state / "roster.json")
    if not entry:
        if name == accounts.INSTRUCTOR:
            raise Refused(403, "instructor account", f"{name} is the course's own instructor account: it signs in "
                          "with its password on the hub's login page.")
        if any(isinstance(e, dict) and e.get("account") == name for e in known.values()):
            raise Refused(403, "account taken", f"The account {name} already belongs to another LMS user. Ask the "
                          "course's staff.", f"sub {sub[:80]!r}")
    exists = name in {account.pw_name for account in pwd.getpwall()}
    if exists and not entry and not _groups_of(name) and name not in roster:
        raise Refused(403, "foreign account", f"{name} is an account of the course's machine that is not one of the "
                      "course's: no LMS user is given it. Ask the course's staff.")
    if isinstance(roster.get(name), dict) and roster[name].get("active") is False:
        raise Refused(403, "deactivated", "Your account in this course is deactivated (you are no longer on its "
                      "roster): your work and grades are kept. Ask the course's staff.")
    wanted = set(GROUPS[role])
    accounts.ensure_groups(sorted({g for groups in GROUPS.values() for g in groups}))
    try:
        if not exists:  # no password: only the launch (and root) opens it
            run("useradd", "--create-home", "--shell", "/bin/bash", "--groups", ",".join(sorted(wanted)), name)
        for group in sorted(wanted - _groups_of(name)):
            run("usermod", "--append", "--groups", group, name)
        for group in sorted(_groups_of(name) - wanted):
            run("gpasswd", "--delete", name, group)
    except HubRefused as error:
        raise Refused(500, "account", "The course could not set up your account. Tell the course's staff.",
                      str(error)[:300]) from None
    os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    known[sub] = {"account": name, "role": role, "name": _clean(claims.get("name")), "email": _clean(claims.get("email")),
                  "made": (entry or {}).get("made", not exists), "since": (entry or {}).get("since", now), "last": now}
    _write_json(store, known)
    # learner id -> LMS user id, for the LMS file's `users` (grades passed back under the same `sub`)
    rows = sorted((e["account"], s) for s, e in known.items() if isinstance(e, dict) and e.get("account"))
    temporary = state / f".lti-users.csv.{os.getpid()}"
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w",
              newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([("id", "lms_user_id"), *rows])
    os.replace(temporary, state / "lti-users.csv")
    return {"name": name, "admin": role == "instructor", "auth_state": None}


# --- JupyterHub's side: imported by the hub's configuration only (jupyterhub and its LTI authenticator loaded) -----

def _classes():
    from jupyterhub.auth import PAMAuthenticator
    from jupyterhub.handlers import BaseHandler
    from jupyterhub.handlers.login import LoginHandler
    from jupyterhub.utils import url_path_join
    from ltiauthenticator.lti13.auth import LTI13Authenticator
    from ltiauthenticator.lti13.error import InvalidAudienceError, TokenError, ValidationError
    from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
    from ltiauthenticator.utils import convert_request_to_dict
    from tornado.web import HTTPError
    from traitlets import List, Unicode

    def refusal(handler, refused: Refused) -> HTTPError:
        handler.log.warning("LTI launch refused (%s) from %s: %s%s", refused.kind, handler.request.remote_ip,
                            refused.message, f" [{refused.detail}]" if refused.detail else "")
        error = HTTPError(refused.status, "%s", refused.message)
        error.jupyterhub_message = refused.message  # the page's words (JupyterHub's error page escapes them)
        return error

    class LaunchStart(LTI13LoginInitHandler):
        """The LMS's login initiation: an unknown LMS, client or deployment is refused before the browser goes on."""

        def post(self):
            args, auth = convert_request_to_dict(self.request.arguments), self.authenticator
            for name, known in (("iss", {auth.issuer}), ("client_id", auth.client_id),
                                ("lti_deployment_id", set(auth.deployment_ids))):
                if args.get(name) and args[name] not in known:
                    raise refusal(self, Refused(403, f"unknown {name}", "This link comes from an LMS, or an LMS "
                                                "registration or deployment, this course is not set up for. Ask the "
                                                "course's staff.", f"{name} {args[name][:120]!r}"))
            return super().post()

        get = post

        def _set_oauth_cookie(self, key, value):  # over https, sent back on the LMS's cross-site form post
            https = self.authenticator.get_uri_scheme(self.request) == "https"
            self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True,
                             **({"samesite": "None", "secure": True} if https else {}))

    class LaunchEnd(LTI13CallbackHandler):
        """The launch itself: the library's checks, then the deployment and the nonce's first use."""

        def decode_and_validate_launch_request(self):
            try:
                claims = super().decode_and_validate_launch_request()
            except HTTPError as error:  # the state or nonce cookie: not this browser's launch, or used already
                raise refusal(self, Refused(403, "session", "This launch does not belong to this browser's sign-in, "
                                            f"or it was used already: {AGAIN}.", str(error.log_message))) from None
            except InvalidAudienceError as error:
                raise refusal(self, Refused(403, "audience", "This launch was made for another tool, not this "
                                            "course. Ask the course's staff.", str(error))) from None
            except TokenError as error:
                cause = type(error.__context__).__name__
                if cause == "ExpiredSignatureError" or "too long ago" in str(error):
                    raise refusal(self, Refused(403, "expired", "This launch has expired (a launch is valid for a "
                                                f"few minutes only): {AGAIN}.", str(error))) from None
                if cause == "PyJWKClientConnectionError":
                    raise refusal(self, Refused(503, "keys unreachable", "The course could not reach your LMS to "
                                                f"check this launch: {AGAIN} in a minute.", str(error))) from None
                if cause in ("InvalidIssuerError", "MissingRequiredClaimError"):
                    raise refusal(self, Refused(403, "issuer", "This launch comes from an LMS this course is not set "
                                                "up for. Ask the course's staff.", str(error))) from None
                raise refusal(self, Refused(403, "signature", "This launch is not signed by your LMS (its signature "
                                            "does not match the LMS's keys), so it was refused and logged. "
                                            f"{AGAIN[0].upper()}{AGAIN[1:]}; if this happens again, tell the course's "
                                            "staff.", f"{cause}: {error}")) from None
            except ValidationError as error:
                raise refusal(self, Refused(400, "incomplete", f"This launch is incomplete ({error}): {AGAIN}; if "
                                            "this happens again, tell the course's staff.", str(error))) from None
            deployment = claims.get(DEPLOYMENT)
            if deployment not in self.authenticator.deployment_ids:
                raise refusal(self, Refused(403, "unknown deployment", "This course is not set up for the LMS "
                                            "deployment this link belongs to. Ask the course's staff to add it.",
                                            f"deployment_id {str(deployment)[:120]!r}"))
            until = max(float(claims.get("exp") or 0), float(claims.get("iat") or 0) + 600) + 120
            if not first_use(Path(self.authenticator.state_dir), str(claims.get("nonce")), until):
                raise refusal(self, Refused(403, "replayed", f"This launch was already used: {AGAIN}.",
                                            f"nonce of sub {str(claims.get('sub'))[:80]!r}"))
            return claims

    class ToolConfig(BaseHandler):
        """The tool's configuration, as Canvas's "Paste JSON" / "Enter URL" reads it."""

        def get(self):
            root = f"{self.authenticator.get_uri_scheme(self.request)}://{self.request.host}"
            hub = url_path_join(root, self.hub.base_url)
            self.set_header("Content-Type", "application/json")
            self.write(json.dumps({
                "title": self.authenticator.tool_name, "description": self.authenticator.tool_description,
                "oidc_initiation_url": url_path_join(hub, "lti13/oauth_login"), "target_link_uri": root + "/",
                "public_jwk_url": url_path_join(hub, "lti13/jwks"),
                "scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                           "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
                           "https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                "custom_fields": {"login_id": "$Canvas.user.loginId"},
                "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public", "settings": {
                    "placements": [{"placement": "course_navigation", "message_type": "LtiResourceLinkRequest",
                                    "windowTarget": "_blank", "target_link_uri": root + "/"}]}}]}))

    class ToolKeys(BaseHandler):
        """The tool's public key set (its private key signs the grade passback's token requests)."""

        def get(self):
            from grader.lms.keys import jwks

            self.set_header("Content-Type", "application/json")
            self.write(json.dumps(jwks(Path(self.authenticator.key_folder))))

    class CourseLTIAuthenticator(LTI13Authenticator):
        """LTI 1.3 launches for everyone; the password form for the staff only (module docstring)."""

        login_service = ""  # the hub's login page keeps its password form
        tool_name = Unicode("JAX distributed training", config=True)
        tool_description = Unicode("The course's notebooks, graded on Submit", config=True)
        deployment_ids = List(Unicode(), config=True, help="the LMS deployments whose launches are accepted")
        account_from = Unicode("login_id", config=True, help="the claim a new learner's account is named from")
        state_dir = Unicode(config=True, help="the hub's root-only state folder")
        key_folder = Unicode(config=True, help="the tool's key pair (grader.lms.keys)")

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._lock = asyncio.Lock()
            self._pam = PAMAuthenticator(parent=self)

        def login_url(self, base_url):
            return url_path_join(base_url, "login")

        def get_handlers(self, app):
            return [("/login", LoginHandler), ("/lti13/oauth_login", LaunchStart), ("/lti13/oauth_callback", LaunchEnd),
                    ("/lti13/config", ToolConfig), ("/lti13/jwks", ToolKeys)]

        def check_allowed(self, username, authentication=None):
            return True  # authenticate() admits only the launch's account or a staff password

        async def authenticate(self, handler, data=None):
            if isinstance(handler, LTI13CallbackHandler):
                async with self._lock:
                    try:
                        return await asyncio.to_thread(provision, data or {}, Path(self.state_dir), self.account_from,
                                                       self.issuer)
                    except Refused as refused:
                        raise refusal(handler, refused) from None
            name = await self._pam.authenticate(handler, data)
            if not name:
                return None
            groups = _groups_of(name)
            if not groups & {accounts.GRADERS, accounts.INSTRUCTORS}:
                self.log.warning("password login of %r refused: with --lti, learners enter from the LMS", name)
                return None
            return {"name": name, "admin": accounts.INSTRUCTORS in groups}

    return CourseLTIAuthenticator


def configure(c, s: dict) -> None:
    """The hub's authenticator becomes the course's LTI one (jupyterhub_config.py calls this with ``--lti``)."""
    config = load(Path(s["lti"]))
    c.JupyterHub.authenticator_class = _classes()
    auth = c.CourseLTIAuthenticator
    auth.issuer, auth.client_id = config.issuer, set(config.client_ids)
    auth.jwks_endpoint, auth.authorize_url = config.key_set_url, config.auth_login_url
    auth.deployment_ids, auth.account_from = list(config.deployment_ids), config.account
    auth.state_dir, auth.key_folder = s["state"], str(config.keys)
    auth.allow_all = True  # who enters is decided by authenticate(): the launch's role, or a staff password
