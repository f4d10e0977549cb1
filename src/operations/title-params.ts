/** The argument checks of the title operations (SPEC §3, "Titles"). */
import { optText, str, type Args } from "./args.js";
import { sanitizeTitle } from "./title-sanitizer.js";

// Bounded as text, not as a name: only the cleaned length decides (TITLE_TOO_LONG past 100).
export const parseSetSessionTitle = (args: Args) => ({ id: str(args[0], "id"), title: sanitizeTitle(optText(args[1], "title")) });

export const parseTitle = (args: Args) => ({ title: str(args[0], "title") });

export const parseBaseTitle = (args: Args) => ({ baseTitle: str(args[0], "baseTitle") });
