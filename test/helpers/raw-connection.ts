/**
 * A bare client of the wire protocol (SPEC §6) on a real Unix socket: sends whatever bytes a
 * test wants, well-formed or hostile, and hands back the daemon's reply frames one by one.
 */
import { connect, type Socket } from "node:net";
import type { TestContext } from "node:test";
import { decodeBody, encodeFrame } from "../../src/protocol/frame-codec.js";
import { FrameDecoder } from "../../src/protocol/frame-decoder.js";

export type Reply = Record<string, unknown> & { id: number };

/**
 * How long a test waits for a reply or for the daemon to close the connection: a bound for one
 * that never comes, not a speed target, so as generous as the suite's other bounds for a
 * saturated machine (a daemon's first read starts a reader thread; 10 s was within reach).
 */
const REPLY_LIMIT_MS = 60_000;

export class RawConnection {
  readonly #socket: Socket;
  readonly #decoder = new FrameDecoder(64 * 1024 * 1024);
  readonly #replies: Reply[] = [];
  #wake: (() => void) | null = null;
  #ended = false;
  /** Resolves when the daemon (or the test) has closed the connection. */
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on("data", (chunk: Buffer) => {
      for (const body of this.#decoder.push(chunk)) this.#replies.push(decodeBody(body, true) as Reply);
      this.#wake?.();
    });
    socket.on("error", () => {
      // "close" follows
    });
    this.closed = new Promise((resolve) =>
      socket.on("close", () => {
        this.#ended = true;
        this.#wake?.();
        resolve();
      }),
    );
  }

  /** Connects; the connection is destroyed when the test ends. */
  static open(t: TestContext, socketPath: string): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(socketPath);
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        const conn = new RawConnection(socket);
        t.after(() => conn.destroy());
        resolve(conn);
      });
    });
  }

  get isClosed(): boolean {
    return this.#ended;
  }

  /** Raw bytes, exactly as given. */
  sendBytes(bytes: Uint8Array): void {
    this.#socket.write(bytes);
  }

  /** One frame around a MessagePack body the test built by hand. */
  sendBody(body: Uint8Array): void {
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    this.#socket.write(Buffer.concat([header, body]));
  }

  /** Well-formed request frames, all in one write (pipelined). */
  send(...requests: unknown[]): void {
    this.#socket.write(Buffer.concat(requests.map((r) => encodeFrame(r))));
  }

  /** Stops reading the socket (a client that stalls): the daemon's writes pile up in its buffers. */
  pause(): void {
    this.#socket.pause();
  }

  resume(): void {
    this.#socket.resume();
  }

  /** Half-closes the connection: the test sends nothing more, and replies still come. */
  endWrites(): void {
    this.#socket.end();
  }

  /** The next reply frame; fails if the connection closes or nothing comes in time. */
  async next(): Promise<Reply> {
    const until = Date.now() + REPLY_LIMIT_MS;
    for (;;) {
      const reply = this.#replies.shift();
      if (reply !== undefined) return reply;
      if (this.#ended) throw new Error("the daemon closed the connection instead of replying");
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no reply within ${REPLY_LIMIT_MS} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
    }
  }

  /** Sends one request and waits for its reply (nothing else may be in flight). */
  async call(id: number, op: string, args: unknown[] = []): Promise<Reply> {
    this.send({ id, op, args });
    const reply = await this.next();
    if (reply.id !== id) throw new Error(`expected the reply to ${id}, got ${JSON.stringify(reply)}`);
    return reply;
  }

  /** Resolves true once the daemon closed the connection, false if it stays open that long. */
  async closesWithin(ms = REPLY_LIMIT_MS): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const result = await Promise.race([this.closed.then(() => true), timeout]);
    clearTimeout(timer);
    return result;
  }

  destroy(): void {
    this.#socket.destroy();
  }
}
