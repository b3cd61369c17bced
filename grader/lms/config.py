"""The LMS file: how the course reaches its LMS for grades (LTI 1.3 Assignment and Grade Services).

A TOML file the LMS administrator's registration fills in (``docs/how-to/connect-your-lms.md``)::

    issuer = "https://canvas.instructure.com"                          # the platform's issuer (iss)
    client_id = "10000000000042"                                       # the tool's client id on that platform
    deployment_id = "42:8865aa05b4b79b64a91a86042e43af5ea8ae79eb"      # the course's (or account's) deployment
    auth_token_url = "https://canvas.example.edu/login/oauth2/token"   # the platform's OAuth 2 token endpoint
    auth_audience = ""                                  # the assertion's aud, where it is not the token URL (D2L)
    key_set_url = "https://canvas.example.edu/api/lti/security/jwks"   # the platform's public keys
    lineitems_url = "https://canvas.example.edu/api/lti/courses/7/line_items"   # the course's line items
    # optional:
    key_folder = "/srv/course/lti-keys"     # the tool's key pair (default: lti-keys/ beside this file)
    feedback_url = "https://hub.example.edu/hub/user-redirect/lab/tree/{assignment}/feedback"
    users = "lms-users.csv"                 # learner id -> LMS user id (columns id, lms_user_id), beside nbgrader's
    tag = "grader"                          # the line items' tag: this course's columns among the tool's

A relative path is taken from the file's folder. Every error names the file and the field.
"""
from __future__ import annotations

import csv
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

REQUIRED = ("issuer", "client_id", "deployment_id", "auth_token_url", "key_set_url", "lineitems_url")
OPTIONAL = ("auth_audience", "key_folder", "feedback_url", "users", "tag")
URLS = ("auth_token_url", "key_set_url", "lineitems_url", "feedback_url")


class ConfigError(ValueError):
    """The LMS file (or the users file it names) cannot be used; the message says which field and why."""


@dataclass(frozen=True)
class LmsConfig:
    path: Path
    issuer: str
    client_id: str
    deployment_id: str
    auth_token_url: str
    key_set_url: str
    lineitems_url: str
    auth_audience: str = ""
    key_folder: Path | None = None
    feedback_url: str = ""
    users: Path | None = None
    tag: str = "grader"

    @property
    def keys(self) -> Path:
        return self.key_folder or self.path.parent / "lti-keys"

    def feedback_link(self, student: str, assignment: str) -> str:
        """The feedback page's link for a learner's assignment ('' when the file gives none)."""
        if not self.feedback_url:
            return ""
        from urllib.parse import quote
        return self.feedback_url.replace("{assignment}", quote(assignment)).replace("{student}", quote(student))


def _url(name: str, value: str, where: Path) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(f"{where}: {name} = {value!r} is not an http(s) URL")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(f"{where}: {name} = {value!r}: an LMS is reached over https (http only on loopback)")
    return value


def read_table(path: Path, table: str, known: tuple[str, ...], refused: type[Exception]) -> dict:
    """A site file's fields (TOML, at the top or in a ``[table]`` of a larger file); raises ``refused`` saying why it
    cannot be read or which fields it does not know (the LMS file here, the LTI file: ``grader.hub.lti``)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise refused(f"cannot read the {table.upper()} file {path}: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise refused(f"{path} is not a TOML file: {error}") from None
    data = data[table] if isinstance(data.get(table), dict) else data
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise refused(f"{path}: unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return data


def load(path: Path) -> LmsConfig:
    """The LMS file at ``path``; raises ConfigError naming what is missing or wrong."""
    path = Path(path)
    data = read_table(path, "lms", REQUIRED + OPTIONAL, ConfigError)
    missing = [name for name in REQUIRED if not str(data.get(name) or "").strip()]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)} (the LMS's registration of the tool gives them)")
    values = {}
    for name in REQUIRED + OPTIONAL:
        if name not in data:
            continue
        value = data[name]
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise ConfigError(f"{path}: {name} must be a string, not {type(value).__name__}")
        value = str(value).strip()
        if name in URLS and value:
            value = _url(name, value, path)
        if name in ("key_folder", "users") and value:
            value = (path.parent / value).resolve()
        values[name] = value
    if values.get("tag") == "":
        raise ConfigError(f"{path}: tag must not be empty")
    return LmsConfig(path=path.resolve(), **{k: v for k, v in values.items() if v != "" or k in REQUIRED})


def users_from_csv(path: Path) -> dict[str, str]:
    """learner id -> LMS user id from a CSV with columns ``id`` and ``lms_user_id`` (nbgrader's roster columns)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            names = [n.strip() for n in reader.fieldnames or []]
            if "id" not in names or "lms_user_id" not in names:
                raise ConfigError(f"the users file {path} needs the columns id and lms_user_id (it has: "
                                  f"{', '.join(names) or 'none'})")
            reader.fieldnames = names
            return {row["id"].strip(): (row.get("lms_user_id") or "").strip() for row in reader
                    if (row.get("id") or "").strip() and (row.get("lms_user_id") or "").strip()}
    except OSError as error:
        raise ConfigError(f"cannot read the users file {path}: {error.strerror or error}") from None


def users_from_gradebook(db_url: str) -> dict[str, str]:
    """learner id -> LMS user id from nbgrader's gradebook (its ``Student.lms_user_id``)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as book:
        return {s.id: s.lms_user_id for s in book.students if s.lms_user_id}


def lms_users(config: LmsConfig, db_url: str | None = None) -> dict[str, str]:
    """Every learner's LMS user id: nbgrader's gradebook, then the users file (which wins where both name one)."""
    found = users_from_gradebook(db_url) if db_url else {}
    if config.users:
        found.update(users_from_csv(config.users))
    return found
