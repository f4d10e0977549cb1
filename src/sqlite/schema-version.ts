/** The schema this release writes (SPEC §1); a file above it is newer than this code. */
export const SCHEMA_VERSION = 6;
