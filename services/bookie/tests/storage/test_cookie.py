"""Cookies: a bookie refuses directories that were emptied, belong elsewhere, or changed as a set."""

from __future__ import annotations

import pathlib
import shutil

import pytest
from pulsar_bookie import errors
from pulsar_bookie.storage import engine

from .conftest import KEY, MakeConf


async def _run_once(conf: object) -> str:
    bookie = engine.LedgerStorageEngine(conf)  # type: ignore[arg-type]
    await bookie.start()
    await bookie.add_entry(1, 0, -1, b"x", KEY)
    instance = bookie.instance_id
    await bookie.close()
    return instance


async def test_first_start_writes_a_cookie_in_every_directory_and_restart_accepts_it(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    conf = make_conf(ledgerDirectories=(str(tmp_path / "l1"), str(tmp_path / "l2")))
    instance = await _run_once(conf)
    for name in ("journal", "l1", "l2"):
        assert f"instanceId={instance}" in (tmp_path / name / "current" / "VERSION").read_text()
    assert await _run_once(conf) == instance


async def test_an_emptied_directory_is_refused(make_conf: MakeConf, tmp_path: pathlib.Path) -> None:
    await _run_once(make_conf())
    shutil.rmtree(tmp_path / "journal")
    (tmp_path / "journal").mkdir()
    with pytest.raises(errors.CookieMismatchError):
        await engine.LedgerStorageEngine(make_conf()).start()


async def test_a_foreign_directory_is_refused(make_conf: MakeConf, tmp_path: pathlib.Path) -> None:
    await _run_once(make_conf())
    other = tmp_path / "other"
    await _run_once(
        make_conf(
            journalDirectory=str(other / "journal"), ledgerDirectories=(str(other / "ledgers"),)
        )
    )
    shutil.rmtree(tmp_path / "ledgers")
    shutil.copytree(other / "ledgers", tmp_path / "ledgers")
    with pytest.raises(errors.CookieMismatchError):
        await engine.LedgerStorageEngine(make_conf()).start()


async def test_an_expected_instance_id_must_match(make_conf: MakeConf) -> None:
    await _run_once(make_conf())
    with pytest.raises(errors.CookieMismatchError):
        await engine.LedgerStorageEngine(make_conf(), expected_instance_id="someone-else").start()


async def test_adding_or_removing_a_directory_is_refused(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    two = make_conf(ledgerDirectories=(str(tmp_path / "l1"), str(tmp_path / "l2")))
    await _run_once(two)
    with pytest.raises(errors.CookieMismatchError):
        await engine.LedgerStorageEngine(
            make_conf(ledgerDirectories=(str(tmp_path / "l1"),))
        ).start()
    with pytest.raises(errors.CookieMismatchError):
        three = (str(tmp_path / "l1"), str(tmp_path / "l2"), str(tmp_path / "l3"))
        await engine.LedgerStorageEngine(make_conf(ledgerDirectories=three)).start()
    assert await _run_once(two)  # the refusals changed nothing


async def test_data_without_a_cookie_is_refused(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    (tmp_path / "ledgers" / "current").mkdir(parents=True)
    (tmp_path / "ledgers" / "current" / "1.log").write_bytes(b"old data")
    with pytest.raises(errors.CookieMismatchError):
        await engine.LedgerStorageEngine(make_conf()).start()
