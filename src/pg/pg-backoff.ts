/**
 * How long the daemon's writer waits before connecting again after PostgreSQL could not be
 * reached: doubling from 50 ms to 2 s, so a restart of a second is bridged within tens of
 * milliseconds of its end while a server down for minutes is not hammered. Half of each pause is
 * random, so the daemons of several hosts do not all come back in the same instant.
 */
const FIRST_MS = 50;
const MAX_MS = 2000;

/** The pause after `failures` (≥ 1) connection failures in a row. */
export function reconnectDelayMs(failures: number): number {
  const ceiling = Math.min(MAX_MS, FIRST_MS * 2 ** Math.min(failures - 1, 16));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
