"""Grades passed back to the LMS: LTI 1.3 Assignment and Grade Services (AGS), from the term's grade history.

    config.py    the LMS file (issuer, client id, token URL, the course's line items URL...): read with clear errors
    keys.py      the tool's RSA key pair, made once into a staff-only folder; its public JWKS for the LMS
    outbox.py    what the LMS should hold, from the history's ``total`` events; what is pending and why; back-off
    ags.py       the AGS client (pylti1p3): a signed client-credentials token, line items, scores
    sync.py      ``sync_once``: post each pending grade, newest only, and record each post in the grade's history
    commands.py  ``python -m grader lms status|sync|keys``
"""
