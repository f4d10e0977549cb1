/** The argument checks of the rich listing (SPEC §3, listSessionsRich). */
import { count, field, optBool, optObject, optStr, optStrList, type Args } from "./args.js";

export function parseListSessionsRich(args: Args) {
  const opts = optObject(args[0], "opts");
  const excluded = optStrList(field(opts, "excludeSources"), "opts.excludeSources");
  const includeChildren = optBool(field(opts, "includeChildren"), "opts.includeChildren", false);
  return {
    source: optStr(field(opts, "source"), "opts.source"),
    excluded: excluded !== null && excluded.length > 0 ? JSON.stringify(excluded) : null,
    limit: count(field(opts, "limit"), "opts.limit", 20),
    offset: count(field(opts, "offset"), "opts.offset", 0, Number.MAX_SAFE_INTEGER),
    children: includeChildren ? 1 : 0,
    project: !includeChildren && optBool(field(opts, "projectCompressionTips"), "opts.projectCompressionTips", true),
  };
}
