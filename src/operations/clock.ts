/** The stored time: Unix seconds as a float, the same on both engines. */

// performance.now() (monotonic, sub-microsecond) counted from this wall-clock instant, in ms.
let clockOrigin = performance.timeOrigin;

/**
 * Unix seconds as a float at full double precision, as the reference stores `time.time()` (not
 * whole milliseconds, which is all Date.now() has). The monotonic clock gives the fraction; it is
 * put back on the wall clock whenever the two part by more than a millisecond (the wall clock was
 * set), so the result never strays from Date.now() and never goes back between settings.
 */
export function now(): number {
  const wall = Date.now();
  let ms = clockOrigin + performance.now();
  if (ms < wall - 1 || ms > wall + 2) {
    clockOrigin = wall - performance.now();
    ms = clockOrigin + performance.now();
  }
  return ms / 1000;
}
