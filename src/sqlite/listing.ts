/** The rich session listing and compression chains (SPEC §3, "Compression chains", "listSessionsRich"). */
import type { RichSessionRow } from "../session-db.js";
import { sql, type Connection } from "./connection.js";
import { read } from "./define-operation.js";
import { compressionTipWalk, type ChainAnswer, type ChainQuestion } from "../operations/compression-chain.js";
import { finishRow, isCompressedRoot, projectOntoRoot } from "../operations/rich-listing.js";
import { SESSION_SELECT } from "../operations/rows.js";

function answer(db: Connection, q: ChainQuestion): ChainAnswer {
  return q.ask === "end"
    ? (sql(db, "SELECT end_reason, ended_at FROM sessions WHERE id = ?").get(q.id) as ChainAnswer)
    : (sql(db, "SELECT id FROM sessions WHERE parent_session_id = ? AND started_at >= ? ORDER BY started_at DESC LIMIT 1")
        .pluck()
        .get(q.id, q.since) as string | undefined);
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

const ONE_SQL = `${RICH_SELECT} WHERE s.id = ?`;

function project(db: Connection, root: RichSessionRow): RichSessionRow {
  if (!isCompressedRoot(root)) return root;
  const tipId = compressionTip(db, root.id);
  if (tipId === root.id) return root;
  const tip = sql(db, ONE_SQL).get(tipId) as RichSessionRow | undefined;
  return tip === undefined ? root : projectOntoRoot(root, tip);
}

export const listSessionsRich = read("listSessionsRich", (db, p) => {
  const { project: projectTips, ...params } = p;
  const rows = (sql(db, LIST_SQL).all(params) as RichSessionRow[]).map(finishRow);
  return projectTips ? rows.map((row) => project(db, row)) : rows;
});
