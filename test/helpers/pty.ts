/**
 * The built `sessiondb` command on a real pseudo-terminal (python3's `pty` module makes it and
 * sets its size), for what only a terminal gets: tables fitted to its width, colours, prompts.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { CLI } from "./cli.js";

// Runs argv[4:] on a new pty of argv[1] columns; once the output shows argv[2] (when not empty),
// types argv[3]; copies everything the command writes (stdout and stderr) to stdout; exits with
// the command's status.
const DRIVER = String.raw`
import os, pty, sys, fcntl, termios, struct, select
cols, wait_for, answer, argv = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode(), sys.argv[4:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
seen, answered = b"", not wait_for
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
    if not answered and wait_for in seen:
        os.write(fd, answer)
        answered = True
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
`;

export interface PtyResult {
  code: number | null;
  /** Everything the command wrote, stdout and stderr together, with the terminal's CRLF made LF. */
  output: string;
}

export interface PtyOptions {
  columns: number;
  env?: Record<string, string>;
  /** Types `answer` once the output shows `waitFor` (a prompt). */
  waitFor?: string;
  answer?: string;
}

/** Runs `sessiondb --db <db> ...args` on a pseudo-terminal `columns` wide. */
export async function runCliOnPty(db: string, args: readonly string[], options: PtyOptions): Promise<PtyResult> {
  const { COLUMNS: _columns, NO_COLOR: _noColor, ...inherited } = process.env;
  const child = spawn(
    "python3",
    ["-c", DRIVER, String(options.columns), options.waitFor ?? "", options.answer ?? "", process.execPath, CLI, "--db", db, ...args],
    { stdio: ["ignore", "pipe", "inherit"], env: { ...inherited, SESSIONDB_PATH: db, ...options.env } },
  );
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const [code] = (await once(child, "close")) as [number | null];
  return { code, output: output.replace(/\r\n/g, "\n") };
}

/** Text without its terminal colour sequences. */
export function stripColors(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

// Runs argv[2:] on a new pty of argv[1] columns; copies what the command writes to stdout and
// what this driver reads on stdin to the terminal (so "\x03" is a Ctrl-C); exits with the
// command's status.
const INTERACTIVE_DRIVER = String.raw`
import os, pty, sys, fcntl, termios, struct, select
cols, argv = int(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
stdin = sys.stdin.fileno()
watched = [fd, stdin]
while True:
    ready, _, _ = select.select(watched, [], [])
    if stdin in ready:
        data = os.read(stdin, 1024)
        if data:
            os.write(fd, data)
        else:
            watched.remove(stdin)
    if fd in ready:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
`;

/** A command running on a pseudo-terminal while the test goes on (`tail -f`, `watch`). */
export interface PtySession {
  /** Everything written so far, CRLF made LF. */
  output(): string;
  /** Types on the terminal: "\x03" is Ctrl-C (SIGINT to the command). */
  type(text: string): void;
  /** The command's exit code, once it has exited. */
  readonly exited: Promise<number | null>;
}

/** Starts `sessiondb --db <db> ...args` on a pseudo-terminal `columns` wide. */
export function startCliOnPty(db: string, args: readonly string[], options: { columns: number; env?: Record<string, string> }): PtySession {
  const { COLUMNS: _columns, NO_COLOR: _noColor, ...inherited } = process.env;
  const child = spawn(
    "python3",
    ["-c", INTERACTIVE_DRIVER, String(options.columns), process.execPath, CLI, "--db", db, ...args],
    { stdio: ["pipe", "pipe", "inherit"], env: { ...inherited, SESSIONDB_PATH: db, ...options.env } },
  );
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = once(child, "close").then(([code]) => code as number | null);
  return {
    output: () => output.replace(/\r\n/g, "\n"),
    type: (text) => void child.stdin.write(text),
    exited,
  };
}
