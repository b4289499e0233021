"""`pulsar tokens`: keys and tokens made by the CLI verify with the broker's provider."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import pathlib
import sys
import time

import pytest
from pulsar_common import errors
from pulsar_common.auth import credentials, keys, token, tokens_cli
from pulsar_common.cli import main


@dataclasses.dataclass
class Ran:
    returncode: int
    stdout: str


def tokens(*args: str, stdin: str | None = None) -> Ran:
    """`pulsar tokens <args>` run in this process through the CLI's own parser."""
    parser = main.build_parser({"tokens": main.COMMANDS["tokens"]})
    parsed = parser.parse_args(["tokens", *args])
    out = io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(out):
            try:
                code = parsed.run(parsed)
            except errors.ConfigError:
                code = 2
    finally:
        sys.stdin = saved
    return Ran(code, out.getvalue())


def test_secret_key_then_token_then_show_and_validate(tmp_path: pathlib.Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "secret.key"
    assert main.main(["tokens", "create-secret-key", "--output", str(key)]) == 0
    assert len(key.read_bytes()) == 32
    assert main.main(["tokens", "create", "--secret-key", f"file://{key}", "--subject", "alice",
                      "--expiry-time", "1h"]) == 0
    text = capsys.readouterr().out.strip()
    found = token.TokenProvider(key.read_bytes()).authenticate(
        credentials.Credentials("token", text.encode()), time.time())
    assert found.role == "alice" and found.expires_at_s is not None
    assert 3500 < found.expires_at_s - time.time() <= 3600
    assert main.main(["tokens", "show", text]) == 0
    header, _, claims = capsys.readouterr().out.partition("---")
    assert json.loads(header)["alg"] == "HS256" and json.loads(claims)["sub"] == "alice"
    assert main.main(["tokens", "validate", "-sk", f"file://{key}", text]) == 0
    assert json.loads(capsys.readouterr().out)["sub"] == "alice"
    other = tmp_path / "other.key"
    assert main.main(["tokens", "create-secret-key", "-o", str(other), "--base64"]) == 0
    assert main.main(["tokens", "validate", "-sk", other.read_text(), text]) == 1


def test_key_pair_tokens_validate_with_the_public_key_only(tmp_path: pathlib.Path) -> None:
    private, public = tmp_path / "private.key", tmp_path / "public.key"
    done = tokens("create-key-pair", "-a", "ES256", "--output-private-key", str(private),
                  "--output-public-key", str(public))
    assert done.returncode == 0
    keys.private_key(private.read_bytes())
    created = tokens("create", "--private-key", f"file://{private}", "-s", "svc")
    assert created.returncode == 0
    text = created.stdout.strip()
    assert tokens("validate", "--public-key", f"file://{public}", "-i", stdin=text + "\n"
                  ).returncode == 0
    token_file = tmp_path / "token"
    token_file.write_text(text)
    shown = tokens("show", "-f", str(token_file))
    assert '"ES256"' in shown.stdout and '"svc"' in shown.stdout
    assert tokens("create", "-s", "x").returncode != 0  # no key given


def test_relative_expiry_times() -> None:
    assert [tokens_cli.relative_seconds(t) for t in ("45", "45s", "2m", "3h", "2d", "1w", "1y")
            ] == [45, 45, 120, 10800, 172800, 604800, 31536000]
    with pytest.raises(errors.ConfigError):
        tokens_cli.relative_seconds("1 fortnight")
