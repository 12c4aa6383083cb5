/* persistent_slices.c - the column rounds of a column-sliced outer
 * persistent plan (plan->column_slices = S > 1: batch norm), as a script:
 *
 *   entry:  block b serves slice b % S: its thread tx holds group
 *           slice * block_x + tx of every row it holds (row_tx, with
 *           row_threads S * block_x, as a cluster plan spreads a row),
 *           and the blocks of a slice walk the row tiles (persistent.c's
 *           tile walk divides ctaid and nctaid by S);
 *   round:  1. the block's partials combined across ty and published in
 *              the workspace, as persistent_columns.c does for the grid;
 *           2. a barrier of the slice's gridDim.x / S blocks on the
 *              slice's counter: thread 0 of each block adds 1, the
 *              slice's first block 2^31 - (blocks - 1), so the counter's
 *              top bit flips exactly when the last block arrives and its
 *              low bits come back to where they were (zero on fresh
 *              memory, which the executor provides): no reset, no
 *              generation word, one atomic a block. A block waits for the
 *              top bit to differ from what its own atomic returned.
 *              (A block can reach the next barrier before a slower one
 *              has seen the flip; its arrival cannot flip the bit back,
 *              as the sum of the next barrier's arrivals stays below 2^31
 *              until the slower block arrives too.) The fences are those
 *              of the grid barrier (membar.gl in thread 0, cumulative
 *              through the block barrier);
 *           3. every block sums its slice's partials itself: thread
 *              (tx, ty) walks blocks ty, ty + block_y, ... of the slice in
 *              order (persistent_columns.c's sum_blocks, loads issued
 *              before the adds), then the ty tree combines them: the same
 *              order in every block of the slice, so every block gets the
 *              same bits without a second barrier;
 *           4. ty == 0 passes the sums to every ty through the column
 *              scratch (the scheduler keeps the column reductions times
 *              the lanes within block_y, so they fit);
 *           5. the slice's first block (ty == 0) stores the round's
 *              column outputs.
 * Why: see lib/sched/persistent_slices.c.
 */
#include "persistent.h"

#include <stdlib.h>

static fz_dtype acc_of(const pers *s, int j) {
  return fz_reduce_acc_dtype(s->p->nodes[s->colnode[j]].dtype);
}

static bool in_round(const pers *s, int j, int round) {
  return s->p->nodes[s->colnode[j]].phase == round + 1;
}

bool fz_pers_slices_entry(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  unsigned S = (unsigned)p->column_slices;
  LLVMValueRef nctaid = fz_emit_sreg(e, "nctaid.x");
  LLVMValueRef ctaid = fz_kernel_sreg(k, "ctaid.x");
  if (!nctaid || !ctaid)
    return false;
  LLVMValueRef bad = LLVMBuildICmp(
      b, LLVMIntNE, LLVMBuildURem(b, nctaid, fz_emit_i32(e, S), ""), fz_emit_i32(e, 0), "");
  if (!fz_pers_trap_if(s, bad, "slices"))
    return false;
  s->slice = LLVMBuildURem(b, ctaid, fz_kernel_idx(k, S), "slice");
  s->row_tx = LLVMBuildNUWAdd(
      b, LLVMBuildNUWMul(b, s->slice, fz_kernel_idx(k, p->block_x), ""),
      s->tx, "row.tx");
  s->row_threads = (int)S * p->block_x;
  return !e->failed;
}

/* Step 2: the barrier of the slice's blocks. */
static void slice_barrier(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  unsigned S = (unsigned)s->p->column_slices;
  fz_emit_barrier(e);
  fz_if lead;
  fz_if_begin(e, &lead, LLVMBuildICmp(b, LLVMIntEQ, s->bs.tid, fz_emit_i32(e, 0), ""),
              "slice.arrive");
  LLVMValueRef at = fz_emit_zext_i64(e, s->slice);
  LLVMValueRef counter =
      LLVMBuildInBoundsGEP2(b, e->t_i32, k->counters, &at, 1, "slice.counter");
  LLVMValueRef blocks =
      LLVMBuildUDiv(b, fz_emit_sreg(e, "nctaid.x"), fz_emit_i32(e, S), "");
  LLVMValueRef first = LLVMBuildICmp(
      b, LLVMIntULT, fz_emit_sreg(e, "ctaid.x"), fz_emit_i32(e, S), "slice.first");
  LLVMValueRef lead_add = LLVMBuildSub(
      b, fz_emit_i32(e, 0x80000000u),
      LLVMBuildSub(b, blocks, fz_emit_i32(e, 1), ""), "");
  LLVMValueRef add = LLVMBuildSelect(b, first, lead_add, fz_emit_i32(e, 1), "");
  fz_emit_fence_gpu(e); /* the block's partials, before it counts */
  LLVMValueRef old = LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpAdd, counter, add,
                                        LLVMAtomicOrderingMonotonic, 0);
  LLVMBasicBlockRef spin =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "slice.spin");
  LLVMBasicBlockRef passed =
      LLVMAppendBasicBlockInContext(e->ctx, e->fn, "slice.passed");
  LLVMBuildBr(b, spin);
  LLVMPositionBuilderAtEnd(b, spin);
  LLVMValueRef now = LLVMBuildLoad2(b, e->t_i32, counter, "slice.now");
  LLVMSetVolatile(now, 1);
  LLVMValueRef flipped = LLVMBuildICmp(
      b, LLVMIntNE,
      LLVMBuildAnd(b, LLVMBuildXor(b, now, old, ""), fz_emit_i32(e, 0x80000000u), ""),
      fz_emit_i32(e, 0), "slice.flipped");
  LLVMBuildCondBr(b, flipped, passed, spin);
  LLVMPositionBuilderAtEnd(b, passed);
  fz_emit_fence_gpu(e); /* the slice's partials, before reading them */
  fz_if_end(e, &lead);
  fz_emit_barrier(e);
}

/* Step 3: vals[j * V + l], the sum over the slice's blocks of the
 * partials of the thread's group (valid in ty == 0). */
static bool slice_sums(pers *s, int round, LLVMValueRef *vals) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int S = p->column_slices;
  LLVMValueRef acc[FZ_LOWER_MAX_COLUMNS];
  for (int j = 0; j < s->ncol; j++)
    for (int l = 0; l < s->V; l++) {
      acc[j * s->V + l] = NULL;
      if (!in_round(s, j, round))
        continue;
      LLVMTypeRef t = fz_emit_reg_type(e, acc_of(s, j));
      acc[j * s->V + l] = fz_pers_entry_alloca(s, t, "slice.sum");
      LLVMBuildStore(
          b, fz_reduce_identity(e, p->nodes[s->colnode[j]].code, acc_of(s, j)),
          acc[j * s->V + l]);
    }
  LLVMValueRef from = LLVMBuildAdd(
      b, LLVMBuildMul(b, fz_emit_zext_i64(e, s->ty), fz_emit_i64(e, S), ""),
      fz_emit_zext_i64(e, s->slice), "slice.from");
  LLVMValueRef col = LLVMBuildMul(b, fz_emit_zext_i64(e, s->g[0]), fz_emit_i64(e, s->V), "");
  s->col_round = round;
  if (!fz_pers_sum_partials(s, acc, col, from, p->block_y * S))
    return false;
  for (int j = 0; j < s->ncol; j++)
    for (int l = 0; l < s->V && in_round(s, j, round); l++)
      vals[j * s->V + l] = LLVMBuildLoad2(
          b, fz_emit_reg_type(e, acc_of(s, j)), acc[j * s->V + l], "");
  return fz_pers_ty_combine(s, vals);
}

/* Step 4: ty == 0's vals to every ty of its column, through the scratch
 * (slot (jj * V + l) * block_x + tx of the widest accumulator, jj
 * counting the round's nodes). */
static bool broadcast(pers *s, int round, LLVMValueRef *vals) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  size_t width = 0;
  int nodes = 0;
  for (int j = 0; j < s->ncol; j++) {
    size_t w = fz_dtype_size(acc_of(s, j));
    width = w > width ? w : width;
    nodes += in_round(s, j, round);
  }
  size_t need = width * (size_t)nodes * (size_t)s->V * (size_t)p->block_x;
  if (!s->bs.scratch || need > fz_pers_column_scratch(s))
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "column results of %zu bytes outgrow the scratch",
                        need),
           false;
  LLVMValueRef *slot = calloc((size_t)s->ncol * (size_t)s->V + 1, sizeof *slot);
  if (!slot)
    return fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory"), false;
  int jj = 0;
  for (int j = 0; j < s->ncol; j++) {
    if (!in_round(s, j, round))
      continue;
    for (int l = 0; l < s->V; l++) {
      LLVMValueRef index = LLVMBuildAdd(
          b, fz_emit_i32(e, (unsigned)((jj * s->V + l) * p->block_x)), s->bs.tx, "");
      LLVMValueRef bytes =
          LLVMBuildMul(b, index, fz_emit_i32(e, (unsigned)width), "");
      slot[j * s->V + l] =
          LLVMBuildInBoundsGEP2(b, e->t_i8, s->bs.scratch, &bytes, 1, "");
    }
    jj++;
  }
  fz_emit_barrier(e); /* the tree's last reads of the scratch */
  fz_if writer;
  fz_if_begin(e, &writer,
              LLVMBuildICmp(b, LLVMIntEQ, s->bs.ty, fz_emit_i32(e, 0), ""),
              "slice.share");
  for (int j = 0; j < s->ncol; j++)
    for (int l = 0; l < s->V && in_round(s, j, round); l++)
      LLVMBuildStore(b, vals[j * s->V + l], slot[j * s->V + l]);
  fz_if_end(e, &writer);
  fz_emit_barrier(e);
  for (int j = 0; j < s->ncol; j++)
    for (int l = 0; l < s->V && in_round(s, j, round); l++)
      vals[j * s->V + l] = LLVMBuildLoad2(
          b, fz_emit_reg_type(e, acc_of(s, j)), slot[j * s->V + l], "");
  free(slot);
  return !e->failed;
}

/* Step 5: the column outputs of the round, from the slice's first block. */
static bool column_outputs(pers *s, int round) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  bool any = false;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_STORE || n->space != FZ_SPACE_COLUMN)
      continue;
    int ready = p->nodes[n->operands[0]].phase;
    any |= ready == round + 1 || (ready == 0 && round == 0);
  }
  if (!any)
    return true;
  fz_pers_colpass c = {0};
  c.vals = calloc((size_t)p->num_nodes * (size_t)s->V + 1, sizeof *c.vals);
  c.done = calloc((size_t)p->num_nodes + 1, sizeof *c.done);
  bool ok = c.vals && c.done;
  if (!ok)
    fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  if (ok) {
    LLVMValueRef first = LLVMBuildICmp(
        b, LLVMIntULT, fz_emit_sreg(e, "ctaid.x"),
        fz_emit_i32(e, (unsigned)p->column_slices), "");
    LLVMValueRef writer = LLVMBuildAnd(
        b, LLVMBuildAnd(b, first, s->gactive[0], ""),
        LLVMBuildICmp(b, LLVMIntEQ, s->bs.ty, fz_emit_i32(e, 0), ""), "");
    fz_if w;
    fz_if_begin(e, &w, writer, "slice.store");
    fz_pers_col_coords(s, &c, s->g[0]);
    for (int j = 0; j < s->ncol; j++) {
      int i = s->colnode[j];
      if (p->nodes[i].phase > round + 1 || !s->slice_res[(size_t)j * s->V])
        continue;
      LLVMValueRef *out = fz_slot_val(p, c.vals, i);
      for (int l = 0; l < s->V; l++)
        out[l] = s->slice_res[(size_t)j * s->V + l];
      c.done[i] = true;
    }
    ok = fz_pers_col_stores(s, &c);
    fz_if_end(e, &w);
  }
  free(c.vals);
  free(c.done);
  return ok && !e->failed;
}

bool fz_pers_slice_columns(pers *s, int round, LLVMValueRef *res) {
  fz_emit *e = &s->k->e;
  if (!s->k->workspace || !s->k->counters)
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "a column-sliced kernel without its workspace"),
           false;
  if (s->G != 1 || s->ncol * s->V > FZ_LOWER_MAX_COLUMNS)
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "a column-sliced kernel of %d groups a thread", s->G),
           false;
  LLVMValueRef vals[FZ_LOWER_MAX_COLUMNS];
  bool ok = fz_pers_block_partials(s, round, vals) && fz_pers_publish(s, vals);
  if (!ok)
    return false;
  slice_barrier(s);
  if (!slice_sums(s, round, vals) || !broadcast(s, round, vals))
    return false;
  for (int j = 0; j < s->ncol; j++) {
    if (!in_round(s, j, round))
      continue;
    fz_dtype to = s->p->nodes[s->colnode[j]].dtype;
    for (int l = 0; l < s->V; l++) {
      LLVMValueRef v = fz_emit_convert(e, vals[j * s->V + l], acc_of(s, j), to);
      if (!v)
        return false;
      res[j * s->V + l] = v;
      s->slice_res[(size_t)j * s->V + l] = v;
    }
  }
  return column_outputs(s, round);
}
