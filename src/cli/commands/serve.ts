import { Option, type Command } from "commander";
import { nonNegativeNumber, positiveInt, positiveNumber, positiveSeconds } from "../arguments.js";
import { othersLockFile } from "../../daemon/instance-lock.js";
import { checkDatabaseFile } from "../database-file.js";
import { filesOf, globalsOf } from "../global-options.js";
import { serve } from "../serve.js";
import { activationFd } from "../socket-activation.js";
import { daemonLog, type LogFormat } from "../../daemon/daemon-log.js";

interface ServeFlags {
  socket?: string;
  readers?: number;
  synchronous: "FULL" | "NORMAL";
  walLimitMb: number;
  frameTimeout: number;
  clientIdleTimeout: number;
  idleExit?: number;
  readerIdle: number;
  writerIdle: number;
  metrics?: string;
  logFormat: LogFormat;
  slowMs: number;
  keyRetentionHours: number;
  watchBufferKb: number;
  maxWatchers: number;
}

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("run the daemon for the database in the foreground (logs to stderr; exits 1 if the file is replaced, or its -wal or -shm removed or truncated, under it)")
    .option("--socket <path>", "the Unix socket (default: derived from the database path); only a stale socket of ours there is replaced, anything else makes serve refuse")
    .option("--readers <n>", "reader threads (default: the number of cores, 2 to 8)", positiveInt)
    .addOption(new Option("--synchronous <mode>", "FULL survives power loss; NORMAL commits faster").choices(["FULL", "NORMAL"]).default("FULL"))
    .option("--wal-limit-mb <n>", "WAL size that triggers a TRUNCATE checkpoint", positiveInt, 64)
    .option("--frame-timeout <s>", "close a connection that leaves a frame incomplete this long", positiveInt, 30)
    .option("--client-idle-timeout <s>", "close a connection idle this long (clients reconnect)", positiveInt, 600)
    .option("--idle-exit <seconds>", "stop cleanly (checkpointed) after this long with no client connected (default: never; autostarted daemons get 30)", positiveSeconds)
    .option("--reader-idle <seconds>", "end a reader thread after this long without a read (the next read starts one)", positiveSeconds, 5)
    .option("--writer-idle <seconds>", "end the writer thread, checkpointed, after this long with no client connected (the next client starts it as it connects); 0: never", nonNegativeNumber, 5)
    .addOption(new Option("--log-format <format>", "text lines, or one JSON object per line (time, level, event; a slow request's op, durationMs, batch)").choices(["text", "json"]).default("text"))
    .option("--slow-ms <ms>", "log a request that takes longer than this as slow (its op, duration, and the group commit it was in)", positiveInt, 1000)
    .option("--key-retention-hours <n>", "keep each write's idempotency key at least this long (older keys are pruned a few hundred at a time)", positiveNumber, 24)
    .option("--watch-buffer-kb <n>", "event bytes a watch may have unread by its client before it is dropped and told resync", positiveInt, 1024)
    .option("--max-watchers <n>", "watch subscriptions served at once (past it: OVERLOADED)", positiveInt, 1000)
    .option("--metrics <host:port>", "serve /metrics (Prometheus text) and /health (JSON) over HTTP on this loopback address, e.g. 127.0.0.1:9464 (default: off)")
    .action(async (opts: ServeFlags, command: Command) => {
      const globals = globalsOf(command);
      const { db } = globals;
      const files = filesOf(globals);
      try {
        checkDatabaseFile(files.db);
      } catch (err) {
        // A file this user may not use that another user's daemon holds: say whose it is.
        throw othersLockFile(files.lock, err) ?? err;
      }
      // Under a systemd .socket unit: serve on the socket it passed (its owner and mode are the unit's).
      const listenFd = activationFd();
      await serve({
        ...(db !== undefined ? { path: db } : {}),
        ...(opts.socket !== undefined ? { socketPath: opts.socket } : {}),
        ...(opts.readers !== undefined ? { readers: opts.readers } : {}),
        synchronous: opts.synchronous,
        walLimitBytes: opts.walLimitMb * 1024 * 1024,
        frameTimeoutMs: opts.frameTimeout * 1000,
        idleConnectionTimeoutMs: opts.clientIdleTimeout * 1000,
        ...(opts.idleExit !== undefined ? { idleExitMs: opts.idleExit * 1000 } : {}),
        readerIdleMs: opts.readerIdle * 1000,
        writerIdleMs: opts.writerIdle * 1000,
        ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
        ...(listenFd !== null ? { listenFd } : {}),
        log: daemonLog(opts.logFormat),
        slowRequestMs: opts.slowMs,
        keyRetentionHours: opts.keyRetentionHours,
        watchBufferBytes: opts.watchBufferKb * 1024,
        maxWatchers: opts.maxWatchers,
        faultInjection: process.env.SESSIONDB_FAULT_INJECTION === "1",
      });
    });
}
