"""`pulsar tokens`: make keys and tokens for the `token` method, as Apache's tool does.

    pulsar tokens create-secret-key [-a HS256] [--output FILE] [--base64]
    pulsar tokens create-key-pair [-a RS256] --output-private-key F --output-public-key F
    pulsar tokens create (--secret-key K | --private-key K) --subject ROLE [--expiry-time 1y]
    pulsar tokens show [TOKEN | -i | -f FILE]
    pulsar tokens validate (--secret-key K | --public-key K) [TOKEN | -i | -f FILE]

Keys are given as Apache's settings give them: `file:///path`, `data:;base64,...`,
a file path, or base64. Files are written as Apache writes them: the raw
secret (or its base64 with --base64), keys in DER (PKCS#8 private, X.509 public).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pulsar_common import errors
from pulsar_common.auth import keys, token
from pulsar_common.auth.errors import AuthenticationError

#: Seconds per unit of a relative time (Apache's RelativeTimeUtil: s, m, h, d, w, y).
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_SECRET_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
_CURVES: dict[str, Callable[[], ec.EllipticCurve]] = {
    "ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}
_RSA_BITS = {"RS256": 2048, "RS384": 3072, "RS512": 4096,
             "PS256": 2048, "PS384": 3072, "PS512": 4096}


def relative_seconds(text: str) -> int:
    """`1y`, `3d`, `10h`, `30m`, `45s` (or a bare number of seconds) as seconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhdwy]?)\s*", text)
    if match is None:
        raise errors.ConfigError(f"invalid relative time {text!r} (e.g. 1y, 3d, 10h, 30m, 45s)")
    return int(match.group(1)) * _UNITS[match.group(2) or "s"]


def _write(path: str | None, data: bytes) -> None:
    if path is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def create_secret_key(args: Any) -> int:
    size = _SECRET_BYTES.get(args.signature_algorithm)
    if size is None:
        raise errors.ConfigError(f"{args.signature_algorithm} is not an HMAC algorithm "
                                 f"({', '.join(_SECRET_BYTES)})")
    secret = secrets.token_bytes(size)
    _write(args.output, base64.b64encode(secret) if args.base64 else secret)
    return 0


def create_key_pair(args: Any) -> int:
    algorithm = args.signature_algorithm
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    if algorithm in _RSA_BITS:
        private = rsa.generate_private_key(public_exponent=65537, key_size=_RSA_BITS[algorithm])
    elif algorithm in _CURVES:
        private = ec.generate_private_key(_CURVES[algorithm]())
    else:
        raise errors.ConfigError(f"{algorithm} is not an RSA or EC algorithm")
    _write(args.output_private_key, private.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    _write(args.output_public_key, private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
    return 0


def _one_key(secret: str | None, other: str | None, other_flag: str) -> None:
    if (secret is None) == (other is None):
        raise errors.ConfigError(f"pass exactly one of --secret-key and {other_flag}")


def create(args: Any) -> int:
    _one_key(args.secret_key, args.private_key, "--private-key")
    signing: bytes | keys.PrivateKey = (keys.read_key(args.secret_key) if args.secret_key
                                        else keys.private_key(keys.read_key(args.private_key)))
    algorithm = args.signature_algorithm
    if algorithm is not None and isinstance(signing, bytes) != (algorithm in _SECRET_BYTES):
        raise errors.ConfigError(f"--signature-algorithm {algorithm} does not fit the key")
    expires = None if args.expiry_time is None else time.time() + relative_seconds(
        args.expiry_time)
    headers = dict(pair.split("=", 1) for pair in args.headers or [])
    print(token.create(signing, args.subject, expires_at_s=expires, algorithm=algorithm,
                       headers=headers or None))
    return 0


def _token_text(args: Any) -> str:
    if args.token:
        return str(args.token).strip()
    if args.stdin:
        return sys.stdin.readline().strip()
    if args.token_file:
        with open(args.token_file) as f:
            return f.read().strip()
    if os.environ.get("TOKEN"):
        return os.environ["TOKEN"].strip()
    raise errors.ConfigError("Token needs to be either passed as an argument or through "
                             "`--stdin`, `--token-file` or by the `TOKEN` environment variable")


def _segment(part: str) -> str:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def show(args: Any) -> int:
    parts = _token_text(args).split(".")
    if len(parts) < 2:
        raise errors.ConfigError("not a JWT (expected header.payload.signature)")
    print(_segment(parts[0]))
    print("---")
    print(_segment(parts[1]))
    return 0


def validate(args: Any) -> int:
    _one_key(args.secret_key, args.public_key, "--public-key")
    key: token.ValidationKey = (keys.read_key(args.secret_key) if args.secret_key
                                else keys.public_key(keys.read_key(args.public_key)))
    try:
        claims = token.TokenProvider(key).verify(_token_text(args), time.time())
    except AuthenticationError as exc:
        print(f"invalid token: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(claims))
    return 0


def _token_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("token", nargs="?", help="the token (or -i, -f, $TOKEN)")
    parser.add_argument("-i", "--stdin", action="store_true", help="read the token from stdin")
    parser.add_argument("-f", "--token-file", help="read the token from a file")


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    sub = parser.add_subparsers(dest="tokens_command", metavar="<command>", required=True)
    p = sub.add_parser("create-secret-key", help="create a secret key (HMAC)")
    p.add_argument("-a", "--signature-algorithm", "--algorithm", default="HS256", help="HS256, HS384, HS512")
    p.add_argument("-o", "--output", help="write the key to this file instead of stdout")
    p.add_argument("-b", "--base64", action="store_true", help="write the key in base64")
    p.set_defaults(tokens_run=create_secret_key)
    p = sub.add_parser("create-key-pair", help="create a private/public key pair (RSA or EC)")
    p.add_argument("-a", "--signature-algorithm", "--algorithm", default="RS256",
                   help="RS256 (default), RS384, RS512, PS256..., ES256, ES384, ES512")
    p.add_argument("--output-private-key", required=True, help="file for the private key")
    p.add_argument("--output-public-key", required=True, help="file for the public key")
    p.set_defaults(tokens_run=create_key_pair)
    p = sub.add_parser("create", help="create a token")
    p.add_argument("-a", "--signature-algorithm", "--algorithm",
                   help="default: HS256 with a secret key, RS256/ES* from a private key")
    p.add_argument("-s", "--subject", required=True, help="the role the token stands for")
    p.add_argument("-e", "--expiry-time", help="relative expiry (e.g. 1h, 3d, 10y); default none")
    p.add_argument("-sk", "--secret-key", help="signing secret: file:///..., data:..., base64")
    p.add_argument("-pk", "--private-key", help="signing private key: file:///..., data:...")
    p.add_argument("-hs", "--headers", action="append", metavar="KEY=VALUE",
                   help="an extra JWT header")
    p.set_defaults(tokens_run=create)
    p = sub.add_parser("show", help="print a token's header and claims (not verified)")
    _token_source(p)
    p.set_defaults(tokens_run=show)
    p = sub.add_parser("validate", help="verify a token against a key and print its claims")
    p.add_argument("-a", "--signature-algorithm", "--algorithm", help="accepted for Apache compatibility; "
                   "the algorithm follows the key's type")
    p.add_argument("-sk", "--secret-key", help="secret key: file:///..., data:..., base64")
    p.add_argument("-pk", "--public-key", help="public key: file:///..., data:...")
    _token_source(p)
    p.set_defaults(tokens_run=validate)

    def run(args: Any) -> int:
        result: int = args.tokens_run(args)
        return result

    return run
