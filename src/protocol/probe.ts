import { connect } from "node:net";
import { decodeBody, encodeFrame } from "./frame-codec.js";
import { FrameDecoder } from "./frame-decoder.js";
import type { HelloResult } from "./control.js";
import { PROTOCOL_VERSION } from "./messages.js";

/**
 * Asks whatever listens on `socketPath` who it is: the daemon's hello, or null when nothing
 * answers in time (no socket, a stale socket file, or something that is not a sessiondb daemon).
 */
export function probeDaemon(socketPath: string, timeoutMs: number): Promise<HelloResult | null> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    const decoder = new FrameDecoder(1024 * 1024);
    const finish = (hello: HelloResult | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(hello);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.on("error", () => finish(null));
    socket.on("connect", () => socket.write(encodeFrame({ id: 1, op: "hello", args: [{ protocol: PROTOCOL_VERSION }] })));
    socket.on("data", (chunk: Buffer) => {
      try {
        for (const body of decoder.push(chunk)) {
          const reply = decodeBody(body, true) as { id?: number; ok?: boolean; result?: HelloResult };
          if (reply.id === 1) finish(reply.ok === true && reply.result?.server === "sessiondb" ? reply.result : null);
        }
      } catch {
        finish(null);
      }
    });
  });
}
