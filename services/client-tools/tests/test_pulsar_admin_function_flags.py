"""`pulsar-admin functions` flags -> Apache's FunctionConfig JSON and multipart parts, in process:
Apache's spellings and deprecated aliases, the YAML config file, name inference, usage errors."""

from __future__ import annotations

import argparse
import json
import pathlib
from typing import Any

import pytest
from pulsar_client_tools.admin import function_config, main


def parsed(*argv: str) -> argparse.Namespace:
    return main.build_parser().parse_args(["functions", *argv])


def built(*argv: str) -> dict[str, Any]:
    return function_config.build(parsed("create", *argv))


@pytest.mark.parametrize(("argv", "expected"), [
    (["--classname", "m.C"], {"className": "m.C"}),
    (["--className", "m.C"], {"className": "m.C"}),
    (["-i", "a, b", "-o", "out"], {"inputs": ["a", "b"], "output": "out"}),
    (["--topicsPattern", "in-.*"], {"topicsPattern": "in-.*"}),
    (["--processing-guarantees", "effectively_once"],
     {"processingGuarantees": "EFFECTIVELY_ONCE"}),
    (["--processingGuarantees", "ATMOST_ONCE"], {"processingGuarantees": "ATMOST_ONCE"}),
    (["--user-config", '{"k": [1]}'], {"userConfig": {"k": [1]}}),
    (["--userConfig", '{"k": "v"}'], {"userConfig": {"k": "v"}}),
    (["--auto-ack", "false"], {"autoAck": False}),
    (["--autoAck", "true"], {"autoAck": True}),
    (["--retain-ordering"], {"retainOrdering": True}),
    (["--retain-ordering", "false"], {"retainOrdering": False}),
    (["--subs-name", "s", "--subs-position", "earliest"],
     {"subName": "s", "subscriptionPosition": "Earliest"}),
    (["--log-topic", "logs", "--dead-letter-topic", "dlq", "--max-message-retries", "3"],
     {"logTopic": "logs", "deadLetterTopic": "dlq", "maxMessageRetries": 3}),
    (["--logTopic", "logs", "--timeoutMs", "5000"], {"logTopic": "logs", "timeoutMs": 5000}),
    (["--parallelism", "3", "--cpu", "0.5"], {"parallelism": 3, "resources": {"cpu": 0.5}}),
    (["--custom-serde-inputs", '{"a": "S"}'], {"customSerdeInputs": {"a": "S"}}),
    (["-st", "JSON"], {"outputSchemaType": "JSON"}),
    (["--input-type-class-name", "m.In", "--output-type-class-name", "m.Out", "-st", "AVRO"],
     {"inputTypeClassName": "m.In", "outputTypeClassName": "m.Out", "outputSchemaType": "AVRO"}),
    (["--py", "function://public/default/f@v1"], {"py": "function://public/default/f@v1"}),
])
def test_flags_set_apache_function_config_keys(argv: list[str], expected: dict[str, Any]) -> None:
    document = built("--name", "f", *argv)
    assert {key: document[key] for key in expected} == expected
    assert set(document) == {"tenant", "namespace", "name", *expected}


def test_the_name_comes_from_fqfn_flags_or_the_class_name() -> None:
    assert built("--classname", "pkg.mod.Exclaim")["name"] == "Exclaim"
    named = built("--fqfn", "t/ns/f")
    assert (named["tenant"], named["namespace"], named["name"]) == ("t", "ns", "f")
    named = built("--tenant", "t", "--name", "f")
    assert (named["tenant"], named["namespace"], named["name"]) == ("t", "default", "f")


def test_flags_replace_the_keys_of_the_config_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("name: f\nclassName: m.C\ninputs: [a]\nuserConfig:\n  k: v\n"
                    "parallelism: 2\n")
    document = built("--function-config-file", str(path), "--parallelism", "4")
    assert document == {"name": "f", "className": "m.C", "inputs": ["a"],
                        "userConfig": {"k": "v"}, "parallelism": 4, "tenant": "public",
                        "namespace": "default"}
    assert built("--functionConfigFile", str(path))["parallelism"] == 2


def test_code_goes_as_a_data_file_part_or_as_a_url(tmp_path: pathlib.Path) -> None:
    code = tmp_path / "exclaim.py"
    code.write_bytes(b"code")
    parts = function_config.form(built("--py", str(code), "--classname", "exclaim.E"))
    assert [(p.name, p.filename) for p in parts] == [("functionConfig", None),
                                                     ("data", "exclaim.py")]
    assert json.loads(parts[0].data)["className"] == "exclaim.E"
    assert parts[1].data == b"code"
    parts = function_config.form(built("--py", "https://h/f.py", "--classname", "f.E"))
    assert [(p.name, p.data) for p in parts[1:]] == [("url", b"https://h/f.py")]
    assert [p.name for p in function_config.form(built("--name", "f"))] == ["functionConfig"]


@pytest.mark.parametrize(("argv", "message"), [
    (["create", "--classname", "m.C"], "A Python file needs to be specified"),
    (["create", "--classname", "m.C", "--py", "/no/such.py"],
     "The specified python file does not exist"),
    (["create", "--py", "x.py", "--name", "f"], "No Function Classname specified"),
    (["create", "--jar", "f.jar", "--classname", "m.C"], "Only Python functions"),
    (["create", "--fqfn", "t/ns", "--classname", "m.C"], "must be of the form"),
    (["get"], "You must specify a name for the function"),
    (["get", "--fqfn", "t/ns/f", "--name", "f"], "You must specify either"),
    (["trigger", "--name", "f"], "Either a trigger value or a trigger filepath"),
    (["querystate", "--name", "f"], "State key needs to be specified"),
    (["putstate", "--name", "f", "--state", '{"stringValue": "v"}'], "FunctionState JSON"),
])
def test_usage_errors_exit_2_before_any_call(argv: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(["--admin-url", "http://127.0.0.1:1", "functions", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_worker_is_reported_with_its_url(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["--admin-url", "http://127.0.0.1:1", "functions", "list"]) == 1
    assert "Error connecting to: http://127.0.0.1:1" in capsys.readouterr().err
