"""`pulsar initialize-namespace`, `pulsar delete-cluster-metadata` and `pulsar compact-topic`:
Apache's metadata-side tools.

`initialize-namespace` creates namespaces (and their tenants) straight in the
metadata store, without a broker running, as Apache's does before a cluster
first starts. `compact-topic` compacts one topic from the command line. Apache's
tool runs a compactor of its own against ZooKeeper and BookKeeper; ours asks
the broker that serves the topic to compact it, through the cluster's web
service URL (from the cluster record in the metadata store named by the
broker.conf given), and waits for the result, so a compaction never runs
beside the broker's own.

`delete-cluster-metadata` tears a stopped cluster's records out of the
metadata store, as Apache's does: the cluster's local state (managed ledgers
and their cursors, bundle ownership, load reports, schemas); with
`--bookkeeper-metadata-service-uri`, BookKeeper's ledger records too (the
bookies' data is then unreachable: format them as well); with
`--configuration-store`, the cluster's record in the configuration store.
Unlike Apache's, it refuses while a broker is still registered, so it cannot
pull the metadata from under a running cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from pulsar_common import errors as common_errors
from pulsar_common import naming
from pulsar_common.metadata import factory as md_factory

from pulsar_broker import config as broker_config
from pulsar_broker import errors, resources
from pulsar_broker.namespace import registry

#: How long `compact-topic` waits for the broker to finish, and how often it asks.
COMPACTION_WAIT_S = 600.0
COMPACTION_POLL_S = 0.5


async def initialize_namespaces(metadata_url: str, cluster: str, namespaces: list[str]) -> None:
    """Create each tenant/namespace (and its tenant) for cluster; existing ones are kept."""
    store = await md_factory.create_store(metadata_url)
    try:
        res = resources.PulsarResources(store)
        for text in namespaces:
            ns = naming.NamespaceName.parse(text)
            with contextlib.suppress(errors.ConflictError):
                await res.create_tenant(ns.tenant, {"adminRoles": [],
                                                    "allowedClusters": [cluster]})
            policies = resources.default_policies()
            policies["replication_clusters"] = [cluster]
            with contextlib.suppress(errors.ConflictError):
                await res.create_namespace(ns, policies)
    finally:
        await store.close()


def add_initialize_namespace_arguments(
        parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("-cs", "--configuration-store", required=True,
                        help="metadata store URL, e.g. etcd:http://host:2379")
    parser.add_argument("-c", "--cluster", required=True, help="cluster name")
    parser.add_argument("namespaces", nargs="+", metavar="tenant/namespace")

    def run(args: argparse.Namespace) -> int:
        try:
            for text in args.namespaces:
                naming.NamespaceName.parse(text)
        except naming.InvalidTopicNameError as exc:
            raise common_errors.ConfigError(str(exc)) from exc
        asyncio.run(initialize_namespaces(args.configuration_store, args.cluster,
                                          args.namespaces))
        for text in args.namespaces:
            print(f"namespace {text} initialized for cluster {args.cluster}")
        return 0

    return run


#: A cluster's local state in the metadata store (Pulsar's, not BookKeeper's).
CLUSTER_LOCAL_PATHS = ("/managed-ledgers", "/namespace", "/loadbalance", "/schemas")
#: BookKeeper's ledger records (deleted only when asked with the BookKeeper option).
BOOKKEEPER_PATHS = ("/ledgers", "/ledgers-idgen")


async def delete_cluster_metadata(metadata_url: str, cluster: str, *,
                                  configuration_url: str | None = None,
                                  bookkeeper: bool = False) -> list[str]:
    """Delete a stopped cluster's metadata; the paths deleted. Refuses (ConfigError) while
    a broker is registered in the store."""
    store = await md_factory.create_store(metadata_url)
    try:
        brokers = await store.get_children(registry.BROKERS_ROOT)
        if brokers:
            raise common_errors.ConfigError(
                f"brokers are still registered ({', '.join(sorted(brokers))}): stop the "
                "cluster before deleting its metadata")
        targets = list(CLUSTER_LOCAL_PATHS) + (list(BOOKKEEPER_PATHS) if bookkeeper else [])
        deleted = [path for path in targets if await store.exists(path)
                   or await store.get_children(path)]
        for path in deleted:
            await store.delete_recursive(path)
    finally:
        await store.close()
    if configuration_url is not None:
        config_store = await md_factory.create_store(configuration_url)
        try:
            path = f"{resources.CLUSTERS}/{cluster}"
            if await config_store.exists(path):
                await config_store.delete_recursive(path)
                deleted.append(path)
        finally:
            await config_store.close()
    return deleted


def add_delete_cluster_metadata_arguments(
        parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("-md", "--metadata-store", "-zk", "--zookeeper", dest="metadata_store",
                        required=True, help="the cluster's metadata store URL, e.g. "
                        "etcd:http://host:2379 (Apache's -zk is accepted as the same)")
    parser.add_argument("-c", "-cluster", "--cluster", required=True, help="cluster name")
    parser.add_argument("-cs", "--configuration-store", "--configuration-metadata-store",
                        dest="configuration_store",
                        help="configuration store URL: also delete the cluster's record there")
    parser.add_argument("--bookkeeper-metadata-service-uri",
                        help="also delete BookKeeper's ledger records (any value: our bookies "
                        "keep them in the same store)")

    def run(args: argparse.Namespace) -> int:
        deleted = asyncio.run(delete_cluster_metadata(
            args.metadata_store, args.cluster, configuration_url=args.configuration_store,
            bookkeeper=args.bookkeeper_metadata_service_uri is not None))
        for path in deleted:
            print(f"deleted {path}")
        print(f"metadata of cluster {args.cluster} deleted")
        return 0

    return run


async def cluster_web_service_url(conf: broker_config.BrokerConfig) -> str:
    store = await md_factory.create_store(conf.metadata_store_url)
    try:
        cluster = await resources.PulsarResources(store).get_cluster(conf.cluster_name)
    finally:
        await store.close()
    return str(cluster.get("serviceUrl") or cluster.get("serviceUrlTls"))


def _call(method: str, url: str) -> Any:
    request = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
    return json.loads(body) if body else None


def compact(web_url: str, topic: naming.TopicName, *, wait_s: float = COMPACTION_WAIT_S) -> str:
    """Ask the broker serving topic to compact it; the final status (SUCCESS or ERROR: ...)."""
    path = (f"{web_url.rstrip('/')}/admin/v2/{topic.domain.value}/"
            f"{urllib.parse.quote(topic.tenant)}/{urllib.parse.quote(topic.namespace)}/"
            f"{urllib.parse.quote(topic.local_name)}/compaction")
    try:
        _call("PUT", path)
    except urllib.error.HTTPError as exc:
        if exc.code != 409:  # 409: a compaction already runs; wait for it.
            raise
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        status = _call("GET", path) or {}
        if status.get("status") == "SUCCESS":
            return "SUCCESS"
        if status.get("status") == "ERROR":
            return f"ERROR: {status.get('lastError')}"
        time.sleep(COMPACTION_POLL_S)
    return f"ERROR: still running after {wait_s:.0f} s"


def add_compact_topic_arguments(
        parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("-c", "--broker-conf", default="conf/broker.conf",
                        help="broker.conf naming metadataStoreUrl and clusterName")
    parser.add_argument("-t", "--topic", required=True, help="topic to compact")

    def run(args: argparse.Namespace) -> int:
        conf = broker_config.load(args.broker_conf)
        if not conf.metadata_store_url:
            raise common_errors.ConfigError(f"{args.broker_conf}: metadataStoreUrl is not set")
        try:
            topic = naming.TopicName.parse(args.topic)
        except naming.InvalidTopicNameError as exc:
            raise common_errors.ConfigError(str(exc)) from exc
        web_url = asyncio.run(cluster_web_service_url(conf))
        try:
            outcome = compact(web_url, topic)
        except urllib.error.HTTPError as exc:
            outcome = f"ERROR: {exc.code} {exc.read().decode(errors='replace')}"
        except OSError as exc:
            outcome = f"ERROR: cannot reach {web_url}: {exc}"
        print(f"compaction of {topic}: {outcome}")
        return 0 if outcome == "SUCCESS" else 1

    return run
