// Memory read bandwidth of this machine with N threads: the bound batch-1 LLM decode runs into
// (every weight byte is read once per token). Each thread sums its own contiguous slice of one
// buffer far larger than the caches; a pass is timed from a barrier before to the last thread's
// finish, so the figure is the machine's, not one thread's.
//
//   read-bandwidth <MiB> <threads> <passes>
// prints one JSON object: {"bytes":..., "threads":..., "passes_gbs":[...], "median_gbs":..., "max_gbs":...}
// (GB = 1e9 bytes). Built by bench/support/read-bandwidth.ts with -O3 -march=native, so the sum
// loop is vectorized with the widest loads the CPU has, as the decode kernels are.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const uint64_t *begin;
  size_t words;
  int passes;
  pthread_barrier_t *start, *end;
  uint64_t sink;
} slice_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *reader(void *arg) {
  slice_t *s = (slice_t *)arg;
  uint64_t sink = 0;
  for (int p = 0; p < s->passes; p++) {
    pthread_barrier_wait(s->start);
    uint64_t sum = 0;
    // Independent adds, no dependency across lanes: the compiler vectorizes this into wide loads.
    for (size_t i = 0; i < s->words; i++) sum += s->begin[i];
    sink ^= sum;
    pthread_barrier_wait(s->end);
  }
  s->sink = sink;  // kept, so the loads cannot be optimized away
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <MiB> <threads> <passes>\n", argv[0]);
    return 2;
  }
  long mib = atol(argv[1]), threads = atol(argv[2]), passes = atol(argv[3]);
  if (mib < 1 || threads < 1 || threads > 1024 || passes < 1 || passes > 10000) {
    fprintf(stderr, "bad arguments: MiB >= 1, 1 <= threads <= 1024, 1 <= passes <= 10000\n");
    return 2;
  }
  size_t bytes = (size_t)mib << 20;
  size_t words = bytes / sizeof(uint64_t);
  uint64_t *buf = NULL;
  if (posix_memalign((void **)&buf, 4096, bytes) != 0) {
    fprintf(stderr, "cannot allocate %ld MiB\n", mib);
    return 1;
  }
  // Non-zero content, every page touched before timing (no page faults inside a pass).
  for (size_t i = 0; i < words; i++) buf[i] = i * 0x9e3779b97f4a7c15ull;

  pthread_barrier_t start, end;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&end, NULL, (unsigned)threads + 1);
  slice_t *slices = calloc((size_t)threads, sizeof(slice_t));
  pthread_t *tids = calloc((size_t)threads, sizeof(pthread_t));
  size_t per = words / (size_t)threads;
  for (long t = 0; t < threads; t++) {
    slices[t].begin = buf + (size_t)t * per;
    slices[t].words = t == threads - 1 ? words - (size_t)t * per : per;
    slices[t].passes = (int)passes + 1;  // the first pass warms up (TLB, frequency) and is not counted
    slices[t].start = &start;
    slices[t].end = &end;
    pthread_create(&tids[t], NULL, reader, &slices[t]);
  }
  double *gbs = calloc((size_t)passes, sizeof(double));
  for (long p = 0; p <= passes; p++) {
    pthread_barrier_wait(&start);
    double t0 = now_s();
    pthread_barrier_wait(&end);
    double dt = now_s() - t0;
    if (p > 0) gbs[p - 1] = (double)bytes / dt / 1e9;
  }
  uint64_t sink = 0;
  for (long t = 0; t < threads; t++) {
    pthread_join(tids[t], NULL);
    sink ^= slices[t].sink;
  }
  printf("{\"bytes\":%zu,\"threads\":%ld,\"passes_gbs\":[", bytes, threads);
  for (long p = 0; p < passes; p++) printf("%s%.3f", p ? "," : "", gbs[p]);
  qsort(gbs, (size_t)passes, sizeof(double), cmp_double);
  double median = passes % 2 ? gbs[passes / 2] : 0.5 * (gbs[passes / 2 - 1] + gbs[passes / 2]);
  printf("],\"median_gbs\":%.3f,\"max_gbs\":%.3f,\"checksum\":%llu}\n", median, gbs[passes - 1], (unsigned long long)(sink & 0xffff));
  free(gbs);
  free(tids);
  free(slices);
  free(buf);
  return 0;
}
