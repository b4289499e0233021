"""Merge patches from desired vs live objects: only what differs, never immutable fields."""

from __future__ import annotations

from typing import Any

import pytest
from pulsar_operator import diffing


def sts(**spec: Any) -> dict[str, Any]:
    base = {"replicas": 3, "serviceName": "x", "selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "i:1", "ports": [{"containerPort": 1}]}]}}}
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "x", "namespace": "n", "labels": {"l": "1"}}, "spec": base}


@pytest.mark.parametrize(("want", "have", "expected"), [
    ({"a": 1}, {"a": 1, "b": 2}, True),
    ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True),
    ({"a": [{"b": 1}]}, {"a": [{"b": 1, "default": 0}]}, True),
    ({"a": [{"b": 1}]}, {"a": [{"b": 1}, {"b": 2}]}, False),
    ({"a": 1}, {"a": "1"}, False),
    ({"a": {"b": 1}}, {}, False),
])
def test_containment(want: dict[str, Any], have: dict[str, Any], expected: bool) -> None:
    assert diffing.contains(have, want) is expected


def test_server_defaults_in_the_live_object_are_not_a_difference() -> None:
    live = sts()
    live["metadata"].update(uid="u", resourceVersion="7", generation=4)
    live["spec"]["revisionHistoryLimit"] = 10
    live["spec"]["template"]["spec"]["containers"][0].update(terminationMessagePath="/dev/termination-log")
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    live["status"] = {"replicas": 3}
    assert diffing.merge_patch(sts(), live) is None


def test_a_changed_field_is_patched_alone() -> None:
    assert diffing.merge_patch(sts(replicas=5), sts()) == {"spec": {"replicas": 5}}


def test_a_changed_list_is_replaced_whole() -> None:
    want = sts()
    want["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    patch = diffing.merge_patch(want, sts())
    assert patch == {"spec": {"template": {"spec": {"containers": want["spec"]["template"]["spec"]["containers"]}}}}


def test_immutable_statefulset_fields_are_never_patched() -> None:
    want = sts(serviceName="y", selector={"matchLabels": {"a": "c"}},
               volumeClaimTemplates=[{"metadata": {"name": "d"}}])
    assert diffing.merge_patch(want, sts()) is None


def test_labels_and_owner_references_are_kept_in_line() -> None:
    want = sts()
    want["metadata"]["labels"]["new"] = "2"
    want["metadata"]["ownerReferences"] = [{"uid": "1"}]
    live = sts()
    live["metadata"]["labels"]["foreign"] = "kept"
    assert diffing.merge_patch(want, live) == {"metadata": {"labels": {"new": "2"}, "ownerReferences": [{"uid": "1"}]}}


def test_config_map_data_is_owned_whole() -> None:
    want = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "stale": "x"}}
    assert diffing.merge_patch(want, live) == {"data": {"stale": None}}


def test_a_service_cluster_ip_assigned_by_the_server_is_left_alone() -> None:
    want = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "None"}}
    live = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.3"}}
    assert diffing.merge_patch(want, live) is None
