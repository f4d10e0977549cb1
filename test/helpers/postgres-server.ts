/**
 * A throwaway PostgreSQL server for the tests and the bench: `initdb` into a temp folder,
 * listening only on a Unix socket in a folder of its own, run as an unprivileged user when run as
 * root (PostgreSQL refuses to run as root). Each test gets a fresh database on it
 * (`PgServer.freshDatabase`), a copy of a template that holds the schema.
 */
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { openSessionDB } from "../../src/index.js";

/** A database holding sessiondb's schema, which every test's database copies. */
const TEMPLATE = "sdb_template";

/** The newest `/usr/lib/postgresql/<major>/bin`, where Debian installs the server binaries. */
export function postgresBinDir(): string {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root) ? readdirSync(root).filter((d) => existsSync(join(root, d, "bin", "initdb"))) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) {
    throw new Error("PostgreSQL's server binaries are missing (/usr/lib/postgresql/*/bin/initdb): apt-get install -y postgresql");
  }
  return join(root, newest, "bin");
}

/** Root cannot run PostgreSQL: the server runs as `nobody` then, in folders it owns. */
const RUN_AS = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;

export class PgServer {
  readonly #bin: string;
  readonly #root: string;
  readonly socketDir: string;
  #databases = 0;
  /** The server's command-line settings, for starting it again after `pause()`. */
  #settings = "";

  private constructor(bin: string, root: string) {
    this.#bin = bin;
    this.#root = root;
    this.socketDir = join(root, "s");
  }

  /**
   * initdb, then start; returns once the server accepts connections. The tests' server skips
   * fsync (a crash of the machine loses nothing a test needs); `durable` keeps PostgreSQL's
   * defaults (fsync, synchronous_commit=on), as the bench measures them.
   */
  static start(options: { durable?: boolean } = {}): PgServer {
    const bin = postgresBinDir();
    const root = mkdtempSync("/tmp/sdbpg-");
    const server = new PgServer(bin, root);
    execFileSync("mkdir", ["-p", server.socketDir]);
    if (RUN_AS !== null) {
      chownSync(root, RUN_AS.uid, RUN_AS.gid);
      chownSync(server.socketDir, RUN_AS.uid, RUN_AS.gid);
    }
    server.#run("initdb", ["-D", server.#data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]);
    server.#settings = `-k ${server.socketDir} -c listen_addresses='' ${options.durable === true ? "" : "-c fsync=off "}-c max_connections=300 -c shared_buffers=32MB`;
    server.#run("pg_ctl", ["-D", server.#data, "-l", join(root, "log"), "-w", "-t", "60", "start", "-o", server.#settings]);
    // Every database created later is a copy of template1, so each gets pg_trgm without a superuser.
    server.psql("template1", "CREATE EXTENSION IF NOT EXISTS pg_trgm");
    return server;
  }

  /** The folder holding the server's data, socket and log. */
  get root(): string {
    return this.#root;
  }

  get #data(): string {
    return join(this.#root, "data");
  }

  #run(tool: string, args: string[]): string {
    const result = spawnSync(join(this.#bin, tool), args, {
      encoding: "utf8",
      cwd: "/tmp",
      ...(RUN_AS ?? {}),
    });
    if (result.status !== 0) throw new Error(`${tool} failed (${result.status ?? result.signal}): ${result.stderr}${result.stdout}`);
    return result.stdout;
  }

  /**
   * `pg_ctl restart -m fast`: the server ends every connection and comes back; resolves once it
   * accepts connections again. Asynchronous, so the test's own clients keep running meanwhile.
   */
  restart(): Promise<void> {
    const args = ["-D", this.#data, "-l", join(this.#root, "log"), "-m", "fast", "-w", "-t", "60", "restart"];
    return new Promise((resolve, reject) => {
      execFile(join(this.#bin, "pg_ctl"), args, { cwd: "/tmp", ...(RUN_AS ?? {}) }, (err, stdout, stderr) => {
        if (err) reject(new Error(`pg_ctl restart failed: ${stderr}${stdout}`, { cause: err }));
        else resolve();
      });
    });
  }

  /** `pg_ctl stop -m fast`, keeping the data: until `resume()`, nothing answers on the socket. */
  pause(): void {
    this.#run("pg_ctl", ["-D", this.#data, "-m", "fast", "-w", "-t", "60", "stop"]);
  }

  /** Starts a server `pause()` stopped; returns once it accepts connections. */
  resume(): Promise<void> {
    const args = ["-D", this.#data, "-l", join(this.#root, "log"), "-w", "-t", "60", "start", "-o", this.#settings];
    return new Promise((resolve, reject) => {
      execFile(join(this.#bin, "pg_ctl"), args, { cwd: "/tmp", ...(RUN_AS ?? {}) }, (err, stdout, stderr) => {
        if (err) reject(new Error(`pg_ctl start failed: ${stderr}${stdout}`, { cause: err }));
        else resolve();
      });
    });
  }

  /** The URL of a database on this server, in the Unix-socket form. */
  url(database: string): string {
    return `postgresql:///${database}?host=${encodeURIComponent(this.socketDir)}&user=postgres`;
  }

  /** Runs SQL with psql, synchronously; returns its unaligned, tuples-only output. */
  psql(database: string, sql: string): string {
    const result = spawnSync(join(this.#bin, "psql"), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", this.socketDir, "-U", "postgres", "-d", database], {
      input: sql,
      encoding: "utf8",
    });
    if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`);
    return result.stdout;
  }

  /**
   * Creates the template every `createDatabase` copies: the schema made by sessiondb itself
   * once, so each test does not pay for creating its indexes.
   */
  async prepareTemplate(): Promise<void> {
    this.psql("postgres", `CREATE DATABASE ${TEMPLATE}`);
    const db = await openSessionDB({ path: this.url(TEMPLATE), mode: "direct" });
    await db.close();
  }

  /** A new database (with sessiondb's schema unless `empty`); its URL. */
  createDatabase(options: { empty?: boolean } = {}): string {
    const name = `t${process.pid}_${++this.#databases}`;
    this.psql("postgres", `CREATE DATABASE ${name}${options.empty === true ? "" : ` TEMPLATE ${TEMPLATE} STRATEGY FILE_COPY`}`);
    return this.url(name);
  }

  /** A new database for one test, dropped when the test ends. */
  freshDatabase(t: TestContext): string {
    const url = this.createDatabase();
    const name = new URL(url).pathname.slice(1);
    t.after(() => this.dropDatabase(name));
    return url;
  }

  dropDatabase(name: string): void {
    this.psql("postgres", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }

  stop(): void {
    try {
      this.#run("pg_ctl", ["-D", this.#data, "-m", "immediate", "-w", "stop"]);
    } finally {
      rmSync(this.#root, { recursive: true, force: true });
    }
  }
}
