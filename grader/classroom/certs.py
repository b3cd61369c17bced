"""Certificates for one grading deployment's Dask cluster (mutual TLS).

``python -m grader certs DIR [--hosts NAME ...]`` makes a private certificate authority for
this deployment only and, signed by it, one certificate for the scheduler and the workers and
one for the instructor's client. dask.distributed then accepts a connection only from a peer
that presents a certificate of this CA, in both directions (``Security(require_encryption=True)``);
a process without one of these keys can neither submit work nor reach a worker.

    DIR/ca.pem              the CA's certificate: every node and the instructor need it
    DIR/cluster.pem         certificate of the scheduler and of every worker
    DIR/cluster-key.pem     its private key (scheduler and worker machines only)
    DIR/client.pem          certificate of the instructor's ``grade`` process
    DIR/client-key.pem      its private key (the instructor's machine only)
    DIR/private/ca-key.pem  the CA's private key: signs certificates, never needed to run;
                            keep it off the cluster (or delete it and run ``certs`` again to renew)

Every file is created with mode 0600 (folders 0700) and never overwritten without ``--force``.
Keys are ECDSA P-256; certificates are valid for ``--days`` (default 365). dask does not check
host names (it expects a private CA and IP addresses), so the names in ``--hosts`` only go into
the subject alternative names for other tools; what authenticates a peer is the CA's signature.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

CA_CERT = "ca.pem"
CLUSTER_CERT = "cluster.pem"
CLUSTER_KEY = "cluster-key.pem"
CLIENT_CERT = "client.pem"
CLIENT_KEY = "client-key.pem"
CA_KEY = "private/ca-key.pem"
DEFAULT_HOSTS = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class Deployment:
    """The files of one deployment's certificates (as written by :func:`make_certificates`)."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / CA_CERT

    @property
    def cluster_cert(self) -> Path:
        return self.folder / CLUSTER_CERT

    @property
    def cluster_key(self) -> Path:
        return self.folder / CLUSTER_KEY

    @property
    def client_cert(self) -> Path:
        return self.folder / CLIENT_CERT

    @property
    def client_key(self) -> Path:
        return self.folder / CLIENT_KEY

    @property
    def ca_key(self) -> Path:
        return self.folder / CA_KEY

    def runtime_files(self) -> list[Path]:
        return [self.ca, self.cluster_cert, self.cluster_key, self.client_cert, self.client_key]


def _write_private(path: Path, data: bytes, force: bool) -> None:
    """Create ``path`` with mode 0600 from the start (never a moment of wider access)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if force:
        path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, data)
    finally:
        os.close(fd)


def _san(hosts) -> list:
    from cryptography import x509

    names = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def make_certificates(folder: Path, hosts=DEFAULT_HOSTS, *, days: int = 365, force: bool = False) -> Deployment:
    """Write a new CA and the cluster's and the client's certificates into ``folder``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if days < 1:
        raise ValueError("--days must be at least 1")
    hosts = list(hosts) or list(DEFAULT_HOSTS)
    deployment = Deployment(Path(folder))
    existing = [p for p in deployment.runtime_files() + [deployment.ca_key] if p.exists() or p.is_symlink()]
    if existing and not force:
        raise FileExistsError(f"{existing[0]} exists; pass --force to replace every certificate of this deployment")
    deployment.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(deployment.folder, 0o700)

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "course grader"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"course grader CA {now:%Y-%m-%d %H:%M:%S}")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common: str, usages: list, san: list | None):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder().subject_name(name(common)).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    # Scheduler and workers both listen (server) and connect (client); the instructor only connects.
    cluster_key, cluster_cert = leaf("course grader cluster",
                                     [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], _san(hosts))
    client_key, client_cert = leaf("course grader instructor", [ExtendedKeyUsageOID.CLIENT_AUTH], None)

    def pem_key(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    def pem_cert(cert) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    _write_private(deployment.ca_key, pem_key(ca_key), force)
    os.chmod(deployment.ca_key.parent, 0o700)
    _write_private(deployment.ca, pem_cert(ca_cert), force)
    _write_private(deployment.cluster_cert, pem_cert(cluster_cert), force)
    _write_private(deployment.cluster_key, pem_key(cluster_key), force)
    _write_private(deployment.client_cert, pem_cert(client_cert), force)
    _write_private(deployment.client_key, pem_key(client_key), force)
    return deployment


__all__ = ["Deployment", "make_certificates", "CA_CERT", "CLUSTER_CERT", "CLUSTER_KEY", "CLIENT_CERT", "CLIENT_KEY",
           "CA_KEY"]


def usage(d) -> str:
    """What ``python -m grader certs`` prints: each file made (``make_certificates``'s answer ``d``) and who uses it."""
    return f"""wrote a new certificate authority and certificates to {d.folder} (every file mode 0600):
  {d.ca}  CA certificate: scheduler, workers and the instructor
  {d.cluster_cert}, {d.cluster_key}  scheduler and workers:
      dask scheduler --protocol tls --tls-ca-file {d.ca} --tls-cert {d.cluster_cert} --tls-key {d.cluster_key}
      dask worker tls://SCHEDULER:8786 --nthreads 3 \\
          --tls-ca-file {d.ca} --tls-cert {d.cluster_cert} --tls-key {d.cluster_key}
  {d.client_cert}, {d.client_key}  the instructor:
      python -m grader grade ... --scheduler tls://SCHEDULER:8786 --tls-dir {d.folder}
  {d.ca_key}  the CA's key: not needed to run; move it off the cluster machines"""
