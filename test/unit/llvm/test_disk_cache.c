/* test_disk_cache.c - the PTX disk cache of lib/codegen (no GPU).
 *
 * What must never happen is a load of PTX that was not compiled from this
 * key: entries of another LLVM, libdevice or fz build (stale keys), of
 * another kernel under the same file name (a forced collision: the
 * kernel must then be compiled afresh, and be the right one), damaged or
 * half-written entries, and entries of writers racing each other. Also:
 * the cap, least recently used first, and libdevice hashed by content.
 * Each test works in a fresh FZ_CACHE_DIR.
 */
#include "schedule_util.h"

#include "codegen/cache.h"
#include "codegen/codegen.h"
#include "nvptx/nvptx.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a scratch cache directory ------------------------------------------ */

static char cache_dir[64];

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void setup(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/fz-cache-test.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  setenv("FZ_CACHE_DIR", cache_dir, 1);
  unsetenv("FZ_CACHE_MAX_MB");
  fz_disk_cache_force_name(NULL);
}

static void teardown(void) {
  fz_disk_cache_force_name(NULL);
  unsetenv("FZ_CACHE_MAX_MB");
  remove_dir(cache_dir);
}

/* Files in the cache directory whose name contains `part`. */
static int count_files(const char *part) {
  DIR *d = opendir(cache_dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    n += strstr(de->d_name, part) != NULL;
  closedir(d);
  return n;
}

/* The path of the one entry file in the directory. */
static const char *only_entry(void) {
  static char path[512];
  DIR *d = opendir(cache_dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strstr(de->d_name, ".fzptx")) {
      snprintf(path, sizeof path, "%s/%s", cache_dir, de->d_name);
      n++;
    }
  closedir(d);
  ck_assert_int_eq(n, 1);
  return path;
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *data = malloc((size_t)len + 1);
  ck_assert_int_eq(fread(data, 1, (size_t)len, f), (size_t)len);
  data[len] = '\0';
  fclose(f);
  *n = (size_t)len;
  return data;
}

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

/* ---- keys ------------------------------------------------------------------ */

static const fz_cache_identity BASE = {
    .build = "0.1.0 00112233445566778899aabbccddeeff",
    .llvm = "19.1.7",
    .libdevice = "none"};

static char *make_key(const fz_cache_identity *id, int sm, int opt,
                      const char *ir) {
  fz_buf b = {0};
  fz_cache_key(&b, id, sm, opt, ir);
  char *key = fz_buf_take(&b);
  ck_assert_ptr_nonnull(key);
  return key;
}

static char *get(const char *key) {
  return fz_disk_cache_get(key, strlen(key));
}

static void put(const char *key, const char *ptx) {
  fz_disk_cache_put(key, strlen(key), ptx);
}

static void expect_hit(const char *key, const char *ptx) {
  char *got = get(key);
  ck_assert_msg(got != NULL, "miss where a hit was due");
  ck_assert_str_eq(got, ptx);
  free(got);
}

static void expect_miss(const char *key, const char *why) {
  char *got = get(key);
  ck_assert_msg(got == NULL, "hit on %s", why);
}

static const char *IR = "define void @k() {\n  ret void\n}\n";

/* ---- hash ----------------------------------------------------------------- */

START_TEST(test_hash128) {
  unsigned char data[100];
  for (int i = 0; i < 100; i++)
    data[i] = (unsigned char)(i * 7 + 1);
  fz_hash128 h = fz_hash128_bytes(data, sizeof data);
  fz_hash128 again = fz_hash128_bytes(data, sizeof data);
  ck_assert(h.lo == again.lo && h.hi == again.hi);
  /* Every single-bit change moves both halves. */
  for (int bit = 0; bit < 800; bit++) {
    data[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    fz_hash128 f = fz_hash128_bytes(data, sizeof data);
    data[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    ck_assert_msg(f.lo != h.lo && f.hi != h.hi, "bit %d", bit);
  }
  /* Length counts: zero padding of the last block is no disguise. */
  fz_hash128 empty = fz_hash128_bytes(NULL, 0);
  fz_hash128 zero = fz_hash128_bytes("\0", 1);
  ck_assert(empty.lo != zero.lo && empty.hi != zero.hi);
  char hex[33];
  fz_hash128_hex(h, hex);
  ck_assert_int_eq(strlen(hex), 32);
  ck_assert_int_eq(strspn(hex, "0123456789abcdef"), 32);
}
END_TEST

/* ---- entries ------------------------------------------------------------- */

START_TEST(test_round_trip) {
  char *key = make_key(&BASE, 90, 3, IR);
  expect_miss(key, "an empty cache");
  put(key, "// ptx 1\n");
  expect_hit(key, "// ptx 1\n");
  ck_assert_int_eq(count_files(".fzptx"), 1);
  ck_assert_int_eq(count_files(".tmp"), 0);
  /* A second store replaces the entry. */
  put(key, "// ptx 2\n");
  expect_hit(key, "// ptx 2\n");
  ck_assert_int_eq(count_files(".fzptx"), 1);
  /* FZ_CACHE_DIR=off: nothing read, nothing written. */
  setenv("FZ_CACHE_DIR", "off", 1);
  expect_miss(key, "a disabled cache");
  char *other = make_key(&BASE, 80, 3, IR);
  put(other, "// off\n");
  setenv("FZ_CACHE_DIR", cache_dir, 1);
  ck_assert_int_eq(count_files(".fzptx"), 1);
  free(other);
  free(key);
}
END_TEST

/* The same IR under anything else that changes the PTX is another key:
 * by file name, and by content when the names are forced to collide. */
START_TEST(test_stale_keys) {
  fz_cache_identity llvm = BASE, libdevice = BASE, build = BASE;
  llvm.llvm = "19.1.8";
  libdevice.libdevice = "0123456789abcdef0123456789abcdef";
  build.build = "0.1.0 ffeeddccbbaa99887766554433221100";
  char *base = make_key(&BASE, 90, 3, IR);
  char *stale[] = {make_key(&llvm, 90, 3, IR), make_key(&libdevice, 90, 3, IR),
                   make_key(&build, 90, 3, IR), make_key(&BASE, 80, 3, IR),
                   make_key(&BASE, 90, 2, IR)};
  const char *what[] = {"another LLVM", "another libdevice", "another fz build",
                        "another sm", "another opt level"};
  for (int forced = 0; forced < 2; forced++) {
    fz_disk_cache_force_name(forced ? "same" : NULL);
    put(base, "// base\n");
    for (int i = 0; i < 5; i++)
      expect_miss(stale[i], what[i]);
    expect_hit(base, "// base\n");
  }
  for (int i = 0; i < 5; i++)
    free(stale[i]);
  free(base);
}
END_TEST

/* Each way an entry can be damaged is a miss, never garbage. */
START_TEST(test_damaged_entries) {
  char *key = make_key(&BASE, 90, 3, IR);
  put(key, "// the kernel\n.visible .entry k()\n{\n  ret;\n}\n");
  const char *path = only_entry();
  size_t n;
  char *good = read_file(path, &n);
  char *bad = malloc(n + 2);
  const char *ptx_at = strstr(good, ".visible");
  const char *key_at = strstr(good, "llvm 19.1.7");
  ck_assert(ptx_at && key_at);

  struct {
    const char *what;
    size_t len;
    long flip; /* offset of a byte to change, or -1 */
  } cases[] = {
      {"an empty file", 0, -1},
      {"a file cut by one byte", n - 1, -1},
      {"a file cut after its header", (size_t)(key_at - good), -1},
      {"a file one byte longer", n + 1, -1},
      {"a changed PTX byte", n, ptx_at - good},
      {"a changed key byte", n, key_at - good + 5},
      {"a changed first line", n, 0},
      {"a changed size", n, (long)strlen("fz ptx cache 1\n")},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(bad, good, n);
    bad[n] = '\n';
    if (cases[c].flip >= 0)
      bad[cases[c].flip] ^= 1;
    write_file(path, bad, cases[c].len);
    expect_miss(key, cases[c].what);
  }
  write_file(path, good, n);
  expect_hit(key, "// the kernel\n.visible .entry k()\n{\n  ret;\n}\n");
  free(bad);
  free(good);
  free(key);
}
END_TEST

/* ---- through the compiler ------------------------------------------------ */

static const char *DOUBLE = "fusion @double(%x: f32[N]) {\n"
                            "  %y = mul %x, 2.0 : f32[N]\n"
                            "  return %y\n"
                            "}\n";
static const char *INCREMENT = "fusion @increment(%x: f32[N]) {\n"
                               "  %y = add %x, 1.0 : f32[N]\n"
                               "  return %y\n"
                               "}\n";

static fz_kernel_code compile(const fz_plan *plan, bool use_cache) {
  fz_compile_options opts = fz_codegen_options(90);
  opts.use_cache = use_cache;
  fz_kernel_code code;
  fz_error err = {0};
  ck_assert_msg(fz_compile_plan(plan, &opts, &code, &err) == FZ_OK, "%s",
                err.message);
  return code;
}

/* Compiles with the cache and checks where the PTX came from and that it
 * is the uncached compiler's. */
static void compile_expect(const fz_plan *plan, bool from_cache,
                           const char *fresh_ptx) {
  fz_kernel_code code = compile(plan, true);
  ck_assert_int_eq(code.from_cache, from_cache);
  ck_assert_str_eq(code.ptx, fresh_ptx);
  fz_kernel_code_free(&code);
}

START_TEST(test_compile_hits) {
  scheduled s;
  fz_plan *plan = schedule(&s, DOUBLE, "N=4096");
  fz_kernel_code fresh = compile(plan, false);
  ck_assert_int_eq(count_files(".fzptx"), 0);
  compile_expect(plan, false, fresh.ptx);
  ck_assert_int_eq(count_files(".fzptx"), 1);
  compile_expect(plan, true, fresh.ptx);
  /* The entry names this build, this LLVM and no libdevice. */
  size_t n;
  char *entry = read_file(only_entry(), &n);
  char line[256];
  snprintf(line, sizeof line, "\nfz %s\nllvm %s\nlibdevice none\n",
           fz_build_identity(), fz_llvm_version());
  ck_assert_msg(strstr(entry, line), "entry header: %.300s", entry);
  ck_assert_ptr_nonnull(strstr(entry, "target sm_90 O3\n"));
  free(entry);
  fz_kernel_code_free(&fresh);
  scheduled_free(&s);
}
END_TEST

/* Two kernels under one file name: each load finds the other's key, so
 * each compile is a miss that compiles the right kernel. */
START_TEST(test_forced_collision) {
  scheduled a, b;
  fz_plan *plan_a = schedule(&a, DOUBLE, "N=4096");
  fz_plan *plan_b = schedule(&b, INCREMENT, "N=4096");
  fz_kernel_code fresh_a = compile(plan_a, false);
  fz_kernel_code fresh_b = compile(plan_b, false);
  ck_assert_str_ne(fresh_a.ptx, fresh_b.ptx);
  fz_disk_cache_force_name("collide");
  compile_expect(plan_a, false, fresh_a.ptx);
  compile_expect(plan_a, true, fresh_a.ptx);
  compile_expect(plan_b, false, fresh_b.ptx);
  compile_expect(plan_b, true, fresh_b.ptx);
  compile_expect(plan_a, false, fresh_a.ptx);
  ck_assert_int_eq(count_files(".fzptx"), 1);
  fz_kernel_code_free(&fresh_a);
  fz_kernel_code_free(&fresh_b);
  scheduled_free(&a);
  scheduled_free(&b);
}
END_TEST

/* A damaged entry is compiled again and replaced by a whole one. */
START_TEST(test_compile_damaged) {
  scheduled s;
  fz_plan *plan = schedule(&s, DOUBLE, "N=4096");
  fz_kernel_code fresh = compile(plan, false);
  compile_expect(plan, false, fresh.ptx);
  const char *path = only_entry();
  size_t n;
  char *data = read_file(path, &n);
  data[n - 10] ^= 0x20;
  write_file(path, data, n);
  compile_expect(plan, false, fresh.ptx);
  compile_expect(plan, true, fresh.ptx);
  free(data);
  fz_kernel_code_free(&fresh);
  scheduled_free(&s);
}
END_TEST

/* A kernel that links libdevice names it by content in its key. */
START_TEST(test_libdevice_in_key) {
  char path[4096];
  fz_error err = {0};
  if (fz_libdevice_find(path, sizeof path, &err) != FZ_OK) {
    printf("SKIP: test_libdevice_in_key: %s\n", err.message);
    return;
  }
  scheduled s;
  fz_plan *plan = schedule(&s,
                           "fusion @e(%x: f32[N]) {\n"
                           "  %y = exp %x : f32[N]\n"
                           "  return %y\n"
                           "}\n",
                           "N=4096");
  fz_kernel_code fresh = compile(plan, false);
  compile_expect(plan, false, fresh.ptx);
  compile_expect(plan, true, fresh.ptx);
  char digest[33], line[64];
  ck_assert_int_eq(fz_libdevice_digest(path, digest, &err), FZ_OK);
  snprintf(line, sizeof line, "\nlibdevice %s\n", digest);
  size_t n;
  char *entry = read_file(only_entry(), &n);
  ck_assert_msg(strstr(entry, line), "no '%s' in the entry", line + 1);
  free(entry);
  fz_kernel_code_free(&fresh);
  scheduled_free(&s);
}
END_TEST

START_TEST(test_libdevice_digest) {
  char a[128], b[128];
  snprintf(a, sizeof a, "%s/a.bc", cache_dir);
  snprintf(b, sizeof b, "%s/b.bc", cache_dir);
  write_file(a, "bitcode one", 11);
  write_file(b, "bitcode one", 11);
  char da[33], db[33], again[33];
  fz_error err = {0};
  ck_assert_int_eq(fz_libdevice_digest(a, da, &err), FZ_OK);
  ck_assert_int_eq(fz_libdevice_digest(b, db, &err), FZ_OK);
  ck_assert_str_eq(da, db); /* by content, not by path */
  /* The same file rewritten in place (same size, another time) is hashed
   * again. */
  write_file(a, "bitcode two", 11);
  struct timespec later[2] = {{.tv_sec = time(NULL) + 10},
                              {.tv_sec = time(NULL) + 10}};
  ck_assert_int_eq(utimensat(AT_FDCWD, a, later, 0), 0);
  ck_assert_int_eq(fz_libdevice_digest(a, again, &err), FZ_OK);
  ck_assert_str_ne(again, da);
  char missing[160];
  snprintf(missing, sizeof missing, "%s/missing.bc", cache_dir);
  ck_assert_int_eq(fz_libdevice_digest(missing, again, &err), FZ_ERR_IO);
}
END_TEST

/* ---- concurrent writers --------------------------------------------------- */

enum { WRITERS = 8, ROUNDS = 25 };

static char *writer_ptx(int writer) {
  size_t n = 20000;
  char *ptx = malloc(n + 1);
  for (size_t i = 0; i < n; i++)
    ptx[i] = (char)('a' + (i * 31 + (size_t)writer * 7) % 26);
  ptx[n] = '\0';
  return ptx;
}

static char *writer_key(int writer) {
  char ir[64];
  snprintf(ir, sizeof ir, "; writer %d\n", writer);
  return make_key(&BASE, 90, 3, ir);
}

/* In a child: stores its own key and the shared one, again and again,
 * reading both back; the exit status says whether every read was exact. */
static int writer(int self, const char *shared_key, const char *shared_ptx) {
  char *key = writer_key(self);
  char *ptx = writer_ptx(self);
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    put(shared_key, shared_ptx);
    put(key, ptx);
    char *got = get(shared_key);
    bad += !got || strcmp(got, shared_ptx) != 0;
    free(got);
    got = get(key);
    bad += !got || strcmp(got, ptx) != 0;
    free(got);
  }
  free(key);
  free(ptx);
  return bad ? 1 : 0;
}

START_TEST(test_concurrent_writers) {
  char *shared_key = writer_key(-1);
  char *shared_ptx = writer_ptx(-1);
  pid_t pids[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    pids[w] = fork();
    ck_assert_int_ge(pids[w], 0);
    if (pids[w] == 0)
      _exit(writer(w, shared_key, shared_ptx));
  }
  for (int w = 0; w < WRITERS; w++) {
    int status = 0;
    ck_assert_int_eq(waitpid(pids[w], &status, 0), pids[w]);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "writer %d read a wrong or missing entry", w);
  }
  expect_hit(shared_key, shared_ptx);
  for (int w = 0; w < WRITERS; w++) {
    char *key = writer_key(w), *ptx = writer_ptx(w);
    expect_hit(key, ptx);
    free(key);
    free(ptx);
  }
  ck_assert_int_eq(count_files(".fzptx"), WRITERS + 1);
  ck_assert_int_eq(count_files(".tmp"), 0);
  free(shared_key);
  free(shared_ptx);
}
END_TEST

/* ---- the cap ------------------------------------------------------------- */

static void set_age(const char *key, int hours) {
  char path[512];
  fz_hash128_hex(fz_hash128_bytes(key, strlen(key)), path);
  char full[600];
  snprintf(full, sizeof full, "%s/%s.fzptx", cache_dir, path);
  struct timespec t[2] = {{.tv_sec = time(NULL) - hours * 3600},
                          {.tv_sec = time(NULL) - hours * 3600}};
  ck_assert_int_eq(utimensat(AT_FDCWD, full, t, 0), 0);
}

/* 1 MiB cap, entries of ~150 kB: six fit, the seventh goes over, and the
 * least recently used entry goes (not the oldest written: it was read). */
START_TEST(test_eviction) {
  setenv("FZ_CACHE_MAX_MB", "1", 1);
  ck_assert_uint_eq(fz_disk_cache_cap(), 1u << 20);
  char *ptx = malloc(150001);
  memset(ptx, 'p', 150000);
  ptx[150000] = '\0';
  char *keys[7];
  for (int i = 0; i < 7; i++) {
    char ir[32];
    snprintf(ir, sizeof ir, "; entry %d\n", i);
    keys[i] = make_key(&BASE, 90, 3, ir);
  }
  for (int i = 0; i < 6; i++) {
    put(keys[i], ptx);
    set_age(keys[i], 6 - i); /* entry 0 written longest ago */
  }
  ck_assert_int_eq(count_files(".fzptx"), 6);
  expect_hit(keys[0], ptx); /* used now: no longer the oldest */
  put(keys[6], ptx);
  ck_assert_int_eq(count_files(".fzptx"), 6);
  expect_miss(keys[1], "the least recently used entry");
  expect_hit(keys[0], ptx);
  for (int i = 2; i < 7; i++)
    expect_hit(keys[i], ptx);
  for (int i = 0; i < 7; i++)
    free(keys[i]);
  free(ptx);
  /* 0 is no cap; nonsense is the default. */
  setenv("FZ_CACHE_MAX_MB", "0", 1);
  ck_assert_uint_eq(fz_disk_cache_cap(), 0);
  setenv("FZ_CACHE_MAX_MB", "12x", 1);
  ck_assert_uint_eq(fz_disk_cache_cap(), 256u << 20);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("disk_cache");
  TCase *tc = tcase_create("disk_cache");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_hash128);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_stale_keys);
  tcase_add_test(tc, test_damaged_entries);
  tcase_add_test(tc, test_compile_hits);
  tcase_add_test(tc, test_forced_collision);
  tcase_add_test(tc, test_compile_damaged);
  tcase_add_test(tc, test_libdevice_in_key);
  tcase_add_test(tc, test_libdevice_digest);
  tcase_add_test(tc, test_concurrent_writers);
  tcase_add_test(tc, test_eviction);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite(make()); }
