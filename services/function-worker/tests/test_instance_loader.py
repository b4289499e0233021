"""Where an instance finds the function's code: a file, a URL it downloads, or a module installed in the image."""

from __future__ import annotations

import functools
import http.server
import pathlib
import threading
import uuid
from collections.abc import Iterator

import pytest
from pulsar_functions import config, errors
from pulsar_functions.instance import loader

CODE = "def shout(value):\n    return value.upper()\n"


def function(**keys: str) -> config.FunctionConfig:
    return config.parse({"name": "fn", "inputs": ["in"], "className": keys.pop("className", "x.y"), **keys})


@pytest.fixture
def served(tmp_path: pathlib.Path) -> Iterator[tuple[str, pathlib.Path]]:
    """(base URL, directory it serves) of a local HTTP server, the way a package URL is hosted."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_a_py_location_url_is_downloaded_into_the_work_dir_and_loaded(
    tmp_path: pathlib.Path, served: tuple[str, pathlib.Path]
) -> None:
    url, root = served
    module = f"downloaded_{uuid.uuid4().hex[:8]}"
    (root / f"{module}.py").write_text(CODE)
    work = tmp_path / "work"
    path = loader.code_path(function(className=f"{module}.shout", pyLocation=f"{url}/{module}.py",
                                     py=f"/nowhere/{module}.py"), work)
    assert path == work / f"{module}.py" and path.read_text() == CODE
    assert loader.load(path, f"{module}.shout")("hey", None) == "HEY"


def test_a_py_file_that_exists_wins_over_the_url(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "here.py"
    file.write_text(CODE)
    assert loader.code_path(function(py=str(file), pyLocation="http://127.0.0.1:1/x.py"), tmp_path) == file


def test_an_unreachable_url_or_a_missing_file_is_a_code_error(tmp_path: pathlib.Path,
                                                              served: tuple[str, pathlib.Path]) -> None:
    url, _ = served
    with pytest.raises(errors.FunctionCodeError, match="cannot fetch"):
        loader.code_path(function(pyLocation=f"{url}/missing.py"), tmp_path / "work")
    with pytest.raises(errors.FunctionCodeError, match="does not exist"):
        loader.code_path(function(py=str(tmp_path / "missing.py")), tmp_path)
    with pytest.raises(errors.FunctionCodeError, match="cannot download function://"):
        loader.code_path(function(pyLocation="function://public/default/pkg@1",
                                  webServiceUrl="http://127.0.0.1:1"), tmp_path)
    with pytest.raises(errors.FunctionCodeError, match="HTTP 404"):
        loader.code_path(function(pyLocation="function://public/default/pkg@1",
                                  webServiceUrl=url), tmp_path)


def test_a_package_url_is_downloaded_from_the_web_service_and_named_after_the_module(
        tmp_path: pathlib.Path, served: tuple[str, pathlib.Path]) -> None:
    url, root = served
    module = f"packaged_{uuid.uuid4().hex[:8]}"
    stored = root / "admin/v3/packages/function/public/default/shouter/v2"
    stored.parent.mkdir(parents=True)
    stored.write_text(CODE)
    work = tmp_path / "work"
    path = loader.code_path(function(className=f"{module}.shout", webServiceUrl=url,
                                     pyLocation="function://public/default/shouter@v2"), work)
    assert path == work / f"{module}.py" and path.read_text() == CODE
    assert loader.load(path, f"{module}.shout")("hey", None) == "HEY"


def test_without_py_or_py_location_the_class_is_imported_from_the_installed_modules(tmp_path: pathlib.Path) -> None:
    class_name = "pulsar_functions.examples.exclamation_function.ExclamationFunction"
    assert loader.code_path(function(className=class_name), tmp_path) is None
    assert loader.load(None, class_name)("hello", None) == "hello!"
    with pytest.raises(errors.FunctionCodeError, match="cannot import"):
        loader.load(None, "not_installed_anywhere.Function")
