import type { SessionDBError } from "../errors.js";

/** Pages held for a slow consumer before the socket stops being read. */
const MAX_BUFFERED_CHUNKS = 4;

/** Reading from the daemon's socket, which a slow consumer pauses. */
export interface ReadFlow {
  pause(): void;
  resume(): void;
}

/**
 * The items of a streamed reply (`exportAll`), read only as fast as they are consumed. `request`
 * sends the request, handing each page the daemon sends to `onChunk`, and settles when the stream
 * ends or fails. It is sent on the first `next()`, so a refused argument rejects that. `signal`
 * (a watch's) ends it early, as if the stream had ended.
 */
export async function* chunkStream<T>(
  request: (onChunk: (items: unknown[]) => void) => Promise<unknown>,
  flow: ReadFlow,
  signal?: AbortSignal,
): AsyncIterable<T> {
  const buffered: unknown[][] = [];
  let wake: (() => void) | null = null;
  let finished = false;
  let failure: SessionDBError | null = null;
  const done = request((items) => {
    buffered.push(items);
    if (buffered.length >= MAX_BUFFERED_CHUNKS) flow.pause();
    wake?.();
  }).then(
    () => {
      finished = true;
      wake?.();
    },
    (err: SessionDBError) => {
      failure = err;
      wake?.();
    },
  );
  const onAbort = () => {
    finished = true;
    buffered.length = 0;
    wake?.();
  };
  const aborted = () => signal?.aborted === true;
  signal?.addEventListener("abort", onAbort);
  try {
    if (aborted()) return;
    for (;;) {
      const items = buffered.shift();
      if (items !== undefined) {
        if (buffered.length < MAX_BUFFERED_CHUNKS) flow.resume();
        for (const item of items as T[]) {
          if (aborted()) return;
          yield item;
        }
        continue;
      }
      if (failure !== null) throw failure;
      if (finished) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    flow.resume();
    void done;
  }
}
