/* heuristics.c - see heuristics.h. */
#include "sched/heuristics.h"

#include <stdlib.h>
#include <string.h>

int64_t fz_pow2_ceil(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

int64_t fz_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool fz_op_reduces_axis(const fz_op *op, int axis) {
  for (int d = 0; d < op->num_dims; d++)
    if (op->dims[d] == axis)
      return true;
  return false;
}

const fz_tensor_desc *fz_plan_access_desc(const fz_problem *pb,
                                          const fz_plan_access *a) {
  return a->is_output ? &pb->outputs[a->io] : &pb->inputs[a->io];
}

bool fz_plan_access_can_vectorize(const fz_plan *p, const fz_plan_access *a,
                                  const fz_tensor_desc *d, int v) {
  int inner = p->rank - 1;
  if (a->gathered) /* each lane reads where its own index says */
    return false;
  if (a->strides[inner] != 1 || p->extents[inner] % v != 0 || a->clamp)
    return false; /* a clamped window is read lane by lane (plan.h) */
  for (int k = 0; k < inner; k++)
    if (a->strides[k] % v != 0)
      return false;
  if (a->offset % v != 0)
    return false;
  /* a vector load needs its own size of alignment, and the widest load
   * (16 bytes) is all wider vectors are split into */
  size_t bytes = (size_t)v * fz_dtype_size(a->dtype);
  size_t need = bytes > 16 ? 16 : bytes;
  return d->align % need == 0;
}

int fz_plan_widest_vector(const fz_plan *p, fz_access_filter counts,
                          const void *ctx) {
  int inner = p->rank - 1;
  size_t narrow = 0;
  for (int i = 0; i < p->num_accesses; i++) {
    const fz_plan_access *a = &p->accesses[i];
    size_t s = fz_dtype_size(a->dtype);
    if ((!counts || counts(p, i, ctx)) && a->strides[inner] == 1 &&
        (narrow == 0 || s < narrow))
      narrow = s;
  }
  int v = narrow ? (int)(16 / narrow) : 1;
  return v > 8 ? 8 : v;
}

int fz_plan_fit_vector(const fz_problem *pb, const fz_plan *p, int v,
                       bool outputs_decide) {
  int inner = p->rank - 1;
  for (; v > 1; v /= 2) {
    if (p->extents[inner] % v != 0)
      continue;
    bool ok = true;
    for (int i = 0; i < p->num_accesses && ok && outputs_decide; i++) {
      const fz_plan_access *a = &p->accesses[i];
      if (a->is_output && a->strides[inner] == 1)
        ok = fz_plan_access_can_vectorize(p, a, fz_plan_access_desc(pb, a), v);
    }
    if (ok)
      break;
  }
  return v;
}

void fz_plan_set_access_vectors(const fz_problem *pb, fz_plan *p, int v,
                                fz_access_filter walks, const void *ctx) {
  for (int i = 0; i < p->num_accesses; i++) {
    fz_plan_access *a = &p->accesses[i];
    bool wide = v > 1 && (!walks || walks(p, i, ctx)) &&
                fz_plan_access_can_vectorize(p, a, fz_plan_access_desc(pb, a),
                                             v);
    a->vector = wide ? v : 1;
  }
}

bool fz_plan_fits_int32(const fz_plan *p, int64_t loop_bound) {
  int64_t limit = (int64_t)1 << 31;
  if (loop_bound >= limit)
    return false;
  for (int k = 0; k < p->rank; k++)
    if (p->extents[k] >= limit)
      return false;
  for (int i = 0; i < p->num_accesses; i++) {
    const fz_plan_access *a = &p->accesses[i];
    int64_t max_off = a->offset;
    for (int k = 0; k < p->rank; k++) {
      int64_t s = a->strides[k] < 0 ? -a->strides[k] : a->strides[k];
      max_off += s * (p->extents[k] - 1);
    }
    if (a->gathered && a->gather_extent > 0)
      max_off += (a->gather_stride < 0 ? -a->gather_stride : a->gather_stride) *
                 (a->gather_extent - 1);
    /* the last vector reads up to p->vector elements past the offset */
    if (max_off + p->vector >= limit)
      return false;
  }
  return true;
}

/* The most bytes a thread may prefetch a row for its row values to be
 * staged by default. Measured on an H100 (2026-12-07, medians of three
 * rounds of 30 runs, staged against registers): bf16 layer-norm
 * backward, 64 bytes a thread a row, 2048x8192 54.7 against 57.3 us and
 * 16384x8192 289.7 against 300.8; f32, 128 bytes, 2048x8192 85.2
 * against 83.8 and 32768x1024 149.5 against 148.3. A thread with twice
 * the row to work through reaches the back edge after the late load has
 * landed anyway, and the copies then cost more than they save. */
enum { ROW_VALUES_MAX_ROW_BYTES = 64 };

int fz_persistent_most_groups(int dflt) {
  const char *env = getenv("FZ_PERSISTENT_GROUPS");
  if (!env || !*env)
    return dflt;
  char *end;
  long n = strtol(env, &end, 10);
  bool ok = !*end && n >= 1 && n <= FZ_PLAN_MAX_UNROLL && !(n & (n - 1));
  return ok ? (int)n : dflt;
}

int fz_inner_outer_blocks_per_sm(int dflt) {
  const char *env = getenv("FZ_INNER_OUTER_BLOCKS");
  return env && strcmp(env, "1") == 0 ? 1 : dflt;
}

/* Three buffers are not the default: on an H200 (2026-12-07, bench/ab.py,
 * two rounds of 30 runs) they made every layer-norm backward they apply
 * to slower: bf16 2048x8192 47.3 against 46.4 us, bf16 16384x8192 232.5
 * against 227.8, f32 2048x8192 63.4 against 62.5. The next row's copies
 * already cover the wait; a third row's only take shared memory (and so
 * L1) from the block. */
void fz_plan_choose_deep(fz_plan *p) {
  const char *env = getenv("FZ_PREFETCH_BUFFERS");
  p->prefetch_deep = p->prefetch && !p->prefetch_single && env &&
                     strcmp(env, "3") == 0;
}

void fz_plan_choose_weights_early(fz_plan *p) {
  const char *env = getenv("FZ_WEIGHT_LOAD");
  p->weights_early = env && strcmp(env, "early") == 0 &&
                     p->kind == FZ_PLAN_INNER_PERSISTENT && !p->multipass &&
                     !p->cluster && p->phases >= 1 &&
                     fz_plan_has_weight_row(p);
}

void fz_plan_choose_refetch(fz_plan *p) {
  const char *env = getenv("FZ_REFETCH_BF16");
  p->refetch_bf16 = env && strcmp(env, "1") == 0 &&
                    p->kind != FZ_PLAN_OUTER_PERSISTENT && !p->multipass &&
                    fz_plan_has_refetchable_bf16(p);
}

void fz_plan_choose_trace(fz_plan *p) {
  const char *env = getenv("FZ_TRACE");
  p->trace_phases = env && strcmp(env, "phases") == 0 &&
                    p->kind == FZ_PLAN_INNER_OUTER_PERSISTENT;
}

/* A warp a column group in the final pass by default. On an H100
 * (FZ_TRACE=phases, bf16 layer-norm backward 2048x8192) that left half
 * the SMs idle, and the pass took 6.3 us where f32's, with every SM
 * busy, 4.1; up to 2 or 4 warps a group (FZ_COLUMN_PARTS) is
 * built but has not yet run on a GPU, so it stays behind the switch. */
void fz_plan_choose_column_parts(fz_plan *p) {
  const char *env = getenv("FZ_COLUMN_PARTS");
  p->column_parts = !fz_plan_has_grid_columns(p)          ? 0
                    : env && strcmp(env, "2") == 0 ? 2
                    : env && strcmp(env, "4") == 0 ? 4
                                                   : 1;
}

void fz_plan_choose_row_values(fz_plan *p) {
  const char *env = getenv("FZ_PREFETCH_ROW_VALUES");
  size_t row_bytes = 0;
  for (int a = 0; a < p->num_accesses; a++)
    if (fz_plan_prefetched(p, a))
      row_bytes += (size_t)p->persistent * (size_t)p->vector *
                   fz_dtype_size(p->accesses[a].dtype);
  bool wanted = env && strcmp(env, "0") == 0   ? false
                : env && strcmp(env, "1") == 0 ? true
                : row_bytes <= ROW_VALUES_MAX_ROW_BYTES;
  p->prefetch_row_values = p->prefetch && wanted && fz_plan_has_row_values(p);
}
