/* test_dump.c - FZ_DUMP through the code generation path (no GPU).
 *
 * main() sets FZ_DUMP (with one unknown name) and FZ_DUMP_DIR before
 * anything reads them, as a user would; the first test checks that the
 * environment was obeyed (files named by fusion, kernel and stage, each
 * opening with its header; the warning naming the valid stages). The
 * others change the configuration through the test hook: dumps to stderr,
 * the executor's unit and kernel index, and the disk cache's interplay.
 */
#include "schedule_util.h"

#include "codegen/codegen.h"
#include "codegen/dump.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dump_dir[64];
static char cache_dir[64];

static const char *DOUBLE = "fusion @double(%x: f32[N]) {\n"
                            "  %y = mul %x, 2.0 : f32[N]\n"
                            "  return %y\n"
                            "}\n";

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
  text[n] = '\0';
  fclose(f);
  return text;
}

/* The dump file `name` exists and opens with `header` (a whole line);
 * returns its text after that line (malloc'd). */
static char *expect_file(const char *name, const char *header) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dump_dir, name);
  char *text = read_text(path);
  ck_assert_msg(text != NULL, "no dump file %s", name);
  size_t n = strlen(header);
  ck_assert_msg(strncmp(text, header, n) == 0 && text[n] == '\n',
                "%s opens with '%.80s', not '%s'", name, text, header);
  char *rest = strdup(text + n + 1);
  free(text);
  return rest;
}

static fz_kernel_code compile(const fz_plan *plan, fz_compile_options opts) {
  fz_kernel_code code;
  fz_error err = {0};
  ck_assert_msg(fz_compile_plan(plan, &opts, &code, &err) == FZ_OK, "%s",
                err.message);
  return code;
}

static fz_compile_options uncached(void) {
  fz_compile_options opts = fz_codegen_options(90);
  opts.use_cache = false;
  return opts;
}

/* Runs fn with stderr going to a file; returns what it wrote. */
static char *capture_stderr(void (*fn)(void *), void *arg) {
  char path[] = "/tmp/fz-dump-stderr.XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  char *text = read_text(path);
  unlink(path);
  return text;
}

static void read_config(void *arg) {
  (void)arg;
  fz_dump_wants(FZ_DUMP_PTX);
}

/* Must run first: it is the first to read FZ_DUMP. */
START_TEST(test_environment) {
  char *warning = capture_stderr(read_config, NULL);
  ck_assert_msg(strstr(warning, "unknown stage 'nonsense'") &&
                    strstr(warning, "valid: fusion, segments, plan, llvm, "
                                    "ptx, all"),
                "warning: %s", warning);
  ck_assert_int_eq(strchr(warning, '\n') - warning + 1, strlen(warning));
  free(warning);
  for (int s = 0; s < 5; s++)
    ck_assert(fz_dump_wants((fz_dump_stage)(1 << s)));

  scheduled s;
  fz_plan *plan = schedule(&s, DOUBLE, "N=4096");
  fz_kernel_code code = compile(plan, uncached());
  free(expect_file("double.k0.plan.txt",
                   "// fz dump: @double kernel 0: plan (fz_pointwise)"));
  char *lowered =
      expect_file("double.k0.llvm-lowered.ll",
                  "; fz dump: @double kernel 0: LLVM IR as lowered "
                  "(fz_pointwise)");
  ck_assert_ptr_nonnull(strstr(lowered, "define"));
  char *optimized = expect_file(
      "double.k0.llvm-optimized.ll",
      "; fz dump: @double kernel 0: LLVM IR after optimisation (O3, sm_90)");
  ck_assert_str_ne(lowered, optimized);
  char *ptx = expect_file("double.k0.ptx",
                          "// fz dump: @double kernel 0: PTX (sm_90)");
  ck_assert_str_eq(ptx, code.ptx); /* exactly what the compiler returned */
  /* The same fusion again is another unit. */
  fz_kernel_code again = compile(plan, uncached());
  free(expect_file("double.2.k0.ptx",
                   "// fz dump: @double.2 kernel 0: PTX (sm_90)"));
  fz_kernel_code_free(&again);
  free(lowered);
  free(optimized);
  free(ptx);
  fz_kernel_code_free(&code);
  scheduled_free(&s);
}
END_TEST

START_TEST(test_parse_spec) {
  fz_buf warning = {0};
  ck_assert_uint_eq(fz_dump_parse("plan, ptx", &warning),
                    FZ_DUMP_PLAN | FZ_DUMP_PTX);
  ck_assert_uint_eq(fz_dump_parse("all", &warning),
                    FZ_DUMP_FUSION | FZ_DUMP_SEGMENTS | FZ_DUMP_PLAN |
                        FZ_DUMP_LLVM | FZ_DUMP_PTX);
  ck_assert_uint_eq(fz_dump_parse("", &warning), 0);
  ck_assert_uint_eq(fz_dump_parse(NULL, &warning), 0);
  ck_assert_uint_eq(fz_dump_parse(",llvm,,", &warning), FZ_DUMP_LLVM);
  ck_assert_uint_eq(warning.len, 0);
  ck_assert_uint_eq(fz_dump_parse("segments,PTX,bogus", &warning),
                    FZ_DUMP_SEGMENTS);
  char *text = fz_buf_take(&warning);
  ck_assert_str_eq(text, "fz: FZ_DUMP: ignoring unknown stages 'PTX', "
                         "'bogus'; valid: fusion, segments, plan, llvm, ptx, "
                         "all");
  free(text);
}
END_TEST

/* The executor's way: one unit for the fusion, its segments, and each
 * kernel under its index in the segmentation. */
START_TEST(test_executor_unit) {
  fz_dump_configure(FZ_DUMP_FUSION | FZ_DUMP_SEGMENTS | FZ_DUMP_PTX,
                    dump_dir);
  scheduled s;
  fz_plan *plan = schedule(&s, DOUBLE, "N=4096");
  fz_segmentation *seg = NULL;
  fz_error err = {0};
  ck_assert_int_eq(fz_segment_fusion(&s.pb, &seg, &err), FZ_OK);
  fz_dump_unit unit;
  fz_dump_unit_begin(&unit, s.f->name);
  ck_assert_str_eq(unit.name, "double.3");
  fz_dump_fusion(&unit, s.f);
  fz_dump_segments(&unit, seg);
  fz_compile_options opts = uncached();
  opts.dump_unit = &unit;
  opts.dump_kernel = 2;
  fz_kernel_code code = compile(plan, opts);
  char *fusion = expect_file("double.3.fusion.fz",
                             "// fz dump: @double.3: fusion (as compiled)");
  ck_assert_ptr_nonnull(strstr(fusion, "fusion @double("));
  free(fusion);
  free(expect_file("double.3.segments.txt", "// fz dump: @double.3: segments"));
  free(expect_file("double.3.k2.ptx",
                   "// fz dump: @double.3 kernel 2: PTX (sm_90)"));
  char path[256];
  snprintf(path, sizeof path, "%s/double.3.k2.plan.txt", dump_dir);
  ck_assert_int_ne(access(path, F_OK), 0); /* plan was not asked for */
  fz_kernel_code_free(&code);
  fz_segmentation_destroy(seg);
  scheduled_free(&s);
}
END_TEST

static void compile_plan(void *plan) {
  fz_kernel_code code = compile(plan, uncached());
  fz_kernel_code_free(&code);
}

START_TEST(test_stderr) {
  fz_dump_configure(FZ_DUMP_PLAN | FZ_DUMP_PTX, NULL);
  scheduled s;
  fz_plan *plan = schedule(&s, DOUBLE, "N=4096");
  char *out = capture_stderr(compile_plan, plan);
  const char *p = strstr(out, "// fz dump: @double.4 kernel 0: plan ");
  const char *x = strstr(out, "// fz dump: @double.4 kernel 0: PTX (sm_90)\n");
  ck_assert_msg(p && x && p < x, "stderr: %.300s", out);
  ck_assert_ptr_nonnull(strstr(x, ".visible .entry fz_pointwise("));
  ck_assert_ptr_null(strstr(out, "LLVM IR"));
  free(out);
  scheduled_free(&s);
}
END_TEST

/* A cached kernel's PTX is dumped and says so; asking for LLVM IR
 * compiles it again so that its IR can be shown. */
START_TEST(test_with_disk_cache) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/fz-dump-cache.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  setenv("FZ_CACHE_DIR", cache_dir, 1);
  fz_dump_configure(FZ_DUMP_PTX, dump_dir);
  scheduled s;
  fz_plan *plan = schedule(&s, DOUBLE, "N=4096");
  fz_compile_options opts = fz_codegen_options(90);
  fz_kernel_code first = compile(plan, opts);
  fz_kernel_code second = compile(plan, opts);
  ck_assert(!first.from_cache && second.from_cache);
  free(expect_file("double.6.k0.ptx", "// fz dump: @double.6 kernel 0: PTX "
                                      "(sm_90, from the disk cache)"));
  fz_dump_configure(FZ_DUMP_LLVM | FZ_DUMP_PTX, dump_dir);
  fz_kernel_code third = compile(plan, opts);
  ck_assert(!third.from_cache);
  free(expect_file("double.7.k0.llvm-optimized.ll",
                   "; fz dump: @double.7 kernel 0: LLVM IR after optimisation "
                   "(O3, sm_90)"));
  ck_assert_str_eq(third.ptx, first.ptx);
  fz_kernel_code_free(&first);
  fz_kernel_code_free(&second);
  fz_kernel_code_free(&third);
  scheduled_free(&s);
  char entry_dir[128];
  snprintf(entry_dir, sizeof entry_dir, "rm -rf %s", cache_dir);
  ck_assert_int_eq(system(entry_dir), 0);
  unsetenv("FZ_CACHE_DIR");
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("dump");
  TCase *tc = tcase_create("dump");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_environment);
  tcase_add_test(tc, test_parse_spec);
  tcase_add_test(tc, test_executor_unit);
  tcase_add_test(tc, test_stderr);
  tcase_add_test(tc, test_with_disk_cache);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  snprintf(dump_dir, sizeof dump_dir, "/tmp/fz-dump-test.XXXXXX");
  if (!mkdtemp(dump_dir))
    return EXIT_FAILURE;
  /* A directory FZ_DUMP_DIR names that does not exist yet is made. */
  strncat(dump_dir, "/dumps", sizeof dump_dir - strlen(dump_dir) - 1);
  setenv("FZ_DUMP", "plan,llvm, ptx,fusion,segments,nonsense", 1);
  setenv("FZ_DUMP_DIR", dump_dir, 1);
  int status = test_run_suite(make());
  char rm[128];
  snprintf(rm, sizeof rm, "rm -rf %.*s", (int)(strlen(dump_dir) - 6),
           dump_dir);
  if (system(rm) != 0)
    status = EXIT_FAILURE;
  return status;
}
