"""Failure domains of a cluster and bookie rack placement: Apache's REST paths and CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from pulsar_broker import testing as broker_testing

if TYPE_CHECKING:
    from conftest import Http


def admin(web_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                          env={**os.environ, "PULSAR_ADMIN_URL": web_url},
                          capture_output=True, text=True, timeout=60, check=False)


def test_failure_domains_are_created_listed_updated_and_deleted(
        standalone: broker_testing.StandaloneProcess, http: Http, unique: str) -> None:
    url = standalone.web_url
    east, west = f"east-{unique}", f"west-{unique}"
    created = admin(url, "clusters", "create-failure-domain", "standalone", "--domain-name", east,
                    "--broker-list", "b1:8080,b2:8080")
    assert created.returncode == 0, created.stderr
    assert http.get(f"/admin/v2/clusters/standalone/failureDomains/{east}").json() == {
        "brokers": ["b1:8080", "b2:8080"]}
    # A broker belongs to one domain only.
    taken = http.post(f"/admin/v2/clusters/standalone/failureDomains/{west}",
                      {"brokers": ["b2:8080"]})
    assert taken.status == 409
    assert admin(url, "clusters", "update-failure-domain", "standalone", "--domain-name", east,
                 "--broker-list", "b1:8080").returncode == 0
    assert admin(url, "clusters", "create-failure-domain", "standalone", "--domain-name", west,
                 "--broker-list", "b2:8080").returncode == 0
    listed = json.loads(admin(url, "clusters", "list-failure-domains", "standalone").stdout)
    assert listed[east] == {"brokers": ["b1:8080"]} and listed[west] == {"brokers": ["b2:8080"]}
    assert admin(url, "clusters", "delete-failure-domain", "standalone",
                 "--domain-name", west).returncode == 0
    assert http.get(f"/admin/v2/clusters/standalone/failureDomains/{west}").status == 404
    assert http.post(f"/admin/v2/clusters/standalone/failureDomains/{west}",
                     {"brokers": "b3"}).status == 400
    assert http.get("/admin/v2/clusters/nowhere/failureDomains").status == 404
    admin(url, "clusters", "delete-failure-domain", "standalone", "--domain-name", east)


def test_bookie_rack_placement_is_stored_per_group(
        standalone: broker_testing.StandaloneProcess, http: Http, unique: str) -> None:
    url = standalone.web_url
    bookie = f"bk-{unique}:3181"
    assert http.get("/admin/v2/bookies/all").json() == {"bookies": []}  # embedded: unregistered
    assert admin(url, "bookies", "set-bookie-rack", "-b", bookie, "-r", "/rack-1",
                 "--hostname", "bk.local").returncode == 0
    got = json.loads(admin(url, "bookies", "get-bookie-rack", "-b", bookie).stdout)
    assert got == {"rack": "/rack-1", "hostname": "bk.local"}
    assert admin(url, "bookies", "set-bookie-rack", "-b", bookie, "-r", "/rack-2",
                 "-g", "analytics").returncode == 0
    placement = json.loads(admin(url, "bookies", "racks-placement").stdout)
    assert placement["analytics"][bookie] == {"rack": "/rack-2"}
    assert bookie not in placement.get("default", {})
    assert admin(url, "bookies", "delete-bookie-rack", "-b", bookie).returncode == 0
    missing = admin(url, "bookies", "get-bookie-rack", "-b", bookie)
    assert missing.returncode == 1 and "not found" in missing.stderr
