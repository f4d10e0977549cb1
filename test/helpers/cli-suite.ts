/**
 * The `sessiondb` command, end to end: every command against a real database file, run once
 * with no daemon (`cli/cli.test.ts`) and once with `serve` running for the file (`cli/daemon.test.ts`).
 * The output a person reads is checked for what they rely on; the `--json` shapes exactly.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { RichSessionRow, SearchHit, SessionExport } from "../../src/index.js";
import { assertFails, runCli, runJson, SEED, seedDatabase, ServeProcess } from "./cli.js";
import { runCliOnPty, stripColors } from "./pty.js";
import { removeTree } from "./temp-dir.js";

export type Mode = "direct" | "daemon";

const SESSION_KEYS = [
  "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id", "started_at", "ended_at",
  "end_reason", "message_count", "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens",
  "cache_write_tokens", "reasoning_tokens", "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd",
  "actual_cost_usd", "cost_status", "cost_source", "pricing_version", "title",
];
const MESSAGE_KEYS = [
  "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp", "token_count",
  "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
];
const HIT_KEYS = ["id", "session_id", "role", "snippet", "timestamp", "tool_name", "source", "model", "session_started", "context"];

interface DaemonFigures {
  daemon: { pid: number; writer: { writes: number } } | null;
}

export function cliSuite(mode: Mode): void {
  describe(`sessiondb CLI (${mode === "daemon" ? "a daemon serves the file" : "no daemon: direct file access"})`, () => {
    let dir = "";
    let db = "";
    const daemons: ServeProcess[] = [];

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), "sdb-cli-"));
      db = join(dir, "state.db");
      await seedDatabase(db);
      if (mode === "daemon") daemons.push(await ServeProcess.start(db));
    });

    after(async () => {
      await Promise.all(daemons.map((d) => d.stop()));
      removeTree(dir);
    });

    test("every command takes the expected path: the daemon when one serves, else the file", async () => {
      const stats = await runJson<DaemonFigures>(db, ["stats"]);
      if (mode === "daemon") assert.equal(stats.daemon?.pid, daemons[0]!.pid);
      else assert.equal(stats.daemon, null);
      const status = await runCli(db, ["--json", "status"]);
      const report = JSON.parse(status.stdout) as { route: string; exists: boolean; database: string };
      assert.equal(report.route, mode);
      assert.equal(report.exists, true);
      assert.equal(status.code, mode === "daemon" ? 0 : 1);
      const direct = JSON.parse((await runCli(db, ["--json", "--direct", "status"])).stdout) as { route: string };
      assert.equal(direct.route, "direct", "--direct bypasses a running daemon");
    });

    test("status: says whether a daemon serves the file, exit 1 when none", async () => {
      const result = await runCli(db, ["status"]);
      if (mode === "daemon") {
        assert.equal(result.code, 0, result.stderr);
        assert.match(result.stdout, new RegExp(`serving: pid ${daemons[0]!.pid}, .*up .*client.*queued, WAL`));
        assert.match(result.stdout, /commands\s+go through the daemon/);
      } else {
        assertFails(result, 1, "error UNAVAILABLE: no daemon serves");
        assert.match(result.stdout, /daemon\s+none answers/);
        assert.match(result.stdout, /commands\s+open the file directly/);
      }
    });

    test("list: root sessions, tab-separated when piped; --json gives listSessionsRich's rows", async () => {
      const result = await runCli(db, ["list"]);
      assert.equal(result.code, 0, result.stderr);
      const lines = result.stdout.trimEnd().split("\n");
      assert.equal(lines[0], "ID\tTITLE\tSOURCE\tSTARTED\tACTIVE\tMSGS\tPREVIEW");
      assert.ok(lines.every((l) => l.split("\t").length === 7), "seven tab-separated cells a line");
      assert.ok(result.stdout.includes(SEED.alpha) && result.stdout.includes("Deploy plan"));
      assert.ok(!result.stdout.includes(SEED.alphaChild), "children only with --children");

      const rows = await runJson<RichSessionRow[]>(db, ["list"]);
      assert.deepEqual(Object.keys(rows[0]!), [...SESSION_KEYS, "last_active", "preview"]);
      const alpha = rows.find((r) => r.id === SEED.alpha)!;
      assert.equal(alpha.preview, "How do we deploy the chat-send service? It is urgent.");
      assert.equal(alpha.message_count, 3);

      const children = await runJson<RichSessionRow[]>(db, ["list", "--children", "--source", "telegram"]);
      assert.deepEqual(children.map((r) => r.id), [SEED.alphaChild]);
      const excluded = await runJson<RichSessionRow[]>(db, ["list", "--children", "--exclude-source", "cli", "--exclude-source", "oldsrc"]);
      assert.deepEqual(excluded.map((r) => r.id), [SEED.alphaChild]);
      const page = await runJson<RichSessionRow[]>(db, ["list", "--limit", "1", "--offset", "1"]);
      assert.equal(page.length, 1);
      assert.equal(page[0]!.id, rows[1]!.id);
    });

    test("list: on a terminal, a table fitted to its width", async () => {
      const result = await runCliOnPty(db, ["list"], { columns: 70 });
      assert.equal(result.code, 0, result.output);
      const lines = stripColors(result.output).trimEnd().split("\n");
      assert.match(lines[0]!, /^ID +TITLE /);
      for (const line of lines) assert.ok([...line].length <= 70, `too wide: ${line}`);
      assert.match(stripColors(result.output), /^s-alpha-1 +Deploy plan /m);
    });

    test("show: the conversation by id, id prefix or title; --json gives exportSession", async () => {
      const byId = await runCli(db, ["show", SEED.alpha]);
      assert.equal(byId.code, 0, byId.stderr);
      assert.match(byId.stdout, /^Deploy plan {2}s-alpha-1$/m);
      assert.match(byId.stdout, /^user \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
      assert.match(byId.stdout, /^ {2}→ shell\(\{"cmd":"kubectl get pods"\}\)$/m, "tool calls summarized");
      assert.ok(!byId.stdout.includes("\x1b"), "a stored escape sequence never reaches the terminal");
      assert.ok(byId.stdout.includes("\\x1b[31mred"), "it is shown escaped");

      const byPrefix = await runCli(db, ["show", "s-alpha-1"]);
      assert.equal(byPrefix.stdout, byId.stdout);
      const byTitle = await runCli(db, ["show", "Deploy plan"]);
      assert.equal(byTitle.stdout, byId.stdout);

      const exported = await runJson<SessionExport>(db, ["show", "s-bet"]);
      assert.deepEqual(Object.keys(exported), [...SESSION_KEYS, "messages"]);
      assert.equal(exported.id, SEED.beta);
      assert.deepEqual(Object.keys(exported.messages[0]!), MESSAGE_KEYS);
    });

    test("show: an ambiguous prefix and an unknown session fail with exit 1 saying which", async () => {
      const ambiguous = await runCli(db, ["show", "s-alpha"]);
      assertFails(ambiguous, 1, "error AMBIGUOUS:");
      assert.ok(ambiguous.stderr.includes(SEED.alpha) && ambiguous.stderr.includes(SEED.alphaChild));
      assertFails(await runCli(db, ["show", "no-such-session"]), 1, 'error NOT_FOUND: no session "no-such-session"');
      assertFails(await runCli(db, ["show"]), 2, "error: missing required argument");
    });

    test("search: hits with >>>markers<<< when not a terminal, filters, --json gives searchMessages", async () => {
      const result = await runCli(db, ["search", "deploy"]);
      assert.equal(result.code, 0, result.stderr);
      assert.ok(result.stdout.includes(">>>deploy<<<"));
      assert.match(result.stdout, /^s-alpha-1 {2}"Deploy plan" {2}user/m, "session id and title");

      const hits = await runJson<SearchHit[]>(db, ["search", "deploy"]);
      assert.deepEqual(new Set(hits.map((h) => h.session_id)), new Set([SEED.alpha, SEED.alphaChild]));
      assert.deepEqual(Object.keys(hits[0]!), HIT_KEYS);
      const telegram = await runJson<SearchHit[]>(db, ["search", "deploy", "--source", "telegram"]);
      assert.deepEqual(telegram.map((h) => h.session_id), [SEED.alphaChild]);
      const notTelegram = await runJson<SearchHit[]>(db, ["search", "deploy", "--exclude-source", "telegram"]);
      assert.deepEqual(notTelegram.map((h) => h.session_id), [SEED.alpha]);
      assert.deepEqual(await runJson<SearchHit[]>(db, ["search", "deploy", "--role", "assistant"]), []);
      assert.equal((await runJson<SearchHit[]>(db, ["search", "deploy", "--limit", "1"])).length, 1);
      assert.equal((await runJson<SearchHit[]>(db, ["search", "部署"]))[0]?.session_id, SEED.alphaChild, "CJK by substring");
    });

    test("search: hostile query strings never fail", async () => {
      for (const query of [
        `"); DROP TABLE sessions; --`, `deploy" OR "`, "***", "NOT", "(((", `"unbalanced`, "a AND OR NOT b", "^{}+",
        "%_\\", "x".repeat(4000), "\u202e\u0007 \u00a0", "-starts-with-dash",
      ]) {
        const result = await runCli(db, ["--json", "search", "--", query]);
        assert.equal(result.code, 0, `${JSON.stringify(query)}: ${result.stderr}`);
        assert.ok(Array.isArray(JSON.parse(result.stdout)));
      }
      assert.equal((await runJson<SessionExport[]>(db, ["list"])).length > 0, true, "the tables are still there");
      assertFails(await runCli(db, ["search", "x".repeat(5000)]), 1, "error INVALID_ARGUMENT:");
    });

    test("export: JSONL to stdout, one session or -o FILE; import into an empty file; re-export is byte-identical", async () => {
      const all = await runCli(db, ["export"]);
      assert.equal(all.code, 0, all.stderr);
      const lines = all.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as SessionExport);
      assert.ok(lines.length >= 5);
      assert.deepEqual(Object.keys(lines[0]!), [...SESSION_KEYS, "messages"]);
      const started = lines.map((l) => l.started_at);
      assert.deepEqual(started, [...started].sort((a, b) => b - a), "newest first");
      assert.ok(lines.findIndex((l) => l.id === SEED.alphaChild) < lines.findIndex((l) => l.id === SEED.alpha), "the child comes before its parent");

      const one = await runCli(db, ["export", "Deploy plan"]);
      assert.equal(one.stdout.split("\n").length, 2);
      assert.equal((JSON.parse(one.stdout) as SessionExport).messages.length, 3);
      const bySource = await runCli(db, ["export", "--source", "telegram"]);
      assert.deepEqual(bySource.stdout.trimEnd().split("\n").map((l) => (JSON.parse(l) as SessionExport).id), [SEED.alphaChild]);
      assertFails(await runCli(db, ["export", SEED.alpha, "--source", "cli"]), 2, "error: give either SESSION or --source");

      const file = join(dir, "export.jsonl");
      const report = await runJson<{ exported: number; messages: number; file: string }>(db, ["export", "-o", file]);
      assert.deepEqual(report, { exported: lines.length, messages: lines.reduce((n, l) => n + l.messages.length, 0), file });
      const original = readFileSync(file, "utf8");
      assert.equal(original, all.stdout);

      // Into an empty file, through a daemon of its own in daemon mode.
      const target = join(dir, "restored.db");
      let restoreDaemon: ServeProcess | null = null;
      if (mode === "daemon") {
        restoreDaemon = await ServeProcess.start(target);
        daemons.push(restoreDaemon);
      }
      const imported = await runJson<Record<string, unknown>>(target, ["import", file]);
      assert.deepEqual(imported, {
        imported: lines.length, skipped: 0, messages: report.messages, skippedIds: [], detachedIds: [], renumberedIds: [],
      });
      const again = await runCli(target, ["export"]);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout, original, "export → import → export gives the same bytes");
      if (restoreDaemon !== null) {
        const stats = await runJson<DaemonFigures>(target, ["stats"]);
        assert.equal(stats.daemon?.pid, restoreDaemon.pid);
        assert.ok(stats.daemon!.writer.writes >= lines.length, "the import went through the daemon");
      }

      const twice = await runCli(target, ["import", "-"], { input: original });
      assert.equal(twice.code, 0, twice.stderr);
      assert.match(twice.stdout, new RegExp(`^imported 0 sessions \\(0 messages\\), skipped ${lines.length} already present: `));
    });

    test("title: shows, sets, clears; SPEC §8 errors as one line", async () => {
      assert.deepEqual(await runJson(db, ["title", SEED.titled]), { id: SEED.titled, title: null });
      const set = await runCli(db, ["title", SEED.titled, "Release", "notes"]);
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.stdout, `title of ${SEED.titled} set to "Release notes"\n`);
      assert.equal((await runCli(db, ["title", "Release notes"])).stdout, "Release notes\n", "found by its title");
      assert.deepEqual(await runJson(db, ["title", SEED.titled, "  Release\tnotes v2 "]), { id: SEED.titled, title: "Release notes v2" });

      const inUse = await runCli(db, ["title", SEED.titled, "Deploy plan"]);
      assertFails(inUse, 1, `error TITLE_IN_USE: Title 'Deploy plan' is already in use by session ${SEED.alpha}`);
      assertFails(await runCli(db, ["title", SEED.titled, "x".repeat(101)]), 1, "error TITLE_TOO_LONG: Title too long (101 chars, max 100)");
      assertFails(await runCli(db, ["title", SEED.titled, "new", "--clear"]), 2, "error: give either TITLE or --clear");
      assert.deepEqual(await runJson(db, ["title", SEED.titled, "--clear"]), { id: SEED.titled, title: null });
    });

    test("delete: refuses without --yes when stdin is not a terminal; deletes with --yes", async () => {
      const refused = await runCli(db, ["delete", SEED.doomed], { input: "y\n" });
      assertFails(refused, 2, "error: delete needs --yes when stdin is not a terminal");
      assert.equal((await runJson<SessionExport>(db, ["show", SEED.doomed])).id, SEED.doomed, "nothing was deleted");
      assert.deepEqual(await runJson(db, ["delete", SEED.doomed, "--yes"]), { deleted: 1 });
      assertFails(await runCli(db, ["show", SEED.doomed]), 1, "error NOT_FOUND:");
      assertFails(await runCli(db, ["delete", SEED.doomed, "--yes"]), 1, "error NOT_FOUND:");
    });

    test("prune: refuses without --yes when stdin is not a terminal; prunes with --yes", async () => {
      assertFails(await runCli(db, ["prune", "--older-than", "0", "--source", "oldsrc"]), 2, "error: prune needs --yes");
      assert.equal((await runJson<SessionExport>(db, ["show", SEED.old])).id, SEED.old);
      assert.deepEqual(await runJson(db, ["prune", "--older-than", "30", "--source", "oldsrc", "--yes"]), { deleted: 0 });
      const pruned = await runCli(db, ["prune", "--older-than", "0", "--source", "oldsrc", "--yes"]);
      assert.equal(pruned.code, 0, pruned.stderr);
      assert.match(pruned.stdout, /^pruned 1 session \(/);
      assertFails(await runCli(db, ["prune", "--older-than", "-1", "--yes"]), 2, "error: option '--older-than <days>' argument '-1' is invalid");
    });

    test("stats: counts, sizes and sources; the daemon's figures when one serves", async () => {
      const stats = await runJson<{
        database: string; fileBytes: number; walBytes: number; sessions: number; messages: number;
        sources: Array<{ source: string; sessions: number; messages: number }>; daemon: unknown;
      }>(db, ["stats"]);
      assert.deepEqual(Object.keys(stats), ["database", "fileBytes", "walBytes", "sessions", "messages", "sources", "daemon"]);
      assert.ok(stats.fileBytes > 0);
      const listed = await runJson<SessionExport[]>(db, ["list", "--children", "--limit", "1000"]);
      assert.equal(stats.sessions, listed.length);
      assert.equal(stats.sources.reduce((n, s) => n + s.sessions, 0), stats.sessions);
      assert.equal(stats.sources.reduce((n, s) => n + s.messages, 0), stats.messages);
      assert.deepEqual(stats.sources.find((s) => s.source === "telegram"), { source: "telegram", sessions: 1, messages: 1 });
      const text = await runCli(db, ["stats"]);
      assert.match(text.stdout, /^sessions {2}\d+$/m);
      assert.match(text.stdout, mode === "daemon" ? /^writer {4}\d+ writes? in \d+ commits?/m : /^daemon {4}none/m);
    });
  });
}
