/** The rich session listing and compression chains (SPEC §3, "Compression chains", "listSessionsRich"). */
import type { RichSessionRow } from "../session-db.js";
import { sql, type Connection } from "./connection.js";
import { read } from "./define-operation.js";
import { compressionTipWalk, type ChainAnswer, type ChainQuestion } from "../operations/compression-chain.js";
import { finishRow, isCompressedRoot, projectOntoRoot } from "../operations/rich-listing.js";
import { SESSION_SELECT } from "../operations/rows.js";

/** The newest child of a session started at or after a time: the next session of its chain. */
const CONTINUATION_SQL = "SELECT id FROM sessions WHERE parent_session_id = ? AND started_at >= ? ORDER BY started_at DESC LIMIT 1";

function answer(db: Connection, q: ChainQuestion): ChainAnswer {
  return q.ask === "end"
    ? (sql(db, "SELECT end_reason, ended_at FROM sessions WHERE id = ?").get(q.id) as ChainAnswer)
    : (sql(db, CONTINUATION_SQL).pluck().get(q.id, q.since) as string | undefined);
}

/** The live end of the conversation `id` belongs to (operations/compression-chain.ts). */
export function compressionTip(db: Connection, id: string): string {
  const walk = compressionTipWalk(id);
  for (let step = walk.next(); ; ) {
    if (step.done === true) return step.value;
    step = walk.next(answer(db, step.value));
  }
}

export const getCompressionTip = read("getCompressionTip", (db, p) => compressionTip(db, p.id));

/** Session columns plus the preview's raw text and last activity, all in one statement. */
const RICH_SELECT = `SELECT ${SESSION_SELECT},
  COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active,
  COALESCE((SELECT substr(replace(replace(m.content, X'0A', ' '), X'0D', ' '), 1, 63) FROM messages m
            WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
            ORDER BY m.timestamp, m.id LIMIT 1), '') AS preview
  FROM sessions s`;

const LIST_SQL = `${RICH_SELECT}
  WHERE (@children = 1 OR s.parent_session_id IS NULL)
    AND (@source IS NULL OR s.source = @source)
    AND (@excluded IS NULL OR s.source NOT IN (SELECT value FROM json_each(@excluded)))
  ORDER BY s.started_at DESC LIMIT @limit OFFSET @offset`;

/** The next session of a chain as a listed row (its preview raw). */
const NEXT_ROW_SQL = `${RICH_SELECT} WHERE s.id = (${CONTINUATION_SQL})`;

/**
 * A compressed root shown as its chain's tip. The walk starts from the row's own end, and each
 * hop reads the next session's whole row, whose end the walk then knows: one statement per hop
 * (there were four for a chain of two: the root's end, its child's id, the child's end, its row).
 */
function project(db: Connection, root: RichSessionRow): RichSessionRow {
  if (!isCompressedRoot(root)) return root;
  let tip = root;
  const walk = compressionTipWalk(root);
  for (let step = walk.next(); step.done !== true; ) {
    const q = step.value;
    if (q.ask === "end") {
      step = walk.next(answer(db, q));
      continue;
    }
    const next = sql(db, NEXT_ROW_SQL).get(q.id, q.since) as RichSessionRow | undefined;
    if (next !== undefined) tip = next;
    step = walk.next(next);
  }
  return tip.id === root.id ? root : projectOntoRoot(root, tip);
}

export const listSessionsRich = read("listSessionsRich", (db, p) => {
  const { project: projectTips, ...params } = p;
  const rows = (sql(db, LIST_SQL).all(params) as RichSessionRow[]).map(finishRow);
  return projectTips ? rows.map((row) => project(db, row)) : rows;
});
