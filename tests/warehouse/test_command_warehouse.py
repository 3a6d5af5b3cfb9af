"""The one connection of a writing command (`CommandWarehouse`): opened once, read-only until a write is
asked for, writable from then on, and opened in a thread while the command imports Dagster."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.errors import WarehouseError
from pipelines.warehouse import SCHEMA_VERSION, CommandWarehouse, scalar
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse


def _command(tmp_path: Path, warehouse: str = "warehouse/wastewatch.duckdb") -> CommandWarehouse:
    config = load_config(write_config(tmp_path, f"warehouse: {warehouse}\n"))
    return CommandWarehouse(config)


def _writable(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        con.execute("create table probe as select 1")
    except duckdb.Error:
        return False
    return True


def test_no_warehouse_yet_reads_as_none_and_a_write_creates_it(tmp_path: Path) -> None:
    command = _command(tmp_path)
    try:
        assert command.reader() is None
        con = command.writer()
        assert scalar(con, "select max(version) from schema_version") == SCHEMA_VERSION
        # every later read and write goes through the same connection
        assert command.reader() is con and command.writer() is con
    finally:
        command.close()
    assert not (tmp_path / "warehouse" / "wastewatch.duckdb.wal").exists()  # closed, checkpointed


def test_reads_open_read_only_and_a_write_reopens_writable(tmp_path: Path) -> None:
    new_warehouse(tmp_path / "warehouse" / "wastewatch.duckdb").close()
    command = _command(tmp_path)
    try:
        reader = command.reader()
        assert reader is not None and command.reader() is reader
        assert not _writable(reader)
        writer = command.writer()
        assert writer is not reader and _writable(writer)
        with pytest.raises(duckdb.ConnectionException):  # the read-only connection was closed first
            reader.execute("select 1")
    finally:
        command.close()


def test_a_connection_opened_in_the_background_is_the_one_writer_and_reader_give(tmp_path: Path) -> None:
    command = _command(tmp_path)
    try:
        command.open_soon()
        command.open_soon()  # opening already: one connection, not two
        con = command.reader()  # waits for the thread
        assert con is not None and _writable(con)
        assert command.writer() is con
    finally:
        command.close()
    # closed with the command: another process (here, a new connection) can open the file
    duckdb.connect(str(tmp_path / "warehouse" / "wastewatch.duckdb")).close()


def test_a_background_open_that_failed_raises_where_the_connection_is_asked_for(tmp_path: Path) -> None:
    command = _command(tmp_path)
    (tmp_path / "warehouse").mkdir()  # after the config's check, as another process might have written it
    (tmp_path / "warehouse" / "wastewatch.duckdb").write_text("not a DuckDB file", encoding="utf-8")
    command.open_soon()
    with pytest.raises(WarehouseError, match="not a DuckDB file"):
        command.writer()
    command.close()


def test_closing_waits_for_a_background_open_and_closes_what_it_opened(tmp_path: Path) -> None:
    command = _command(tmp_path)
    command.open_soon()
    command.close()
    duckdb.connect(str(tmp_path / "warehouse" / "wastewatch.duckdb")).close()
