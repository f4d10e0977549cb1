import type { Socket } from "node:net";

/**
 * Writes frames to a socket, coalescing the frames written in one turn of the event loop (a
 * pipelining caller's requests, a group commit's replies) into one system call.
 */
export class FrameWriter {
  readonly #socket: Socket;
  #corked = false;

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** False when the socket's buffer is over its high-water mark (as `socket.write`). */
  write(frame: Buffer): boolean {
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.#socket.uncork();
      });
    }
    return this.#socket.write(frame);
  }
}
