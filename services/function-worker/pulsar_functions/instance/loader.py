"""Loads the user's code and finds the function its className names.

The code is a single .py file, or a .zip/.whl of modules (put on sys.path);
`pyLocation` may name it by URL (http, https, file, or a package of the
brokers' packages management: function://, sink://, source://, see
packages.py), fetched once into the instance's work directory. With neither `py` nor `pyLocation`, the code is
already installed where the instance runs (a module of the image, like
pulsar_functions.examples). className is `module.Name` or just `Name` (then
the module is the file's own). What it names decides how it is called:
a subclass of pulsar.Function (or any class with `process`) is instantiated
once and called as process(input, context); a plain callable is called with
(input) or (input, context), by its number of parameters.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import shutil
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from pulsar_functions import broker_client, config, errors
from pulsar_functions.instance import packages

#: How long fetching pyLocation may take.
FETCH_TIMEOUT_S = 60.0

Invoke = Callable[[Any, Any], Any]


def code_path(function: config.FunctionConfig, work_dir: pathlib.Path,
              client: broker_client.BrokerClientSettings = broker_client.ANONYMOUS,
              ) -> pathlib.Path | None:
    """The local file holding the function's code (fetched from pyLocation if needed);
    None when the config names no code, so className is imported from what is installed.
    client: how to reach the brokers that keep packages."""
    if function.py and pathlib.Path(function.py).exists():
        return pathlib.Path(function.py)
    location = function.py_location or function.py
    if not location:
        return None
    if packages.is_package_url(location):
        return packages.fetch(location, function.class_name, function.web_service_url,
                              work_dir, client)
    parsed = urllib.parse.urlsplit(location)
    if parsed.scheme in ("", "file"):
        path = pathlib.Path(parsed.path if parsed.scheme else location)
        if not path.exists():
            raise errors.FunctionCodeError(f"function code {location} does not exist")
        return path
    if parsed.scheme not in ("http", "https"):
        raise errors.FunctionCodeError(f"cannot fetch function code from {location!r}")
    target = work_dir / (pathlib.PurePosixPath(parsed.path).name or "function.py")
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(location, timeout=FETCH_TIMEOUT_S) as reply, \
                open(target, "wb") as out:
            shutil.copyfileobj(reply, out)
    except OSError as exc:
        raise errors.FunctionCodeError(f"cannot fetch function code from {location}") from exc
    return target


def load(path: pathlib.Path | None, class_name: str) -> Invoke:
    """An invoke(input, context) for the function className names in the code at path
    (or in the installed modules when path is None)."""
    if path is None:
        default_module = None
    elif path.suffix in (".zip", ".whl"):
        sys.path.insert(0, str(path))
        default_module = None
    else:
        sys.path.insert(0, str(path.parent))
        default_module = path.stem
    target = _resolve(class_name, default_module)
    return _invoker(target, class_name)


def find(path: pathlib.Path | None, class_name: str) -> Any:
    """What class_name names in the code at path, once load() made it importable (a schema's
    record class, say); a bare name is looked up in the .py file's own module."""
    default_module = path.stem if path is not None and path.suffix not in (".zip", ".whl") else None
    return _resolve(class_name, default_module)


def _resolve(class_name: str, default_module: str | None) -> Any:
    module_name, _, attribute = class_name.rpartition(".")
    if not module_name:
        if default_module is None:
            raise errors.FunctionCodeError(f"className {class_name!r} names no module")
        module_name = default_module
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise errors.FunctionCodeError(f"cannot import {module_name}: {exc}") from exc
    if hasattr(module, attribute):
        return getattr(module, attribute)
    try:
        # className may name a module holding a `process` function.
        return importlib.import_module(class_name).process
    except (ImportError, AttributeError) as exc:
        raise errors.FunctionCodeError(f"{module_name} has no {attribute}") from exc


def _invoker(target: Any, class_name: str) -> Invoke:
    if inspect.isclass(target):
        try:
            instance = target()
        except Exception as exc:
            raise errors.FunctionCodeError(f"cannot instantiate {class_name}: {exc}") from exc
        process = getattr(instance, "process", None)
        if process is None:
            raise errors.FunctionCodeError(f"{class_name} has no process method")
        return _by_arity(process)
    if callable(target):
        return _by_arity(target)
    raise errors.FunctionCodeError(f"{class_name} is neither a class nor a callable")


def _by_arity(process: Callable[..., Any]) -> Invoke:
    try:
        parameters = inspect.signature(process).parameters.values()
        positional = [p for p in parameters if p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        takes_context = len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL
                                                     for p in parameters)
    except (TypeError, ValueError):
        takes_context = True
    if takes_context:
        return lambda value, context: process(value, context)
    return lambda value, context: process(value)
