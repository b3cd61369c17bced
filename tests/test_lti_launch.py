"""LTI 1.3 launch into the hub (``python -m grader hub --lti FILE``, grader/hub/lti.py), with ``lti1p3platform``
(tests/lms_platform.py, an LTI 1.3 platform written by others) as the LMS on loopback.

One hub for the module. In Debian's Chromium a learner clicks the course's link on the LMS's page and lands in
JupyterLab in their own server, which runs as the account the launch made. The rest is plain HTTP, as the browser
would send it (the LMS's login initiation, the hub's redirect to the LMS's authorization endpoint, the form post of
the id_token): a learner on the roster is matched to their account, a teaching assistant and an instructor get the
staff's groups, a changed login keeps the account (the LMS's ``sub`` is the key); a launch with a wrong signature, a
reused nonce, an expired id_token or an unknown deployment, and an account that is not the course's to give, are each
refused with a page in plain words and a line in the hub's log. The steps are docs/how-to/connect-your-lms.md's.
"""
from __future__ import annotations

import csv
import grp
import json
import os
import pwd
import re
import resource
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import jwt
import pytest
import requests
from jwcrypto.jwk import JWK

from grader.hub import lti
from grader.lms import keys as lms_keys
from lms_platform import CLIENT_ID, COURSE, DEPLOYMENT, ISSUER, ROLE, Platform
from test_browser import ARTIFACTS, BROWSER, ROOT, _setup_browser, _stop
from test_hub import VENV_BIN, _as_instructor, hub_prerequisites, start_hub

SRV = Path("/srv/jax-course-lti")
MADE = ("lti-kim", "lti-tam", "lti-ines")  # the accounts the launches make (removed before and after)
PEOPLE = {  # the LMS's users: login_hint -> their claims
    "kim": {"sub": "a1b2c3-kim", "roles": [ROLE + "Learner"], "name": "Kim <b>Lee</b>", "email": "kim@example.edu",
            "custom": {"login_id": "lti-kim"}},
    "ada": {"sub": "f00-ada", "roles": [ROLE + "Learner"], "custom": {"login_id": "Ada"}},  # the demo roster's
    "tam": {"sub": "t4m", "roles": [ROLE + "Instructor", "http://purl.imsglobal.org/vocab/lis/v2/membership/"
                                    "Instructor#TeachingAssistant"], "custom": {"login_id": "lti-tam"}},
    "ines": {"sub": "1nes", "roles": [ROLE + "Instructor"], "custom": {"login_id": "lti-ines"}},
    "root": {"sub": "r00t", "roles": [ROLE + "Learner"], "custom": {"login_id": "root"}},
    "odd": {"sub": "0dd", "roles": [ROLE + "Learner"], "custom": {"login_id": "x'; rm -rf ~"}},
    "mentor": {"sub": "m3ntor", "roles": [ROLE + "Mentor"], "custom": {"login_id": "lti-mentor"}},
}


ASSIGNMENT = "sharded_step"


def _as_learner(user: str, *argv: str) -> subprocess.CompletedProcess:
    """A command as the learner, in their home, with their server's environment (nbgrader reads the hub's config)."""
    home = pwd.getpwnam(user).pw_dir
    return subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"PATH={VENV_BIN}:/usr/bin:/bin", f"HOME={home}",
                           "LANG=C.UTF-8", f"JUPYTER_CONFIG_PATH={SRV / 'learner-config'}", *argv],
                          cwd=home, capture_output=True, text=True, timeout=300)


def _forget_accounts() -> None:
    for name in MADE:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


def _launch(lms: Platform, hub: str, person: str, *, claims=None, expiration=300, forge=False, deployment=None):
    """A launch as the browser sends it: (the hub's answer to the id_token's post, the id_token, its state, the
    cookies the hub had set in this browser)."""
    session = requests.Session()
    start = session.get(lms.login_initiation(person, deployment), allow_redirects=False, timeout=30)
    if start.status_code != 302:
        return start, None, None, None
    request = dict(parse_qsl(urlsplit(start.headers["Location"]).query))
    data = lms.launch(request, claims, expiration)
    token = data["id_token"]
    if forge:  # the same claims and key id, signed with a key that is not the LMS's
        payload = jwt.decode(token, options={"verify_signature": False})
        other = JWK.generate(kty="RSA", size=2048).export_to_pem(private_key=True, password=None)
        token = jwt.encode(payload, other, "RS256", headers={"kid": jwt.get_unverified_header(token)["kid"]})
    cookies = session.cookies.copy()
    answer = session.post(data["launch_url"], data={"id_token": token, "state": data["state"]},
                          allow_redirects=False, timeout=60)
    return answer, token, data["state"], cookies


def _groups(name: str) -> set[str]:
    wanted = ("jdt-learners", "jdt-graders", "jdt-instructors")
    return {g for g in wanted if name in grp.getgrnam(g).gr_mem or pwd.getpwnam(name).pw_gid == grp.getgrnam(g).gr_gid}


@pytest.mark.slow
def test_a_launch_from_the_lms_opens_the_learners_server_and_forged_replayed_expired_or_unknown_ones_are_refused(
        tmp_path):
    hub_prerequisites()
    _setup_browser()
    began, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    _forget_accounts()
    lms = Platform(lms_keys.jwks(tmp_path / "keys")).start()  # the tool's key registered, for the grades it posts
    lms.people.update(PEOPLE)
    (tmp_path / "lti.toml").write_text(
        f'issuer = "{ISSUER}"\nclient_id = "{CLIENT_ID}"\ndeployment_ids = ["{DEPLOYMENT}"]\n'
        f'key_set_url = "{lms.url}/jwks"\nauth_login_url = "{lms.url}/authorize"\n')
    (tmp_path / "lms.toml").write_text(  # grades passed back under the launch's sub (the hub's lti-users.csv)
        f'issuer = "{ISSUER}"\nclient_id = "{CLIENT_ID}"\ndeployment_id = "{DEPLOYMENT}"\n'
        f'auth_token_url = "{lms.url}/token"\nkey_set_url = "{lms.url}/jwks"\nlineitems_url = "{lms.url}{COURSE}"\n'
        f'key_folder = "{tmp_path / "keys"}"\nusers = "{SRV / "hub" / "lti-users.csv"}"\n')
    log_path = ARTIFACTS / "lti-hub.log"
    hub, url, _ = start_hub(SRV, log_path, "--workers", "1", "--cull-idle", "0", "--lti", str(tmp_path / "lti.toml"),
                            "--lms", str(tmp_path / "lms.toml"))
    try:
        # the LMS administrator's fields, as the hub printed them
        started = log_path.read_text()
        for field in (f"OpenID Connect initiation (login) URL {url}/hub/lti13/oauth_login",
                      f"redirect URI {url}/hub/lti13/oauth_callback", f"target link URI {url}/",
                      f"tool configuration (JSON) {url}/hub/lti13/config", f"(JWKS) URL {url}/hub/lti13/jwks"):
            assert field in started, field
        tool = requests.get(f"{url}/hub/lti13/config", timeout=30).json()
        assert tool["oidc_initiation_url"] == f"{url}/hub/lti13/oauth_login" and tool["target_link_uri"] == f"{url}/"
        keys = requests.get(tool["public_jwk_url"], timeout=30).json()
        assert keys["keys"][0]["kid"] in started and "d" not in keys["keys"][0]  # the public half only
        lms.register_tool(tool["oidc_initiation_url"], f"{url}/hub/lti13/oauth_callback", tool["target_link_uri"])

        # A learner clicks the course's link in the LMS: Chromium lands in JupyterLab in their own server.
        browsed = subprocess.run(["node", str(BROWSER / "lti.mjs")], cwd=ROOT, text=True, timeout=420,
                                 env=dict(os.environ, LMS_URL=lms.url, HUB_URL=url, LTI_PERSON="kim",
                                          LTI_ACCOUNT="lti-kim", ARTIFACTS_DIR=str(ARTIFACTS)),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        print(browsed.stdout)
        assert browsed.returncode == 0, f"{browsed.stdout[-3000:]}\n--- hub ---\n{log_path.read_text()[-4000:]}"
        result = json.loads(next(ln for ln in browsed.stdout.splitlines() if ln.startswith("LTI-RESULT "))[11:])
        assert result["url"].startswith(f"{url}/user/lti-kim/lab"), result
        assert {"/launch", "/hub/lti13/oauth_login", "/authorize", "/hub/lti13/oauth_callback"} <= set(result["visited"])
        servers = subprocess.run(["pgrep", "-u", "lti-kim", "-f", "jupyterhub-singleuser"], capture_output=True)
        assert servers.returncode == 0, "no server of lti-kim's runs as lti-kim"
        assert _groups("lti-kim") == {"jdt-learners"}
        assert oct(os.stat(pwd.getpwnam("lti-kim").pw_dir).st_mode & 0o777) == "0o700"
        state = SRV / "hub"
        store = json.loads((state / "lti-accounts.json").read_text())
        assert store["a1b2c3-kim"]["account"] == "lti-kim" and store["a1b2c3-kim"]["name"] == "Kim <b>Lee</b>"

        # The launched learner fetches and submits (as their account, as their server's Assignment List does); the
        # grading service grades it and the LMS's gradebook shows the score under the launch's sub (AGS)
        _as_instructor(str(VENV_BIN / "nbgrader"), "release_assignment", ASSIGNMENT, "--force", course=SRV / "course")
        home = Path(pwd.getpwnam("lti-kim").pw_dir)
        assert _as_learner("lti-kim", "nbgrader", "fetch_assignment", ASSIGNMENT).returncode == 0
        answer = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        answer.write_bytes((ROOT / "samples" / "submitted" / "ada" / ASSIGNMENT / answer.name).read_bytes())
        submitted = _as_learner("lti-kim", "nbgrader", "submit", ASSIGNMENT)
        assert submitted.returncode == 0, submitted.stderr[-2000:]
        deadline = time.monotonic() + 240
        while (graded := re.search(rf"serve: lti-kim/{ASSIGNMENT}: graded (\d+)/", log_path.read_text())) is None:
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.5)
        while (ASSIGNMENT, "a1b2c3-kim") not in lms.gradebook():  # posted after the publish (or within 30 s)
            assert time.monotonic() < deadline + 60, (lms.gradebook(), log_path.read_text()[-3000:])
            time.sleep(0.5)
        assert lms.gradebook()[(ASSIGNMENT, "a1b2c3-kim")][0] == float(graded.group(1)), lms.gradebook()

        # Made or matched, groups from the role; the sub is the key, so a changed login keeps the account.
        for person, account, groups in (("ada", "ada", {"jdt-learners"}), ("tam", "lti-tam", {"jdt-graders"}),
                                        ("ines", "lti-ines", {"jdt-graders", "jdt-instructors"})):
            answer = _launch(lms, url, person)[0]
            assert answer.status_code == 302 and answer.headers["Location"] == "/", (person, answer.text[-2000:])
            assert _groups(account) == groups, (person, _groups(account))
        lms.people["kim"] = {**PEOPLE["kim"], "custom": {"login_id": "kim-renamed"}}
        assert _launch(lms, url, "kim")[0].status_code == 302
        assert json.loads((state / "lti-accounts.json").read_text())["a1b2c3-kim"]["account"] == "lti-kim"
        with (state / "lti-users.csv").open(newline="") as handle:  # for the LMS file's `users`: grades under the sub
            assert {"id": "lti-kim", "lms_user_id": "a1b2c3-kim"} in list(csv.DictReader(handle))

        # Refused, each with a page in plain words and a line in the log.
        refusals = {
            "signature": (_launch(lms, url, "ada", forge=True)[0], "is not signed by your LMS"),
            "expired": (_launch(lms, url, "ada", expiration=-120)[0], "This launch has expired"),
            "unknown deployment": (_launch(lms, url, "ada", claims={lti.DEPLOYMENT: "99"})[0],
                                   "not set up for the LMS deployment"),
            "unknown lti_deployment_id": (_launch(lms, url, "ada", deployment="99")[0],
                                          "or deployment, this course is not set up for"),
            "foreign account": (_launch(lms, url, "root")[0], "root is an account of the course's machine that is not"),
            "unsafe account": (_launch(lms, url, "odd")[0], "cannot be an account name"),
            "role": (_launch(lms, url, "mentor")[0], "gives no access to the course"),
        }
        first, token, launch_state, cookies = _launch(lms, url, "ada")
        assert first.status_code == 302
        replay = requests.post(f"{url}/hub/lti13/oauth_callback", data={"id_token": token, "state": launch_state},
                               cookies=cookies, allow_redirects=False, timeout=30)
        refusals["replayed"] = (replay, "This launch was already used: open the course again from your LMS.")
        elsewhere = requests.post(f"{url}/hub/lti13/oauth_callback", data={"id_token": token, "state": launch_state},
                                  allow_redirects=False, timeout=30)  # another browser: no cookies of the launch
        refusals["session"] = (elsewhere, "does not belong to this browser")
        (ARTIFACTS / "lti-refused-replayed.html").write_text(replay.text)  # the page a person sees
        log = log_path.read_text()
        for kind, (answer, words) in refusals.items():
            assert answer.status_code in (400, 403), (kind, answer.status_code, answer.text[-1500:])
            assert words in answer.text.replace("&#39;", "'"), (kind, answer.text[-1500:])
            assert "text/html" in answer.headers["Content-Type"], kind
            if kind != "unknown lti_deployment_id":
                assert f"LTI launch refused ({kind.split(' lti')[0]})" in log, kind
        assert "LTI launch refused (unknown lti_deployment_id)" in log
        assert not any(name in json.loads((state / "lti-accounts.json").read_text()) for name in ("r00t", "0dd"))

        # The password form stays for the staff (the LMS may be down); a learner's password opens nothing.
        passwords = dict(line.split(":", 1) for line in (state / "passwords.txt").read_text().splitlines()
                         if ":" in line and not line.startswith("#"))
        for name, admitted in (("instructor", True), ("ada", False)):
            form = requests.Session()
            page = form.get(f"{url}/hub/login", timeout=30).text
            xsrf = page.split('name="_xsrf" value="', 1)[1].split('"', 1)[0]
            answer = form.post(f"{url}/hub/login", data={"username": name, "password": passwords[name], "_xsrf": xsrf},
                               allow_redirects=False, timeout=60)
            assert (answer.status_code == 302) is admitted, (name, answer.status_code)
        assert "password login of 'ada' refused: with --lti, learners enter from the LMS" in log_path.read_text()
        with pytest.raises(KeyError):
            pwd.getpwnam("lti-mentor")
    finally:
        _stop(hub, signal.SIGINT, 60)
        lms.stop()
        _forget_accounts()
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    here = mine.ru_utime + mine.ru_stime - cpu.ru_utime - cpu.ru_stime
    print(f"LTI launch test: {time.monotonic() - began:.0f} s wall; CPU {here:.0f} s "
          f"here, {children.ru_utime + children.ru_stime:.0f} s in child processes (hub, servers, browser)")


def test_the_lti_file_is_checked_with_each_fields_error(tmp_path):
    good = {"issuer": '"https://canvas.instructure.com"', "client_id": '"10000000000042"',
            "deployment_ids": '["42:abc"]', "key_set_url": '"https://sso.canvaslms.com/api/lti/security/jwks"',
            "auth_login_url": '"https://sso.canvaslms.com/api/lti/authorize_redirect"'}
    path = tmp_path / "lti.toml"
    path.write_text("[lti]\n" + "".join(f"{k} = {v}\n" for k, v in good.items()))
    config = lti.load(path)
    assert config.client_ids == ("10000000000042",) and config.keys == tmp_path / "lti-keys" and config.account == "login_id"
    for change, words in ((("key_set_url", '"http://lms.example.edu/jwks"'), "not an https URL"),
                          (("deployment_ids", "[]"), "missing deployment_ids"),
                          (("account", '"name"'), "account = 'name'"), (("secret", '"x"'), "unknown field(s) secret")):
        path.write_text("".join(f"{k} = {v}\n" for k, v in {**good, change[0]: change[1]}.items()))
        with pytest.raises(lti.LtiError, match=words.replace("(", r"\(").replace(")", r"\)")):
            lti.load(path)


def test_roles_map_to_the_course_groups_and_account_names_are_safe():
    member = "http://purl.imsglobal.org/vocab/lis/v2/membership"
    assert lti.course_role([f"{member}#Learner"]) == "learner"
    assert lti.course_role([f"{member}#Instructor"]) == "instructor"
    assert lti.course_role([f"{member}#Instructor", f"{member}/Instructor#TeachingAssistant"]) == "grader"
    assert lti.course_role([f"{member}/Instructor#Grader"]) == "grader"
    assert lti.course_role([f"{member}#Administrator", f"{member}#Learner"]) == "instructor"
    assert lti.course_role(["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty"]) is None
    assert lti.course_role([f"{member}#Mentor"]) is None and lti.course_role("Instructor") is None
    custom = lti.CUSTOM
    assert lti.account_name({"sub": "1", custom: {"login_id": "Ada"}}, "login_id", "x") == "ada"
    assert lti.account_name({"sub": "1", "email": "Ada@example.edu"}, "email", "x") == "ada"
    hashed = lti.account_name({"sub": "1"}, "sub", "https://lms")
    assert hashed.startswith("lti-") and len(hashed) == 16 and hashed == lti.account_name({"sub": "1"}, "sub", "https://lms")
    for claims, how in (({"sub": "1", custom: {"login_id": "a.b"}}, "login_id"),
                        ({"sub": "1", custom: {"login_id": "../../etc"}}, "login_id"),
                        ({"sub": "1", custom: {"login_id": "a" * 40}}, "login_id"),
                        ({"sub": "1", custom: {"login_id": "$Canvas.user.loginId"}}, "login_id"),  # left unfilled
                        ({"sub": "1"}, "login_id"), ({"sub": "1", lti.LIS: {}}, "person_sourcedid")):
        with pytest.raises(lti.Refused):
            lti.account_name(claims, how, "x")
