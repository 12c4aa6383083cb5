/* persistent_column_cluster.c - a column_cluster plan's column partials
 * summed across its thread-block cluster (sm_90) before they are
 * published, so that the workspace holds a row of partials per cluster
 * instead of per block (lib/sched/persistent_column_cluster.c says why).
 *
 * Every block holds, in its ty == 0 threads, the partial of column group
 * k * block_x + tx in the thread's held group k. For each chunk of
 * column_chunk held groups (k0 <= k < k1), as a script:
 *   1. ty == 0 writes its partials of the chunk to the block's exchange
 *      buffer (dynamic shared memory, over the prefetch buffers): per
 *      column REDUCE node j a part of column_chunk * block_x slots of V
 *      accumulators, slot (k - k0) * block_x + tx holding column group
 *      k0 * block_x + slot; before the first chunk a block barrier (slower
 *      threads may still read their prefetched row there, and no copy is
 *      left in flight: cp.async.wait_all), before a later one the wait of
 *      the cluster barrier that ended the last (every block is done
 *      reading the buffers);
 *   2. barrier.cluster.arrive (release) and .wait (acquire): every
 *      block's buffer is written and visible;
 *   3. block rank r takes its share of the chunk, the slots [r * share,
 *      (r + 1) * share) with share = (k1 - k0) * block_x / c, thread tid
 *      the slots tid, tid + threads, ...: each slot's V lanes read from
 *      every block of the cluster through the generic addresses mapa
 *      gives (its own included), all loads of the chunk first, then summed
 *      in rank order 0, 1, ..., c - 1: the same order whichever block
 *      sums, so the result does not depend on timing;
 *   4. the sums of the column groups inside the row go to the
 *      workspace's row %clusterid.x, V lanes at a time, as a block's
 *      partials would without a cluster;
 *   5. barrier.cluster.arrive: this block's reads are done. The wait that
 *      pairs with it is the next chunk's, or after the last chunk
 *      persistent_columns.c's, after the grid barrier: a block's shared
 *      memory must outlive the other blocks' reads.
 * The kernel traps unless it is launched in clusters of c blocks.
 */
#include "persistent.h"

#include <stdio.h>
#include <stdlib.h>

/* The exchange buffer: the dynamic shared memory, which a prefetching
 * plan has declared already (its buffers are idle once the rows are
 * done); fz_plan_shared_bytes sizes it for the larger of the two. */
static LLVMValueRef exchange_buffer(pers *s) {
  fz_emit *e = &s->k->e;
  if (s->pf_smem)
    return s->pf_smem;
  LLVMTypeRef t = LLVMArrayType2(e->t_i8, 0);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(e->mod, t, "fz_columns", 3);
  LLVMSetLinkage(g, LLVMExternalLinkage);
  LLVMSetAlignment(g, 16);
  return g;
}

/* Bytes of one slot of column node j: V accumulators. */
static unsigned slot_bytes(const pers *s, int j) {
  return (unsigned)s->V * (unsigned)fz_dtype_size(fz_pers_col_acc(s, j));
}

/* Where node j's part of the buffer starts: after the parts of the nodes
 * before it, each column_chunk * block_x slots (a multiple of 16 bytes:
 * block_x is at least 32). */
static unsigned part_base(const pers *s, int j) {
  unsigned at = 0;
  for (int i = 0; i < j; i++)
    at += (unsigned)s->p->column_chunk * (unsigned)s->p->block_x *
          slot_bytes(s, i);
  return at;
}

/* The address of slot `slot` (i32) of node j's part in the buffer at
 * `base` (shared or generic). */
static LLVMValueRef slot_ptr(pers *s, LLVMValueRef base, int j,
                             LLVMValueRef slot) {
  fz_emit *e = &s->k->e;
  LLVMValueRef off = LLVMBuildAdd(
      e->b, fz_emit_i32(e, part_base(s, j)),
      LLVMBuildMul(e->b, slot, fz_emit_i32(e, slot_bytes(s, j)), ""), "");
  return LLVMBuildInBoundsGEP2(e->b, e->t_i8, base, &off, 1, "");
}

/* 1. ty == 0's partials of held groups k0 .. k1 into its own buffer. */
static void write_chunk(pers *s, LLVMValueRef buf, const LLVMValueRef *vals,
                        int k0, int k1) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int lanes = s->G * s->V;
  fz_if writer;
  fz_if_begin(e, &writer,
              LLVMBuildICmp(b, LLVMIntEQ, s->bs.ty, fz_emit_i32(e, 0), ""),
              "cl.write");
  for (int k = k0; k < k1; k++) {
    LLVMValueRef slot = LLVMBuildAdd(
        b, fz_emit_i32(e, (unsigned)((k - k0) * p->block_x)), s->bs.tx, "");
    for (int j = 0; j < s->ncol; j++) {
      fz_dtype acc = fz_pers_col_acc(s, j);
      fz_pers_store_lanes(e, fz_emit_reg_type(e, acc), fz_dtype_size(acc),
                          slot_ptr(s, buf, j, slot),
                          vals + j * lanes + k * s->V, s->V);
    }
  }
  fz_if_end(e, &writer);
}

/* 3 and 4. The block's share of the chunk of held groups k0 .. k1,
 * summed over the cluster (from[q]: block q's buffer) and stored in row
 * `row` (i64: %clusterid.x * points) of the workspace. */
static bool sum_share(pers *s, const LLVMValueRef *from,
                      const LLVMValueRef *region, LLVMValueRef row, int k0,
                      int k1) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int c = p->column_cluster, V = s->V, threads = p->threads;
  int share = (k1 - k0) * p->block_x / c;
  int trips = (share + threads - 1) / threads;
  int per_trip = s->ncol * c * V;
  LLVMValueRef *got =
      calloc((size_t)trips * (size_t)per_trip, sizeof *got);
  LLVMValueRef *in = calloc((size_t)trips, sizeof *in);
  LLVMValueRef *group = calloc((size_t)trips, sizeof *group);
  if (!got || !in || !group) {
    free(got), free(in), free(group);
    return fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory"), false;
  }
  LLVMValueRef first = LLVMBuildMul(b, s->cl_rank,
                                    fz_emit_i32(e, (unsigned)share), "cl.share");
  /* every load of the chunk first: one wait for the cluster's shared
   * memory, not one per slot */
  for (int t = 0; t < trips; t++) {
    LLVMValueRef i = LLVMBuildAdd(b, s->bs.tid,
                                  fz_emit_i32(e, (unsigned)(t * threads)), "");
    in[t] = NULL;
    if ((t + 1) * threads > share) {
      /* a slot past the share reads the share's first, which it drops */
      in[t] = LLVMBuildICmp(b, LLVMIntULT, i, fz_emit_i32(e, (unsigned)share),
                            "cl.in");
      i = LLVMBuildSelect(b, in[t], i, fz_emit_i32(e, 0), "");
    }
    LLVMValueRef slot = LLVMBuildAdd(b, first, i, "cl.slot");
    group[t] = LLVMBuildAdd(
        b, slot, fz_emit_i32(e, (unsigned)(k0 * p->block_x)), "cl.group");
    for (int j = 0; j < s->ncol; j++) {
      fz_dtype acc = fz_pers_col_acc(s, j);
      for (int q = 0; q < c; q++)
        fz_pers_load_lanes(e, fz_emit_reg_type(e, acc), fz_dtype_size(acc),
                           slot_ptr(s, from[q], j, slot),
                           got + t * per_trip + (j * c + q) * V, V);
    }
  }
  for (int t = 0; t < trips && !e->failed; t++) {
    LLVMValueRef gi = LLVMBuildZExt(b, group[t], e->t_idx, "");
    LLVMValueRef keep = LLVMBuildICmp(b, LLVMIntULT, gi, s->r_groups, "");
    if (in[t])
      keep = LLVMBuildAnd(b, keep, in[t], "");
    fz_if store;
    fz_if_begin(e, &store, keep, "cl.store");
    LLVMValueRef at = LLVMBuildAdd(
        b, row,
        LLVMBuildMul(b, fz_emit_zext_i64(e, group[t]), fz_emit_i64(e, V), ""),
        "");
    for (int j = 0; j < s->ncol; j++) {
      fz_dtype acc = fz_pers_col_acc(s, j);
      LLVMTypeRef rt = fz_emit_reg_type(e, acc);
      fz_opcode code = p->nodes[s->colnode[j]].code;
      LLVMValueRef sum[FZ_LOWER_MAX_LANES];
      for (int l = 0; l < V; l++) {
        LLVMValueRef *v = got + t * per_trip + j * c * V + l;
        sum[l] = v[0];
        for (int q = 1; q < c && sum[l]; q++)
          sum[l] = fz_reduce_combine(e, code, acc, sum[l], v[q * V]);
        if (!sum[l])
          break;
      }
      if (e->failed)
        break;
      LLVMValueRef ws = LLVMBuildInBoundsGEP2(b, rt, region[j], &at, 1, "");
      fz_pers_store_lanes(e, rt, fz_dtype_size(acc), ws, sum, V);
    }
    fz_if_end(e, &store);
  }
  free(got);
  free(in);
  free(group);
  return !e->failed;
}

bool fz_pers_cluster_publish(pers *s, const LLVMValueRef *region,
                             LLVMValueRef points, LLVMValueRef *vals) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int c = p->column_cluster, m = p->column_chunk;
  if (c < 2 || c > FZ_PLAN_MAX_CLUSTER || m < 1 || s->V > FZ_LOWER_MAX_LANES)
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "column partials in clusters of %d, chunks of %d", c,
                        m),
           false;
  if (!fz_pers_cluster_join(s, c))
    return false;
  LLVMValueRef buf = exchange_buffer(s);
  LLVMValueRef from[FZ_PLAN_MAX_CLUSTER];
  for (int q = 0; q < c; q++) {
    from[q] = fz_pers_cluster_map(s, buf, fz_emit_i32(e, (unsigned)q));
    fz_set_name(from[q], "cl.block%d", q);
  }
  LLVMValueRef row = LLVMBuildMul(
      b, fz_emit_zext_i64(e, fz_emit_sreg(e, "clusterid.x")), points,
      "ws.row");
  if (p->prefetch)
    fz_emit_intrinsic(e, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
  fz_emit_barrier(e);
  for (int k0 = 0; k0 < s->G && !e->failed; k0 += m) {
    int k1 = k0 + m < s->G ? k0 + m : s->G;
    if (k0 > 0)
      fz_pers_cluster_wait(e);
    write_chunk(s, buf, vals, k0, k1);
    fz_pers_cluster_arrive(e);
    fz_pers_cluster_wait(e);
    if (!sum_share(s, from, region, row, k0, k1))
      return false;
    fz_pers_cluster_arrive(e);
  }
  return !e->failed;
}
