/** What the integrity checks found (`sessiondb check`, `verify`, the daemon's `check`): the public shape, apart from the SQLite code that fills it. */
export interface IndexReport {
  /** False when the file has no such index (the CJK index is the daemon's, made on first serve). */
  present: boolean;
  ok: boolean;
  problems: string[];
}

export interface IntegrityReport {
  ok: boolean;
  /** `quick_check` instead of `integrity_check`. */
  quick: boolean;
  /** Whether the full-text index was compared with the messages. */
  ftsContent: boolean;
  /** What SQLite's check found, other than in the two indexes below (empty when it said "ok"). */
  problems: string[];
  /** The full-text index `messages_fts`: its structure, and (unless quick) that it indexes exactly the messages. */
  fts: IndexReport;
  /** The CJK substring index `messages_cjk` (sqlite/cjk-index.ts): its structure and its state row. */
  cjk: IndexReport;
  /** At the snapshot checked; null when the file is too damaged to count. */
  sessions: number | null;
  messages: number | null;
}
