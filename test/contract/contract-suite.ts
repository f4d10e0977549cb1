/**
 * The contract test suite: SPEC §3, §3.1 and the errors of §8, plus the operations added
 * beyond SPEC (importSession, sourceCounts, sessionIdsByPrefix), run against any `SessionDB`.
 * Direct mode and the daemon client each call `runContractSuite` with their own opener; every
 * test gets a fresh database file in its own temp dir. Times are set, and damaged rows planted,
 * through a separate raw connection to the same file (see ../helpers/raw-db.ts), which any
 * implementation must see as it sees any other process's writes.
 */
import { describe } from "node:test";
import type { SessionDB } from "../../src/index.js";
import { engineDifferencesContract } from "./engine-differences-contract.js";
import { agreementContract } from "./agreement-contract.js";
import { exportContract } from "./export-contract.js";
import { idempotencyContract } from "./idempotency-contract.js";
import { importContract } from "./import-contract.js";
import { lifecycleContract } from "./lifecycle-contract.js";
import { listingContract } from "./listing-contract.js";
import { messagesContract } from "./messages-contract.js";
import { removalContract } from "./removal-contract.js";
import { searchContract } from "./search-contract.js";
import { sessionsContract } from "./sessions-contract.js";
import { titlesContract } from "./titles-contract.js";
import { tokensContract } from "./tokens-contract.js";
import { watchContract } from "./watch-contract.js";

/** `watch`: run the change feed's cases (watch-contract.ts); a transport that serves no feed yet leaves them out. */
export interface SuiteOptions {
  watch?: boolean;
}

export function runContractSuite(label: string, open: (dbPath: string) => Promise<SessionDB>, options: SuiteOptions = {}): void {
  describe(`SessionDB contract (${label})`, () => {
    sessionsContract(open);
    tokensContract(open);
    titlesContract(open);
    listingContract(open);
    messagesContract(open);
    searchContract(open);
    exportContract(open);
    importContract(open);
    removalContract(open);
    lifecycleContract(open);
    engineDifferencesContract(open);
    agreementContract(open);
    idempotencyContract(open);
    if (options.watch ?? true) watchContract(open);
  });
}
