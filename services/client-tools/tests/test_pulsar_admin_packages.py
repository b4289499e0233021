"""`pulsar-admin packages`: package names become Apache's REST paths, and usage errors are
reported before any call (the commands against a real broker: the function-worker tests'
test_package_functions.py)."""

from __future__ import annotations

import pytest
from pulsar_client_tools.admin import client, main, packages

#: A port nothing listens on: a command that reached the network would fail to connect.
NOWHERE = "http://127.0.0.1:1"


@pytest.mark.parametrize(("url", "path"), [
    ("function://public/default/f@v1", "/admin/v3/packages/function/public/default/f/v1"),
    ("sink://t/ns/s", "/admin/v3/packages/sink/t/ns/s/latest"),
    ("source://t/ns/a b@1.0", "/admin/v3/packages/source/t/ns/a%20b/1.0"),
])
def test_package_names_become_rest_paths(url: str, path: str) -> None:
    assert packages.package_path(url) == path


@pytest.mark.parametrize("url", ["jar://t/ns/f@1", "function://t/ns@1", "t/ns/f",
                                 "function://t//f@1", "function://t/ns/f@1@2"])
def test_malformed_package_names_are_refused_with_412(url: str) -> None:
    with pytest.raises(client.AdminError) as raised:
        packages.package_path(url)
    assert raised.value.status == 412


def test_a_malformed_name_fails_without_calling_the_broker(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["--admin-url", NOWHERE, "packages", "get-metadata", "jar://t/ns/f"]) == 1
    assert "Invalid package name 'jar://t/ns/f'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["upload", "function://t/ns/f@1", "--path", "f.py"],          # --description is required
    ["upload", "function://t/ns/f@1", "--description", "d"],      # --path is required
    ["download", "function://t/ns/f@1"],
    ["list", "t/ns"],                                              # --type is required
    ["list", "--type", "jar", "t/ns"],
])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(["--admin-url", NOWHERE, "packages", *argv])
    assert exited.value.code == 2


def test_properties_are_key_value_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["--admin-url", NOWHERE, "packages", "update-metadata",
                      "function://t/ns/f@1", "--description", "d", "-P", "novalue"]) == 1
    assert "key=value" in capsys.readouterr().err
