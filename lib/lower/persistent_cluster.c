/* persistent_cluster.c - a row shared by the blocks of a thread-block
 * cluster (plan->cluster, sm_90): their row reductions meet through
 * distributed shared memory.
 *
 * Each block holds its share of the row (persistent.c, with row_tx and
 * row_threads spanning the cluster) and combines its threads' partials
 * as any persistent block does; then, per round:
 *   1. thread 0 writes the block's partial of each of the round's row
 *      REDUCE nodes to its slot in its own shared memory;
 *   2. barrier.cluster.arrive (release) and barrier.cluster.wait
 *      (acquire): every block's slots are written and visible;
 *   3. lane l of every warp reads block (l mod c)'s slot (mapa: the
 *      generic address of the same slot in that block's shared memory,
 *      one address a thread, computed once) and a butterfly over c lanes
 *      combines them: the same tree on the same values in every warp of
 *      every block, so that every thread of the cluster gets the same bits
 *      and the result does not depend on timing.
 * The slots have two halves, alternating from round to round (and on
 * across rows): a block writes a half again only two rounds later, after
 * the next round's barrier, which no block passes before every block has
 * read the half (the release of arrive orders a block's earlier reads
 * too). So one cluster barrier a round is enough.
 * The kernel traps unless it is launched in clusters of plan->cluster
 * blocks, and ends with one more cluster barrier: a block's shared memory
 * must outlive every read of it from the other blocks.
 * The rank and its trap, mapa and the two halves of the cluster barrier
 * serve persistent_column_cluster.c too.
 */
#include "persistent.h"

#include <stdio.h>

/* The row REDUCE nodes of the plan: at least as many as a round has. */
static int row_reduces(const fz_plan *p) {
  int n = 0;
  for (int i = 0; i < p->num_nodes; i++)
    n += p->nodes[i].kind == FZ_NODE_REDUCE &&
         p->nodes[i].space == FZ_SPACE_ROW;
  return n ? n : 1;
}

/* The 8-byte words one slot takes: the widest partial of a row REDUCE
 * node (one for sum, prod, amax and amin; an arg-reduction's pair or a
 * Welford state takes more). */
static int slot_words(const fz_plan *p) {
  size_t most = 8;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_REDUCE || n->space != FZ_SPACE_ROW)
      continue;
    size_t bytes = fz_reduce_state_bytes(n->code, fz_plan_reduce_acc(p, n));
    if (bytes > most)
      most = bytes;
  }
  return (int)((most + 7) / 8);
}

/* Slot r of the half starting at slot `first`, in i64 words. */
static LLVMValueRef slot_index(fz_emit *e, int words, LLVMValueRef first,
                               int r) {
  LLVMValueRef at =
      LLVMBuildAdd(e->b, first, fz_emit_i32(e, (unsigned)r), "");
  if (words > 1)
    at = LLVMBuildMul(e->b, at, fz_emit_i32(e, (unsigned)words), "");
  return at;
}

bool fz_pers_cluster_join(pers *s, int cluster) {
  fz_emit *e = &s->k->e;
  LLVMValueRef size = fz_emit_sreg(e, "cluster.nctarank");
  s->cl_rank = fz_emit_sreg(e, "cluster.ctarank");
  if (!size || !s->cl_rank)
    return false;
  fz_set_name(s->cl_rank, "cluster.rank");
  LLVMValueRef bad =
      LLVMBuildICmp(e->b, LLVMIntNE, size, fz_emit_i32(e, (unsigned)cluster), "");
  return fz_pers_trap_if(s, bad, "cluster");
}

LLVMValueRef fz_pers_cluster_map(pers *s, LLVMValueRef shared,
                                 LLVMValueRef rank) {
  fz_emit *e = &s->k->e;
  LLVMValueRef args[2] = {
      LLVMBuildAddrSpaceCast(e->b, shared,
                             LLVMPointerTypeInContext(e->ctx, 0), ""),
      rank};
  return fz_emit_intrinsic(e, "llvm.nvvm.mapa", NULL, 0, args, 2);
}

bool fz_pers_cluster_entry(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  /* blocks of at most 512 threads were sized to share an SM two at a
   * time (lib/sched/persistent_cluster.c): 64 registers a thread */
  if (p->threads <= 512)
    fz_pers_blocks_an_sm(s, 2);
  if (!fz_pers_cluster_join(s, p->cluster))
    return false;
  LLVMValueRef first = LLVMBuildNUWMul(
      b, LLVMBuildZExt(b, s->cl_rank, e->t_idx, ""),
      fz_kernel_idx(k, p->block_x), "");
  s->row_tx = LLVMBuildNUWAdd(b, first, s->tx, "row.tx");
  s->row_threads = p->cluster * p->block_x;

  /* two halves of slots (8-byte words each, slot_words), one per row
   * REDUCE node */
  LLVMTypeRef t = LLVMArrayType2(
      e->t_i64, 2 * (uint64_t)row_reduces(p) * (uint64_t)slot_words(p));
  s->cl_slots = LLVMAddGlobalInAddressSpace(e->mod, t, "fz_cluster_slots", 3);
  LLVMSetLinkage(s->cl_slots, LLVMInternalLinkage);
  LLVMSetInitializer(s->cl_slots, LLVMGetUndef(t));
  LLVMSetAlignment(s->cl_slots, 8);
  s->cl_parity = fz_pers_entry_alloca(s, e->t_i32, "cluster.half");
  LLVMBuildStore(b, fz_emit_i32(e, 0), s->cl_parity);
  /* the slots of block (lane mod c), where this thread reads */
  LLVMValueRef from =
      LLVMBuildAnd(b, s->bs.tid, fz_emit_i32(e, (unsigned)p->cluster - 1), "");
  s->cl_remote = fz_pers_cluster_map(s, s->cl_slots, from);
  fz_set_name(s->cl_remote, "cluster.remote");
  return !e->failed;
}

void fz_pers_cluster_arrive(fz_emit *e) {
  fz_emit_intrinsic(e, "llvm.nvvm.barrier.cluster.arrive", NULL, 0, NULL, 0);
}

void fz_pers_cluster_wait(fz_emit *e) {
  fz_emit_intrinsic(e, "llvm.nvvm.barrier.cluster.wait", NULL, 0, NULL, 0);
}

static void cluster_barrier(fz_emit *e) {
  fz_pers_cluster_arrive(e);
  fz_pers_cluster_wait(e);
}

bool fz_pers_cluster_combine(pers *s, const fz_reduce_set *rs,
                             LLVMValueRef *vals) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int slots = row_reduces(p);
  if (rs->count > slots)
    return fz_emit_fail(e, FZ_ERR_INTERNAL,
                        "%d row reductions in a round, %d cluster slots",
                        rs->count, slots),
           false;
  /* this round's half */
  LLVMValueRef half = LLVMBuildLoad2(b, e->t_i32, s->cl_parity, "");
  LLVMBuildStore(b, LLVMBuildXor(b, half, fz_emit_i32(e, 1), ""), s->cl_parity);
  LLVMValueRef first =
      LLVMBuildMul(b, half, fz_emit_i32(e, (unsigned)slots), "cluster.first");
  int words = slot_words(p);
  LLVMValueRef own[FZ_LOWER_MAX_COLUMNS];
  for (int r = 0; r < rs->count; r++) {
    LLVMValueRef at = slot_index(e, words, first, r);
    own[r] = LLVMBuildInBoundsGEP2(b, e->t_i64, s->cl_slots, &at, 1, "");
  }

  fz_if lead;
  fz_if_begin(e, &lead, LLVMBuildICmp(b, LLVMIntEQ, s->bs.tx, fz_emit_i32(e, 0), ""),
              "cluster.publish");
  for (int r = 0; r < rs->count; r++)
    LLVMBuildStore(b, vals[r], own[r]);
  fz_if_end(e, &lead);
  cluster_barrier(e);

  for (int r = 0; r < rs->count; r++) {
    LLVMTypeRef t = fz_reduce_state_type(e, rs->code[r], rs->acc[r]);
    LLVMValueRef at = slot_index(e, words, first, r);
    LLVMValueRef slot =
        LLVMBuildInBoundsGEP2(b, e->t_i64, s->cl_remote, &at, 1, "");
    char name[32];
    snprintf(name, sizeof name, "cluster.r%d", r);
    LLVMValueRef v = LLVMBuildLoad2(b, t, slot, name);
    for (int w = 1; w < p->cluster && v; w *= 2) {
      LLVMValueRef other = fz_emit_shfl_bfly(e, v, w, 0xffffffffu);
      v = other ? fz_reduce_combine(e, rs->code[r], rs->acc[r], v, other)
                : NULL;
    }
    if (!v)
      return false;
    vals[r] = v;
  }
  return !e->failed;
}

void fz_pers_cluster_exit(pers *s) { cluster_barrier(&s->k->e); }
