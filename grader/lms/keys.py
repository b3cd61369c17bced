"""The tool's key pair: the private key signs the tool's token requests (a JWT assertion, RFC 7523); the LMS checks
them with the public key, which its administrator pastes (or fetches) as a JWKS.

Made once, on first use, into a folder only its owner reads (0700; the key 0600, created exclusively and never
replaced: replacing it would lock the course out until the LMS is given the new public key). The staff group may be
let in (``chgrp staff``, ``chmod g+rx`` the folder, ``g+r`` the key) so the grading service, run as a staff
account, signs with it; a key or folder open to others is refused. Its ``kid`` is the
key's RFC 7638 thumbprint, so the JWKS names the key the same way on every machine.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

PRIVATE = "tool-private-key.pem"


class KeyProblem(RuntimeError):
    """The key folder or key is unusable (readable by others, not a plain file)."""


def _check_private(folder: Path, key: Path) -> None:
    for place, mode in ((folder, "o-rwx"), (key, "go-wx,o-r")):
        info = place.lstat()
        if stat.S_ISLNK(info.st_mode):
            raise KeyProblem(f"{place} is a link: the tool's key must be a plain file in a plain folder")
        if info.st_mode & 0o007 or (place is key and info.st_mode & 0o033):
            raise KeyProblem(f"{place} is open to others (mode {info.st_mode & 0o777:o}): chmod {mode} {place}")


def private_key(folder: Path) -> str:
    """The tool's private key (PEM), made on first use; raises KeyProblem when the folder lets others read it."""
    from jwcrypto.jwk import JWK

    folder = Path(folder)
    key = folder / PRIVATE
    if not key.exists():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        pem = JWK.generate(kty="RSA", size=2048).export_to_pem(private_key=True, password=None)
        try:
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # another process made it first: use that one
            pass
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
                handle.flush()
                os.fsync(handle.fileno())
    _check_private(folder, key)
    return key.read_text(encoding="ascii")


def public_key(private_pem: str) -> str:
    from jwcrypto.jwk import JWK

    return JWK.from_pem(private_pem.encode("ascii")).export_to_pem(private_key=False, password=None).decode("ascii")


def jwk(private_pem: str) -> dict:
    """The public key as a JWK (``kid`` its thumbprint, ``alg`` RS256, ``use`` sig), as pylti1p3 names it."""
    from pylti1p3.registration import Registration

    return dict(Registration.get_jwk(public_key(private_pem)))


def jwks(folder: Path) -> dict:
    """The tool's public key set: what the LMS's administrator pastes, or what the tool's JWKS URL serves."""
    return {"keys": [jwk(private_key(folder))]}


def jwks_text(folder: Path) -> str:
    return json.dumps(jwks(folder), indent=1, sort_keys=True)
