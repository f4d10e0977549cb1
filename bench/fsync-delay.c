/*
 * A slow disk for the benchmark: preloaded (LD_PRELOAD) into every process of a convoy run, it
 * lets fsync and fdatasync do their real work and then sleeps SESSIONDB_FSYNC_DELAY_MS
 * milliseconds (a decimal number), as a flush costs on cloud volumes and laptop SSDs.
 * With SESSIONDB_FSYNC_DELAY_REPORT set to a file, each process that delayed any call appends
 * "<pid> <delayed calls>" to it when it exits, so a test can see the delay reach a process.
 * Built by bench/fsync-delay.ts with the machine's C compiler.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

static long delay_ns = -1;
static unsigned long delayed_calls = 0;

static void load_delay(void) {
  const char *value = getenv("SESSIONDB_FSYNC_DELAY_MS");
  double ms = value == NULL ? 0.0 : strtod(value, NULL);
  delay_ns = ms > 0 ? (long)(ms * 1e6) : 0;
}

static void pause_after_sync(void) {
  if (delay_ns < 0) load_delay();
  if (delay_ns == 0) return;
  struct timespec left = { delay_ns / 1000000000L, delay_ns % 1000000000L };
  int saved = errno;
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  errno = saved;
  __atomic_add_fetch(&delayed_calls, 1, __ATOMIC_RELAXED);
}

static int call_real(const char *name, int fd) {
  sync_fn real = (sync_fn)dlsym(RTLD_NEXT, name);
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  int result = real(fd);
  pause_after_sync();
  return result;
}

int fsync(int fd) { return call_real("fsync", fd); }

int fdatasync(int fd) { return call_real("fdatasync", fd); }

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("SESSIONDB_FSYNC_DELAY_REPORT");
  if (path == NULL || path[0] == '\0' || delayed_calls == 0) return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  char line[64];
  int n = snprintf(line, sizeof line, "%ld %lu\n", (long)getpid(), delayed_calls);
  if (n > 0) (void)!write(fd, line, (size_t)n);
  close(fd);
}
