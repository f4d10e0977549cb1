"""PostgreSQL locations: a ``postgres://`` or ``postgresql://`` URL, read exactly as the TypeScript
side reads it (src/database-location.ts), so both derive the same identity and so the same daemon socket:
libpq's URI forms, a Unix-socket directory as ``?host=/run/pg`` or a percent-encoded host, and the
``PG*`` environment variables filling what the URL leaves out."""
from __future__ import annotations

import math
import os
import re
from typing import Dict, List, Mapping, NamedTuple, Optional, Tuple

from .home import user_name

_SCHEME = re.compile(r"postgres(ql)?://", re.IGNORECASE | re.ASCII)
# The TypeScript URL_SHAPE and host:port patterns, anchored at both ends as JavaScript's `^…$`.
_URL_SHAPE = re.compile(r"postgres(?:ql)?://([^/?]*)(?:/([^?]*))?(?:\?(.*))?",
                        re.IGNORECASE | re.DOTALL | re.ASCII)
_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:]*)(?::([0-9]*))?", re.DOTALL)
_MALFORMED_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# JavaScript's Number(string) grammar (StringNumericLiteral) after trimming.
_JS_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)", re.ASCII)
_JS_RADIX = re.compile(r"0([xXoObB])([0-9A-Za-z]+)", re.ASCII)
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# encodeURIComponent leaves A-Z a-z 0-9 - _ . ! ~ * ' ( ) as they are; quote() always keeps the
# letters, digits and "_.-~".
_URI_COMPONENT_SAFE = "!*'()"
DEFAULT_PORT = 5432


def is_postgres_url(location: object) -> bool:
    """True for a location that names a PostgreSQL database rather than a SQLite file."""
    return isinstance(location, str) and _SCHEME.match(location) is not None


class PgTarget(NamedTuple):
    """The parts of a URL that name one database: where, as whom, which."""

    host: str
    port: float
    user: str
    database: str


class _UrlParts(NamedTuple):
    """A URL's parts as written; each is None when the URL has none (host_port is always there)."""

    user_info: Optional[str]
    host_port: str
    path: Optional[str]
    search: Optional[str]


def _url_parts(url: str) -> Optional[_UrlParts]:
    """The user info is everything before the authority's last ``@``, as URL parsers
    (node-postgres's) take it: a password with an unescaped ``@`` stays whole (and a secret)."""
    shape = _URL_SHAPE.fullmatch(url)
    if shape is None:
        return None
    authority, path, search = shape.groups()
    at = authority.rfind("@")
    return _UrlParts(authority[:at] if at != -1 else None, authority[at + 1:], path, search)


def pg_target(url: str, env: Optional[Mapping[str, str]] = None) -> PgTarget:
    env = os.environ if env is None else env
    parts = _url_parts(url)
    user_info, host_port, path, search = (g or "" for g in parts) if parts else ("", "", "", "")
    query = _search_params(search)
    host_match = _HOST_PORT.fullmatch(host_port)
    host_in_url = _decode(host_match.group(1)) if host_match else ""
    port_in_url = (host_match.group(2) or "") if host_match else ""
    user = _decode(user_info.split(":")[0]) or query.get("user") or env.get("PGUSER") or user_name() or "postgres"
    port = _js_number(port_in_url or query.get("port") or env.get("PGPORT") or str(DEFAULT_PORT))
    return PgTarget(
        host=host_in_url or query.get("host") or env.get("PGHOST") or "localhost",
        port=port if math.isfinite(port) else float(DEFAULT_PORT),
        user=user,
        database=_decode(path) or query.get("dbname") or env.get("PGDATABASE") or user,
    )


def pg_identity(url: str, env: Optional[Mapping[str, str]] = None) -> str:
    """The database's identity: the normalized URL without the password, the same for every
    spelling of one database. The daemon's socket is named by its hash and the daemon reports it
    in its hello, so a password never reaches a socket name, a log or another client."""
    t = pg_target(url, env)
    user, database, port = _encode(t.user), _encode(t.database), _js_number_text(t.port)
    if t.host.startswith("/"):
        return f"postgresql://{user}@/{database}?host={_encode(t.host)}&port={port}"
    return f"postgresql://{user}@{t.host}:{port}/{database}"


# Query parameters that carry a secret (libpq's names): never on a command line.
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


def url_without_secrets(url: str) -> str:
    """The URL a started daemon is given on its command line (autostart), where any local user
    can read it: as written, less its secrets (the password before the ``@``, and the
    ``password`` and ``sslpassword`` parameters); its connection settings (``sslmode``, ...)
    stay. The TypeScript pgUrlWithoutSecrets, to the character."""
    parts = _url_parts(url)
    if parts is None:
        return url
    user_info, host_port, path, search = parts
    out = url[:url.index("//") + 2]
    if user_info is not None:
        out += user_info.split(":")[0] + "@"
    out += host_port
    if path is not None:
        out += "/" + path
    if search is not None:
        kept = [raw for raw, name in _search_fields(search) if name not in _SECRET_PARAMS]
        if kept:
            out += "?" + "&".join(kept)
    return out


def pg_password(url: str) -> str:
    """The URL's password: the one before the ``@``, else its ``password`` parameter; "" when
    it has none."""
    parts = _url_parts(url)
    user_info, _, _, search = (g or "" for g in parts) if parts else ("", "", "", "")
    if ":" in user_info:
        return _decode(user_info.split(":", 1)[1])
    return _search_params(search).get("password", "")


def pg_password_env(url: str) -> Optional[Dict[str, str]]:
    """The environment for a daemon started for ``url`` (which goes on its command line without
    its secrets): this one, plus the URL's password as ``PGPASSWORD``. None when the URL holds
    no password."""
    password = pg_password(url)
    if not password:
        return None
    return dict(os.environ, PGPASSWORD=password)


def _decode(text: str, strict: bool = False) -> str:
    """JavaScript's decodeURIComponent; text it cannot decode stays as it is (or is "" when
    ``strict``)."""
    try:
        if _MALFORMED_ESCAPE.search(text):
            raise ValueError(text)
        from urllib.parse import unquote_to_bytes  # only for a URL: a file's client never pays it

        return unquote_to_bytes(text).decode("utf-8")
    except (ValueError, UnicodeError):
        return "" if strict else text


def _encode(text: str) -> str:
    """JavaScript's encodeURIComponent."""
    from urllib.parse import quote

    return quote(text, safe=_URI_COMPONENT_SAFE)


def _search_fields(search: str) -> List[Tuple[str, str]]:
    """Each field as written, with its name as URLSearchParams reads it (``+`` is a space; a
    leading ``?`` is dropped, as its constructor drops one; empty fields are skipped)."""
    fields = search[1:].split("&") if search.startswith("?") else search.split("&")
    from urllib.parse import unquote

    return [(field, unquote(field.partition("=")[0].replace("+", " "), errors="replace")) for field in fields if field]


def _search_params(search: str) -> Dict[str, str]:
    """The first value of each name, as URLSearchParams.get gives it."""
    from urllib.parse import unquote

    params: Dict[str, str] = {}
    for field, name in _search_fields(search):
        params.setdefault(name, unquote(field.partition("=")[2].replace("+", " "), errors="replace"))
    return params


def _js_number(text: str) -> float:
    """JavaScript's Number(string): NaN (not an error) for what is not a number."""
    trimmed = text.strip(_JS_SPACE)
    if trimmed == "":
        return 0.0
    radix = _JS_RADIX.fullmatch(trimmed)
    if radix:
        base = {"x": 16, "o": 8, "b": 2}[radix.group(1).lower()]
        try:
            return float(int(radix.group(2), base))
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf
    if _JS_DECIMAL.fullmatch(trimmed):
        return float(trimmed.replace("Infinity", "inf"))
    return math.nan


def _js_number_text(value: float) -> str:
    """A port as JavaScript prints a number: whole numbers without a fraction."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)

