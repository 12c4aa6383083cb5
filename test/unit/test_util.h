/* test_util.h - helpers shared by the check-based unit tests. */
#ifndef FZ_TEST_UTIL_H
#define FZ_TEST_UTIL_H

#include <check.h>

#include "fz/fz.h"
#include "fz/ir.h"
#include "sched/plan.h"

/* Parse text or fail the test with the parser's message. */
fz_fusion *test_parse(const char *text);
/* Run a Suite built by make() and return a process exit code. */
int test_run_suite(Suite *suite);
/* Path of a file under the source tree (FZ_SOURCE_DIR), static buffer. */
const char *test_source_path(const char *relative);
/* A row-major host tensor of `rank` sizes (ints, after rank) over data,
 * for tests that hand the interpreter literal arrays. */
fz_host_tensor test_host_tensor(fz_dtype dtype, void *data, int rank, ...);

/* Each fusion of a directory of the source tree (its *.fz files of one
 * fusion each; files of several are skipped), parsed and, as the
 * executor does, run through resize-pushdown and gather-pushdown, passed
 * to fn with its file's name, then destroyed. Returns how many. */
int test_each_fusion_file(const char *relative_dir,
                          void (*fn)(const char *file, fz_fusion *f,
                                     void *ctx),
                          void *ctx);
/* Values for f's symbols (values[num_symbols]): base symbols a and b in
 * turn, derived ones computed; false when f refuses those sizes. */
bool test_bind_symbols(const fz_fusion *f, int64_t a, int64_t b,
                       int64_t *values);
/* v dense in its declared layout (row-major when undeclared; an expanded
 * input axis has stride 0), 16-byte aligned: the tensors fuse-opt makes
 * up for a problem. */
void test_dense_desc(const fz_value *v, const int64_t *symbols,
                     fz_tensor_desc *d);

#endif
