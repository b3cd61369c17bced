"""The AGS client, on pylti1p3 (the tool side of LTI 1.3 Advantage): its ``ServiceConnector`` gets an access token
with the client-credentials grant and a JWT assertion signed by the tool's key (RFC 7523, the IMS Security
Framework); its ``AssignmentsGradesService`` posts scores. Two things are done here rather than by pylti1p3 2.0.0:

* paging through the line items container: pylti1p3 lower-cases the ``Link: <...>; rel="next"`` URL, which breaks a
  platform whose page URLs are case-sensitive (Canvas's bookmarks), so the header is read here as sent;
* a timeout on every request (pylti1p3's ``requests`` calls have none: a platform that never answers would hold the
  grading service's loop).

Errors come out as ``Unreachable`` (try again later: no connection, a timeout, 5xx, 429, the token endpoint refusing
the tool, a 401 to its access token) or ``Refused`` (the platform answered 4xx to this score: its message kept).
"""
from __future__ import annotations

import re
from urllib.parse import urlencode, urlsplit, urlunsplit

import requests

from grader.lms import keys
from grader.lms.config import LmsConfig

TIMEOUT = 20.0  # seconds for one HTTP request
SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score"]
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
CONTAINER = "application/vnd.ims.lis.v2.lineitemcontainer+json"


class Unreachable(Exception):
    """The LMS could not take it now; ``retry_after``: seconds it asked for (429/503), if any; ``whole``: nothing
    else will get through either (no connection, a timeout, the token endpoint refusing the tool)."""

    def __init__(self, message: str, retry_after: float | None = None, whole: bool = False):
        super().__init__(message)
        self.retry_after, self.whole = retry_after, whole


class Refused(Exception):
    """The LMS answered this request with a 4xx (not 429): ``status`` and its ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message = status, message


class _Session(requests.Session):
    def request(self, *args, **kwargs):
        kwargs.setdefault("timeout", TIMEOUT)
        return super().request(*args, **kwargs)


def _retry_after(response: requests.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None


def _said(response: requests.Response) -> str:
    text = " ".join(response.text.split())
    return text[:300] + ("..." if len(text) > 300 else "") or response.reason or ""


def _next_link(headers) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (RFC 8288), as sent."""
    for part in re.split(r",\s*(?=<)", str(headers.get("Link") or headers.get("link") or "")):
        match = re.match(r'\s*<([^>]*)>\s*(.*)', part)
        if match and re.search(r'rel\s*=\s*"?([^";]*\s)*next(\s[^";]*)*"?', match.group(2), re.IGNORECASE):
            return match.group(1)
    return None


def _with_query(url: str, **params: str) -> str:
    parts = urlsplit(url)
    query = "&".join(p for p in (parts.query, urlencode(params)) if p)
    return urlunsplit(parts._replace(query=query))


class Client:
    """The course's AGS connection, for one sync round (its access token is kept for the round)."""

    def __init__(self, config: LmsConfig):
        from pylti1p3.assignments_grades import AssignmentsGradesService
        from pylti1p3.registration import Registration
        from pylti1p3.service_connector import ServiceConnector

        private = keys.private_key(config.keys)
        registration = (Registration().set_issuer(config.issuer).set_client_id(config.client_id)
                        .set_auth_token_url(config.auth_token_url).set_key_set_url(config.key_set_url)
                        .set_tool_private_key(private).set_tool_public_key(keys.public_key(private)))
        if config.auth_audience:
            registration.set_auth_audience(config.auth_audience)
        session = _Session()
        session.headers["User-Agent"] = "jax-distributed-course-grader (pylti1p3)"
        self.config = config
        self.connector = ServiceConnector(registration, requests_session=session)
        self.service = AssignmentsGradesService(self.connector, {"scope": SCOPES, "lineitems": config.lineitems_url})

    def _call(self, what, *args, **kwargs):
        """Run a pylti1p3 request, its failures sorted into Unreachable and Refused."""
        from pylti1p3.exception import LtiServiceException

        try:
            return what(*args, **kwargs)
        except requests.RequestException as error:
            raise Unreachable(f"{type(error).__name__}: {error}", whole=True) from None
        except LtiServiceException as error:
            response = error.response
            if response.url and response.url.split("?")[0] == self.config.auth_token_url.split("?")[0]:
                raise Unreachable(f"the token endpoint refused the tool (HTTP {response.status_code}): "
                                  f"{_said(response)}", _retry_after(response), whole=True) from None
            if response.status_code == 401:  # the access token itself (its scopes, its age): every post would fail
                raise Unreachable(f"the LMS refused the tool's access token (HTTP 401): {_said(response)}",
                                  whole=True) from None
            if response.status_code == 429 or response.status_code >= 500:
                raise Unreachable(f"HTTP {response.status_code}: {_said(response)}", _retry_after(response)) from None
            raise Refused(response.status_code, _said(response)) from None
        except ValueError as error:  # a body that is not JSON
            raise Unreachable(f"the LMS answered with something that is not JSON: {error}") from None

    def lineitem(self, assignment: str, maximum: float) -> str:
        """The id (URL) of the assignment's line item, found by ``resourceId`` and ``tag``, made when missing."""
        from pylti1p3.lineitem import LineItem

        url = _with_query(self.config.lineitems_url, resource_id=assignment, tag=self.config.tag)
        seen = 0
        while url and seen < 100:  # the platform may ignore the filters: they are checked here too
            page = self._call(self.connector.make_service_request, SCOPES, url, accept=CONTAINER)
            if not isinstance(page["body"], list):
                raise Unreachable(f"the line items container is not a JSON array: {str(page['body'])[:200]}")
            for item in page["body"]:
                if isinstance(item, dict) and item.get("resourceId") == assignment \
                        and item.get("tag", self.config.tag) == self.config.tag and item.get("id"):
                    return str(item["id"])
            url, seen = _next_link(page["headers"]), seen + 1
        item = LineItem().set_label(assignment).set_resource_id(assignment).set_tag(self.config.tag)
        item.set_score_maximum(maximum if maximum > 0 else 1.0)
        made = self._call(self.connector.make_service_request, SCOPES, self.config.lineitems_url, is_post=True,
                          data=item.get_value(), content_type=LINEITEM, accept=LINEITEM)
        if not isinstance(made["body"], dict) or not made["body"].get("id"):
            raise Unreachable(f"the LMS made the line item but gave no id: {str(made['body'])[:200]}")
        return str(made["body"]["id"])

    def post(self, lineitem: str, score: dict) -> int:
        """POST one score (AGS ``application/vnd.ims.lis.v1.score+json``) to ``{lineitem}/scores``; its HTTP status
        is 200 here (pylti1p3 returns the body only; any 2xx is success)."""
        from pylti1p3.grade import Grade
        from pylti1p3.lineitem import LineItem

        grade = (Grade().set_user_id(score["userId"]).set_score_maximum(score["scoreMaximum"])
                 .set_activity_progress(score["activityProgress"]).set_grading_progress(score["gradingProgress"])
                 .set_timestamp(score["timestamp"]))
        if score.get("scoreGiven") is not None:
            grade.set_score_given(score["scoreGiven"])
        if score.get("comment"):
            grade.set_comment(score["comment"])
        self._call(self.service.put_grade, grade, LineItem({"id": lineitem}))
        return 200
