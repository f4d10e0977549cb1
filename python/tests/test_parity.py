"""Python and TypeScript agree: the socket path derived for a table of database paths (with `~`)
and of PostgreSQL URLs, the default database (Hermes' home as upstream's get_hermes_home() finds
it, a leading `~` refused with the same message), and the reference's pure helpers (sanitize_title,
_sanitize_fts5_query, _contains_cjk)."""
from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from sessiondb import InvalidArgumentError, SessionDB, TitleTooLongError
from sessiondb.paths import default_database_path, default_socket_path, real_database_path
from sessiondb.pg_url import pg_identity, pg_password, pg_password_env, url_without_secrets


def node(script: str, payload, env=None):
    """Runs an ES module with `payload` as JSON on stdin; returns what it prints as JSON."""
    result = subprocess.run(
        ["node", "--input-type=module", "-e", script], input=json.dumps(payload), capture_output=True,
        text=True, check=True, cwd=os.getcwd(), env=env,
    )
    return json.loads(result.stdout)


SOCKET_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ defaultSocketPath, locateDatabase, defaultDatabasePath }} from "{REPO}/dist/src/engine-kind.js";
const paths = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify({{
  sockets: paths.map((p) => defaultSocketPath(p)),
  reals: paths.map((p) => locateDatabase(p).path),
  fallback: defaultDatabasePath(),
}}));
"""


def test_socket_paths_match_the_typescript_derivation(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    real_dir = tmp / "real"
    real_dir.mkdir()
    (real_dir / "state.db").write_bytes(b"")
    (tmp / "link.db").symlink_to(real_dir / "state.db")
    (tmp / "linkdir").symlink_to(real_dir)
    unicode_dir = tmp / "données-数据"
    unicode_dir.mkdir()
    deep = tmp / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    home = tmp / "home"
    (home / "sub").mkdir(parents=True)
    (home / "state.db").write_bytes(b"")
    monkeypatch.chdir(tmp)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"), HOME=str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp / "run"))
    monkeypatch.setenv("HOME", str(home))
    me = pwd.getpwuid(os.geteuid()).pw_name
    env.pop("SESSIONDB_PATH", None)
    monkeypatch.delenv("SESSIONDB_PATH", raising=False)
    paths = [
        str(real_dir / "state.db"),            # plain, existing
        str(tmp / "link.db"),                  # a symlink to the file
        str(tmp / "linkdir" / "state.db"),     # through a symlinked directory
        str(tmp / "linkdir" / "new.db"),       # not existing yet, in a symlinked directory
        "real/state.db",                       # relative
        "./real/../real/state.db",             # relative with dot segments
        str(unicode_dir / "état.db"),          # non-ASCII
        str(deep / "state.db"),                # too long for a socket beside it: hashed
        str(deep / "données-状態.db"),         # long and non-ASCII
        str(tmp / "missing-dir" / "x.db"),     # a directory that does not exist
        str(real_dir) + "/",                   # a trailing slash
        "~/state.db",                          # in the home directory ($HOME)
        "~",                                   # the home directory itself
        f"~{me}/sub/x.db",                     # ~ with this user's own name
        "~//sub/../state.db",                  # a doubled slash and dot segments after ~
        "~nobody/x.db",                        # another user's ~: left as it is, relative
        "sub/~/x.db",                          # a ~ that does not lead
    ]
    ts = node(SOCKET_SCRIPT, paths, env=env)
    assert [default_socket_path(p) for p in paths] == ts["sockets"]
    assert [real_database_path(p) for p in paths] == ts["reals"]
    assert ts["sockets"][1] == ts["sockets"][0] == ts["sockets"][2]
    assert ts["sockets"][7].startswith(str(tmp / "run" / "sessiondb") + "/")
    # A ~ is a name like any other (the reference's sqlite3.connect takes it so): never expanded.
    assert ts["reals"][11] == ts["reals"][14] == str(tmp / "~" / "state.db")
    assert ts["reals"][12] == str(tmp / "~")
    assert ts["reals"][15] == str(tmp / "~nobody" / "x.db")
    assert default_database_path() == ts["fallback"]


URL_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ defaultSocketPath, defaultDatabasePath }} from "{REPO}/dist/src/engine-kind.js";
import {{ pgIdentity, pgPassword, pgUrlWithoutSecrets }} from "{REPO}/dist/src/database-location.js";
const {{ urls, defaults }} = JSON.parse(readFileSync(0, "utf8"));
const withEnv = (extra) => ({{ ...process.env, ...extra }});
console.log(JSON.stringify({{
  urls: urls.map(([url, extra]) => [defaultSocketPath(url, withEnv(extra)), pgIdentity(url, withEnv(extra))]),
  started: urls.map(([url]) => [pgUrlWithoutSecrets(url), pgPassword(url)]),
  defaults: defaults.map((extra) => defaultDatabasePath(withEnv(extra))),
}}));
"""

# (URL, PG* variables beside it): every form libpq takes that the TypeScript side reads.
URLS = [
    ("postgresql://me:secret@db.example:5433/hermes", {}),             # with a password
    ("postgres://me@db.example:5433/hermes", {}),                       # the same without it
    ("postgres://db.example/hermes", {"PGUSER": "envuser"}),            # user from the environment
    ("postgres://db.example/hermes", {}),                               # user: the login name
    ("postgres:///hermes", {"PGHOST": "/run/pg", "PGPORT": "5434"}),    # socket dir from the environment
    ("postgresql:///hermes?host=%2Fvar%2Frun%2Fpostgresql&user=postgres", {}),  # socket dir in the query
    ("postgresql://%2Fvar%2Frun%2Fpostgresql/hermes", {}),              # percent-encoded socket-dir host
    ("postgresql://us%40er:p%3Ass@h/da%20ta%C3%A9", {}),                # percent-encoded user and database
    ("postgres://h", {}),                                               # default port; database = user
    ("postgres://h", {"PGDATABASE": "envdb", "PGPORT": "6001"}),        # database and port from the environment
    ("postgres://h?dbname=x&port=6000", {}),                            # database and port in the query
    ("POSTGRESQL://H:5432/db", {}),                                     # scheme in capitals
    ("postgres://[::1]:5433/db", {}),                                   # IPv6 host
    ("postgres://h:/db", {"PGPORT": "7000"}),                           # an empty port
    ("postgresql://me@h/db?port=0x1771", {}),                           # ports as JavaScript's Number() reads them
    ("postgresql://me@h/db?port=%206002%20", {}),
    ("postgresql://me@h/db?port=5e3", {}),
    ("postgres://h/db?port=nope", {}),                                  # a port that is not a number
    ("postgres://user:pw@h/db?user=other", {}),                         # the URL's user wins over the query's
    ("postgres://h/db?host=elsewhere", {"PGHOST": "env"}),              # the URL's host wins
    ("postgresql:///db?user=a+b&host=/tmp/x+y", {}),                    # + in the query is a space
    ("postgresql://a+b@h/c+d", {}),                                     # + elsewhere is a +
    ("postgres://us%zzer@h/d%E0%A4", {}),                               # malformed escapes kept as written
    ("postgres://h/db?host=&user=", {"PGUSER": "u2"}),                  # empty query values fall through
    ("postgres://h/db??port=6003&&user=%E2%82%AC", {}),                 # a doubled ?, an empty field, UTF-8
    ("postgres://h/数据库", {}),                                         # non-ASCII database name
    ("postgresql://me:pw@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem", {}),  # TLS settings
    ("postgresql://me@h/db?password=p%40ss&application_name=gw", {}),   # the password as a parameter
    ("postgresql://me:pw@h/db?sslpassword=k&sslmode=require&password=x", {}),  # secrets among settings
    ("postgresql://me:@h/db?Password=kept", {}),                        # an empty password; names are exact
    ("postgres://h/db??password=p&&pass+word=q", {}),                   # a doubled ?, an empty field, a + name
    ("postgresql://me:p@ss@h:5433/db", {}),                             # an unescaped @ in the password
]


def test_postgres_urls_derive_the_typescript_socket_and_identity(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("PGUSER", "PGHOST", "PGPORT", "PGDATABASE", "SESSIONDB_PATH", "HERMES_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp / "run"))
    monkeypatch.setenv("HOME", str(tmp))
    defaults = [
        {"SESSIONDB_PATH": "postgresql://me:pw@db/hermes"},  # a URL stays as it is, password and all
        {"SESSIONDB_PATH": "sub/x.db"},
        {"HERMES_HOME": "  /srv/hermes home \n"},       # stripped as get_hermes_home() strips
        {"HERMES_HOME": "\x1c\x85/srv/h\u3000\t"},       # Python's whitespace, not JavaScript's
        {"HERMES_HOME": "\ufeff/srv/h"},                # U+FEFF is no whitespace to Python: kept
        {"HERMES_HOME": " \t "},                        # blank: the default
        {"HERMES_HOME": "rel/home"},                   # relative: under the working directory
        {"HERMES_HOME": "sub/~"},                      # a ~ that does not lead
        {},
    ]
    ts = node(URL_SCRIPT, {"urls": URLS, "defaults": defaults}, env=dict(os.environ))
    python = [[default_socket_path(url, dict(os.environ, **extra)), pg_identity(url, dict(os.environ, **extra))]
              for url, extra in URLS]
    for row, mine, theirs in zip(URLS, python, ts["urls"]):
        assert mine == theirs, row
    started = [[url_without_secrets(url), pg_password(url)] for url, _ in URLS]
    for row, mine, theirs in zip(URLS, started, ts["started"]):
        assert mine == theirs, row
    assert started[-6] == ["postgresql://me@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem", "pw"]
    assert started[-5] == ["postgresql://me@h/db?application_name=gw", "p@ss"]
    assert started[-4] == ["postgresql://me@h/db?sslmode=require", "pw"]
    assert started[-3] == ["postgresql://me@h/db?Password=kept", ""]
    assert started[-2] == ["postgres://h/db?pass+word=q", "p"]
    assert started[-1] == ["postgresql://me@h:5433/db", "p@ss"]
    assert python[-1][1] == "postgresql://me@h:5433/db"
    assert [default_database_path(dict(os.environ, **extra)) for extra in defaults] == ts["defaults"]
    assert ts["defaults"][2] == "/srv/hermes home/state.db"
    assert ts["defaults"][3] == "/srv/h/state.db"
    assert ts["defaults"][5] == ts["defaults"][8] == str(tmp / ".hermes" / "state.db")
    sockets = [socket for socket, _ in python]
    assert sockets[0] == sockets[1], "the password is not part of the identity"
    assert all(s.startswith(str(tmp / "run" / "sessiondb") + "/") and len(os.path.basename(s)) == 37 for s in sockets)
    assert all("secret" not in identity for _, identity in python)
    assert python[2][1] == "postgresql://envuser@db.example:5432/hermes"
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert python[4][1] == f"postgresql://{me}@/hermes?host=%2Frun%2Fpg&port=5434"
    assert python[5][1] == "postgresql://postgres@/hermes?host=%2Fvar%2Frun%2Fpostgresql&port=5432"
    assert python[7][1] == "postgresql://us%40er@h:5432/da%20ta%C3%A9"


def test_a_started_daemon_gets_the_urls_password_in_its_environment_only():
    assert pg_password_env("postgresql://me:p%40ss%3A@h/db")["PGPASSWORD"] == "p@ss:"
    assert pg_password_env("postgresql://me@h/db") is None
    assert pg_password_env("postgresql://me@h/db?password=p%20w")["PGPASSWORD"] == "p w"
    assert pg_identity("postgresql://me:p%40ss%3A@h/db") == "postgresql://me@h:5432/db"


def test_the_default_database_path_follows_the_environment(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SESSIONDB_PATH", "rel/x.db")
    monkeypatch.chdir(tmp)
    assert default_database_path() == str(tmp / "rel" / "x.db")
    monkeypatch.delenv("SESSIONDB_PATH")
    monkeypatch.setenv("HERMES_HOME", str(tmp / "home"))
    assert default_database_path() == str(tmp / "home" / "state.db")
    monkeypatch.delenv("HERMES_HOME")
    monkeypatch.setenv("HOME", str(tmp))
    assert default_database_path() == str(tmp / ".hermes" / "state.db")


TILDE_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ defaultDatabasePath }} from "{REPO}/dist/src/engine-kind.js";
const envs = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(envs.map((extra) => {{
  try {{ return ["ok", defaultDatabasePath({{ ...process.env, ...extra }})]; }}
  catch (err) {{ return [err.code, err.message]; }}
}})));
"""


def test_a_leading_tilde_is_refused_naming_the_folder_hermes_would_use(tmp: Path, monkeypatch: pytest.MonkeyPatch):
    """Upstream's get_hermes_home() never expands ~ (Path(value)): both clients refuse such a
    value, with the same message naming the literal folder, instead of using another file."""
    for name in ("SESSIONDB_PATH", "HERMES_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp)
    envs = [{"HERMES_HOME": "~/.hermes"}, {"HERMES_HOME": "  ~  "}, {"HERMES_HOME": "~other/h"},
            {"SESSIONDB_PATH": "~/data/state.db"}]
    ts = node(TILDE_SCRIPT, envs, env=dict(os.environ))
    mine = []
    for extra in envs:
        with pytest.raises(InvalidArgumentError) as info:
            default_database_path(dict(os.environ, **extra))
        mine.append([info.value.code, str(info.value)])
    assert mine == ts
    assert all(code == "INVALID_ARGUMENT" for code, _ in mine)
    assert f"would use the folder {tmp}/~/.hermes (under the working directory)" in mine[0][1]
    assert f"e.g. {home}/.hermes" in mine[0][1]
    assert f"would use the folder {tmp}/~ " in mine[1][1], "stripped first"
    assert "HERMES_HOME" in mine[0][1] and "SESSIONDB_PATH" in mine[3][1]
    assert not (tmp / "~").exists()


HELPER_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ sanitizeTitle, sanitizeFtsQuery, containsCjk }} from "{REPO}/dist/src/index.js";
const {{ titles, queries, texts }} = JSON.parse(readFileSync(0, "utf8"));
const title = (t) => {{ try {{ return {{ ok: sanitizeTitle(t) }}; }} catch (e) {{ return {{ error: e.code, message: e.message }}; }} }};
console.log(JSON.stringify({{
  titles: titles.map(title),
  queries: queries.map((q) => sanitizeFtsQuery(q)),
  texts: texts.map((t) => containsCjk(t)),
}}));
"""

TITLES = [
    None, "", "  hello\x00  world  ", "hello\u202eworld", "\x00\u200b\ufeff", "emoji 🎉 café 数据 # — '",
    "tab\tlf\ncr\rnbsp\u00a0ideo\u3000end", "\x1c\x1d\x1e\x1fsep", "nel\x85x", "a" * 100, "b" * 101,
    "🎉" * 100, "🎉" * 101, "  " + "c" * 100 + "\u200b  ", "\u2028line\u2029para", "zero\u2060width\u2069",
    "\ufff9\ufffc", "x\u1680y\u205fz",
]
QUERIES = [
    "C++", "hello AND", "OR world", "***", '"a" "b', '"one" two-three "four"', "snake_case_name",
    "deploy*", "P2.2", "my-app.config.ts", "* leading star", "a ** b", "AND", "and then", "ANDROID phone",
    "word NOT", "x OR", "NOT NOT a", "{curly} (paren) ^caret +plus", "über-straße.txt", "数据-库",
    "  spaced   out  ", 'unbalanced "quote', '""', '"phrase with-dash" x-y', "a\u3000b", "tab\there",
    "trailing newline\n", "OR\nfoo", "foo\nAND", "\ue000 private \ue001", "a.b.c-d_e",
]
TEXTS = [
    "", "abc", "日本", "한국어", "カタカナ", "ひらがな", "\u3000", "\u303f", "\u4e00", "\u9fff", "\u3400",
    "\u4dbf", "\U00020000", "\U0002a6df", "\U0002a6e0", "\uac00", "\ud7af", "\ud7b0", "\u33ff", "émoji 🎉",
]


def test_helpers_match_the_typescript_implementations():
    ts = node(HELPER_SCRIPT, {"titles": TITLES, "queries": QUERIES, "texts": TEXTS})
    for title, expected in zip(TITLES, ts["titles"]):
        try:
            got = {"ok": SessionDB.sanitize_title(title)}
        except TitleTooLongError as err:
            got = {"error": err.code, "message": str(err)}
        assert got == expected, repr(title)
    assert [SessionDB._sanitize_fts5_query(q) for q in QUERIES] == ts["queries"]
    assert [SessionDB._contains_cjk(t) for t in TEXTS] == ts["texts"]
