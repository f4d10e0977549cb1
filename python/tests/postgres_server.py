"""A throwaway PostgreSQL server for the tests, as test/helpers/postgres-server.ts starts one:
``initdb`` into a temp folder, listening only on a Unix socket in a folder of its own, run as
``nobody`` when the tests run as root (PostgreSQL refuses to run as root). Each test gets a fresh
database on it, a copy of a template that holds sessiondb's schema."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional
from urllib.parse import quote

# A database holding sessiondb's schema, which every test's database copies.
TEMPLATE = "sdb_template"
# Root cannot run PostgreSQL: the server runs as `nobody` then, in folders it owns.
RUN_AS: Dict[str, object] = {"user": 65534, "group": 65534, "extra_groups": []} if os.getuid() == 0 else {}


def postgres_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<major>/bin``, where Debian installs the server binaries.
    Missing binaries fail the PostgreSQL tests (CI installs them), as they fail the TS ones."""
    root = Path("/usr/lib/postgresql")
    majors = [d for d in root.iterdir() if (d / "bin" / "initdb").exists()] if root.is_dir() else []
    if not majors:
        raise RuntimeError(
            "PostgreSQL's server binaries are missing (/usr/lib/postgresql/*/bin/initdb): "
            "apt-get install -y postgresql"
        )
    newest = max(majors, key=lambda d: int(d.name) if d.name.isdigit() else -1)
    return newest / "bin"


class PgServer:
    def __init__(self, bin_dir: Path, root: Path) -> None:
        self._bin = bin_dir
        self._root = root
        self.socket_dir = root / "s"
        self._databases = 0

    @classmethod
    def start(cls, cli: Path) -> "PgServer":
        """initdb, then start; returns once the server accepts connections (fsync off: a crash of
        the machine loses nothing a test needs). ``cli``: sessiondb's built CLI, which creates
        the template's schema."""
        server = cls(postgres_bin_dir(), Path(tempfile.mkdtemp(prefix="sdbpg-", dir="/tmp")))
        try:
            server.socket_dir.mkdir()
            if RUN_AS:
                for path in (server._root, server.socket_dir):
                    os.chown(path, 65534, 65534)
            data = str(server._root / "data")
            server._run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                                   "--locale=C.UTF-8", "--no-sync"])
            server._run("pg_ctl", ["-D", data, "-l", str(server._root / "log"), "-w", "-t", "60", "start", "-o",
                                   f"-k {server.socket_dir} -c listen_addresses='' -c fsync=off "
                                   "-c max_connections=300 -c shared_buffers=32MB"])
            # Every database created later is a copy of template1, so each gets pg_trgm.
            server.psql("template1", "CREATE EXTENSION IF NOT EXISTS pg_trgm")
            server._prepare_template(cli)
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, tool: str, args: List[str]) -> None:
        result = subprocess.run([str(self._bin / tool), *args], cwd="/tmp", capture_output=True, text=True, **RUN_AS)
        if result.returncode != 0:
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stderr}{result.stdout}")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: the server ends every connection and comes back; returns once
        it accepts connections again."""
        self._run("pg_ctl", ["-D", str(self._root / "data"), "-l", str(self._root / "log"), "-m", "fast", "-w",
                             "-t", "60", "restart"])

    def url(self, database: str) -> str:
        """The URL of a database on this server, in the Unix-socket form."""
        return f"postgresql:///{database}?host={quote(str(self.socket_dir), safe='')}&user=postgres"

    def psql(self, database_or_url: str, sql: str) -> str:
        """Runs SQL with psql; returns its unaligned, tuples-only output."""
        target = database_or_url if "://" in database_or_url else self.url(database_or_url)
        return run_psql(self._bin, target, sql)

    def _prepare_template(self, cli: Path) -> None:
        """The schema made by sessiondb itself once (its first open migrates the database), so
        each test does not pay for creating its indexes."""
        self.psql("postgres", f"CREATE DATABASE {TEMPLATE}")
        subprocess.run(["node", str(cli), "--db", self.url(TEMPLATE), "stats"], check=True,
                       capture_output=True, cwd="/tmp")

    def create_database(self) -> str:
        """A new database holding sessiondb's schema; its URL."""
        self._databases += 1
        name = f"t{os.getpid()}_{self._databases}"
        self.psql("postgres", f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self._root / "data" / "postmaster.pid").exists():
                self._run("pg_ctl", ["-D", str(self._root / "data"), "-m", "immediate", "-w", "stop"])
        finally:
            shutil.rmtree(self._root, ignore_errors=True)


def run_psql(bin_dir: Optional[Path], url: str, sql: str) -> str:
    """psql on a database's URL (psql takes libpq's URIs); its unaligned, tuples-only output."""
    psql = str((bin_dir or postgres_bin_dir()) / "psql")
    result = subprocess.run([psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url],
                            input=sql, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"psql failed: {result.stderr}")
    return result.stdout
