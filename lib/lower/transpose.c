/* transpose.c - a transpose plan's kernel body, as a script:
 *
 *   entry:  tiles along A and B = ceil(extent / tile);
 *   loop:   for (t = ctaid.x; t < tiles; t += nctaid.x)
 *             origin: t -> (outer coordinates, tile along B, tile along A),
 *                     A fastest, so neighbouring blocks write neighbouring
 *                     stretches of the outputs;
 *             1. load phase: each tiled input, read along B (its vector
 *                lanes along B), into its shared tile S[a][b];
 *             2. bar.sync;
 *             3. store phase: groups of plan->vector lanes along A read
 *                the tiles down their columns, the direct inputs at their
 *                own strides, compute, and store along A;
 *             4. bar.sync (the next tile overwrites S).
 *
 * Every phase is a whole number of passes of the block over the tile
 * (tile elements / lanes / threads), unrolled: loads of every pass, then
 * compute, then stores, for bytes in flight. A warp covers `v` rows by 32
 * columns of its phase (v = lanes per group), so a row of the warp is 32
 * consecutive elements in global memory (one 128-byte line of f32), and,
 * with rows padded to tile_b + 1 elements, the 32 lanes touch 32 distinct
 * banks for each lane of their groups in both phases: in the load phase
 * lane -> (r, j) writes S[r][j*v + l], bank (r + j*v + l) mod 32, with
 * r < v and j < 32/v; the store phase reads S[j*v + l][r], the same form.
 *
 * Edges: coordinates past an extent are clamped to the last vector inside
 * it before any address is formed (loads stay in bounds and need no
 * branch; the tile holds copies there), and stores are predicated.
 * Tile elements of 1- and 2-byte dtypes are widened to 4 bytes so that the
 * padding argument holds (plan.c: fz_tile_element_bytes).
 */
#include "emit.h"
#include "skeleton.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct transpose {
  fz_kernel *k;
  int a, b;                   /* canonical axes: outputs', tiled inputs' */
  int pitch;                  /* elements per tile row: tile_b + 1 */
  LLVMValueRef lane, wid;     /* i32 */
  LLVMValueRef *tile;         /* per access: its shared tile, or NULL */
  LLVMTypeRef *tile_type;     /* per access: the tile's element type */
  LLVMValueRef origin[FZ_MAX_RANK]; /* the tile's first coordinates */
  LLVMValueRef *vals;         /* [pass][num_nodes][vector] */
  LLVMValueRef (*coord)[FZ_MAX_RANK]; /* [pass]: clamped coordinates */
  LLVMValueRef *valid;        /* [pass] */
} transpose;

static bool is_tiled(const fz_plan *p, int access) {
  return p->tiled && p->tiled[access];
}

/* ---- lowering's limits --------------------------------------------------- */

/* The tiles are static shared memory (fz_plan_tile_bytes). */
fz_status fz_check_transpose(const fz_plan *p, fz_error *err) {
  if (fz_plan_tile_bytes(p) > 48 * 1024)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "lower: %zu bytes of tiles exceed static shared memory",
                        fz_plan_tile_bytes(p));
  return FZ_OK;
}

/* ---- small pieces -------------------------------------------------------- */

static LLVMValueRef umin(fz_emit *e, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntULT, x, y, ""), x, y,
                         "");
}

/* Row and column (i32) of this thread's group in pass `pass` of a phase
 * whose rows are `cols` wide, v lanes per group. */
static void phase_position(transpose *t, int pass, int cols, int v,
                           LLVMValueRef *row, LLVMValueRef *col) {
  fz_emit *e = &t->k->e;
  LLVMBuilderRef b = e->b;
  int per_row = 32 / v, segs = cols / 32;
  LLVMValueRef wi = LLVMBuildAdd(
      b, t->wid, fz_emit_i32(e, (int64_t)pass * (e->plan->threads / 32)), "");
  LLVMValueRef r = LLVMBuildUDiv(b, wi, fz_emit_i32(e, segs), "");
  r = LLVMBuildAdd(b, LLVMBuildMul(b, r, fz_emit_i32(e, v), ""),
                   LLVMBuildUDiv(b, t->lane, fz_emit_i32(e, per_row), ""), "");
  LLVMValueRef c = LLVMBuildMul(b, LLVMBuildURem(b, wi, fz_emit_i32(e, segs), ""),
                                fz_emit_i32(e, 32), "");
  c = LLVMBuildAdd(
      b, c,
      LLVMBuildMul(b, LLVMBuildURem(b, t->lane, fz_emit_i32(e, per_row), ""),
                   fz_emit_i32(e, v), ""),
      "");
  *row = r;
  *col = c;
}

static LLVMValueRef to_idx(fz_emit *e, LLVMValueRef v32) {
  return e->t_idx == e->t_i32 ? v32 : LLVMBuildZExt(e->b, v32, e->t_idx, "");
}

/* Element `index` (i32) of access i's tile. */
static LLVMValueRef tile_ptr(transpose *t, int i, LLVMValueRef index) {
  fz_emit *e = &t->k->e;
  return LLVMBuildInBoundsGEP2(e->b, t->tile_type[i], t->tile[i], &index, 1,
                               "");
}

static LLVMValueRef tile_index(transpose *t, LLVMValueRef a_local,
                               LLVMValueRef b_local, int plus_a, int plus_b) {
  fz_emit *e = &t->k->e;
  LLVMBuilderRef b = e->b;
  if (plus_a)
    a_local = LLVMBuildAdd(b, a_local, fz_emit_i32(e, plus_a), "");
  if (plus_b)
    b_local = LLVMBuildAdd(b, b_local, fz_emit_i32(e, plus_b), "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, a_local, fz_emit_i32(e, t->pitch), ""),
                      b_local, "");
}

/* A register value of dtype d in its tile form and back. */
static LLVMValueRef widen(fz_emit *e, LLVMValueRef v, fz_dtype d) {
  if (d == FZ_BOOL)
    return LLVMBuildZExt(e->b, v, e->t_i32, "");
  if (d == FZ_I8)
    return LLVMBuildSExt(e->b, v, e->t_i32, "");
  return v;
}

static LLVMValueRef narrow(fz_emit *e, LLVMValueRef v, fz_dtype d) {
  if (d == FZ_BOOL || d == FZ_I8)
    return LLVMBuildTrunc(e->b, v, fz_emit_reg_type(e, d), "");
  return v;
}

static void declare_tiles(transpose *t) {
  fz_emit *e = &t->k->e;
  const fz_plan *p = e->plan;
  uint64_t n = (uint64_t)p->tile_a * (uint64_t)t->pitch;
  for (int i = 0; i < p->num_accesses; i++) {
    if (!is_tiled(p, i))
      continue;
    fz_dtype d = p->accesses[i].dtype;
    LLVMTypeRef et = fz_tile_element_bytes(d) == 8 ? fz_emit_reg_type(e, d)
                     : fz_dtype_is_float(d)         ? e->t_f32
                                                    : e->t_i32;
    char name[32];
    snprintf(name, sizeof name, "fz_tile_a%d", i);
    LLVMTypeRef at = LLVMArrayType2(et, n);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(e->mod, at, name, 3);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMGetUndef(at)); /* shared memory has no init */
    LLVMSetAlignment(g, 16);
    t->tile[i] = g;
    t->tile_type[i] = et;
  }
}

/* ---- the tile's origin --------------------------------------------------- */

/* t -> A tile (fastest), B tile, then the outer axes row-major. */
static void tile_origin(transpose *t, LLVMValueRef tile, LLVMValueRef tiles_a,
                        LLVMValueRef tiles_b) {
  fz_kernel *k = t->k;
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  LLVMValueRef ta = LLVMBuildURem(b, tile, tiles_a, "");
  LLVMValueRef q = LLVMBuildUDiv(b, tile, tiles_a, "");
  LLVMValueRef tb = LLVMBuildURem(b, q, tiles_b, "");
  LLVMValueRef outer = LLVMBuildUDiv(b, q, tiles_b, "outer");
  t->origin[t->a] =
      LLVMBuildNUWMul(b, ta, fz_kernel_idx(k, p->tile_a), "origin.a");
  t->origin[t->b] =
      LLVMBuildNUWMul(b, tb, fz_kernel_idx(k, p->tile_b), "origin.b");
  int axes[FZ_MAX_RANK], n = 0;
  for (int d = 0; d < p->rank; d++)
    if (d != t->a && d != t->b)
      axes[n++] = d;
  if (n > 0)
    fz_kernel_decompose(k, outer, axes, n, 1, k->ext[axes[n - 1]], t->origin);
}

/* ---- 1. the load phase --------------------------------------------------- */

static bool load_tile(transpose *t, int i) {
  fz_kernel *k = t->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  const fz_plan_access *x = &p->accesses[i];
  int v = x->vector;
  int passes = (int)((int64_t)p->tile_a * p->tile_b / v / p->threads);
  LLVMValueRef last_a =
      LLVMBuildSub(b, k->ext[t->a], fz_kernel_idx(k, 1), "");
  LLVMValueRef last_b =
      LLVMBuildSub(b, k->ext[t->b], fz_kernel_idx(k, v), "");
  LLVMValueRef vals[16];
  LLVMValueRef(*held)[16] = calloc((size_t)passes, sizeof *held);
  LLVMValueRef *rows = calloc((size_t)passes, sizeof *rows);
  LLVMValueRef *cols = calloc((size_t)passes, sizeof *cols);
  bool ok = held && rows && cols;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  unsigned not_b = ((1u << p->rank) - 1) & ~(1u << t->b);
  for (int u = 0; ok && u < passes; u++) {
    phase_position(t, u, p->tile_b, v, &rows[u], &cols[u]);
    LLVMValueRef c[FZ_MAX_RANK];
    for (int d = 0; d < p->rank; d++)
      c[d] = t->origin[d];
    c[t->a] = umin(e, LLVMBuildAdd(b, c[t->a], to_idx(e, rows[u]), ""), last_a);
    c[t->b] = umin(e, LLVMBuildAdd(b, c[t->b], to_idx(e, cols[u]), ""), last_b);
    fz_set_name(c[t->a], "ld.a%d.u%d.a", i, u);
    fz_set_name(c[t->b], "ld.a%d.u%d.b", i, u);
    /* stride 1 along B is the tiled access's structure */
    LLVMValueRef off = fz_kernel_offset(k, i, k->access[i].offset, c, not_b);
    off = LLVMBuildNSWAdd(b, off, c[t->b], "");
    ok = fz_emit_load(e, x, k->access[i].ptr, off, NULL, v, vals) && !e->failed;
    for (int l = 0; ok && l < v; l++)
      held[u][l] = widen(e, vals[l], x->dtype);
  }
  for (int u = 0; ok && u < passes; u++)
    for (int l = 0; l < v; l++) {
      LLVMValueRef s = LLVMBuildStore(
          b, held[u][l], tile_ptr(t, i, tile_index(t, rows[u], cols[u], 0, l)));
      LLVMSetAlignment(s, (unsigned)fz_tile_element_bytes(x->dtype));
    }
  free(held);
  free(rows);
  free(cols);
  return ok && !e->failed;
}

/* ---- 3. the store phase -------------------------------------------------- */

static LLVMValueRef *pass_table(transpose *t, int u) {
  const fz_plan *p = t->k->e.plan;
  return t->vals + (size_t)u * (size_t)p->num_nodes * (size_t)p->vector;
}

/* Position, validity, clamped coordinates and loads of pass u. */
static bool store_pass_loads(transpose *t, int u) {
  fz_kernel *k = t->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;
  int w = p->vector;
  LLVMValueRef row, col; /* row: along B, col: along A */
  phase_position(t, u, p->tile_a, w, &row, &col);
  LLVMValueRef ca = LLVMBuildAdd(b, t->origin[t->a], to_idx(e, col), "");
  LLVMValueRef cb = LLVMBuildAdd(b, t->origin[t->b], to_idx(e, row), "");
  t->valid[u] = LLVMBuildAnd(
      b, LLVMBuildICmp(b, LLVMIntULT, ca, k->ext[t->a], ""),
      LLVMBuildICmp(b, LLVMIntULT, cb, k->ext[t->b], ""), "");
  fz_set_name(t->valid[u], "valid.u%d", u);
  LLVMValueRef *c = t->coord[u];
  for (int d = 0; d < p->rank; d++)
    c[d] = t->origin[d];
  c[t->a] = umin(e, ca, LLVMBuildSub(b, k->ext[t->a], fz_kernel_idx(k, w), ""));
  c[t->b] = umin(e, cb, LLVMBuildSub(b, k->ext[t->b], fz_kernel_idx(k, 1), ""));
  fz_set_name(c[t->a], "st.u%d.a", u);
  fz_set_name(c[t->b], "st.u%d.b", u);
  LLVMValueRef *table = pass_table(t, u);
  unsigned all = (1u << p->rank) - 1;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_LOAD)
      continue;
    if (!is_tiled(p, n->access)) {
      LLVMValueRef off =
          fz_kernel_offset(k, n->access, k->access[n->access].offset, c, all);
      if (!fz_kernel_load_node(k, i, table, off, w))
        return false;
      continue;
    }
    fz_dtype d = p->accesses[n->access].dtype;
    LLVMValueRef *out = fz_slot_val(p, table, i);
    for (int l = 0; l < w; l++) {
      LLVMValueRef ld = LLVMBuildLoad2(
          b, t->tile_type[n->access],
          tile_ptr(t, n->access, tile_index(t, col, row, l, 0)), "");
      LLVMSetAlignment(ld, (unsigned)fz_tile_element_bytes(d));
      out[l] = fz_emit_convert(e, narrow(e, ld, d), d, n->dtype);
      if (!out[l])
        return false;
    }
  }
  return !e->failed;
}

static bool store_pass_compute(transpose *t, int u) {
  const fz_plan *p = t->k->e.plan;
  for (int i = 0; i < p->num_nodes; i++) {
    fz_node_kind kind = p->nodes[i].kind;
    if (kind == FZ_NODE_LOAD || kind == FZ_NODE_STORE)
      continue;
    if (!fz_kernel_value_node(t->k, i, pass_table(t, u), t->coord[u],
                              p->vector))
      return false;
  }
  return true;
}

static bool store_pass_stores(transpose *t, int u) {
  fz_kernel *k = t->k;
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  char name[32];
  snprintf(name, sizeof name, "store.u%d", u);
  fz_if f;
  fz_if_begin(e, &f, t->valid[u], name);
  unsigned all = (1u << p->rank) - 1;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_STORE)
      continue;
    LLVMValueRef off = fz_kernel_offset(
        k, n->access, k->access[n->access].offset, t->coord[u], all);
    if (!fz_kernel_store_node(k, i, pass_table(t, u), off, p->vector))
      return false;
  }
  fz_if_end(e, &f);
  return !e->failed;
}

/* ---- the loop over tiles ------------------------------------------------- */

static bool emit_tile(transpose *t, int passes) {
  const fz_plan *p = t->k->e.plan;
  fz_emit *e = &t->k->e;
  for (int i = 0; i < p->num_accesses; i++)
    if (is_tiled(p, i) && !load_tile(t, i))
      return false;
  fz_emit_barrier(e);
  for (int u = 0; u < passes; u++)
    if (!store_pass_loads(t, u))
      return false;
  for (int u = 0; u < passes; u++)
    if (!store_pass_compute(t, u))
      return false;
  for (int u = 0; u < passes; u++)
    if (!store_pass_stores(t, u))
      return false;
  fz_emit_barrier(e);
  return !e->failed;
}

static bool emit_loop(transpose *t, int passes) {
  fz_kernel *k = t->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = e->plan;

  LLVMValueRef tid = fz_emit_sreg(e, "tid.x");
  if (!tid)
    return false;
  t->lane = LLVMBuildAnd(b, tid, fz_emit_i32(e, 31), "lane");
  t->wid = LLVMBuildLShr(b, tid, fz_emit_i32(e, 5), "warp");
  LLVMValueRef tiles_a = LLVMBuildUDiv(
      b,
      LLVMBuildAdd(b, k->ext[t->a], fz_kernel_idx(k, p->tile_a - 1), ""),
      fz_kernel_idx(k, p->tile_a), "tiles_a");
  LLVMValueRef tiles_b = LLVMBuildUDiv(
      b,
      LLVMBuildAdd(b, k->ext[t->b], fz_kernel_idx(k, p->tile_b - 1), ""),
      fz_kernel_idx(k, p->tile_b), "tiles_b");
  LLVMValueRef first = fz_kernel_sreg(k, "ctaid.x");
  LLVMValueRef step = fz_kernel_sreg(k, "nctaid.x");
  if (!first || !step)
    return false;
  fz_loop loop;
  LLVMValueRef tile = fz_emit_loop_begin(e, &loop, first, NULL, k->groups, "t");
  tile_origin(t, tile, tiles_a, tiles_b);
  if (!emit_tile(t, passes))
    return false;
  fz_emit_loop_end(e, &loop, step);
  LLVMBuildRetVoid(b);
  return true;
}

bool fz_emit_transpose(fz_kernel *k) {
  const fz_plan *p = k->e.plan;
  transpose t = {.k = k, .a = p->rank - 1, .b = p->tile_axis,
                 .pitch = p->tile_b + 1};
  int passes = (int)((int64_t)p->tile_a * p->tile_b / p->vector / p->threads);
  size_t nvals =
      (size_t)passes * (size_t)p->num_nodes * (size_t)p->vector;
  t.tile = calloc((size_t)p->num_accesses, sizeof *t.tile);
  t.tile_type = calloc((size_t)p->num_accesses, sizeof *t.tile_type);
  t.vals = calloc(nvals ? nvals : 1, sizeof *t.vals);
  t.coord = calloc((size_t)passes, sizeof *t.coord);
  t.valid = calloc((size_t)passes, sizeof *t.valid);
  bool ok = t.tile && t.tile_type && t.vals && t.coord && t.valid;
  if (!ok)
    fz_emit_fail(&k->e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  if (ok) {
    declare_tiles(&t);
    ok = emit_loop(&t, passes);
  }
  free(t.tile);
  free(t.tile_type);
  free(t.vals);
  free(t.coord);
  free(t.valid);
  return ok;
}
