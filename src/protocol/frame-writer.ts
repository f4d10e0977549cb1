import type { Socket } from "node:net";

/**
 * Writes frames to a socket. The first frame of a turn of the event loop goes out at once (a
 * client making one call at a time pays for no buffering); the frames that follow it in the same
 * turn (a pipelining caller's requests, a group commit's replies) are coalesced into one more
 * system call when the turn ends.
 */
export class FrameWriter {
  readonly #socket: Socket;
  #writtenThisTurn = false;
  #corked = false;
  readonly #endTurn = (): void => {
    this.#writtenThisTurn = false;
    if (this.#corked) {
      this.#corked = false;
      this.#socket.uncork();
    }
  };

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  /** False when the socket's buffer is over its high-water mark (as `socket.write`). */
  write(frame: Buffer): boolean {
    if (!this.#writtenThisTurn) {
      this.#writtenThisTurn = true;
      process.nextTick(this.#endTurn);
    } else if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
    }
    return this.#socket.write(frame);
  }
}
