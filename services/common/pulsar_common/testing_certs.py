"""Real X.509 material for tests and benchmarks: a CA, and server and client certificates
it signs, written as PEM files (what tlsCertificateFilePath & co. point at).

Built with `cryptography`; nothing here is used by a running service.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import pathlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=2)


@dataclasses.dataclass(frozen=True)
class CertFiles:
    cert: pathlib.Path
    key: pathlib.Path


@dataclasses.dataclass(frozen=True)
class Authority:
    """A CA: its certificate file (the trust file) and what it needs to sign."""

    cert_file: pathlib.Path
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def issue(self, directory: pathlib.Path, name: str, common_name: str,
              hosts: tuple[str, ...] = (), client: bool = False) -> CertFiles:
        """A leaf certificate for common_name (and hosts as subject alternative names)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
                   .issuer_name(self.certificate.subject)
                   .public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + _VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(
                       [ExtendedKeyUsageOID.CLIENT_AUTH if client
                        else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return _write(directory, name, cert, key)


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _write(directory: pathlib.Path, name: str, cert: x509.Certificate,
           key: ec.EllipticCurvePrivateKey) -> CertFiles:
    directory.mkdir(parents=True, exist_ok=True)
    files = CertFiles(directory / f"{name}.cert.pem", directory / f"{name}.key-pk8.pem")
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return files


def authority(directory: pathlib.Path, name: str = "ca") -> Authority:
    """A self-signed CA whose certificate is written to <directory>/<name>.cert.pem."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"pulsar-py test {name}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    files = _write(directory, name, cert, key)
    return Authority(files.cert, cert, key)


@dataclasses.dataclass(frozen=True)
class Pki:
    """A CA with a server certificate for localhost/127.0.0.1 and a client certificate."""

    ca: Authority
    server: CertFiles
    client: CertFiles

    @property
    def trust_file(self) -> pathlib.Path:
        return self.ca.cert_file


def make_pki(directory: pathlib.Path, client_role: str = "admin",
             hosts: tuple[str, ...] = ("localhost", "127.0.0.1")) -> Pki:
    ca = authority(directory)
    server = ca.issue(directory, "server", hosts[0], hosts)
    client = ca.issue(directory, "client", client_role, client=True)
    return Pki(ca, server, client)


def broker_tls_settings(pki: Pki) -> dict[str, str]:
    """broker.conf keys that give the TLS ports pki's server certificate and trust its CA."""
    return {
        "tlsCertificateFilePath": str(pki.server.cert),
        "tlsKeyFilePath": str(pki.server.key),
        "tlsTrustCertsFilePath": str(pki.trust_file),
    }
