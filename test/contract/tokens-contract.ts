/** updateTokenCounts, column by column, in increment and absolute mode (SPEC §3 table). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SessionRow } from "../../src/index.js";
import { isPostgresUrl as isPostgres } from "../../src/database-location.js";
import { rawGet, rawRun } from "../helpers/raw-db.js";
import { expectCode, fresh, type Opener } from "./fixture.js";

const TOKEN_COLUMNS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"] as const;

function tokens(row: SessionRow | null): Record<string, number | null> {
  assert.ok(row, "the session exists");
  return Object.fromEntries(TOKEN_COLUMNS.map((c) => [c, row[c]]));
}

const ALL_FIVE = { inputTokens: 10, outputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 40, reasoningTokens: 50 };

export function tokensContract(open: Opener): void {
  describe("updateTokenCounts", () => {
    test("increment mode adds to the five counters; left-out fields count as 0", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.updateTokenCounts("s", ALL_FIVE);
      await db.updateTokenCounts("s", ALL_FIVE);
      await db.updateTokenCounts("s", { inputTokens: 1 });
      assert.deepEqual(tokens(await db.getSession("s")), {
        input_tokens: 21, output_tokens: 40, cache_read_tokens: 60, cache_write_tokens: 80, reasoning_tokens: 100,
      });
    });

    test("absolute mode sets the counters; left-out counters become 0", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.updateTokenCounts("s", ALL_FIVE);
      await db.updateTokenCounts("s", { inputTokens: 7, reasoningTokens: 3 }, { absolute: true });
      assert.deepEqual(tokens(await db.getSession("s")), {
        input_tokens: 7, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 3,
      });
      await db.updateTokenCounts("s", ALL_FIVE, { absolute: true });
      await db.updateTokenCounts("s", ALL_FIVE, { absolute: true });
      assert.deepEqual(tokens(await db.getSession("s")), {
        input_tokens: 10, output_tokens: 20, cache_read_tokens: 30, cache_write_tokens: 40, reasoning_tokens: 50,
      });
    });

    test("an explicit null token writes NULL, stays NULL on increments, and an absolute write restores it", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.updateTokenCounts("s", { inputTokens: 5, outputTokens: 5 });
      await db.updateTokenCounts("s", { inputTokens: null, outputTokens: 1 });
      let row = await db.getSession("s");
      assert.equal(row?.input_tokens, null);
      assert.equal(row?.output_tokens, 6);
      await db.updateTokenCounts("s", { inputTokens: 100 });
      assert.equal((await db.getSession("s"))?.input_tokens, null, "NULL + p stays NULL");
      await db.updateTokenCounts("s", { inputTokens: 8 }, { absolute: true });
      row = await db.getSession("s");
      assert.equal(row?.input_tokens, 8);
      await db.updateTokenCounts("s", { cacheReadTokens: null }, { absolute: true });
      assert.equal((await db.getSession("s"))?.cache_read_tokens, null, "absolute null writes NULL");
    });

    test("estimated cost accumulates from NULL as 0; absolute mode sets it and resets it to 0 when left out", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      assert.equal((await db.getSession("s"))?.estimated_cost_usd, null);
      await db.updateTokenCounts("s", { inputTokens: 1 });
      assert.equal((await db.getSession("s"))?.estimated_cost_usd, 0, "COALESCE(col,0) + COALESCE(NULL,0)");
      await db.updateTokenCounts("s", { estimatedCostUsd: 0.25 });
      await db.updateTokenCounts("s", { estimatedCostUsd: 0.5 });
      await db.updateTokenCounts("s", { estimatedCostUsd: null });
      assert.equal((await db.getSession("s"))?.estimated_cost_usd, 0.75);
      await db.updateTokenCounts("s", { estimatedCostUsd: 2 }, { absolute: true });
      assert.equal((await db.getSession("s"))?.estimated_cost_usd, 2);
      await db.updateTokenCounts("s", { inputTokens: 1 }, { absolute: true });
      assert.equal((await db.getSession("s"))?.estimated_cost_usd, 0, "left out in absolute mode resets to 0");
      await db.updateTokenCounts("s", { estimatedCostUsd: 3 }, { absolute: true });
      await db.updateTokenCounts("s", { estimatedCostUsd: null }, { absolute: true });
      assert.equal((await db.getSession("s"))?.estimated_cost_usd, 0, "explicit null in absolute mode is 0");
    });

    test("actual cost is unchanged when absent or null, else added (increment) or set (absolute)", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.updateTokenCounts("s", { inputTokens: 1 });
      assert.equal((await db.getSession("s"))?.actual_cost_usd, null, "absent keeps NULL");
      await db.updateTokenCounts("s", { actualCostUsd: 0.5 });
      await db.updateTokenCounts("s", { actualCostUsd: 0.25 });
      assert.equal((await db.getSession("s"))?.actual_cost_usd, 0.75);
      await db.updateTokenCounts("s", { actualCostUsd: null });
      await db.updateTokenCounts("s", { inputTokens: 1 }, { absolute: true });
      await db.updateTokenCounts("s", { actualCostUsd: null }, { absolute: true });
      assert.equal((await db.getSession("s"))?.actual_cost_usd, 0.75, "absent or null leaves it in both modes");
      await db.updateTokenCounts("s", { actualCostUsd: 4 }, { absolute: true });
      assert.equal((await db.getSession("s"))?.actual_cost_usd, 4);
    });

    test("cost_status, cost_source and pricing_version: the newest non-null wins, in both modes", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.updateTokenCounts("s", { costStatus: "estimated", costSource: "table", pricingVersion: "v1" });
      await db.updateTokenCounts("s", { costStatus: "final" });
      let row = await db.getSession("s");
      assert.equal(row?.cost_status, "final");
      assert.equal(row?.cost_source, "table");
      assert.equal(row?.pricing_version, "v1");
      await db.updateTokenCounts("s", { costSource: "provider", pricingVersion: "v2" }, { absolute: true });
      await db.updateTokenCounts("s", { costStatus: null }, { absolute: true });
      row = await db.getSession("s");
      assert.equal(row?.cost_status, "final");
      assert.equal(row?.cost_source, "provider");
      assert.equal(row?.pricing_version, "v2");
    });

    test("billing provider, base URL and mode: the first non-null sticks, in both modes", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("s", "cli");
      await db.updateTokenCounts("s", { billingProvider: null });
      await db.updateTokenCounts("s", { billingProvider: "openrouter" });
      await db.updateTokenCounts("s", { billingProvider: "anthropic", billingBaseUrl: "https://a.example" });
      await db.updateTokenCounts("s", { billingBaseUrl: "https://b.example", billingMode: "api" }, { absolute: true });
      await db.updateTokenCounts("s", { billingMode: "subscription", billingProvider: "x" }, { absolute: true });
      const row = await db.getSession("s");
      assert.equal(row?.billing_provider, "openrouter");
      assert.equal(row?.billing_base_url, "https://a.example");
      assert.equal(row?.billing_mode, "api");
    });

    test("model is back-filled only while NULL", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("bare", "cli");
      await db.createSession("named", "cli", { model: "m0" });
      await db.updateTokenCounts("bare", { inputTokens: 1 });
      assert.equal((await db.getSession("bare"))?.model, null);
      await db.updateTokenCounts("bare", { model: "m1" });
      await db.updateTokenCounts("bare", { model: "m2" });
      await db.updateTokenCounts("bare", { model: "m3" }, { absolute: true });
      await db.updateTokenCounts("named", { model: "m1" }, { absolute: true });
      assert.equal((await db.getSession("bare"))?.model, "m1");
      assert.equal((await db.getSession("named"))?.model, "m0");
    });

    test("only the named session changes", async (t) => {
      const { db } = await fresh(t, open);
      await db.createSession("a", "cli");
      await db.createSession("b", "cli");
      const before = await db.getSession("b");
      await db.updateTokenCounts("a", { ...ALL_FIVE, estimatedCostUsd: 1, actualCostUsd: 1, costStatus: "x", billingMode: "y", model: "z" });
      assert.deepEqual(await db.getSession("b"), before);
    });

    test("an addition that would pass 2^63 - 1 (or -2^63) fails with INVALID_ARGUMENT, nothing applied; counters stay exact integers", async (t) => {
      const { db, path } = await fresh(t, open);
      await db.createSession("s", "cli");
      const near = "9223372036854775000"; // 2^63 - 808
      rawRun(path, `UPDATE sessions SET input_tokens = ${near}, reasoning_tokens = -${near}, output_tokens = 5 WHERE id = 's'`);
      const typeOf = isPostgres(path) ? "" : ", typeof(input_tokens) AS ti";
      const exact = () => rawGet<Record<string, string>>(
        path,
        `SELECT CAST(input_tokens AS TEXT) AS i, CAST(reasoning_tokens AS TEXT) AS r, CAST(output_tokens AS TEXT) AS o${typeOf} FROM sessions WHERE id = 's'`,
      );
      await db.updateTokenCounts("s", { inputTokens: 807, outputTokens: 1 });
      const top = exact();
      assert.deepEqual([top?.i, top?.r, top?.o], ["9223372036854775807", `-${near}`, "6"], "up to 2^63 - 1, exactly");
      await expectCode(() => db.updateTokenCounts("s", { inputTokens: 1, outputTokens: 1 }), "INVALID_ARGUMENT");
      await expectCode(() => db.updateTokenCounts("s", { reasoningTokens: -809, outputTokens: 1 }), "INVALID_ARGUMENT");
      const after = exact();
      assert.deepEqual([after?.i, after?.r, after?.o], ["9223372036854775807", `-${near}`, "6"], "nothing of a refused call applied");
      if (!isPostgres(path)) assert.equal(after?.ti, "integer", "never turned into a REAL");
      // A decrement from the top is exact too.
      await db.updateTokenCounts("s", { inputTokens: -7 });
      assert.equal(exact()?.i, "9223372036854775800");
    });
  });
}
