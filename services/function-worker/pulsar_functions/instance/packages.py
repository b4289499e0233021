"""Fetches function code named by a package URL (`function://tenant/ns/name@version`,
`sink://`, `source://`) from the brokers' packages management service.

The instance downloads `GET /admin/v3/packages/<type>/<tenant>/<ns>/<name>/<version>`
from the function's `webServiceUrl` (the worker sets it to its
pulsarWebServiceUrl), with the same credentials and TLS trust it uses for
brokers. A package has no file name of its own, so the file is named after
the module className names (`exclamation.ExclamationFunction` ->
`exclamation.py`), or `.zip` when the content is a zip (a .zip or .whl
package), which is what the loader needs to import it.
"""

from __future__ import annotations

import pathlib
import shutil
import urllib.error
import urllib.parse
import urllib.request

from pulsar_functions import broker_client, errors

TYPES = ("function", "sink", "source")
DEFAULT_WEB_SERVICE_URL = "http://localhost:8080"
#: How long downloading a package may take.
FETCH_TIMEOUT_S = 60.0
_ZIP_MAGIC = b"PK\x03\x04"


def is_package_url(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme.lower() in TYPES


def rest_path(location: str) -> str:
    """`/admin/v3/packages/...` of a package URL (FunctionCodeError when malformed)."""
    type_, _, rest = location.partition("://")
    path, _, version = rest.partition("@")
    parts = path.split("/")
    if len(parts) != 3 or not all(parts) or "@" in version:
        raise errors.FunctionCodeError(f"invalid package URL {location!r}")
    segments = [type_.lower(), *parts, version or "latest"]
    return "/admin/v3/packages/" + "/".join(urllib.parse.quote(s, safe="") for s in segments)


def fetch(location: str, class_name: str, web_service_url: str | None, work_dir: pathlib.Path,
          client: broker_client.BrokerClientSettings) -> pathlib.Path:
    base = (web_service_url or DEFAULT_WEB_SERVICE_URL).rstrip("/")
    request = urllib.request.Request(base + rest_path(location), headers=client.http_headers())
    context = client.http_ssl_context() if base.startswith("https:") else None
    work_dir.mkdir(parents=True, exist_ok=True)
    partial = work_dir / "package.download"
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S, context=context) as reply, \
                open(partial, "wb") as out:
            shutil.copyfileobj(reply, out)
    except urllib.error.HTTPError as exc:
        raise errors.FunctionCodeError(
            f"cannot download {location} from {base}: HTTP {exc.code} "
            f"{exc.read().decode(errors='replace')}") from exc
    except OSError as exc:
        raise errors.FunctionCodeError(f"cannot download {location} from {base}: {exc}") from exc
    with open(partial, "rb") as source:
        is_zip = source.read(4) == _ZIP_MAGIC
    module = class_name.rpartition(".")[0].partition(".")[0] or "function"
    target = work_dir / (f"{module}.zip" if is_zip else f"{module}.py")
    partial.replace(target)
    return target
