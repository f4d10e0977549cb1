/**
 * PostgreSQL locations: a `postgres://` or `postgresql://` URL (libpq's URI forms, with a
 * Unix-socket directory as `?host=/run/pg` or a percent-encoded host, and the `PG*` environment
 * variables filling what the URL leaves out, as node-postgres does when it connects).
 */
import { userInfo } from "node:os";

/** True for a location that names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(location: string | undefined | null): location is string {
  return typeof location === "string" && /^postgres(ql)?:\/\//i.test(location);
}

/** The parts of a URL that name one database: where, as whom, which. */
export interface PgTarget {
  host: string;
  port: number;
  user: string;
  database: string;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const URL_SHAPE = /^postgres(?:ql)?:\/\/([^/?]*)(?:\/([^?]*))?(?:\?(.*))?$/is;

/** A URL's parts as written; each is undefined when the URL has none. */
interface UrlParts {
  userInfo: string | undefined;
  hostPort: string;
  path: string | undefined;
  search: string | undefined;
}

/**
 * The user info is everything before the authority's last `@`, as URL parsers (node-postgres's)
 * take it: a password with an unescaped `@` stays whole (and stays a secret).
 */
function urlParts(url: string): UrlParts | null {
  const shape = URL_SHAPE.exec(url);
  if (shape === null) return null;
  const [, authority = "", path, search] = shape;
  const at = authority.lastIndexOf("@");
  return { userInfo: at === -1 ? undefined : authority.slice(0, at), hostPort: authority.slice(at + 1), path, search };
}

export function pgTarget(url: string, env: NodeJS.ProcessEnv = process.env): PgTarget {
  const { userInfo = "", hostPort, path = "", search = "" } = urlParts(url) ?? { userInfo: "", hostPort: "", path: "", search: "" };
  const query = new URLSearchParams(search);
  const hostMatch = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(hostPort);
  const hostInUrl = decode(hostMatch?.[1] ?? "");
  const user = decode(userInfo.split(":")[0] ?? "") || query.get("user") || env.PGUSER || safeUserName();
  const port = Number(hostMatch?.[2] || query.get("port") || env.PGPORT || 5432);
  return {
    host: hostInUrl || query.get("host") || env.PGHOST || "localhost",
    port: Number.isFinite(port) ? port : 5432,
    user,
    database: decode(path) || query.get("dbname") || env.PGDATABASE || user,
  };
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return "postgres";
  }
}

/**
 * The database's identity: the normalized URL without the password (or any other secret), the
 * same for every spelling of one database. The daemon's socket path is derived from it, and the
 * daemon reports it, so a password never reaches a log, a socket name or another client.
 */
export function pgIdentity(url: string, env: NodeJS.ProcessEnv = process.env): string {
  const t = pgTarget(url, env);
  const user = encodeURIComponent(t.user);
  const database = encodeURIComponent(t.database);
  return t.host.startsWith("/")
    ? `postgresql://${user}@/${database}?host=${encodeURIComponent(t.host)}&port=${t.port}`
    : `postgresql://${user}@${t.host}:${t.port}/${database}`;
}

/** Query parameters that carry a secret (libpq's names): never on a command line. */
const SECRET_PARAMS = new Set(["password", "sslpassword"]);

/**
 * The URL a started daemon is given on its command line (autostart), where any local user can
 * read it: as written, less its secrets — the password before the `@`, and the `password` and
 * `sslpassword` parameters. Its connection settings (`sslmode`, `sslrootcert`, …) stay: a daemon
 * given only the identity connected without them (no TLS although the URL asked for it).
 */
export function pgUrlWithoutSecrets(url: string): string {
  const parts = urlParts(url);
  if (parts === null) return url;
  const { userInfo, hostPort, path, search } = parts;
  let out = url.slice(0, url.indexOf("//") + 2);
  if (userInfo !== undefined) out += `${userInfo.split(":")[0]}@`;
  out += hostPort;
  if (path !== undefined) out += `/${path}`;
  if (search !== undefined) {
    // URLSearchParams drops one leading "?" and the empty fields: what is left pairs off with its names.
    const fields = (search.startsWith("?") ? search.slice(1) : search).split("&").filter((f) => f !== "");
    const names = [...new URLSearchParams(search)].map(([name]) => name);
    const kept = fields.filter((_, i) => !SECRET_PARAMS.has(names[i] ?? ""));
    if (kept.length > 0) out += `?${kept.join("&")}`;
  }
  return out;
}

/** The URL's password: the one before the `@`, else its `password` parameter; "" when it has none. */
export function pgPassword(url: string): string {
  const { userInfo = "", search = "" } = urlParts(url) ?? {};
  const colon = userInfo.indexOf(":");
  if (colon !== -1) return decode(userInfo.slice(colon + 1));
  return new URLSearchParams(search).get("password") ?? "";
}
