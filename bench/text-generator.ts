/**
 * Realistic agent-session text: English with Zipf word frequencies, code-like tokens (paths,
 * identifiers, commands, error codes), tool calls and their outputs, and some Chinese and
 * Japanese. The searched-for terms are planted at known rates so every corpus has a rare term,
 * a common term, a phrase and a CJK substring to look for.
 */
import { Random, ZipfPicker } from "./random.js";

/** Planted in 1 sentence in 20,000: few hits whatever the corpus size. */
export const RARE_TERM = "xylophonist";
/** A frequent noun of the vocabulary below (13th of the Zipf ranking): in about a fifth of messages. */
export const COMMON_TERM = "token";
/** Planted in 1 sentence in 500 (its words also occur apart). */
export const PHRASE = "connection pool exhausted";
/** Occurs inside longer CJK runs only, so FTS5 (unicode61) cannot match it as a token. */
export const CJK_TERM = "数据库";

const NOUNS = [
  "file", "test", "function", "error", "session", "database", "message", "config", "server", "request",
  "user", "branch", "commit", "build", "query", "module", "response", "cache", "token", "output",
  "directory", "script", "service", "table", "index", "schema", "process", "thread", "connection", "pool",
  "log", "stack", "container", "image", "dependency", "package", "version", "endpoint", "handler", "parser",
  "migration", "column", "row", "field", "worker", "queue", "lock", "socket", "client", "key",
  "variable", "argument", "option", "flag", "path", "timeout", "retry", "benchmark", "latency", "throughput",
  "release", "changelog", "deployment", "cluster", "pipeline", "job", "artifact", "report", "chart", "summary",
  "prompt", "model", "context", "window", "tool", "result", "agent", "task", "plan", "step",
  "permission", "certificate", "secret", "environment", "variable", "terminal", "shell", "editor", "compiler", "linter",
  "snapshot", "checkpoint", "transaction", "savepoint", "trigger", "view", "cursor", "page", "batch", "frame",
  "widget", "layout", "component", "route", "template", "stylesheet", "font", "icon", "button", "dialog",
  "invoice", "customer", "order", "payment", "account", "ledger", "calendar", "meeting", "email", "note",
];
const VERBS = [
  "check", "update", "run", "fix", "add", "remove", "open", "read", "write", "create",
  "install", "build", "deploy", "test", "debug", "refactor", "rename", "merge", "rebase", "revert",
  "parse", "load", "save", "sort", "filter", "search", "index", "migrate", "restart", "configure",
  "validate", "format", "export", "import", "compress", "split", "retry", "cancel", "schedule", "profile",
  "measure", "compare", "inspect", "trace", "log", "document", "review", "clean", "cache", "bump",
];
const ADJECTIVES = [
  "new", "old", "failing", "slow", "empty", "large", "small", "missing", "broken", "stale",
  "current", "previous", "default", "local", "remote", "shared", "private", "public", "nested", "duplicate",
  "unused", "flaky", "recursive", "async", "cached", "invalid", "optional", "required", "temporary", "final",
];
const ADVERBS = ["now", "again", "first", "then", "quickly", "carefully", "locally", "automatically", "instead", "later"];
const OPENERS = [
  "I'll", "Let me", "Now I'll", "First, I'll", "Next, let me", "I need to", "We should", "Can you", "Please",
  "Could you", "I think we should", "It looks like we need to", "Before that, I'll", "To be safe, let me",
];
const CONNECTORS = ["because", "so that", "before we", "after we", "while we", "since", "but", "and then", "unless we"];
const DIRS = ["src", "lib", "test", "scripts", "docs", "config", "bench", "workers", "app", "packages/core"];
const EXTS = ["ts", "py", "js", "json", "md", "yaml", "toml", "sql", "rs", "go"];
const COMMANDS = [
  "npm test", "git status", "git log --oneline -5", "pytest -x -q", "cargo build --release", "ls -la",
  "grep -rn TODO src", "docker compose up -d", "make lint", "python3 -m pip install -e .", "node --version",
  "sqlite3 state.db .schema", "git diff --stat", "npm run build", "rg --files-with-matches session",
];
const ERROR_CODES = ["SQLITE_BUSY", "ECONNREFUSED", "ENOENT", "EADDRINUSE", "ETIMEDOUT", "HTTP 503", "exit code 1", "KeyError", "TypeError"];
const TOOL_NAMES = ["terminal", "read_file", "write_file", "search_files", "web_search", "patch", "browser_navigate"];

/** Chinese and Japanese phrases; runs are built from several, so the planted term sits inside longer tokens. */
const CJK_PHRASES = [
  "连接", "失败", "已经", "完成", "迁移", "检查", "配置文件", "服务器", "重新启动", "测试用例", "性能", "索引",
  "查询很慢", "请帮我", "这个问题", "日志显示", "用户会话", "缓存", "テスト", "が失敗しました", "設定ファイル",
  "を確認します", "サーバー", "ログ", "セッション", "インデックス", "遅い", "修正しました",
];

const NOUN = new ZipfPicker(NOUNS, 0.9);
const VERB = new ZipfPicker(VERBS, 0.9);
const ADJ = new ZipfPicker(ADJECTIVES, 0.8);

export interface GeneratedToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface GeneratedMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  toolCalls?: GeneratedToolCall[];
  toolName?: string;
  toolCallId?: string;
}

export class TextGenerator {
  readonly #random: Random;

  constructor(random: Random) {
    this.#random = random;
  }

  /** Text of about `length` characters (cut at a word boundary), as typed by a user or an agent. */
  prose(length: number): string {
    let text = "";
    while (text.length < length) text += (text === "" ? "" : " ") + this.#sentence();
    return cut(text, length);
  }

  /** One message of about `length` characters for the convoy; some carry a tool call. */
  convoyMessage(index: number, length: number): GeneratedMessage {
    const r = this.#random;
    if (index % 2 === 0) return { role: "user", content: this.prose(length) };
    const msg: GeneratedMessage = { role: "assistant", content: this.prose(length) };
    if (r.chance(0.25)) msg.toolCalls = [this.toolCall()];
    return msg;
  }

  /** A user turn: a request of 40 to 400 characters. */
  userTurn(): string {
    return this.prose(this.#random.int(40, 400));
  }

  /** An assistant turn: an explanation of 80 to 900 characters. */
  assistantTurn(): string {
    return this.prose(this.#random.int(80, 900));
  }

  toolCall(): GeneratedToolCall {
    const r = this.#random;
    const name = r.pick(TOOL_NAMES);
    const args = name === "terminal" ? { command: r.pick(COMMANDS) } : { path: this.#path(), query: NOUN.pick(r) };
    return { id: `call_${r.hex(24)}`, type: "function", function: { name, arguments: JSON.stringify(args) } };
  }

  /** What a tool returned: code, test output, a listing or JSON, 100 to 1,600 characters. */
  toolOutput(name: string): string {
    const r = this.#random;
    const length = r.int(100, 1600);
    const kind = name === "terminal" ? r.pick(["tests", "listing", "log"] as const) : r.pick(["code", "json", "code"] as const);
    let text = "";
    while (text.length < length) text += `${this.#toolLine(kind)}\n`;
    return cut(text, length);
  }

  #toolLine(kind: "tests" | "listing" | "log" | "code" | "json"): string {
    const r = this.#random;
    switch (kind) {
      case "tests":
        return r.chance(0.85)
          ? `✔ ${VERB.pick(r)}s the ${ADJ.pick(r)} ${NOUN.pick(r)} (${r.int(1, 900)}ms)`
          : `✖ ${this.#identifier()} failed: expected ${r.int(0, 99)} to equal ${r.int(0, 99)} at ${this.#path()}:${r.int(1, 400)}`;
      case "listing":
        return `-rw-r--r-- 1 agent agent ${r.int(100, 99999)} ${this.#path()}`;
      case "log":
        return `${new Date(1_700_000_000_000 + r.int(0, 3e9)).toISOString()} ${r.pick(["INFO", "WARN", "ERROR", "DEBUG"])} ${this.#sentence()}`;
      case "code":
        return r.pick([
          `const ${this.#identifier()} = await ${this.#identifier()}(${NOUN.pick(r)}Id, { ${NOUN.pick(r)}: true });`,
          `def ${this.#snake()}(self, ${NOUN.pick(r)}, ${NOUN.pick(r)}=None):`,
          `    return self.${this.#snake()}(${NOUN.pick(r)}).${VERB.pick(r)}()`,
          `if (!${this.#identifier()}) throw new Error("${ADJ.pick(r)} ${NOUN.pick(r)}");`,
          `SELECT ${NOUN.pick(r)}_id, COUNT(*) FROM ${NOUN.pick(r)}s WHERE ${NOUN.pick(r)} = ? GROUP BY 1;`,
          `// ${this.#sentence()}`,
          `import { ${this.#identifier()} } from "./${NOUN.pick(r)}-${NOUN.pick(r)}.js";`,
        ]);
      case "json":
        return JSON.stringify({ [NOUN.pick(r)]: this.#identifier(), [NOUN.pick(r)]: r.int(0, 5000), ok: r.chance(0.8) });
    }
  }

  /** A run of Chinese or Japanese text; with `planted`, the CJK term sits inside it. */
  cjkSentence(planted: boolean): string {
    const r = this.#random;
    const parts: string[] = [];
    const n = r.int(2, 5);
    for (let i = 0; i < n; i++) parts.push(r.pick(CJK_PHRASES));
    if (planted) parts.splice(r.int(1, parts.length - 1), 0, CJK_TERM);
    return `${parts.join("")}${r.pick(["。", "，", "！"])}`;
  }

  #sentence(): string {
    const r = this.#random;
    const x = r.next();
    if (x < 0.03) return this.cjkSentence(r.chance(0.35));
    if (x < 0.03005) return `The ${RARE_TERM} ${NOUN.pick(r)} ${VERB.pick(r)}s the ${NOUN.pick(r)}.`;
    if (x < 0.03205) return `The ${NOUN.pick(r)} failed with "${PHRASE}" after ${r.int(2, 300)} requests.`;
    if (x < 0.08) return `Running \`${r.pick(COMMANDS)}\` shows ${r.pick(ERROR_CODES)} in ${this.#path()}.`;
    if (x < 0.13) return `The ${this.#identifier()} call in ${this.#path()}:${r.int(1, 800)} ${VERB.pick(r)}s the ${ADJ.pick(r)} ${NOUN.pick(r)}.`;
    if (x < 0.6) {
      const clause = `${r.pick(OPENERS)} ${VERB.pick(r)} the ${ADJ.pick(r)} ${NOUN.pick(r)}`;
      return r.chance(0.4)
        ? `${clause} ${r.pick(CONNECTORS)} ${VERB.pick(r)} the ${NOUN.pick(r)} ${r.pick(ADVERBS)}.`
        : `${clause} in the ${NOUN.pick(r)} ${NOUN.pick(r)}.`;
    }
    const subject = `The ${r.chance(0.5) ? `${ADJ.pick(r)} ` : ""}${NOUN.pick(r)}`;
    return `${subject} ${r.pick(["is", "was", "looks", "seems", "stays"])} ${ADJ.pick(r)} ${r.pick(CONNECTORS)} the ${NOUN.pick(r)} ${VERB.pick(r)}s ${r.pick(ADVERBS)}.`;
  }

  #path(): string {
    const r = this.#random;
    return `${r.pick(DIRS)}/${NOUN.pick(r)}-${NOUN.pick(r)}.${r.pick(EXTS)}`;
  }

  #identifier(): string {
    const r = this.#random;
    const noun = NOUN.pick(r);
    return `${VERB.pick(r)}${noun[0]!.toUpperCase()}${noun.slice(1)}`;
  }

  #snake(): string {
    return `${VERB.pick(this.#random)}_${NOUN.pick(this.#random)}`;
  }
}

/** The text cut to at most `length` characters, at the last space before it when there is one. */
function cut(text: string, length: number): string {
  if (text.length <= length) return text;
  const space = text.lastIndexOf(" ", length);
  return text.slice(0, space > length * 0.7 ? space : length);
}
