"""A Kubernetes API emulator for the operator's e2e tests and benchmark (needs kmock).

kmock's KubernetesEmulator stores objects and serves watches, but keeps no
resourceVersion, uid or generation, which kopf needs (its JSON patches test
resourceVersion). `RealisticEmulator` adds them the way an API server does.
The emulator serves discovery only for the resources it is told about:
the built-in ones (kmock's bundled list) and one entry per CRD in crds/.
Only imported by tests and bench/, never by the operator itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import pathlib
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import attrs
import kmock
import yaml
from aiohttp import web
from kmock._internal import apps, enums

REPO = pathlib.Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"
KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
KUBECTL_TIMEOUT_S = 60.0
#: kmock keeps every request and filters that whole log to route each new one
#: (quadratic over a long run); nothing here asserts on that log, so only the
#: request being routed is kept.
REQUEST_LOG_MAX = 1


@attrs.define(kw_only=True)
class RealisticEmulator(kmock.KubernetesEmulator):
    """Assigns uid, creationTimestamp, generation and resourceVersion like an API server."""

    _version: int = attrs.field(default=1000, init=False)
    #: (group, plural) -> the CRD's scale subresource paths, for `kubectl scale` (see register_crds).
    scales: dict[tuple[str, str], dict[str, str]] = attrs.field(factory=dict, init=False)

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    async def _serve_list(self, request: Any) -> Any:
        # A list carries the collection's resourceVersion, so a watch can start after it.
        result: Any = await super()._serve_list(request)
        result["metadata"]["resourceVersion"] = str(self._version)
        return result

    async def _serve_watch(self, request: Any) -> AsyncIterator[Any]:
        """Like kmock's, but a watch from resourceVersion N replays only objects newer than N."""
        since = str(request.params.get("resourceVersion") or "")
        newer_than = int(since) if since.isdigit() else -1
        async for event in super()._serve_watch(request):
            if isinstance(event, dict) and event.get("type") == "ADDED" and newer_than >= 0:
                version = str(((event.get("object") or {}).get("metadata") or {}).get("resourceVersion") or "")
                if version.isdigit() and int(version) <= newer_than:
                    continue
            yield event

    async def _serve_fetch(self, request: Any) -> Any:
        return self._as_scale(request, await super()._serve_fetch(request))

    async def _serve_update(self, request: Any) -> Any:
        # kmock applies a patch of /scale ({"spec": {"replicas": N}}) to the object itself, which is
        # right where specReplicasPath is .spec.replicas; the answer must then be a Scale.
        return self._as_scale(request, await super()._serve_update(request))

    def _as_scale(self, request: Any, obj: Any) -> Any:
        """The autoscaling/v1 Scale of obj when the request is for its scale subresource (kubectl scale)."""
        resource = request.resource
        paths = self.scales.get((str(getattr(resource, "group", "")), str(getattr(resource, "plural", ""))))
        if request.subresource != "scale" or paths is None or not isinstance(obj, dict):
            return obj
        meta = obj.get("metadata") or {}
        return {
            "apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": _at(obj, paths["specReplicasPath"]) or 0},
            "status": {"replicas": _at(obj, paths["statusReplicasPath"]) or 0,
                       "selector": _at(obj, paths.get("labelSelectorPath", "")) or ""},
        }

    async def _serve_version(self, request: Any) -> Any:
        # kmock names the core group's version "/v1"; kubectl then finds no built-in kind
        # ("the server doesn't have a resource type pod").
        result: Any = await super()._serve_version(request)
        if isinstance(result, dict) and str(result.get("groupVersion", "")).startswith("/"):
            result["groupVersion"] = result["groupVersion"][1:]
        return result

    async def __call__(self, raw_request: Any) -> Any:
        # kmock cannot parse the cluster-wide namespace collection (/api/v1/namespaces);
        # kopf lists and watches it in namespaced mode, so it is served here.
        if raw_request.path.rstrip("/") == "/api/v1/namespaces" and raw_request.method == "GET":
            return await self._serve_namespaces(raw_request)
        return await super().__call__(raw_request)

    async def _serve_namespaces(self, raw_request: Any) -> Any:
        names = sorted({"default"} | {ns for (_, ns, _) in list(self.objects.keys()) if ns})
        if raw_request.query.get("watch") != "true":
            items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "resourceVersion": "1"}}
                     for n in names]
            return web.json_response({"apiVersion": "v1", "kind": "NamespaceList",
                                      "metadata": {"resourceVersion": str(self._version)}, "items": items})
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(raw_request)
        await asyncio.Event().wait()  # no namespace ever changes; ends when the client hangs up
        return response

    async def _handle(self, request: Any) -> Any:
        self._trim_request_log()
        if request.resource is not None and request.action == enums.action.CREATE and isinstance(request.data, dict):
            meta = request.data.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                # As a real server does (kopf names its Events this way); kmock would reuse one name.
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:8]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp",
                            datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            meta["generation"] = 1
            meta["resourceVersion"] = self._next_version()
            if request.namespace and not meta.get("namespace"):
                meta["namespace"] = request.namespace
        elif request.resource is not None and request.action == enums.action.UPDATE and request.name:
            self._stamp_update(request)
        return await super()._handle(request)

    @staticmethod
    def _check_preconditions(data: Any, version: str) -> None:
        """A stale resourceVersion fails like on a real server: 409 for merge patches, 422 for a JSON-patch test."""
        if isinstance(data, dict):
            wanted = (data.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and str(wanted) != version:
                raise kmock.KubernetesError(status=409, reason="Conflict",
                                            message=f"resourceVersion {wanted} is not the current {version}")
        elif isinstance(data, list):
            for op in data:
                if op.get("op") == "test" and op.get("path") == "/metadata/resourceVersion" \
                        and str(op.get("value")) != version:
                    raise kmock.KubernetesError(status=422, reason="Invalid",
                                                message=f"test of resourceVersion {op.get('value')} failed: {version}")

    def _trim_request_log(self) -> None:
        logs = [self._requests] + [p._requests for p in self._payloads if isinstance(getattr(p, "_requests", None), list)]
        for log in logs:
            if len(log) > REQUEST_LOG_MAX:
                del log[:-REQUEST_LOG_MAX]

    def _stamp_update(self, request: Any) -> None:
        key = (request.resource, request.namespace, request.name)
        current = self.objects[key] if key in self.objects else None  # noqa: SIM401 (not a Mapping)
        if current is None or current.deleted:
            return
        meta = current.get("metadata") or {}
        generation = int(meta.get("generation") or 1)
        data = request.data
        self._check_preconditions(data, str(meta.get("resourceVersion")))
        spec_changed = request.subresource is None and (
            (isinstance(data, dict) and "spec" in data)
            or (isinstance(data, list) and any(str(op.get("path", "")).startswith("/spec") for op in data)))
        stamp: dict[str, Any] = {"resourceVersion": self._next_version()}
        if spec_changed:
            stamp["generation"] = generation + 1
        if isinstance(data, dict):
            data.setdefault("metadata", {}).update(stamp)
            # A resourceVersion in a merge patch is a precondition, as on a real server.
        elif isinstance(data, list):
            data.extend({"op": "add", "path": f"/metadata/{k}", "value": v} for k, v in stamp.items())


def _at(obj: dict[str, Any], path: str) -> Any:
    """The value at a CRD JSON path like .spec.replicas (None when absent)."""
    value: Any = obj
    for key in path.strip(".").split(".") if path else []:
        value = value.get(key) if isinstance(value, dict) else None
    return value if path else None


def register_crds(emulator: kmock.KubernetesEmulator, crd_dir: pathlib.Path = CRD_DIR) -> list[dict[str, Any]]:
    """Discovery entries for every CRD in crd_dir; returns the CRD documents."""
    documents = []
    for path in sorted(crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            documents.append(doc)
            spec, names = doc["spec"], doc["spec"]["names"]
            for version in spec["versions"]:
                emulator.resources[f"{spec['group']}/{version['name']}/{names['plural']}"] = kmock.ResourceInfo(
                    kind=names["kind"], singular=names.get("singular"), namespaced=spec["scope"] == "Namespaced",
                    shortnames=names.get("shortNames", []), categories=names.get("categories", []),
                    verbs=["get", "list", "watch", "create", "update", "patch", "delete"],
                    subresources=list(version.get("subresources") or {}),
                )
                scale = (version.get("subresources") or {}).get("scale")
                if scale and scale.get("specReplicasPath") == ".spec.replicas" and isinstance(emulator, RealisticEmulator):
                    emulator.scales[(spec["group"], names["plural"])] = scale
    return documents


@contextlib.asynccontextmanager
async def running_emulator() -> AsyncIterator[tuple[RealisticEmulator, str]]:
    emulator = RealisticEmulator()
    emulator.resources.load_bundled()
    register_crds(emulator)
    async with emulator, apps.Server(emulator) as server:
        yield emulator, str(server.url).rstrip("/")


def write_kubeconfig(path: pathlib.Path, server: str, namespace: str = "default") -> pathlib.Path:
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "emulator", "cluster": {"server": server}}],
        "users": [{"name": "emulator", "user": {"token": "emulator"}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "emulator",
                                                      "namespace": namespace}}],
        "current-context": "emulator",
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def kubectl(kubeconfig: pathlib.Path, *args: str, stdin: str | None = None) -> str:
    """Run kubectl against the emulator; raises with its stderr on failure."""
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(kubeconfig), *args,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None),
                                          KUBECTL_TIMEOUT_S)
    except TimeoutError:
        proc.kill()  # by pid; a kubectl left waiting would outlive the test
        await proc.wait()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {err.decode()}")
    return out.decode()


async def wait_for(condition: Callable[[], Awaitable[bool] | bool], timeout_s: float, what: str) -> None:
    """Poll `condition` until true, failing with `what` after timeout_s."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        result = condition()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(0.05)


class OperatorProcess:
    """`python -m pulsar_operator` as a child process against a kubeconfig."""

    def __init__(self, kubeconfig: pathlib.Path, liveness_port: int, *extra: str, log: pathlib.Path) -> None:
        self.args = [sys.executable, "-m", "pulsar_operator", "--liveness-host", "127.0.0.1",
                     "--liveness-port", str(liveness_port), *extra]
        self.kubeconfig = kubeconfig
        self.liveness_port = liveness_port
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        log = self.log.open("ab")  # handed to the child; our copy is closed right after the spawn
        try:
            self.proc = await asyncio.create_subprocess_exec(*self.args, env=env, stdout=log, stderr=log,
                                                             start_new_session=True)
        finally:
            log.close()

    async def healthy(self) -> bool:
        if self.proc is not None and self.proc.returncode is not None:
            raise RuntimeError(f"operator exited with {self.proc.returncode}; log: {self.log.read_text()[-3000:]}")
        try:
            async with aiohttp.ClientSession() as session, session.get(
                f"http://127.0.0.1:{self.liveness_port}/healthz", timeout=aiohttp.ClientTimeout(total=2)
            ) as resp:
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 10 s; by pid only."""
        if self.proc is None or self.proc.returncode is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()
