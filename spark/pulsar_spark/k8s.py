"""The SparkApplication manifest (sparkoperator.k8s.io/v1beta2) that runs a query on Kubernetes.

The template is filled with the query, the output path, the image and the
topic service URLs (passed as sparkConf `spark.pulsar.*`, which the job entry
point reads). `pulsar sql --k8s-manifest` prints it; `kubectl apply -f -`
hands it to the Spark operator.
"""

from __future__ import annotations

import dataclasses
import re
import string
from typing import Any

import yaml

#: Where the job entry point lives in the image (see docs/spark.md for the image recipe).
MAIN_APPLICATION_FILE_DEFAULT = "local:///opt/pulsar-spark/job.py"
SPARK_VERSION_DEFAULT = "4.3.0"

TEMPLATE = string.Template("""\
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: $name
  namespace: $namespace
  labels:
    app.kubernetes.io/name: pulsar-sql
    app.kubernetes.io/component: spark-job
spec:
  type: Python
  pythonVersion: "3"
  mode: cluster
  imagePullPolicy: IfNotPresent
  arguments: []
  sparkConf: {}
  restartPolicy:
    type: Never
  driver:
    cores: $driver_cores
    labels:
      app.kubernetes.io/name: pulsar-sql
  executor:
    instances: $executor_instances
    cores: $executor_cores
    labels:
      app.kubernetes.io/name: pulsar-sql
""")


@dataclasses.dataclass(frozen=True)
class JobSpec:
    query: str
    output_path: str
    image: str
    admin_url: str
    service_url: str
    metadata_url: str | None = None
    namespaces: tuple[str, ...] = ("public/default",)
    output_format: str = "parquet"
    name: str = "pulsar-sql"
    k8s_namespace: str = "default"
    service_account: str = "spark"
    main_application_file: str = MAIN_APPLICATION_FILE_DEFAULT
    spark_version: str = SPARK_VERSION_DEFAULT
    driver_cores: int = 1
    driver_memory: str = "1g"
    executor_instances: int = 2
    executor_cores: int = 1
    executor_memory: str = "2g"
    extra_conf: tuple[tuple[str, str], ...] = ()


def _k8s_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-")[:63].strip("-")
    return name or "pulsar-sql"


def render(job: JobSpec) -> dict[str, Any]:
    """The manifest as a dict."""
    # Names and numbers go through the template; free text (query, URLs, image) is set
    # afterwards so the YAML dumper quotes it.
    manifest: dict[str, Any] = yaml.safe_load(TEMPLATE.substitute(
        name=_k8s_name(job.name), namespace=_k8s_name(job.k8s_namespace),
        driver_cores=int(job.driver_cores), executor_instances=int(job.executor_instances),
        executor_cores=int(job.executor_cores)))
    spec = manifest["spec"]
    spec["image"] = job.image
    spec["mainApplicationFile"] = job.main_application_file
    spec["sparkVersion"] = job.spark_version
    spec["driver"]["memory"] = job.driver_memory
    spec["driver"]["serviceAccount"] = job.service_account
    spec["executor"]["memory"] = job.executor_memory
    spec["arguments"] = ["--query", job.query, "--output", job.output_path,
                         "--format", job.output_format,
                         *[a for ns in job.namespaces for a in ("--namespace", ns)]]
    conf = {"spark.pulsar.admin.url": job.admin_url,
            "spark.pulsar.service.url": job.service_url,
            "spark.sql.python.filterPushdown.enabled": "true"}
    if job.metadata_url:
        conf["spark.pulsar.metadata.url"] = job.metadata_url
    conf.update(dict(job.extra_conf))
    spec["sparkConf"] = conf
    return manifest


def render_yaml(job: JobSpec) -> str:
    return str(yaml.safe_dump(render(job), sort_keys=False, default_flow_style=False))
