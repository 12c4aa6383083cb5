/* test_util.c - helpers shared by the unit tests. */
#include "test_util.h"

#include "sched/pass.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fz_fusion *test_parse(const char *text) {
  fz_fusion *f = NULL;
  fz_error err = {0};
  fz_status st = fz_parse("test.fz", text, strlen(text), &f, &err);
  ck_assert_msg(st == FZ_OK, "parse failed: %s", err.message);
  return f;
}

int test_run_suite(Suite *suite) {
  SRunner *runner = srunner_create(suite);
  /* No fork: the CUDA driver does not survive fork(), and sanitizers
   * report leaks more clearly in one process. */
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

const char *test_source_path(const char *relative) {
  static char path[4096];
  const char *root = getenv("FZ_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/%s", root ? root : ".", relative);
  return path;
}

fz_host_tensor test_host_tensor(fz_dtype dtype, void *data, int rank, ...) {
  fz_host_tensor t = {.dtype = dtype, .rank = rank, .data = data};
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++)
    t.sizes[i] = va_arg(ap, int);
  va_end(ap);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t.strides[i] = s;
    s *= t.sizes[i];
  }
  return t;
}

int test_each_fusion_file(const char *relative_dir,
                          void (*fn)(const char *file, fz_fusion *f,
                                     void *ctx),
                          void *ctx) {
  char dir_path[4096];
  snprintf(dir_path, sizeof dir_path, "%s", test_source_path(relative_dir));
  DIR *dir = opendir(dir_path);
  ck_assert_msg(dir != NULL, "cannot open %s", dir_path);
  static char text[1 << 16];
  int count = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".fz") != 0)
      continue;
    char path[4096 + 256];
    snprintf(path, sizeof path, "%s/%s", dir_path, e->d_name);
    FILE *file = fopen(path, "rb");
    ck_assert_ptr_nonnull(file);
    size_t got = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[got] = 0;
    fz_fusion *f = NULL;
    fz_error err = {0};
    if (strstr(text, "\n// -----") ||
        fz_parse(e->d_name, text, got, &f, &err) != FZ_OK)
      continue;
    if (fz_run_pass(f, "resize-pushdown", &err) == FZ_OK &&
        fz_run_pass(f, "gather-pushdown", &err) == FZ_OK) {
      fn(e->d_name, f, ctx);
      count++;
    }
    fz_fusion_destroy(f);
  }
  closedir(dir);
  return count;
}

bool test_bind_symbols(const fz_fusion *f, int64_t a, int64_t b,
                       int64_t *values) {
  for (int k = 0; k < f->num_symbols; k++)
    values[k] = f->symbols[k].num_terms ? -1 : k % 2 ? b : a;
  fz_error err = {0};
  return fz_symbols_derive(f, values, &err) == FZ_OK &&
         fz_check_sizes(f, values, FZ_ERR_ARGUMENT, &err) == FZ_OK;
}

void test_dense_desc(const fz_value *v, const int64_t *symbols,
                     fz_tensor_desc *d) {
  const fz_type *t = &v->type;
  *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    d->sizes[axis] = fz_axis_size(&t->axes[axis], symbols);
    if (t->axes[axis].kind == FZ_AXIS_BROADCAST && v->kind == FZ_VALUE_INPUT)
      continue; /* stride 0 */
    d->strides[axis] = stride;
    stride *= d->sizes[axis] > 1 ? d->sizes[axis] : 1;
  }
}
