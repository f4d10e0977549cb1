/** Sessions and messages per source, for `sessiondb stats`. */
import type { SourceCount } from "../session-db.js";
import { sql } from "./connection.js";
import { read } from "./define-operation.js";

export const sourceCounts = read("sourceCounts", (db): SourceCount[] =>
  // Messages are counted, not summed from message_count: the counter is the agent's, the rows are the truth.
  sql(
    db,
    `SELECT s.source AS source, COUNT(*) AS sessions,
       COALESCE(SUM((SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)), 0) AS messages
     FROM sessions s GROUP BY s.source ORDER BY sessions DESC, s.source`,
  ).all() as SourceCount[]);
