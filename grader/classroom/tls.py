"""The Dask cluster's transport: mutual TLS with the deployment's certificates (``python -m grader certs``);
a plain ``tcp://`` scheduler is refused unless the caller says ``insecure=True``."""
from __future__ import annotations

import os
import stat
from pathlib import Path


from grader.classroom.certs import Deployment


PLAIN_TCP = (
    "refusing to use the Dask scheduler at {address!r}: it is not a tls:// address, so the connection is neither "
    "encrypted nor authenticated, and any process that can reach that scheduler can run its own code in every "
    "worker (distributed.Client(address).run(f)) and change the grades. Create certificates with "
    "`python -m grader certs DIR`, start `dask scheduler` and `dask worker` with --tls-ca-file, --tls-cert and "
    "--tls-key (docs/how-to/grade-on-a-cluster.md), and pass --scheduler tls://HOST:PORT --tls-dir DIR. "
    "To use an unauthenticated cluster anyway (only on a network that nothing else can reach), add --insecure-cluster."
)

class InsecureCluster(ValueError):
    """The scheduler address or the security settings would connect without mutual TLS."""


def _private_file(path, what: str) -> str:
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise FileNotFoundError(f"{what} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise FileNotFoundError(f"{what} {path} is not a file")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{what} {path} is not readable by this user")
    return str(path)


def _key_file(path, what: str) -> str:
    text = _private_file(path, what)
    mode = stat.S_IMODE(Path(path).stat().st_mode)
    if mode & 0o077:
        raise PermissionError(f"{what} {path} has mode {mode:04o}: a private key must be readable by its owner only "
                              f"(chmod 600 {path})")
    return text


def client_security(ca, cert, key):
    """The instructor's ``distributed.Security``: mutual TLS with this CA, this client certificate and key."""
    from distributed.security import Security

    return Security(require_encryption=True, tls_ca_file=_private_file(ca, "CA certificate"),
                    tls_client_cert=_private_file(cert, "client certificate"),
                    tls_client_key=_key_file(key, "client key"))


def client_security_from_dir(folder):
    """:func:`client_security` for a folder written by ``python -m grader certs``."""
    d = Deployment(Path(folder))
    return client_security(d.ca, d.client_cert, d.client_key)


def deployment_security(folder):
    """A ``distributed.Security`` for every role, from a folder written by ``python -m grader certs``.

    For a cluster that this process starts itself (``LocalCluster``, dask-jobqueue's ``SLURMCluster``,
    both with ``protocol="tls://"``): the scheduler and the workers use the cluster certificate, this
    process's client the client certificate.
    """
    from distributed.security import Security

    d = Deployment(Path(folder))
    cluster_cert = _private_file(d.cluster_cert, "cluster certificate")
    cluster_key = _key_file(d.cluster_key, "cluster key")
    return Security(require_encryption=True, tls_ca_file=_private_file(d.ca, "CA certificate"),
                    tls_scheduler_cert=cluster_cert, tls_scheduler_key=cluster_key,
                    tls_worker_cert=cluster_cert, tls_worker_key=cluster_key,
                    tls_client_cert=_private_file(d.client_cert, "client certificate"),
                    tls_client_key=_key_file(d.client_key, "client key"))


def check_transport(scheduler, security=None, *, insecure: bool = False) -> None:
    """Raise :class:`InsecureCluster` unless talking to ``scheduler`` is mutual TLS (or ``insecure``)."""
    if insecure:
        return
    if isinstance(scheduler, str):
        address = scheduler
    else:  # a cluster object: LocalCluster, KubeCluster, SLURMCluster
        address = str(getattr(scheduler, "scheduler_address", ""))
        if security is None:
            security = getattr(scheduler, "security", None)
    if not address.startswith("tls://"):
        raise InsecureCluster(PLAIN_TCP.format(address=address))
    if (security is None or not getattr(security, "require_encryption", False)
            or not getattr(security, "tls_ca_file", None) or not getattr(security, "tls_client_cert", None)):
        raise InsecureCluster(f"the scheduler at {address!r} needs this deployment's certificates: pass --tls-dir DIR "
                              f"(from `python -m grader certs DIR`) or --tls-ca, --tls-cert and --tls-key")
