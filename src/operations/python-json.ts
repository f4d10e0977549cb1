/**
 * JSON text byte for byte as Python's `json.dumps(value)` writes it with its defaults, which is how
 * the reference stores `tool_calls`, `reasoning_details`, `codex_reasoning_items` and
 * `model_config` (and `get_messages` hands some of them back as that raw text): `", "` and `": "`
 * between items, `ensure_ascii` (every character outside U+0020–U+007E as `\uXXXX`, lower-case
 * hex, a character beyond the BMP as its two surrogates), and floats as Python's `repr` spells
 * them (`1e-05`, not `0.00001`). A whole number is written as an integer: JavaScript cannot tell
 * `1.0` from `1`, so that one case is Python's int (the Python client sends its own `json.dumps`
 * text instead, see `jsonText` in args.ts).
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const DEL = 0x7f;
const NUMBER = /-?\d[\d.eE+-]*/y;

// `\uXXXX` for each UTF-16 unit, made once each.
const escapes = new Map<number, string>();

function escapeOf(code: number): string {
  let escape = escapes.get(code);
  if (escape === undefined) {
    escape = `\\u${code.toString(16).padStart(4, "0")}`;
    escapes.set(code, escape);
  }
  return escape;
}

const HEX = Buffer.from("0123456789abcdef", "latin1");

/** `\\uXXXX` for each UTF-16 unit of `text` from `start` to `end`, written as bytes (long runs of CJK text). */
function escapeRun(text: string, start: number, end: number): string {
  const bytes = Buffer.allocUnsafe((end - start) * 6);
  let at = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    bytes[at] = BACKSLASH;
    bytes[at + 1] = 0x75; // u
    bytes[at + 2] = HEX[c >> 12]!;
    bytes[at + 3] = HEX[(c >> 8) & 15]!;
    bytes[at + 4] = HEX[(c >> 4) & 15]!;
    bytes[at + 5] = HEX[c & 15]!;
    at += 6;
  }
  return bytes.toString("latin1", 0, at);
}

/** A number as Python's float repr writes it, given JavaScript's shortest round-trip spelling. */
function pythonNumber(text: string): string {
  const value = Number(text);
  const magnitude = Math.abs(value);
  // JavaScript switches to an exponent below 1e-6 and at 1e21; Python's repr below 1e-4 and at
  // 1e16, where every double is a whole number (written as an int here) or already has one.
  if (Number.isInteger(value) || magnitude >= 1e-4) return text;
  const [mantissa, exponent] = value.toExponential().split("e") as [string, string];
  const sign = exponent.startsWith("-") ? "-" : "+";
  return `${mantissa}e${sign}${exponent.replace(/^[+-]/, "").padStart(2, "0")}`;
}

/**
 * Compact JSON text (JSON.stringify's) respelled as Python's `json.dumps` spells the same value.
 * One pass over the UTF-16 units, copying runs that need nothing (a regular expression per token
 * costs microseconds each, and a backtracking one overflows the stack on megabytes).
 */
export function pythonJsonText(compact: string): string {
  const out: string[] = [];
  let run = 0; // where the text not yet copied starts
  let inString = false;
  const n = compact.length;
  for (let i = 0; i < n; i++) {
    const c = compact.charCodeAt(i);
    if (inString) {
      if (c < DEL && c !== QUOTE && c !== BACKSLASH) continue;
      if (c === QUOTE) {
        inString = false;
      } else if (c === BACKSLASH) {
        i++; // the escaped unit (a \uXXXX escape's digits are plain ASCII and copied as they come)
      } else {
        if (i > run) out.push(compact.slice(run, i));
        let end = i + 1;
        while (end < n && compact.charCodeAt(end) >= DEL) end++;
        out.push(end - i === 1 ? escapeOf(c) : escapeRun(compact, i, end));
        run = end;
        i = end - 1;
      }
      continue;
    }
    if (c === QUOTE) {
      inString = true;
    } else if (c === COMMA || c === COLON) {
      out.push(compact.slice(run, i + 1), " ");
      run = i + 1;
    } else if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i;
      const number = NUMBER.exec(compact)![0];
      const spelled = pythonNumber(number);
      if (spelled !== number) {
        if (i > run) out.push(compact.slice(run, i));
        out.push(spelled);
        run = i + number.length;
      }
      i += number.length - 1;
    }
  }
  if (run < n) out.push(compact.slice(run));
  return out.join("");
}
