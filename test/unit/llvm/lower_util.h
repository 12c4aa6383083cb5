/* lower_util.h - what the lowering tests share: plans written out by
 * hand, lowering a plan (or failing the test), PTX at O3 with libdevice
 * when the module needs it, and ptxas -arch=sm_90 where ptxas exists (a
 * SKIP line where it does not). Static inline: each test file is its own
 * executable and uses what it needs.
 */
#ifndef FZ_TEST_LOWER_UTIL_H
#define FZ_TEST_LOWER_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "lower/lower.h"
#include "nvptx/nvptx.h"
#include "test_util.h"

/* ---- building plans ------------------------------------------------------ */

enum { MAX_ACCESSES = 128, MAX_NODES = 256 };

typedef struct tplan {
  fz_plan p;
  fz_plan_access acc[MAX_ACCESSES];
  fz_plan_node nodes[MAX_NODES];
} tplan;

static inline void tp_init(tplan *t, int rank, const int64_t *extents,
                           int vector, int unroll) {
  memset(t, 0, sizeof *t);
  t->p.kind = FZ_PLAN_POINTWISE;
  t->p.kernel_name = "fz_test_kernel";
  t->p.rank = rank;
  memcpy(t->p.extents, extents, sizeof(int64_t) * (size_t)rank);
  t->p.vector = vector;
  t->p.unroll = unroll;
  t->p.threads = 256;
  t->p.blocks = 132;
  t->p.index32 = true;
  t->p.accesses = t->acc;
  t->p.nodes = t->nodes;
}

static inline int tp_access(tplan *t, bool out, fz_dtype dtype,
                            const int64_t *strides, int vector) {
  ck_assert_int_lt(t->p.num_accesses, MAX_ACCESSES);
  int i = t->p.num_accesses++;
  fz_plan_access *a = &t->acc[i];
  a->is_output = out;
  a->io = i;
  a->dtype = dtype;
  memcpy(a->strides, strides, sizeof(int64_t) * (size_t)t->p.rank);
  a->vector = vector;
  return i;
}

static inline int tp_node(tplan *t, fz_plan_node n) {
  ck_assert_int_lt(t->p.num_nodes, MAX_NODES);
  t->nodes[t->p.num_nodes] = n;
  return t->p.num_nodes++;
}

static inline int tp_load(tplan *t, int access) {
  return tp_node(t, (fz_plan_node){.kind = FZ_NODE_LOAD,
                                   .dtype = t->acc[access].dtype,
                                   .access = access});
}

static inline int tp_op(tplan *t, fz_opcode code, fz_dtype dtype, int n, int a,
                        int b, int c) {
  return tp_node(t, (fz_plan_node){.kind = FZ_NODE_OP,
                                   .code = code,
                                   .dtype = dtype,
                                   .num_operands = n,
                                   .operands = {a, b, c}});
}

static inline void tp_store(tplan *t, int access, int src) {
  tp_node(t, (fz_plan_node){.kind = FZ_NODE_STORE,
                            .dtype = t->acc[access].dtype,
                            .num_operands = 1,
                            .operands = {src},
                            .access = access});
}

/* ---- lowering and compiling ------------------------------------------------
 */

typedef struct lowered {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  bool uses_libdevice;
  char *ir; /* LLVMPrintModuleToString */
} lowered;

static inline lowered lower_ok(const fz_plan *p) {
  lowered l = {.ctx = LLVMContextCreate()};
  fz_error err = {0};
  fz_status st = fz_lower_plan(p, l.ctx, &l.mod, &l.uses_libdevice, &err);
  ck_assert_msg(st == FZ_OK, "lowering failed: %s", err.message);
  ck_assert_ptr_nonnull(l.mod);
  l.ir = LLVMPrintModuleToString(l.mod);
  return l;
}

static inline void lowered_free(lowered *l) {
  LLVMDisposeMessage(l->ir);
  LLVMDisposeModule(l->mod);
  LLVMContextDispose(l->ctx);
}

static inline bool has(const char *text, const char *needle) {
  return strstr(text, needle) != NULL;
}

static inline int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p;
       p = strstr(p + strlen(needle), needle))
    n++;
  return n;
}

/* check's messages are short: the text goes to stderr, the message names
 * what was looked for. */
static inline bool report(bool ok, const char *text) {
  if (!ok)
    fprintf(stderr, "---- text ----\n%s\n---- end ----\n", text);
  return ok;
}

#define ck_assert_has(text, needle)                                            \
  ck_assert_msg(report(has(text, needle), text), "missing '%s'", needle)
#define ck_assert_count(text, needle, n)                                       \
  ck_assert_msg(report(count(text, needle) == (n), text),                      \
                "'%s' %d times, not %d", needle, count(text, needle), (n))

static inline bool find_ptxas(char *path, size_t size) {
  const char *env = getenv("PATH");
  char *dirs = strdup(env ? env : "");
  bool found = false;
  for (char *save = NULL, *dir = strtok_r(dirs, ":", &save); dir && !found;
       dir = strtok_r(NULL, ":", &save)) {
    snprintf(path, size, "%s/ptxas", dir);
    found = access(path, X_OK) == 0;
  }
  free(dirs);
  if (!found) {
    snprintf(path, size, "/usr/local/cuda/bin/ptxas");
    found = access(path, X_OK) == 0;
  }
  return found;
}

static inline void assemble(const char *ptx) {
  char ptxas[4096];
  if (!find_ptxas(ptxas, sizeof ptxas)) {
    printf("SKIP: ptxas not found\n");
    return;
  }
  char file[] = "/tmp/fz_test_lower_XXXXXX";
  int fd = mkstemp(file);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  ck_assert_ptr_nonnull(f);
  fputs(ptx, f);
  fclose(f);
  char command[8400];
  snprintf(command, sizeof command, "'%s' -arch=sm_90 -o /dev/null '%s' 2>&1",
           ptxas, file);
  FILE *p = popen(command, "r");
  ck_assert_ptr_nonnull(p);
  char output[4096] = "";
  size_t n = fread(output, 1, sizeof output - 1, p);
  output[n] = '\0';
  int status = pclose(p);
  unlink(file);
  ck_assert_msg(report(status == 0, ptx), "ptxas -arch=sm_90 failed (%d):\n%s",
                status, output);
}

/* PTX for sm_90 at O3 with libdevice linked when needed, or NULL (after a
 * SKIP line) when the module needs libdevice and there is none. Consumes
 * the module's IR in place. The caller frees the PTX. */
static inline char *to_ptx(lowered *l) {
  if (l->uses_libdevice) {
    char path[4096];
    fz_error ferr = {0};
    if (fz_libdevice_find(path, sizeof path, &ferr) != FZ_OK) {
      printf("SKIP: libdevice not found (%s)\n", ferr.message);
      return NULL;
    }
  }
  fz_nvptx_options opts = {
      .sm = 90, .opt_level = 3, .link_libdevice = l->uses_libdevice};
  char *ptx = NULL;
  fz_error err = {0};
  fz_status st = fz_nvptx_compile(l->mod, &opts, &ptx, &err);
  ck_assert_msg(report(st == FZ_OK, l->ir), "PTX compilation failed: %s",
                err.message);
  ck_assert_ptr_nonnull(ptx);
  return ptx;
}

static inline bool has_v4_load(const char *ptx) {
  return has(ptx, "ld.global.nc.v4.f32") || has(ptx, "ld.global.v4.f32");
}

/* Lower a plan expected to fail; the status and message come back. */
static inline fz_status lower_status(const fz_plan *p, char *message,
                                     size_t size) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = (LLVMModuleRef)1;
  fz_error err = {0};
  fz_status st = fz_lower_plan(p, ctx, &m, NULL, &err);
  ck_assert_msg(st != FZ_OK || m != NULL, "no module and no error");
  if (st != FZ_OK)
    ck_assert_ptr_null(m);
  else
    LLVMDisposeModule(m);
  snprintf(message, size, "%s", err.message);
  LLVMContextDispose(ctx);
  return st;
}

#endif
