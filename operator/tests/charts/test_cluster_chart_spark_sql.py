"""The pulsar-cluster chart's sparkSql block: SparkApplications for the Spark operator.

What `helm install` renders must be what `pulsar sql --k8s-manifest`
(pulsar_spark.k8s) prints for the same job, must point at the service names
the pulsar-py operator gives the cluster, must validate against the
SparkApplication CRD schema vendored with the Spark tests, and its RBAC must
pass the Kubernetes schemas.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import helm_python
import jsonschema
import pytest
import yaml
from pulsar_operator import cluster_config, cluster_spec
from pulsar_spark import job as spark_job
from pulsar_spark import k8s

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "pulsar-cluster"
SAMPLE_VALUES = sorted((CHART / "ci").glob("*.yaml"))
SPARK_CRD = REPO / "spark" / "tests" / "data" / "sparkapplication-crd-v1beta2.yaml"
SPARK_KINDS = ("SparkApplication", "ServiceAccount", "Role", "RoleBinding")
QUERY = "SELECT count(*) AS n FROM public.default.\"my-topic\"\nWHERE value LIKE '%: x%'"
IMAGE = "registry.example.com/pulsar-spark:4.3.0"

Manifest = dict[str, Any]


def spark_values(*jobs: dict[str, Any], **settings: Any) -> dict[str, Any]:
    block: dict[str, Any] = {"enabled": True, "image": IMAGE, "jobs": list(jobs)}
    block.update(settings)
    return {"sparkSql": block}


def a_job(name: str = "daily-count", **fields: Any) -> dict[str, Any]:
    return {"name": name, "query": QUERY, "outputPath": "s3a://analytics/daily", **fields}


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def spark_applications(manifests: list[Manifest]) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in of_kind(manifests, "SparkApplication")}


def spark_application_schema() -> dict[str, Any]:
    crd = yaml.safe_load(SPARK_CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def pruned_fields(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields of `value` the API server would drop: not declared by the structural schema."""
    properties = schema.get("properties")
    if not isinstance(value, dict) or not properties:
        return []
    found: list[str] = []
    for key, item in value.items():
        if key not in properties:
            found.append(f"{path}.{key}")
        else:
            found += pruned_fields(item, properties[key], f"{path}.{key}")
    return found


def validate_spark_application(manifest: Manifest) -> None:
    schema = spark_application_schema()
    try:
        jsonschema.Draft7Validator(schema).validate(manifest)
    except jsonschema.ValidationError as error:
        where = ".".join(str(part) for part in error.path)
        raise AssertionError(f"SparkApplication invalid at {where}: {error.message}") from error
    assert pruned_fields(manifest, schema) == []
    assert (manifest["apiVersion"], manifest["kind"]) == (
        "sparkoperator.k8s.io/v1beta2",
        "SparkApplication",
    )


def is_subset(part: Any, whole: Any, path: str = "") -> list[str]:
    """Where `part` is not contained in `whole` (maps may hold more keys; other values must be equal)."""
    if isinstance(part, dict) and isinstance(whole, dict):
        problems: list[str] = []
        for key, value in part.items():
            if key not in whole:
                problems.append(f"{path}.{key} missing")
            else:
                problems += is_subset(value, whole[key], f"{path}.{key}")
        return problems
    return [] if part == whole else [f"{path}: {part!r} != {whole!r}"]


def the_cluster_spec(manifests: list[Manifest]) -> cluster_spec.ClusterSpec:
    (cluster,) = of_kind(manifests, "PulsarCluster")
    return cluster_spec.parse(cluster)


def test_disabled_by_default_renders_no_spark_objects(render_chart: Any) -> None:
    for values in [None, *(yaml.safe_load(path.read_text()) for path in SAMPLE_VALUES)]:
        kinds = {m["kind"] for m in render_chart(CHART, values)}
        assert kinds.isdisjoint(SPARK_KINDS), kinds


def test_jobs_listed_but_disabled_render_nothing(render_chart: Any) -> None:
    values = spark_values(a_job())
    values["sparkSql"]["enabled"] = False
    assert [m["kind"] for m in render_chart(CHART, values)] == ["PulsarCluster"]


def test_enabled_renders_one_valid_spark_application_per_job_and_valid_rbac(
    render_chart: Any, validate_manifests: Any
) -> None:
    values = spark_values(a_job("daily-count"), a_job("hourly-count", outputFormat="json"))
    manifests = render_chart(CHART, values, release="my-pulsar")
    applications = spark_applications(manifests)
    assert set(applications) == {"daily-count", "hourly-count"}
    for application in applications.values():
        validate_spark_application(application)
        assert application["metadata"]["namespace"] == "pulsar"
    rbac = [m for m in manifests if m["kind"] in ("ServiceAccount", "Role", "RoleBinding")]
    assert sorted(m["kind"] for m in rbac) == ["Role", "RoleBinding", "ServiceAccount"]
    # Built-in kinds through kubernetes-validate (strict), the PulsarCluster through its CRD.
    validate_manifests([m for m in manifests if m["kind"] != "SparkApplication"])


def test_driver_runs_as_the_service_account_the_role_binding_grants(render_chart: Any) -> None:
    manifests = render_chart(CHART, spark_values(a_job()), release="my-pulsar")
    (account,) = of_kind(manifests, "ServiceAccount")
    (role,) = of_kind(manifests, "Role")
    (binding,) = of_kind(manifests, "RoleBinding")
    assert account["metadata"]["name"] == "my-pulsar-spark"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "my-pulsar-spark", "namespace": "pulsar"}
    ]
    (application,) = of_kind(manifests, "SparkApplication")
    assert application["spec"]["driver"]["serviceAccount"] == "my-pulsar-spark"
    grants = {
        (resource, verb)
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    for needed in [
        ("pods", "create"),
        ("pods", "delete"),
        ("pods", "watch"),
        ("services", "create"),
        ("configmaps", "create"),
        ("persistentvolumeclaims", "create"),
    ]:
        assert needed in grants
    assert all(
        "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"] for rule in role["rules"]
    )
    assert {g for rule in role["rules"] for g in rule["apiGroups"]} == {""}


def test_an_existing_service_account_is_used_and_none_is_created(render_chart: Any) -> None:
    values = spark_values(a_job(), serviceAccount={"create": False, "name": "spark"})
    manifests = render_chart(CHART, values)
    assert of_kind(manifests, "ServiceAccount") == of_kind(manifests, "Role") == []
    assert of_kind(manifests, "SparkApplication")[0]["spec"]["driver"]["serviceAccount"] == "spark"


def test_enabled_without_jobs_renders_only_the_service_account_and_rbac(render_chart: Any) -> None:
    kinds = sorted(m["kind"] for m in render_chart(CHART, spark_values()))
    assert kinds == ["PulsarCluster", "Role", "RoleBinding", "ServiceAccount"]


@pytest.mark.parametrize("values_file", SAMPLE_VALUES, ids=lambda p: p.name)
@pytest.mark.parametrize("metadata_from_etcd", [False, True])
def test_spark_conf_points_at_the_urls_the_operator_gives_the_cluster(
    values_file: Path, metadata_from_etcd: bool, render_chart: Any
) -> None:
    values = merged(
        yaml.safe_load(values_file.read_text()),
        spark_values(a_job(), metadataFromEtcd=metadata_from_etcd),
    )
    manifests = render_chart(CHART, values, namespace="streaming")
    spec = the_cluster_spec(manifests)
    conf = of_kind(manifests, "SparkApplication")[0]["spec"]["sparkConf"]
    assert conf["spark.pulsar.admin.url"] == cluster_config.web_service_url(spec)
    assert conf["spark.pulsar.service.url"] == cluster_config.broker_service_url(spec)
    if metadata_from_etcd:
        assert conf["spark.pulsar.metadata.url"] == cluster_config.metadata_store_url(spec)
    else:
        assert "spark.pulsar.metadata.url" not in conf


def test_service_url_is_the_brokers_when_no_proxy_runs(render_chart: Any) -> None:
    values = merged(spark_values(a_job()), {"proxy": {"enabled": False}})
    conf = of_kind(render_chart(CHART, values, release="p"), "SparkApplication")[0]["spec"][
        "sparkConf"
    ]
    assert conf["spark.pulsar.service.url"] == "pulsar://p-broker.pulsar.svc:6650"


def test_chart_defaults_render_what_the_cli_renders_for_the_same_job(render_chart: Any) -> None:
    manifests = render_chart(
        CHART, spark_values(a_job(namespaces=["acme/orders", "public/default"])), release="prod"
    )
    (chart_manifest,) = of_kind(manifests, "SparkApplication")
    spec = the_cluster_spec(manifests)
    cli_manifest = k8s.render(
        k8s.JobSpec(
            query=QUERY,
            output_path="s3a://analytics/daily",
            image=IMAGE,
            admin_url=cluster_config.web_service_url(spec),
            service_url=cluster_config.broker_service_url(spec),
            namespaces=("acme/orders", "public/default"),
            name="daily-count",
            k8s_namespace="pulsar",
            service_account="prod-spark",
        )
    )
    # Everything the CLI sets, the chart sets the same way; the chart only adds labels.
    assert is_subset(cli_manifest, chart_manifest) == []
    assert chart_manifest["spec"]["sparkConf"] == cli_manifest["spec"]["sparkConf"]
    assert chart_manifest["spec"]["arguments"] == cli_manifest["spec"]["arguments"]


def test_chart_settings_render_what_the_cli_renders_with_the_same_settings(
    render_chart: Any,
) -> None:
    job = a_job(
        outputFormat="csv", executor={"instances": 6}, sparkConf={"spark.sql.shuffle.partitions": 8}
    )
    values = spark_values(
        job,
        metadataFromEtcd=True,
        mainApplicationFile="local:///app/job.py",
        sparkVersion="4.2.0",
        driver={"cores": 2, "memory": "3g"},
        executor={"instances": 3, "cores": 2, "memory": "4g"},
        serviceAccount={"create": False, "name": "spark-jobs"},
        sparkConf={"spark.hadoop.fs.s3a.endpoint": "http://minio:9000"},
    )
    manifests = render_chart(
        CHART, merged(values, {"etcd": {"externalEndpoints": ["http://etcd.infra:2379"]}})
    )
    (chart_manifest,) = of_kind(manifests, "SparkApplication")
    spec = the_cluster_spec(manifests)
    cli_manifest = k8s.render(
        k8s.JobSpec(
            query=QUERY,
            output_path="s3a://analytics/daily",
            image=IMAGE,
            output_format="csv",
            admin_url=cluster_config.web_service_url(spec),
            service_url=cluster_config.broker_service_url(spec),
            metadata_url=cluster_config.metadata_store_url(spec),
            name="daily-count",
            k8s_namespace="pulsar",
            service_account="spark-jobs",
            main_application_file="local:///app/job.py",
            spark_version="4.2.0",
            driver_cores=2,
            driver_memory="3g",
            executor_instances=6,
            executor_cores=2,
            executor_memory="4g",
            extra_conf=(
                ("spark.hadoop.fs.s3a.endpoint", "http://minio:9000"),
                ("spark.sql.shuffle.partitions", "8"),
            ),
        )
    )
    assert is_subset(cli_manifest, chart_manifest) == []
    assert chart_manifest["spec"]["sparkConf"] == cli_manifest["spec"]["sparkConf"]
    assert cluster_config.metadata_store_url(spec) == "etcd:http://etcd.infra:2379"
    validate_spark_application(chart_manifest)


def test_arguments_are_what_the_job_entry_point_accepts(render_chart: Any) -> None:
    job = a_job(outputFormat="json", saveMode="overwrite", namespaces=["acme/orders"])
    (application,) = of_kind(render_chart(CHART, spark_values(job)), "SparkApplication")
    args = spark_job.parse(application["spec"]["arguments"])
    assert args.query == QUERY  # quotes, colons and the newline survive the template
    assert (args.output, args.format, args.mode) == ("s3a://analytics/daily", "json", "overwrite")
    assert args.namespaces == ["acme/orders"]


def test_a_job_setting_wins_over_the_block_setting(render_chart: Any) -> None:
    job = a_job(driver={"memory": "6g"}, sparkConf={"spark.sql.shuffle.partitions": "4"})
    values = spark_values(
        job, sparkConf={"spark.sql.shuffle.partitions": "64", "spark.ui.enabled": False}
    )
    spec = of_kind(render_chart(CHART, values), "SparkApplication")[0]["spec"]
    assert spec["driver"]["memory"] == "6g" and spec["driver"]["cores"] == 1
    assert spec["sparkConf"]["spark.sql.shuffle.partitions"] == "4"
    assert spec["sparkConf"]["spark.ui.enabled"] == "false"
    assert spec["executor"] == merged(
        spec["executor"], {"instances": 2, "cores": 1, "memory": "2g"}
    )


def test_pyspark_python_is_set_on_driver_and_executors(render_chart: Any) -> None:
    values = spark_values(a_job(), pysparkPython="/usr/bin/python3.11")
    (application,) = of_kind(render_chart(CHART, values), "SparkApplication")
    validate_spark_application(application)
    for role in ("driver", "executor"):
        assert application["spec"][role]["envVars"] == {"PYSPARK_PYTHON": "/usr/bin/python3.11"}
    (default,) = of_kind(render_chart(CHART, spark_values(a_job())), "SparkApplication")
    assert "envVars" not in default["spec"]["driver"]


def test_spark_labels_keep_the_jobs_out_of_the_operators_pod_selectors(render_chart: Any) -> None:
    manifests = render_chart(CHART, spark_values(a_job()), release="r")
    (application,) = of_kind(manifests, "SparkApplication")
    for labels in (
        application["metadata"]["labels"],
        application["spec"]["driver"]["labels"],
        application["spec"]["executor"]["labels"],
    ):
        assert labels["app.kubernetes.io/name"] == "pulsar-sql"
        assert labels["app.kubernetes.io/instance"] == "r"


@pytest.mark.parametrize(
    ("values", "where"),
    [
        (
            spark_values({"name": "q", "outputPath": "/out"}),
            "/sparkSql/jobs/0': missing property 'query'",
        ),
        (spark_values({"name": "q", "query": "SELECT 1"}), "missing property 'outputPath'"),
        (spark_values({"query": "SELECT 1", "outputPath": "/out"}), "missing property 'name'"),
        (spark_values(a_job(query="")), "/sparkSql/jobs/0/query"),
        (spark_values(a_job("Daily_Count")), "/sparkSql/jobs/0/name"),
        (spark_values(a_job("x" * 57)), "maxLength: got 57, want 56"),
        (spark_values(a_job(outputFormat="orc")), "/sparkSql/jobs/0/outputFormat"),
        (spark_values(a_job(saveMode="ignore")), "/sparkSql/jobs/0/saveMode"),
        (spark_values(a_job(namespaces=["orders"])), "/sparkSql/jobs/0/namespaces/0"),
        (
            spark_values(a_job(), executor={"instances": 0, "cores": 1, "memory": "2g"}),
            "/sparkSql/executor",
        ),
        (spark_values(a_job(), driver={"cores": 1, "memory": "1 GB"}), "/sparkSql/driver"),
        (
            spark_values(a_job(), sparkConf={"fs.s3a.endpoint": "x"}),
            "'fs.s3a.endpoint' does not match",
        ),
        (
            spark_values(a_job(), serviceAccount={"create": False, "name": "Spark_SA"}),
            "/sparkSql/serviceAccount/name",
        ),
        (spark_values(a_job(), jobs_typo=[]), "'jobs_typo' not allowed"),
    ],
)
def test_values_schema_rejects_bad_spark_values(values: dict[str, Any], where: str) -> None:
    with (
        helm_python.Chart.load(CHART) as chart,
        pytest.raises(helm_python.HelmValuesError, match=where),
    ):
        chart.render(values, name="test", namespace="pulsar")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            spark_values(a_job(), image=""),
            "sparkSql.image is required when sparkSql.enabled is true",
        ),
        (spark_values(a_job("same"), a_job("same")), 'more than one job is named "same"'),
    ],
)
def test_values_the_schema_cannot_judge_refuse_to_render(
    values: dict[str, Any], message: str
) -> None:
    with (
        helm_python.Chart.load(CHART) as chart,
        pytest.raises(helm_python.HelmRenderError, match=message),
    ):
        chart.render(values, name="test", namespace="pulsar")


def test_chart_with_spark_jobs_passes_helm_lint_in_strict_mode() -> None:
    report = helm_python.lint(CHART, spark_values(a_job()), strict=True, namespace="pulsar")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == [], report


def test_the_example_values_of_docs_helm_md_render_valid_jobs(render_chart: Any) -> None:
    docs = (REPO / "docs" / "helm.md").read_text()
    blocks = [b.split("```", 1)[0] for b in docs.split("```yaml\n")[1:]]
    (example,) = [yaml.safe_load(b) for b in blocks if b.startswith("sparkSql:")]
    manifests = render_chart(CHART, example)
    applications = spark_applications(manifests)
    assert set(applications) == {job["name"] for job in example["sparkSql"]["jobs"]}
    for application in applications.values():
        validate_spark_application(application)
