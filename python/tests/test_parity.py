"""Python and TypeScript agree: the socket path derived for a table of database paths, and the
reference's pure helpers (sanitize_title, _sanitize_fts5_query, _contains_cjk)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from sessiondb import SessionDB, TitleTooLongError
from sessiondb.paths import default_database_path, default_socket_path, real_database_path



def node(script: str, payload, env=None):
    """Runs an ES module with `payload` as JSON on stdin; returns what it prints as JSON."""
    result = subprocess.run(
        ["node", "--input-type=module", "-e", script], input=json.dumps(payload), capture_output=True,
        text=True, check=True, cwd=os.getcwd(), env=env,
    )
    return json.loads(result.stdout)


SOCKET_SCRIPT = f"""
import {{ readFileSync }} from "node:fs";
import {{ defaultSocketPath, realDatabasePath, defaultDatabasePath }} from "{REPO}/dist/src/socket-path.js";
const paths = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify({{
  sockets: paths.map((p) => defaultSocketPath(p)),
  reals: paths.map((p) => realDatabasePath(p)),
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
    monkeypatch.chdir(tmp)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp / "run"))
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
    ]
    ts = node(SOCKET_SCRIPT, paths, env=env)
    assert [default_socket_path(p) for p in paths] == ts["sockets"]
    assert [real_database_path(p) for p in paths] == ts["reals"]
    assert ts["sockets"][1] == ts["sockets"][0] == ts["sockets"][2]
    assert ts["sockets"][7].startswith(str(tmp / "run" / "sessiondb") + "/")
    assert default_database_path() == ts["fallback"]


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
