/** The database behind a handle: a SQLite file, or a PostgreSQL database (a `postgres://` URL). */
export type Engine = "sqlite" | "postgres";
