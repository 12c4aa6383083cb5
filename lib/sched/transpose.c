/* transpose.c - the transpose scheduler: a pointwise fusion whose inputs
 * and outputs are contiguous along different axes (a materialised
 * permute, a channels-first input written channels-last) runs through
 * shared-memory tiles, so that every global access is coalesced.
 *
 * The pointwise scheduler's plan already has everything but the launch:
 * the canonical space in the reference output's physical order, one
 * affine access per (tensor, map), and the node DAG. This scheduler
 * builds that plan, then looks at its strides:
 *  1. A = the innermost canonical axis. Every output must be contiguous
 *     along it (an output contiguous elsewhere would need its own tiles
 *     going out: declined, pointwise writes it strided).
 *  2. An input with a non-unit, non-zero stride along A and stride 1 along
 *     another axis B is *tiled*; all tiled inputs must agree on B. No
 *     tiled input: every access shares the innermost axis and the
 *     pointwise plan is already coalesced (declined).
 *  3. A and B must both be long enough to fill tiles (>= 32 elements);
 *     short ones leave pointwise's few strided reads cheaper than
 *     mostly-empty tiles.
 *  4. Tiles: 64x64 elements where both axes reach 64 (32 otherwise), one
 *     thread per 16 elements (256 threads for 64x64): enough bytes in
 *     flight per SM without unrolling, and 16 KiB of f32 tile per tiled
 *     input. Shared memory is static; more than 48 KiB of tiles falls back
 *     to 32x32 tiles, then declines.
 *  5. Vectors: along A for outputs and direct inputs (as pointwise
 *     chooses them, from each tensor's strides and alignment: the shared
 *     rules of heuristics.c), along B for tiled inputs (16-byte loads
 *     where B's extent, the other strides, the offset and the base
 *     pointer allow).
 * The entry point is fz_transpose_try: fz_pointwise_try's plan and, when
 * pointwise declines, its reason.
 */
#include "sched/dag.h"
#include "sched/heuristics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum {
  MIN_EXTENT = 32,              /* of A and of B */
  MAX_TILE_BYTES = 48 * 1024,   /* static shared memory of one block */
  ELEMENTS_PER_THREAD = 16,
};

typedef struct verdict {
  int axis_b;   /* B, or -1 */
  bool *tiled;  /* per access, arena */
  int num_tiled;
} verdict;

static const char *access_label(const fz_problem *pb, const fz_plan_access *a,
                                char *buf, size_t n) {
  const fz_fusion *f = pb->fusion;
  return fz_value_label(a->is_output ? f->outputs[a->io] : f->inputs[a->io],
                        buf, n);
}

/* Sets the reason, located at the op that defines `about` (NULL: about
 * the fusion as a whole), and returns false. */
static bool decline(fz_reason *why, const fz_value *about, const char *fmt,
                    ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static bool decline(fz_reason *why, const fz_value *about, const char *fmt,
                    ...) {
  if (why) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->text, sizeof why->text, fmt, ap);
    va_end(ap);
    why->loc = fz_value_loc(about);
  }
  return false;
}

/* Steps 1-3: which accesses are tiled, along which axis. */
static bool classify(const fz_problem *pb, const fz_plan *p, fz_arena *arena,
                     verdict *v, fz_reason *why) {
  char l1[64], l2[64];
  int a = p->rank - 1;
  *v = (verdict){.axis_b = -1};
  if (p->rank < 2)
    return decline(why, NULL,
                   "the canonical space is one axis: every access shares "
                   "the innermost axis");
  v->tiled = fz_arena_alloc(arena, sizeof(bool) * (size_t)p->num_accesses);
  int first = -1;
  for (int i = 0; i < p->num_accesses; i++) {
    const fz_plan_access *x = &p->accesses[i];
    if (x->is_output) {
      if (x->strides[a] != 1)
        return decline(why, pb->fusion->outputs[x->io],
                       "output %s is not contiguous along the reference's "
                       "innermost axis",
                       access_label(pb, x, l1, sizeof l1));
      continue;
    }
    if (x->strides[a] == 0 || x->strides[a] == 1 || x->clamp || x->gathered)
      continue; /* a clamped window is read directly (plan.h); a gathered
                 * access reads where its lanes' indices say */
    int b = -1;
    for (int k = 0; k < a && b < 0; k++)
      if (x->strides[k] == 1)
        b = k;
    if (b < 0)
      continue; /* contiguous nowhere: read strided, as pointwise would */
    if (v->axis_b >= 0 && b != v->axis_b)
      return decline(why, NULL,
                     "inputs %s and %s are contiguous along different axes "
                     "(%d and %d)",
                     access_label(pb, &p->accesses[first], l1, sizeof l1),
                     access_label(pb, x, l2, sizeof l2), v->axis_b, b);
    v->axis_b = b;
    if (first < 0)
      first = i;
    v->tiled[i] = true;
    v->num_tiled++;
  }
  if (v->axis_b < 0)
    return decline(why, NULL,
                   "no input is contiguous along another axis than the "
                   "outputs' innermost (no layout change)");
  if (p->extents[a] < MIN_EXTENT || p->extents[v->axis_b] < MIN_EXTENT)
    return decline(why, NULL,
                   "axes too short for tiles: %lld (innermost) and %lld "
                   "(inputs' innermost), each needs >= %d",
                   (long long)p->extents[a], (long long)p->extents[v->axis_b],
                   MIN_EXTENT);
  return true;
}

/* Lanes of a tiled access along B: 16 bytes at most, as long as every
 * vector starts at a multiple of its width in elements and bytes. */
static int tiled_vector(const fz_problem *pb, const fz_plan *p,
                        const fz_plan_access *x) {
  const fz_tensor_desc *d = fz_plan_access_desc(pb, x);
  size_t size = fz_dtype_size(x->dtype);
  int v = (int)(16 / size);
  for (; v > 1; v /= 2) {
    bool ok = p->extents[p->tile_axis] % v == 0 && x->offset % v == 0 &&
              p->tile_a % v == 0;
    for (int k = 0; k < p->rank && ok; k++)
      ok = k == p->tile_axis || x->strides[k] % v == 0;
    size_t bytes = (size_t)v * size;
    if (ok && d->align % (bytes > 16 ? 16 : bytes) == 0)
      break;
  }
  return v;
}

static bool not_tiled(const fz_plan *p, int access, const void *ctx) {
  (void)p;
  return !((const bool *)ctx)[access];
}

/* Lanes along A for the store side: 16-byte vectors of the narrowest
 * output or direct input contiguous along A, halved until A's extent and
 * every output allow them (inputs that cannot are read scalar); tiled
 * inputs take their own width along B. */
static void choose_vectors(const fz_problem *pb, fz_plan *p, const bool *tiled) {
  int w = fz_plan_widest_vector(p, not_tiled, tiled);
  w = fz_plan_fit_vector(pb, p, w, true);
  p->vector = w;
  fz_plan_set_access_vectors(pb, p, w, not_tiled, tiled);
  for (int i = 0; i < p->num_accesses; i++)
    if (tiled[i])
      p->accesses[i].vector = tiled_vector(pb, p, &p->accesses[i]);
}

/* Step 4 and the grid. */
static bool choose_tiles(const fz_problem *pb, fz_plan *p, int size,
                         fz_reason *why) {
  int a = p->rank - 1, b = p->tile_axis;
  p->tile_a = size <= 32 || p->extents[a] < 64 ? 32 : 64;
  p->tile_b = size <= 32 || p->extents[b] < 64 ? 32 : 64;
  p->threads = p->tile_a * p->tile_b / ELEMENTS_PER_THREAD;
  size_t bytes = fz_plan_tile_bytes(p);
  if (bytes > MAX_TILE_BYTES)
    return decline(why, NULL,
                   "tiles of the transposed inputs need %zu bytes of shared "
                   "memory (at most %d)",
                   bytes, MAX_TILE_BYTES);
  choose_vectors(pb, p, p->tiled);
  int64_t tiles = fz_plan_num_tiles(p);
  int64_t per_wave = (int64_t)pb->device.num_sms * (2048 / p->threads);
  int64_t cap = per_wave * 32;
  p->blocks = tiles < 1 ? 1 : tiles > cap ? cap : tiles;
  p->unroll = 1;
  int64_t limit = (int64_t)1 << 31;
  p->index32 = fz_plan_fits_int32(p, tiles + p->blocks) &&
               p->extents[a] + p->tile_a < limit &&
               p->extents[b] + p->tile_b < limit;
  return true;
}

bool fz_transpose_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why) {
  fz_plan *p = NULL;
  *out = NULL;
  if (!fz_pointwise_try(problem, arena, &p, why))
    return false;
  return fz_transpose_from_pointwise(problem, p, arena, out, why);
}

/* The pointwise plan of the problem, turned into a transpose plan: a copy
 * of its struct and accesses (what this changes), sharing its nodes. */
bool fz_transpose_from_pointwise(const fz_problem *problem,
                                 const fz_plan *pointwise, fz_arena *arena,
                                 fz_plan **out, fz_reason *why) {
  *out = NULL;
  fz_plan *p = fz_arena_alloc(arena, sizeof *p);
  *p = *pointwise;
  size_t bytes = sizeof *p->accesses * (size_t)p->num_accesses;
  p->accesses = fz_arena_alloc(arena, bytes);
  memcpy(p->accesses, pointwise->accesses, bytes);
  verdict v;
  if (!classify(problem, p, arena, &v, why))
    return false;
  p->kind = FZ_PLAN_TRANSPOSE;
  p->kernel_name = fz_arena_strdup(arena, "fz_transpose");
  p->tile_axis = v.axis_b;
  p->tiled = v.tiled;
  if (!choose_tiles(problem, p, 64, NULL) &&
      !choose_tiles(problem, p, 32, why))
    return false;
  *out = p;
  return true;
}
