"""The cluster chart's PodMonitors, ServiceMonitors and Grafana dashboard ConfigMaps.

The monitors are checked against what the pulsar-py operator really creates for the
rendered PulsarCluster (its planned StatefulSets, Services and config files): each one
must select exactly one component's pods, once each, on the port where that component's
config file says it serves HTTP. The dashboards are checked as Grafana reads them; that
their queries only name series our processes export is test_dashboards_fit_real_metrics.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml
from pulsar_broker.web import metrics as broker_metrics
from pulsar_operator import cluster_reconcile

from . import dashboards
from .conftest import CLUSTER_CHART, Manifest

NOW = "2026-01-01T00:00:00Z"
MONITOR_KINDS = ("PodMonitor", "ServiceMonitor")
#: The config key (in the component's own config file) of the port serving /metrics.
METRICS_PORT_KEY = {"broker": ("broker.conf", "webServicePort"),
                    "bookie": ("bookkeeper.conf", "httpServerPort"),
                    "proxy": ("proxy.conf", "webServicePort")}


def monitoring_values(kind: str, **more: Any) -> dict[str, Any]:
    return {"monitoring": {"enabled": True, "kind": kind}, "grafanaDashboards": {"enabled": True},
            **more}


def of_kind(manifests: list[Manifest], *kinds: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] in kinds]


def operator_plan(manifests: list[Manifest]) -> list[Manifest]:
    """The objects the operator creates for the rendered PulsarCluster."""
    (cluster,) = of_kind(manifests, "PulsarCluster")
    cluster["metadata"].update(uid="uid", generation=1)
    return list(cluster_reconcile.reconcile(cluster, {}, NOW).objects)


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}, "the chart selects by matchLabels only"
    return all(labels.get(key) == value for key, value in selector["matchLabels"].items())


def relabeled_service_kept(endpoint: dict[str, Any], service_name: str) -> bool:
    """Whether the endpoint's `keep` relabelings on the Service name let this Service through."""
    return all(re.fullmatch(rule["regex"], service_name)
               for rule in endpoint.get("relabelings", [])
               if rule.get("action") == "keep"
               and rule["sourceLabels"] == ["__meta_kubernetes_service_name"])


def config_file(plan: list[Manifest], component: str) -> dict[str, str]:
    file_name, _ = METRICS_PORT_KEY[component]
    for manifest in plan:
        if manifest["kind"] == "ConfigMap" and file_name in manifest.get("data", {}):
            lines = manifest["data"][file_name].splitlines()
            return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    raise AssertionError(f"the operator plans no {file_name}")


def component_of(monitor: Manifest) -> str:
    return str(monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"])


def endpoints_of(monitor: Manifest) -> list[dict[str, Any]]:
    key = "podMetricsEndpoints" if monitor["kind"] == "PodMonitor" else "endpoints"
    endpoints = monitor["spec"][key]
    assert isinstance(endpoints, list)
    return endpoints


def test_monitors_and_dashboards_are_off_by_default(render_chart: Any) -> None:
    kinds = {m["kind"] for m in render_chart(CLUSTER_CHART)}
    assert kinds.isdisjoint({*MONITOR_KINDS, "ConfigMap"})


@pytest.mark.parametrize("kind", MONITOR_KINDS)
def test_one_valid_monitor_per_component(kind: str, render_chart: Any, validate_manifests: Any) -> None:
    manifests = render_chart(CLUSTER_CHART, monitoring_values(kind), release="my-pulsar")
    validate_manifests(manifests)
    monitors = of_kind(manifests, *MONITOR_KINDS)
    assert {m["kind"] for m in monitors} == {kind}
    assert sorted(component_of(m) for m in monitors) == ["bookie", "broker", "proxy"]
    for monitor in monitors:
        assert monitor["metadata"]["name"] == f"my-pulsar-{component_of(monitor)}"
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["pulsar"]}


def test_each_pod_monitor_scrapes_one_components_pods_on_their_metrics_port(render_chart: Any) -> None:
    manifests = render_chart(CLUSTER_CHART, monitoring_values("PodMonitor"), release="my-pulsar")
    plan = operator_plan(manifests)
    for monitor in of_kind(manifests, "PodMonitor"):
        component = component_of(monitor)
        sets = [s for s in plan if s["kind"] == "StatefulSet"
                and selects(monitor["spec"]["selector"], s["spec"]["template"]["metadata"]["labels"])]
        assert [s["metadata"]["name"] for s in sets] == [f"my-pulsar-{component}"]
        (container,) = sets[0]["spec"]["template"]["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        (endpoint,) = endpoints_of(monitor)
        _, key = METRICS_PORT_KEY[component]
        assert ports[endpoint["port"]] == int(config_file(plan, component)[key])
        assert endpoint["path"] == "/metrics" and endpoint["scheme"] == "http"


@pytest.mark.parametrize("values_file", ["monitoring-values.yaml", "secure-values.yaml"])
def test_each_service_monitor_keeps_one_service_whose_port_reaches_the_metrics_port(
    values_file: str, render_chart: Any
) -> None:
    values = yaml.safe_load((CLUSTER_CHART / "ci" / values_file).read_text())
    values.update(monitoring_values("ServiceMonitor"))
    values["monitoring"]["bearerTokenSecret"] = {"name": "prometheus-token"}
    manifests = render_chart(CLUSTER_CHART, values, release="my-pulsar")
    plan = operator_plan(manifests)
    for monitor in of_kind(manifests, "ServiceMonitor"):
        component = component_of(monitor)
        (endpoint,) = endpoints_of(monitor)
        services = [s for s in plan if s["kind"] == "Service"
                    and selects(monitor["spec"]["selector"], s["metadata"]["labels"])]
        assert len(services) >= 1
        kept = [s for s in services if relabeled_service_kept(endpoint, s["metadata"]["name"])]
        assert len(kept) == 1, f"{component}: each pod must be scraped once, kept {kept}"
        service = kept[0]
        # The headless Service lists pods that are not ready too: their metrics still count.
        assert service["spec"].get("publishNotReadyAddresses") is True
        (set_,) = [s for s in plan if s["kind"] == "StatefulSet"
                   and s["metadata"]["name"] == f"my-pulsar-{component}"]
        assert selects({"matchLabels": service["spec"]["selector"]},
                       set_["spec"]["template"]["metadata"]["labels"])
        ports = {p["name"]: p["targetPort"] for p in service["spec"]["ports"]}
        _, key = METRICS_PORT_KEY[component]
        assert ports[endpoint["port"]] == int(config_file(plan, component)[key])


@pytest.mark.parametrize("kind", MONITOR_KINDS)
def test_monitors_name_the_job_the_dashboards_start_at(kind: str, render_chart: Any) -> None:
    manifests = render_chart(CLUSTER_CHART, monitoring_values(kind), release="rel",
                             namespace="streaming")
    jobs = {}
    for monitor in of_kind(manifests, kind):
        (endpoint,) = endpoints_of(monitor)
        (rule,) = [r for r in endpoint["relabelings"] if r.get("targetLabel") == "job"]
        jobs[component_of(monitor)] = rule["replacement"]
    assert jobs == {c: f"streaming/rel-{c}" for c in ("broker", "bookie", "proxy")}
    for component, board in dashboard_configmaps(manifests).items():
        (job,) = [v for v in board["templating"]["list"] if v["name"] == "job"]
        assert job["current"]["value"] == [jobs[component]]


def test_monitor_settings_come_from_values(render_chart: Any, validate_manifests: Any) -> None:
    values = yaml.safe_load((CLUSTER_CHART / "ci" / "full-values.yaml").read_text())
    manifests = render_chart(CLUSTER_CHART, values)
    validate_manifests(manifests)
    monitors = {component_of(m): m for m in of_kind(manifests, *MONITOR_KINDS)}
    assert {name: m["kind"] for name, m in monitors.items()} == dict.fromkeys(
        ("broker", "bookie", "proxy"), "PodMonitor")
    intervals = {name: endpoints_of(m)[0]["interval"] for name, m in monitors.items()}
    assert intervals == {"broker": "15s", "bookie": "30s", "proxy": "1m"}
    for name, monitor in monitors.items():
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        (endpoint,) = endpoints_of(monitor)
        assert endpoint["scrapeTimeout"] == "10s"
        assert endpoint["honorLabels"] is (name == "broker")
        assert endpoint["relabelings"][-1] == {"sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                               "targetLabel": "node"}
        assert endpoint["metricRelabelings"][0]["action"] == "drop"
        assert endpoint["authorization"] == {
            "type": "Bearer", "credentials": {"name": "prometheus-token", "key": "token"}}


def test_a_secured_cluster_needs_a_token_for_prometheus_to_scrape_its_proxies(
    render_chart: Any, validate_manifests: Any
) -> None:
    values = yaml.safe_load((CLUSTER_CHART / "ci" / "secure-values.yaml").read_text())
    values.update(monitoring_values("PodMonitor"))
    with helm_python.Chart.load(CLUSTER_CHART) as chart, pytest.raises(
            helm_python.HelmRenderError, match="monitoring.bearerTokenSecret.name is required"):
        chart.render(values, name="test", namespace="pulsar")
    values["monitoring"]["proxy"] = {"enabled": False}
    without_proxy = render_chart(CLUSTER_CHART, values)
    assert sorted(component_of(m) for m in of_kind(without_proxy, "PodMonitor")) == ["bookie", "broker"]
    assert all("authorization" not in endpoints_of(m)[0] for m in of_kind(without_proxy, "PodMonitor"))
    values["monitoring"].pop("proxy")
    values["monitoring"]["bearerTokenSecret"] = {"name": "prometheus-token", "key": "jwt"}
    manifests = render_chart(CLUSTER_CHART, values)
    validate_manifests(manifests)
    for monitor in of_kind(manifests, "PodMonitor"):
        assert endpoints_of(monitor)[0]["authorization"]["credentials"] == {
            "name": "prometheus-token", "key": "jwt"}


def test_a_disabled_component_or_proxy_gets_no_monitor_or_dashboard(render_chart: Any) -> None:
    values = monitoring_values("PodMonitor", proxy={"enabled": False})
    values["monitoring"]["bookie"] = {"enabled": False}
    manifests = render_chart(CLUSTER_CHART, values)
    assert [component_of(m) for m in of_kind(manifests, "PodMonitor")] == ["broker"]
    assert sorted(dashboard_configmaps(manifests)) == ["bookie", "broker"]


def dashboard_configmaps(manifests: list[Manifest]) -> dict[str, dict[str, Any]]:
    """component -> the dashboard JSON its ConfigMap carries."""
    found: dict[str, dict[str, Any]] = {}
    for manifest in of_kind(manifests, "ConfigMap"):
        (key,) = manifest["data"]
        component = manifest["metadata"]["name"].rsplit("-", 1)[1]
        found[component] = json.loads(manifest["data"][key])
    return found


def test_dashboard_configmaps_carry_the_sidecar_label_and_valid_dashboards(
    render_chart: Any, validate_manifests: Any
) -> None:
    manifests = render_chart(CLUSTER_CHART, monitoring_values("PodMonitor"), release="my-pulsar")
    validate_manifests(manifests)
    maps = of_kind(manifests, "ConfigMap")
    assert sorted(m["metadata"]["name"] for m in maps) == [
        "my-pulsar-dashboard-bookie", "my-pulsar-dashboard-broker", "my-pulsar-dashboard-proxy"]
    for config_map in maps:
        assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert config_map["metadata"]["namespace"] == "pulsar"
        (key,) = config_map["data"]
        assert re.fullmatch(r"pulsar-pulsar-my-pulsar-(broker|bookie|proxy)\.json", key)
        assert "__PULSAR_" not in config_map["data"][key], "a placeholder was left unfilled"
    boards = dashboard_configmaps(manifests)
    assert len({b["uid"] for b in boards.values()}) == 3
    for component, board in boards.items():
        assert len(board["uid"]) <= 40, "Grafana refuses longer uids"
        assert board["title"].endswith("(pulsar/my-pulsar)")
        check_grafana_layout(component, board)


def check_grafana_layout(component: str, board: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dashboards.panels(board)]
    assert len(ids) == len(set(ids)), f"{component}: panel ids repeat"
    for panel in dashboards.panels(board):
        position = panel["gridPos"]
        assert 0 <= position["x"] and position["x"] + position["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and panel["description"], panel["title"]
        for target in panel["targets"]:
            assert 'job=~"$job"' in target["expr"], f"{panel['title']}: not limited to $job"


def test_dashboards_of_two_releases_do_not_collide_in_grafana(render_chart: Any) -> None:
    first = render_chart(CLUSTER_CHART, monitoring_values("PodMonitor"), release="a", namespace="x")
    second = render_chart(CLUSTER_CHART, monitoring_values("PodMonitor"), release="a", namespace="y")
    uids = [b["uid"] for m in (first, second) for b in dashboard_configmaps(m).values()]
    keys = [k for m in (first, second) for c in of_kind(m, "ConfigMap") for k in c["data"]]
    assert len(set(uids)) == 6 and len(set(keys)) == 6


def test_dashboard_configmaps_go_where_the_values_say(render_chart: Any) -> None:
    values = yaml.safe_load((CLUSTER_CHART / "ci" / "full-values.yaml").read_text())
    for config_map in of_kind(render_chart(CLUSTER_CHART, values), "ConfigMap"):
        metadata = config_map["metadata"]
        assert metadata["namespace"] == "monitoring"
        assert metadata["annotations"]["grafana_folder"] == "Pulsar"
        assert metadata["annotations"]["example.com/owner"] == "streaming-team"
        assert metadata["labels"]["team"] == "streaming"


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"monitoring": {"enabled": True, "kind": "Probe"}}, "/monitoring/kind"),
        ({"monitoring": {"interval": "30 seconds"}}, "/monitoring/interval"),
        ({"monitoring": {"broker": {"port": "Web_Port"}}}, "/monitoring/broker/port"),
        ({"monitoring": {"bookie": {"path": "metrics"}}}, "/monitoring/bookie/path"),
        ({"grafanaDashboards": {"labels": {"grafana_dashboard": 1}}}, "/grafanaDashboards/labels"),
        ({"grafanaDashboards": {"folder": "Pulsar"}}, "grafanaDashboards"),
    ],
)
def test_values_schema_rejects_bad_monitoring_values(values: dict[str, Any], where: str) -> None:
    with helm_python.Chart.load(CLUSTER_CHART) as chart, pytest.raises(helm_python.HelmValuesError, match=where):
        chart.render(values, name="test", namespace="pulsar")


@pytest.mark.parametrize(
    ("expression", "metrics", "labels", "grouping"),
    [
        ("up", {"up"}, {}, set()),
        ('sum by (pod) (rate(a_total{job=~"$job"}[$__rate_interval]))', {"a_total"},
         {"a_total": {"job"}}, {"pod"}),
        ('histogram_quantile(0.99, sum by (le) (rate(x_bucket{success="true", job=~"$job"}[5m])))',
         {"x_bucket"}, {"x_bucket": {"success", "job"}}, {"le"}),
        ("a / ignoring(b) c > bool 1e3", {"a", "c"}, {}, {"b"}),
        ("topk(10, sum without (x) (y)) or on (z) w offset 5m", {"y", "w"}, {}, {"x", "z"}),
        ('label_values(m{job=~"$job"}, namespace)', {"m"}, {"m": {"job"}}, {"namespace"}),
        ("count(s) - sum(s)", {"s"}, {}, set()),
    ],
)
def test_read_by_names_the_series_and_labels_an_expression_reads(
    expression: str, metrics: set[str], labels: dict[str, set[str]], grouping: set[str]
) -> None:
    reads = dashboards.read_by(expression)
    assert reads.metrics == metrics
    assert {k: v for k, v in reads.matcher_labels.items() if v} == labels
    assert reads.grouping_labels == grouping


def test_read_by_refuses_a_grafana_variable_it_cannot_place() -> None:
    with pytest.raises(ValueError, match="Grafana variable"):
        dashboards.read_by("topk($n, x)")


def series_read(stem: str) -> set[str]:
    return set().union(*(dashboards.read_by(e).metrics for _, e in dashboards.expressions(dashboards.load(stem))))


@pytest.mark.parametrize("stem", sorted(dashboards.COMPONENTS))
def test_every_dashboard_shows_its_processes_cpu_memory_files_gc_and_uptime(stem: str) -> None:
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
            "process_max_fds", "process_start_time_seconds", "python_gc_collections_total"} <= series_read(stem)


def test_the_broker_dashboard_shows_storage_rates_and_every_managed_ledger_series() -> None:
    assert {"pulsar_storage_write_rate", "pulsar_storage_read_rate",
            *broker_metrics.MANAGED_LEDGER_GAUGES} <= series_read("pulsar-broker")


#: What Grafana puts for a multi-value `$namespace` in a regex matcher: one value, several, All.
NAMESPACE_SELECTIONS = [("public/default", True), ("(acme/orders|public/default)", True),
                        (".*", True), ("acme/orders", False)]


@pytest.mark.parametrize(("selected", "matches"), NAMESPACE_SELECTIONS)
def test_managed_ledger_panels_match_the_namespace_variable_on_the_ledgers_prefix(
    selected: str, matches: bool
) -> None:
    """pulsar_ml_* series are labelled namespace="<tenant>/<ns>/persistent" (Apache's ledger prefix),
    while $namespace takes its values from series labelled "<tenant>/<ns>"."""
    exported = "public/default/persistent"
    ml_matchers = []
    for where, expression in dashboards.expressions(dashboards.load("pulsar-broker")):
        for name in dashboards.read_by(expression).metrics & set(broker_metrics.MANAGED_LEDGER_GAUGES):
            (matcher,) = re.findall(name + r'\{[^}]*namespace=~"([^"]*)"', expression)
            ml_matchers.append((where, matcher))
    assert len(ml_matchers) == len(broker_metrics.MANAGED_LEDGER_GAUGES)
    for where, matcher in ml_matchers:
        regex = matcher.replace("$namespace", selected)
        assert bool(re.fullmatch(regex, exported)) == matches, where


def test_every_dashboard_file_is_shipped(render_chart: Any) -> None:
    shipped = {Path(p).stem for p in dashboards.DASHBOARDS_DIR.glob("*.json")}
    assert shipped == set(dashboards.COMPONENTS)
    manifests = render_chart(CLUSTER_CHART, monitoring_values("PodMonitor"))
    assert {f"pulsar-{c}" for c in dashboard_configmaps(manifests)} == shipped


@pytest.mark.parametrize("values_file", ["full-values.yaml", "monitoring-values.yaml"])
def test_chart_with_monitoring_passes_helm_lint_and_its_notes_say_how_to_find_them(
    values_file: str
) -> None:
    values = yaml.safe_load((CLUSTER_CHART / "ci" / values_file).read_text())
    report = helm_python.lint(CLUSTER_CHART, values, strict=True, namespace="pulsar")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == [], report
    with helm_python.Chart.load(CLUSTER_CHART) as chart:
        notes = chart.render(values, name="rel", namespace="pulsar")["pulsar-cluster/templates/NOTES.txt"]
    kind = values["monitoring"]["kind"]
    assert f"kubectl get {kind.lower()}s -n pulsar" in notes
    dashboards_namespace = values["grafanaDashboards"].get("namespace") or "pulsar"
    assert f"kubectl get configmaps -n {dashboards_namespace} -l grafana_dashboard=1" in notes
