/* persistent_prefetch.c - a prefetching persistent kernel keeps the next
 * row's loads in flight while it works on the current row.
 *
 * Why: an inner-outer plan runs one or two blocks per SM (its registers
 * hold the row and the column partials), each walking many rows. Without
 * prefetch every row starts with all its loads and then waits a full
 * memory latency before the first arithmetic, and the memory system idles
 * while the block reduces and stores. With it, the row's loads were issued
 * one row earlier and the wait is short or none.
 *
 * How: two buffers in dynamic shared memory, taken in turn by row (three
 * with plan->prefetch_deep: the copies then go out two rows ahead, and
 * the wait leaves the newest two rows' copies in flight). Each
 * thread copies exactly the pieces of the row that it later reads itself
 * (cp.async, global -> shared, no registers), so no barrier is needed: a
 * thread's cp.async.wait_group orders its own copies. The buffer a thread
 * refills was read by the same thread one row earlier, into registers
 * whose values have since been used. Row-constant inputs (mean, rstd) of
 * 4 or 8 bytes may be copied with them (plan->prefetch_row_values), each
 * thread its own row's value into a slot of its own, and read back after
 * the row's wait. The others are loaded one row ahead into registers
 * (with three buffers too),
 * carried across the loop in an alloca (promoted by mem2reg); ptxas tends
 * to place such a load late in the loop, where the back edge's copy of
 * the value waits for it (ncu: 15% of the stall samples of bf16 layer
 * norm backward, 2048x8192 on an H100, at that one copy).
 *
 * Layout: buffer (0, 1, 2) -> prefetched access (plan order) -> group -> the
 * block's threads -> this thread's V lanes (V * element size bytes), then
 * each staged row-constant access (plan order) -> the block's threads.
 * With 16-byte pieces a warp's reads and copies cover whole bank rows; a
 * buffer is padded to a multiple of 16 bytes.
 *
 * One buffer (plan->prefetch_single, cluster plans whose two buffers do
 * not fit an SM): a thread's slots hold the current row until the row's
 * loads (persistent.c: row_loads, every group of every prefetched input
 * at once, before any arithmetic; a node is evaluated once a row, so
 * nothing reads the slots later) have read them into registers, which
 * then carry the row to its end; from there on the slots are free for
 * the next row. The copies must not overtake those reads (a write after
 * a read of the same address by the same thread), and PTX promises no
 * order between a cp.async, whose write is asynchronous, and an earlier
 * ld.shared but through synchronization. That the loaded values were
 * used by arithmetic before the copies is not enough for any plan: LLVM
 * or ptxas may schedule the copies above that arithmetic, or fold the
 * arithmetic away. A block barrier is enough for every plan: bar.sync
 * completes the memory accesses each thread requested before it, so the
 * reads are done before any copy issued after it (and LLVM moves no
 * load across it). The row's first block barrier after its loads is the
 * one in round 0's block combine (combine.c, with a row of several
 * warps, as every cluster plan's is), so the copies are issued right
 * after it (fz_pers_prefetch_refill, from persistent.c's row_combine)
 * and overlap the cluster exchange that follows, the later rounds and
 * the stores; a kernel without that barrier gets one of its own. The
 * next row starts with cp.async.wait_group 0: the thread's copies, all
 * of that row, landed and are visible to it.
 */
#include "persistent.h"

#include <stdio.h>

enum { MAX_ACCESSES = 256 }; /* the launcher's limit too */

static size_t slot_bytes(const pers *s, int a) {
  return (size_t)s->V * fz_dtype_size(s->p->accesses[a].dtype);
}

/* Bytes of one buffer before access a's groups, and of a whole buffer. */
static size_t access_base(const pers *s, int a) {
  size_t at = 0;
  for (int j = 0; j < a; j++)
    if (fz_plan_prefetched(s->p, j))
      at += (size_t)s->G * (size_t)s->p->threads * slot_bytes(s, j);
  return at;
}

/* Bytes of one buffer before staged row-value access a's slots (after
 * every group), and of a whole buffer. */
static size_t row_value_base(const pers *s, int a) {
  size_t at = access_base(s, s->p->num_accesses);
  for (int j = 0; j < a; j++)
    if (fz_plan_row_value_staged(s->p, j))
      at += (size_t)s->p->threads * fz_dtype_size(s->p->accesses[j].dtype);
  return at;
}

/* padded as fz_plan_shared_bytes pads it */
static size_t buffer_bytes(const pers *s) {
  return (row_value_base(s, s->p->num_accesses) + 15) / 16 * 16;
}

/* The slot at `fixed` bytes into buffer `buf` (i32) plus this thread's
 * `sb` bytes. */
static LLVMValueRef thread_slot(pers *s, size_t fixed, size_t sb,
                                LLVMValueRef buf) {
  fz_emit *e = &s->k->e;
  LLVMBuilderRef b = e->b;
  LLVMValueRef off = LLVMBuildAdd(
      b, LLVMBuildMul(b, buf, fz_emit_i32(e, buffer_bytes(s)), ""),
      LLVMBuildAdd(b, fz_emit_i32(e, fixed),
                   LLVMBuildMul(b, s->bs.tid, fz_emit_i32(e, sb), ""), ""),
      "");
  return LLVMBuildInBoundsGEP2(b, e->t_i8, s->pf_smem, &off, 1, "pf.slot");
}

/* This thread's slot of access a, group g, in buffer `buf`. */
static LLVMValueRef slot(pers *s, int a, int g, LLVMValueRef buf) {
  size_t sb = slot_bytes(s, a);
  return thread_slot(
      s, access_base(s, a) + (size_t)g * (size_t)s->p->threads * sb, sb, buf);
}

/* This thread's slot of staged row-value access a in buffer `buf`. */
static LLVMValueRef row_value_slot(pers *s, int a, LLVMValueRef buf) {
  return thread_slot(s, row_value_base(s, a),
                     fz_dtype_size(s->p->accesses[a].dtype), buf);
}

/* Whether a single-buffer plan's copy of group g of access a takes its
 * source as group 0's plus a constant (g times the row's threads times
 * V elements): a row along one axis, the innermost (the verifier's),
 * contiguous, and a group inside every row (unmasked). One address a
 * row rather than one a group: the groups' loop-invariant offsets would
 * otherwise stay in registers across the row loop, and spill where the
 * copies go out with the row's values live. (Two buffers copy at the
 * row's start, with nothing live: left as they were.) */
static bool group_steps(const pers *s, int a, int g) {
  const fz_plan *p = s->p;
  return p->prefetch_single && g > 0 && g < p->persistent_full &&
         s->nr == 1 && !p->dynamic_block &&
         p->accesses[a].strides[p->rank - 1] == 1;
}

/* cp.async of this thread's pieces of every prefetched access for the row
 * whose offset bases are `base`, into buffer `buf`. */
static bool copy_row(pers *s, const LLVMValueRef *base, LLVMValueRef buf) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  int A = p->num_accesses;
  for (int a = 0; a < A; a++) {
    if (!fz_plan_prefetched(p, a))
      continue;
    fz_dtype d = p->accesses[a].dtype;
    LLVMTypeRef t = fz_emit_mem_type(e, d);
    LLVMValueRef first = NULL;
    for (int g = 0; g < s->G; g++) {
      LLVMValueRef src;
      if (first && group_steps(s, a, g)) {
        LLVMValueRef step =
            fz_kernel_idx(k, (int64_t)g * s->row_threads * s->V);
        src = LLVMBuildInBoundsGEP2(b, t, first, &step, 1, "");
      } else {
        LLVMValueRef off = LLVMBuildNSWAdd(
            b, base[a], s->roff[(size_t)g * (size_t)A + (size_t)a], "");
        src = LLVMBuildInBoundsGEP2(b, t, k->access[a].ptr, &off, 1, "");
      }
      if (g == 0)
        first = src;
      if (!fz_pers_copy_async(s, slot(s, a, g, buf), src, slot_bytes(s, a)))
        return false;
    }
  }
  /* the row's one value of each staged row-constant input: every thread
   * copies its own, so that its wait covers it */
  for (int a = 0; a < A; a++) {
    if (!fz_plan_row_value_staged(p, a))
      continue;
    LLVMValueRef src = LLVMBuildInBoundsGEP2(
        b, fz_emit_mem_type(e, p->accesses[a].dtype), k->access[a].ptr,
        (LLVMValueRef[]){base[a]}, 1, "");
    if (!fz_pers_copy_async(s, row_value_slot(s, a, buf), src,
                            fz_dtype_size(p->accesses[a].dtype)))
      return false;
  }
  return !e->failed;
}

static bool is_row_load(const pers *s, int i) {
  const fz_plan_node *n = &s->p->nodes[i];
  return n->kind == FZ_NODE_LOAD && s->space[i] == PS_ROW &&
         !s->p->accesses[n->access].is_output;
}

/* Row-constant loads of the row at `base` that are not staged in the
 * buffers, into their allocas. */
static bool load_row_values(pers *s, const LLVMValueRef *base) {
  fz_kernel *k = s->k;
  const fz_plan *p = s->p;
  for (int i = 0; i < p->num_nodes; i++) {
    if (!is_row_load(s, i) ||
        fz_plan_row_value_staged(p, p->nodes[i].access))
      continue;
    const fz_plan_node *n = &p->nodes[i];
    const fz_plan_access *a = &p->accesses[n->access];
    LLVMValueRef v;
    if (!fz_emit_load(&k->e, a, k->access[n->access].ptr, base[n->access],
                      fz_kernel_inner_stride(k, n->access), 1, &v) ||
        !(v = fz_emit_convert(&k->e, v, a->dtype, n->dtype)))
      return false;
    LLVMBuildStore(k->e.b, v, s->pf_rowval[i]);
  }
  return !k->e.failed;
}

/* The buffer after `buf`, in the order rows take them. */
static LLVMValueRef next_buffer(pers *s, LLVMValueRef buf) {
  fz_emit *e = &s->k->e;
  int buffers = fz_plan_prefetch_buffers(s->p);
  if (buffers == 2)
    return LLVMBuildXor(e->b, buf, fz_emit_i32(e, 1), "");
  LLVMValueRef up = LLVMBuildAdd(e->b, buf, fz_emit_i32(e, 1), "");
  LLVMValueRef wraps =
      LLVMBuildICmp(e->b, LLVMIntEQ, up, fz_emit_i32(e, buffers), "");
  return LLVMBuildSelect(e->b, wraps, fz_emit_i32(e, 0), up, "");
}

/* The copies of the row whose offset bases are `base` into the buffer
 * `steps` on from `buf` if `exists`, as one commit group (an empty one
 * without the row, so that the groups still count rows). */
static bool copy_group(pers *s, const LLVMValueRef *base, LLVMValueRef exists,
                       LLVMValueRef buf, int steps, const char *name) {
  fz_emit *e = &s->k->e;
  fz_if has;
  fz_if_begin(e, &has, exists, name);
  for (int i = 0; i < steps; i++)
    buf = next_buffer(s, buf);
  if (!copy_row(s, base, buf))
    return false;
  fz_if_end(e, &has);
  fz_emit_intrinsic(e, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
  return !e->failed;
}

bool fz_pers_prefetch_begin(pers *s, LLVMValueRef first, LLVMValueRef any,
                            LLVMValueRef second, LLVMValueRef any_second) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  LLVMTypeRef t = LLVMArrayType2(e->t_i8, 0);
  s->pf_smem = LLVMAddGlobalInAddressSpace(e->mod, t, "fz_prefetch", 3);
  LLVMSetLinkage(s->pf_smem, LLVMExternalLinkage);
  LLVMSetAlignment(s->pf_smem, 16);
  s->pf_buf = fz_pers_entry_alloca(s, e->t_i32, "pf.current");
  LLVMBuildStore(b, fz_emit_i32(e, 0), s->pf_buf);
  for (int i = 0; i < p->num_nodes; i++)
    if (is_row_load(s, i) && !fz_plan_row_value_staged(p, p->nodes[i].access))
      s->pf_rowval[i] = fz_pers_entry_alloca(
          s, fz_emit_reg_type(e, p->nodes[i].dtype), "pf.row");
  if (p->num_accesses > MAX_ACCESSES)
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "too many accesses"), false;
  LLVMValueRef base[MAX_ACCESSES];
  fz_pers_row_bases(s, first, base);
  if (!copy_group(s, base, any, fz_emit_i32(e, 0), 0, "pf.first") ||
      !load_row_values(s, base))
    return false;
  /* three buffers: the second row too, so that each row's copies go out
   * two rows ahead of it */
  if (p->prefetch_deep) {
    fz_pers_row_bases(s, second, base);
    if (!copy_group(s, base, any_second, fz_emit_i32(e, 1), 0, "pf.second"))
      return false;
  }
  return true;
}

/* Load node i's `lanes` values from the shared-memory slot `from`, in
 * the node's dtype. */
static bool load_slot(pers *s, int i, LLVMValueRef from, int lanes,
                      LLVMValueRef *out) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan_node *n = &s->p->nodes[i];
  const fz_plan_access *a = &s->p->accesses[n->access];
  if (!fz_emit_load(e, a, from, fz_kernel_idx(k, 0), fz_kernel_idx(k, 1),
                    lanes, out))
    return false;
  for (int l = 0; l < lanes; l++)
    if (!(out[l] = fz_emit_convert(e, out[l], a->dtype, n->dtype)))
      return false;
  return !e->failed;
}

/* The current row's row-constant values, loaded one row ahead or (once
 * the row's copies have landed) read back from its buffer, into the row
 * table. */
static bool take_row_values(pers *s) {
  fz_emit *e = &s->k->e;
  const fz_plan *p = s->p;
  LLVMValueRef buf = LLVMBuildLoad2(e->b, e->t_i32, s->pf_buf, "pf.buf");
  for (int i = 0; i < p->num_nodes; i++) {
    if (!is_row_load(s, i))
      continue;
    const fz_plan_node *n = &p->nodes[i];
    LLVMValueRef v;
    if (fz_plan_row_value_staged(p, n->access)) {
      if (!load_slot(s, i, row_value_slot(s, n->access, buf), 1, &v))
        return false;
    } else {
      v = LLVMBuildLoad2(e->b, fz_emit_reg_type(e, n->dtype), s->pf_rowval[i],
                         "");
    }
    fz_set_name(v, "row.n%d", i);
    s->rowt[(size_t)i * (size_t)s->V] = v;
    s->done[(size_t)s->G * (size_t)p->num_nodes + (size_t)i] = true;
  }
  return !e->failed;
}

bool fz_pers_prefetch_next(pers *s, LLVMValueRef next, LLVMValueRef ahead,
                           LLVMValueRef more_ahead) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  LLVMBuilderRef b = e->b;
  const fz_plan *p = s->p;
  if (p->num_accesses > MAX_ACCESSES)
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "too many accesses"), false;
  LLVMValueRef base[MAX_ACCESSES], base_ahead[MAX_ACCESSES];
  fz_pers_row_bases(s, next, base);
  if (p->prefetch_deep)
    fz_pers_row_bases(s, ahead, base_ahead);
  /* the row `ahead` takes the buffer after the current row's (two
   * buffers) or after the next row's (three); empty groups past the last
   * row keep "all but the newest buffers - 1" meaning "up to the current
   * row's" */
  LLVMValueRef buf = LLVMBuildLoad2(b, e->t_i32, s->pf_buf, "pf.buf");
  if (!copy_group(s, p->prefetch_deep ? base_ahead : base, more_ahead, buf,
                  p->prefetch_deep ? 2 : 1, "pf.next"))
    return false;
  LLVMValueRef pending = fz_emit_i32(e, fz_plan_prefetch_buffers(p) - 1);
  fz_emit_intrinsic(e, "llvm.nvvm.cp.async.wait.group", NULL, 0, &pending, 1);
  /* the current row's values (its copies have landed), then the next
   * row's loads into the allocas they were read from */
  return take_row_values(s) && load_row_values(s, base);
}

bool fz_pers_prefetch_wait(pers *s) {
  fz_emit *e = &s->k->e;
  /* every copy this thread issued is the current row's */
  LLVMValueRef zero = fz_emit_i32(e, 0);
  fz_emit_intrinsic(e, "llvm.nvvm.cp.async.wait.group", NULL, 0, &zero, 1);
  return take_row_values(s);
}

bool fz_pers_prefetch_refill(pers *s) {
  fz_kernel *k = s->k;
  fz_emit *e = &k->e;
  const fz_plan *p = s->p;
  LLVMValueRef base[MAX_ACCESSES];
  if (p->num_accesses > MAX_ACCESSES)
    return fz_emit_fail(e, FZ_ERR_UNSUPPORTED, "too many accesses"), false;
  fz_pers_row_bases(s, s->pf_next, base);
  if (!copy_group(s, base, s->pf_more, fz_emit_i32(e, 0), 0, "pf.next"))
    return false;
  s->pf_next = s->pf_more = NULL; /* once a row */
  return load_row_values(s, base);
}

bool fz_pers_prefetch_load(pers *s, int i, int g) {
  fz_emit *e = &s->k->e;
  LLVMValueRef buf = LLVMBuildLoad2(e->b, e->t_i32, s->pf_buf, "pf.buf");
  return load_slot(s, i, slot(s, s->p->nodes[i].access, g, buf), s->V,
                   fz_slot_val(s->p, pers_full(s, g, 0), i));
}

void fz_pers_prefetch_end(pers *s) {
  fz_emit *e = &s->k->e;
  LLVMValueRef buf = LLVMBuildLoad2(e->b, e->t_i32, s->pf_buf, "");
  LLVMBuildStore(e->b, next_buffer(s, buf), s->pf_buf);
}
