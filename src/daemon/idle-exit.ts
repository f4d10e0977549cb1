/** The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The daemon option `idleExitMs` (`serve --idle-exit`; autostarted daemons get 30 s): ends the
 * daemon cleanly once no client has been connected for `idleMs`, so daemons that clients start
 * on demand do not outlive their use. Told of each change in the number of clients: one timer
 * runs only while there is none (an idle daemon used to wake every second to count them), and it
 * does not keep the process alive.
 */
export class IdleExit {
  readonly #idleMs: number;
  readonly #onIdle: () => void;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;

  /** Starts counting at once: a daemon no client ever reaches stops too. */
  constructor(idleMs: number, onIdle: () => void) {
    this.#idleMs = idleMs;
    this.#onIdle = onIdle;
    this.clients(0);
  }

  /** The number of clients connected now. */
  clients(count: number): void {
    if (this.#stopped) return;
    if (count > 0) {
      if (this.#timer !== null) clearTimeout(this.#timer);
      this.#timer = null;
    } else if (this.#timer === null) {
      this.#arm(Date.now() + this.#idleMs);
    }
  }

  /** A timer's delay is at most MAX_TIMER_MS (Node fires a longer one at once): a long idle time takes several. */
  #arm(at: number): void {
    this.#timer = setTimeout(() => {
      if (Date.now() < at) return this.#arm(at);
      this.#stopped = true;
      this.#onIdle();
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
  }
}
