"""Finding the daemon as every client does (docs/daemon.md "Finding the daemon, and trusting it"): a
file opened by another name than the one the daemon serves it by reaches that daemon through the
file's identity socket, and a daemon serving another file is not taken for it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import AsyncFacade
from sessiondb import SessionDB, UnavailableError
from sessiondb.paths import identity_socket_path


@pytest.mark.parametrize("make", [SessionDB, AsyncFacade], ids=["sync", "async"])
def test_a_hard_link_of_a_served_file_reaches_its_daemon(start_daemon, tmp: Path, make):
    daemon = start_daemon(tmp / "state.db")
    alias = tmp / "alias.db"
    os.link(daemon.db, alias)
    assert identity_socket_path(str(alias)) == identity_socket_path(str(daemon.db))
    assert not Path(f"{alias}.sock").exists()  # only the identity socket can lead there

    through_alias = make(alias, autostart=False)
    try:
        through_alias.create_session("s1", "cli")
        through_alias.append_message("s1", "user", "written through the hard link")
    finally:
        getattr(through_alias, "shutdown", through_alias.close)()  # AsyncFacade also stops its loop

    with SessionDB(daemon.db, autostart=False) as served:
        assert [m["content"] for m in served.get_messages("s1")] == ["written through the hard link"]
    # The daemon wrote under its own name: no second WAL beside the alias, no daemon started for it.
    assert not Path(f"{alias}-wal").exists()
    assert not Path(f"{alias}.sock").exists()


def test_an_explicit_socket_is_the_only_candidate(start_daemon, tmp: Path):
    daemon = start_daemon(tmp / "state.db")
    alias = tmp / "alias.db"
    os.link(daemon.db, alias)
    with pytest.raises(UnavailableError):
        SessionDB(alias, socket_path=tmp / "elsewhere.sock", autostart=False)

