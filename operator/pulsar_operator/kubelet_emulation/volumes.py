"""A pod's volumes as host directories, and the mounts that put them where containers look.

ConfigMap and Secret volumes are files written under the pod's directory and
kept up to date while the pod runs (the kubelet refreshes them too);
emptyDir is a directory of the pod; a persistentVolumeClaim is the claim's
directory in `ClaimStore`, which outlives pods and is removed only with the
claim; hostPath is the host path itself. Inside the pod's mount namespace
each volumeMount becomes a bind mount over its mountPath (subPath and
readOnly included), see pods.namespace_argv.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
from typing import Any

from pulsar_operator.kubelet_emulation import podspec


@dataclasses.dataclass(frozen=True)
class Mount:
    source: pathlib.Path
    target: str
    read_only: bool


class ClaimStore:
    """One directory per PersistentVolumeClaim (namespace/name), the harness's storage provisioner."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root

    def path(self, namespace: str, name: str) -> pathlib.Path:
        return self.root / namespace / name

    def provision(self, namespace: str, name: str) -> pathlib.Path:
        path = self.path(namespace, name)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def provisioned(self) -> list[tuple[str, str]]:
        if not self.root.is_dir():
            return []
        return [(ns.name, claim.name) for ns in self.root.iterdir() for claim in ns.iterdir()]

    def release(self, namespace: str, name: str) -> None:
        """The claim is gone: its data goes with it (a Delete reclaim policy)."""
        shutil.rmtree(self.path(namespace, name), ignore_errors=True)


def _write_if_changed(path: pathlib.Path, data: bytes, mode: int) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_bytes(data)
    scratch.chmod(mode)
    os.replace(scratch, path)


class PodVolumes:
    def __init__(self, pod: dict[str, Any], pod_dir: pathlib.Path, claims: ClaimStore,
                 lookup: podspec.Lookup) -> None:
        self.pod = pod
        self.namespace = str(pod["metadata"].get("namespace") or "default")
        self.root = pod_dir / "volumes"
        self.claims = claims
        self.lookup = lookup
        self.paths: dict[str, pathlib.Path] = {}
        self._written: dict[str, set[str]] = {}

    @property
    def _volumes(self) -> list[dict[str, Any]]:
        return list((self.pod.get("spec") or {}).get("volumes") or [])

    def prepare(self) -> None:
        """Make every volume ready; raises podspec.ConfigError for what is missing (retry later)."""
        for volume in self._volumes:
            self.paths[volume["name"]] = self._prepare(volume)

    def refresh(self) -> None:
        """Bring ConfigMap and Secret volumes up to date with their objects."""
        for volume in self._volumes:
            if ("configMap" in volume or "secret" in volume) and volume["name"] in self.paths:
                try:
                    self._prepare(volume)
                except podspec.ConfigError:
                    pass  # a deleted ConfigMap leaves the last files in place, as the kubelet does

    def _prepare(self, volume: dict[str, Any]) -> pathlib.Path:
        name = str(volume["name"])
        if "persistentVolumeClaim" in volume:
            claim = str(volume["persistentVolumeClaim"]["claimName"])
            if self.lookup("PersistentVolumeClaim", self.namespace, claim) is None:
                raise podspec.ConfigError(f"persistentvolumeclaim {claim} not found")
            return self.claims.provision(self.namespace, claim)
        if "hostPath" in volume:
            return pathlib.Path(str(volume["hostPath"]["path"]))
        path = self.root / name
        if "emptyDir" in volume:
            path.mkdir(parents=True, exist_ok=True)
        elif "configMap" in volume or "secret" in volume:
            self._write_keys(volume, path)
        else:
            raise podspec.ConfigError(f"volume {name}: unsupported type {sorted(set(volume) - {'name'})}")
        return path

    def _write_keys(self, volume: dict[str, Any], path: pathlib.Path) -> None:
        kind, source = ("ConfigMap", volume["configMap"]) if "configMap" in volume else ("Secret", volume["secret"])
        obj_name = str(source.get("name") or source.get("secretName") or "")
        obj = self.lookup(kind, self.namespace, obj_name)
        if obj is None:
            if source.get("optional"):
                path.mkdir(parents=True, exist_ok=True)
                return
            raise podspec.ConfigError(f"{kind} {obj_name} not found")
        data = podspec.config_bytes(kind, obj)
        mode = int(source.get("defaultMode", 0o644))
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        written = set()
        for item in items:
            if item["key"] in data:
                _write_if_changed(path / item["path"], data[item["key"]], int(item.get("mode", mode)))
                written.add(str(item["path"]))
        for stale in self._written.get(volume["name"], set()) - written:
            (path / stale).unlink(missing_ok=True)
        self._written[volume["name"]] = written
        path.mkdir(parents=True, exist_ok=True)

    def mounts(self, container: dict[str, Any]) -> list[Mount]:
        """The container's bind mounts, parents before children."""
        result = []
        for mount in container.get("volumeMounts") or []:
            source = self.paths.get(mount["name"])
            if source is None:
                raise podspec.ConfigError(f"volumeMount {mount['name']} names no volume of the pod")
            if mount.get("subPath"):
                source = source / mount["subPath"]
            result.append(Mount(source, str(mount["mountPath"]), bool(mount.get("readOnly"))))
        return sorted(result, key=lambda m: m.target.count("/"))
