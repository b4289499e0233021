"""The worker's keys in the metadata store and the JSON records under them.

    /functions/metadata/<tenant>/<namespace>/<name>   FunctionRecord
    /functions/packages/<tenant>/<namespace>/<name>/<version>   the code's bytes
    /functions/workers/<worker id>        ephemeral: a live worker
    /functions/leader                     the leader's election key
    /functions/assignments                instance key -> worker id (written by the leader)
    /functions/runtime/<t>/<ns>/<name>/<id>   ephemeral: where an instance runs now
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pulsar_functions import config

ROOT = "/functions"
METADATA = f"{ROOT}/metadata"
PACKAGES = f"{ROOT}/packages"
WORKERS = f"{ROOT}/workers"
LEADER = f"{ROOT}/leader"
ASSIGNMENTS = f"{ROOT}/assignments"
RUNTIME = f"{ROOT}/runtime"

RUNNING = "RUNNING"
STOPPED = "STOPPED"


def metadata_path(fqfn: str) -> str:
    return f"{METADATA}/{fqfn}"


def package_path(fqfn: str, version: int) -> str:
    return f"{PACKAGES}/{fqfn}/{version}"


def runtime_path(fqfn: str, instance_id: int) -> str:
    return f"{RUNTIME}/{fqfn}/{instance_id}"


@dataclasses.dataclass(frozen=True)
class InstanceControl:
    """What the admin asked of one instance: run or not, and restarts (an epoch)."""

    state: str = RUNNING
    restart_epoch: int = 0


@dataclasses.dataclass(frozen=True)
class FunctionRecord:
    function: config.FunctionConfig
    version: int = 0
    create_time_ms: int = 0
    #: File name of the uploaded code (kept under package_path), None when pyLocation names it.
    package_filename: str | None = None
    instances: tuple[InstanceControl, ...] = ()

    def control(self, instance_id: int) -> InstanceControl:
        if instance_id < len(self.instances):
            return self.instances[instance_id]
        return InstanceControl()

    def encode(self) -> bytes:
        return json.dumps({
            "config": self.function.to_json(), "version": self.version,
            "createTimeMs": self.create_time_ms, "packageFilename": self.package_filename,
            "instances": [{"state": c.state, "restartEpoch": c.restart_epoch}
                          for c in self.instances],
        }).encode()

    @classmethod
    def decode(cls, data: bytes) -> FunctionRecord:
        document: dict[str, Any] = json.loads(data)
        return cls(config.parse(document["config"]), int(document["version"]),
                   int(document.get("createTimeMs", 0)), document.get("packageFilename"),
                   tuple(InstanceControl(i["state"], int(i["restartEpoch"]))
                         for i in document.get("instances", [])))
