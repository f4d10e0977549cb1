/** The argument checks of full-text search (SPEC §3.1, searchMessages). */
import { count, field, optObject, optStrList, str, type Args } from "./args.js";

export interface SearchParams {
  query: string;
  /** The filter lists as JSON arrays, null for "no filter". */
  sources: string | null;
  excluded: string | null;
  roles: string | null;
  limit: number;
  offset: number;
  /** An empty source filter: no session can match. */
  matchesNothing: boolean;
}

/** A filter list as a JSON array, or null for "no filter". */
function listParam(list: string[] | null): string | null {
  return list === null ? null : JSON.stringify(list);
}

export function parseSearchMessages(args: Args): SearchParams {
  const opts = optObject(args[1], "opts");
  const sourceFilter = optStrList(field(opts, "sourceFilter"), "opts.sourceFilter");
  const excludeSources = optStrList(field(opts, "excludeSources"), "opts.excludeSources");
  const roleFilter = optStrList(field(opts, "roleFilter"), "opts.roleFilter");
  return {
    query: str(args[0], "query"),
    sources: listParam(sourceFilter),
    excluded: excludeSources !== null && excludeSources.length > 0 ? listParam(excludeSources) : null,
    roles: roleFilter !== null && roleFilter.length > 0 ? listParam(roleFilter) : null,
    limit: count(field(opts, "limit"), "opts.limit", 20),
    offset: count(field(opts, "offset"), "opts.offset", 0, Number.MAX_SAFE_INTEGER),
    matchesNothing: sourceFilter !== null && sourceFilter.length === 0,
  };
}
