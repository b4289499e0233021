"""Keys named the way Apache's settings and `pulsar tokens` name them.

A key setting (`tokenSecretKey`, `tokenPublicKey`, `basicAuthConf`, the CLI's
`--secret-key`) is one of: `data:[<type>][;base64],<data>`, `file:///path`,
a path to an existing file, or the key itself in base64.
"""

from __future__ import annotations

import base64
import binascii
import os
import urllib.parse

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pulsar_common import errors

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def read_key(reference: str) -> bytes:
    """The bytes a key setting names (see the module docstring)."""
    reference = reference.strip()
    if reference.startswith("data:"):
        return _data_url(reference)
    if reference.startswith("file:"):
        path = urllib.parse.unquote(urllib.parse.urlparse(reference).path)
        return _read_file(path)
    if os.path.isfile(reference):
        return _read_file(reference)
    try:
        return base64.b64decode(reference, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise errors.ConfigError(f"key {reference[:40]!r}: neither data:, file:, an existing "
                                 "file nor base64") from exc


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise errors.ConfigError(f"cannot read key file {path}: {exc}") from exc


def _data_url(url: str) -> bytes:
    header, sep, data = url[len("data:"):].partition(",")
    if not sep:
        raise errors.ConfigError("data: URL without ','")
    if header.endswith(";base64"):
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise errors.ConfigError("data: URL with invalid base64") from exc
    return urllib.parse.unquote_to_bytes(data)


def public_key(data: bytes) -> PublicKey:
    """An RSA or EC public key from DER (what `pulsar tokens create-key-pair` writes) or PEM."""
    try:
        key = (serialization.load_pem_public_key(data) if data.lstrip().startswith(b"-----")
               else serialization.load_der_public_key(data))
    except ValueError as exc:
        raise errors.ConfigError(f"not a public key: {exc}") from exc
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        raise errors.ConfigError("only RSA and EC public keys are supported")
    return key


def private_key(data: bytes) -> PrivateKey:
    """An RSA or EC private key from PKCS#8 DER (what `create-key-pair` writes) or PEM."""
    try:
        key = (serialization.load_pem_private_key(data, password=None)
               if data.lstrip().startswith(b"-----")
               else serialization.load_der_private_key(data, password=None))
    except (ValueError, TypeError) as exc:
        raise errors.ConfigError(f"not a private key: {exc}") from exc
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise errors.ConfigError("only RSA and EC private keys are supported")
    return key
