"""The SparkApplication manifest of `pulsar sql --k8s-manifest` validates against the CRD schema."""

from __future__ import annotations

import argparse
import io
import pathlib
from contextlib import redirect_stdout
from typing import Any

import jsonschema
import pytest
import yaml
from pulsar_spark import cli, k8s

CRD = pathlib.Path(__file__).parent / "data" / "sparkapplication-crd-v1beta2.yaml"


def _schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    return version["schema"]["openAPIV3Schema"]


def _unknown_fields(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields the API server would silently prune (structural schemas drop unknown fields)."""
    if not isinstance(value, dict) or schema.get("type") != "object" or "properties" not in schema:
        return []
    found = []
    for key, item in value.items():
        if key not in schema["properties"]:
            found.append(f"{path}.{key}")
        else:
            found += _unknown_fields(item, schema["properties"][key], f"{path}.{key}")
    return found


def _validate(manifest: dict[str, Any]) -> None:
    schema = _schema()
    jsonschema.validate(manifest, schema)
    assert _unknown_fields(manifest, schema) == []
    assert manifest["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert manifest["kind"] == "SparkApplication"


def _cli_manifest(*argv: str) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    runner = cli.add_arguments(parser)
    out = io.StringIO()
    with redirect_stdout(out):
        assert runner(parser.parse_args(list(argv))) == 0
    return yaml.safe_load(out.getvalue())


def test_rendered_manifest_validates_against_the_crd_schema():
    manifest = _cli_manifest(
        'SELECT count(*) FROM public.default."my-topic" WHERE __publish_time > now() - INTERVAL 1 DAY',
        "--k8s-manifest", "--image", "registry.example/pulsar-spark:4.0", "--output-path",
        "s3a://bucket/out", "--admin-url", "http://pulsar-broker:8080", "--service-url",
        "pulsar://pulsar-broker:6650", "--metadata-url", "etcd:http://etcd:2379",
        "--executor-instances", "3", "--job-name", "Daily Count!")
    _validate(manifest)
    spec = manifest["spec"]
    assert spec["type"] == "Python" and spec["mode"] == "cluster"
    assert spec["image"] == "registry.example/pulsar-spark:4.0"
    assert spec["mainApplicationFile"] == k8s.MAIN_APPLICATION_FILE_DEFAULT
    assert spec["executor"]["instances"] == 3
    assert spec["driver"]["serviceAccount"] == "spark"
    assert spec["sparkConf"]["spark.pulsar.admin.url"] == "http://pulsar-broker:8080"
    assert spec["sparkConf"]["spark.pulsar.service.url"] == "pulsar://pulsar-broker:6650"
    assert spec["sparkConf"]["spark.pulsar.metadata.url"] == "etcd:http://etcd:2379"
    assert manifest["metadata"]["name"] == "daily-count"
    query_index = spec["arguments"].index("--query") + 1
    assert spec["arguments"][query_index].startswith('SELECT count(*) FROM public.default."my-topic"')


def test_manifest_arguments_are_what_the_job_entry_point_accepts():
    from pulsar_spark import job

    manifest = k8s.render(k8s.JobSpec(query="SELECT 1", output_path="/tmp/x", image="i",
                                      admin_url="http://a:8080", service_url="pulsar://a:6650"))
    args = job.parse(manifest["spec"]["arguments"])
    assert args.query == "SELECT 1" and args.output == "/tmp/x" and args.format == "parquet"
    assert args.namespaces == ["public/default"]


@pytest.mark.parametrize("broken", [
    {"spec": {"type": "Go"}},
    {"spec": {"executor": {"instances": 0}}},
    {"spec": {"restartPolicy": {"type": "Sometimes"}}},
    {"spec": {"driver": {"cores": "one"}}},
])
def test_schema_rejects_what_the_operator_would(broken):
    manifest = k8s.render(k8s.JobSpec(query="q", output_path="o", image="i", admin_url="a",
                                      service_url="s"))
    for section, fields in broken["spec"].items():
        if isinstance(fields, dict) and isinstance(manifest["spec"].get(section), dict):
            manifest["spec"][section].update(fields)
        else:
            manifest["spec"][section] = fields
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(manifest, _schema())


def test_manifest_needs_image_and_output_path(capsys):
    parser = argparse.ArgumentParser()
    runner = cli.add_arguments(parser)
    assert runner(parser.parse_args(["SELECT 1", "--k8s-manifest"])) == 2
    assert "--image" in capsys.readouterr().err
