/* pointwise.c - the pointwise scheduler: a fusion without reductions runs
 * as one kernel over the iteration space of its largest output.
 *
 * Steps, as a script:
 *  1. Pick the reference (the output with most elements) and find, for
 *     every value, an affine map from the reference's coordinates.
 *  2. Check that each output is written exactly once (its strides through
 *     the map tile its allocation densely).
 *  3. Build the node DAG from the outputs (dag.c).
 *  4. Canonical axes in the reference's physical order.
 *  5. Heuristics: elements per thread from 16-byte vectors of the narrowest
 *     contiguous tensor, per-access vector widths from each tensor's own
 *     strides and alignment (the rules shared with the other schedulers,
 *     heuristics.c), unroll and grid from the group count and the number
 *     of SMs.
 * The entry point, fz_pointwise_try, is the table's (schedule.c) and the
 * transpose scheduler's first step.
 */
#include "sched/dag.h"
#include "sched/heuristics.h"

#include <stdio.h>
#include <string.h>

static void choose_launch(const fz_problem *pb, fz_plan *p) {
  /* Outputs decide the width; inputs that cannot take it are read scalar. */
  int v = fz_plan_fit_vector(pb, p, fz_plan_widest_vector(p, NULL, NULL), true);
  p->vector = v;
  fz_plan_set_access_vectors(pb, p, v, NULL, NULL);

  int64_t groups = fz_plan_num_groups(p);
  p->threads = groups < 256 * 4 ? 128 : 256;
  int64_t per_wave = (int64_t)pb->device.num_sms * (2048 / p->threads);
  /* Unroll for bytes in flight when there is plenty of work; never leave
   * SMs idle for it. */
  p->unroll = 1;
  while (p->unroll < 4 &&
         groups / ((int64_t)p->threads * p->unroll * 2) >= per_wave)
    p->unroll *= 2;
  int64_t tile = (int64_t)p->threads * p->unroll;
  int64_t blocks = fz_cdiv(groups, tile);
  /* Up to 64 waves of blocks, so that large fusions run one tile a block
   * and the hardware balances the blocks: on the H200, capping at 8 waves
   * (several grid-stride trips a block, some blocks one trip more than
   * others) measured 537 us for gelu on 2^28 f32 and 135.6 us for an
   * [8192, 8192] broadcast add, against 528 and 133.5 us here. */
  int64_t cap = per_wave * 64;
  p->blocks = blocks < 1 ? 1 : blocks > cap ? cap : blocks;
  p->index32 = fz_plan_fits_int32(p, groups + p->blocks * tile);
}

static int64_t numel_of(const int64_t *sizes, int rank) {
  int64_t n = 1;
  for (int k = 0; k < rank; k++)
    n *= sizes[k];
  return n;
}

static void swap_candidates(const fz_value **cand,
                            int64_t (*sizes)[FZ_MAX_RANK], int *rank, int j) {
  const fz_value *v = cand[j];
  cand[j] = cand[j - 1];
  cand[j - 1] = v;
  int64_t t[FZ_MAX_RANK];
  memcpy(t, sizes[j], sizeof t);
  memcpy(sizes[j], sizes[j - 1], sizeof t);
  memcpy(sizes[j - 1], t, sizeof t);
  int r = rank[j];
  rank[j] = rank[j - 1];
  rank[j - 1] = r;
}

static bool build(fz_dag *d, const fz_problem *pb, fz_arena *arena,
                  fz_reason *why, fz_plan **out) {
  const fz_fusion *f = pb->fusion;
  char label[64];
  if (f->num_outputs == 0) {
    if (why)
      snprintf(why->text, sizeof why->text, "fusion has no outputs");
    return false;
  }
  if (!fz_problem_params_fit(pb, why))
    return false;
  for (int i = 0; i < f->num_ops; i++)
    if (fz_op_table[f->ops[i]->code].kind == FZ_KIND_REDUCTION) {
      if (why)
        snprintf(why->text, sizeof why->text, "%s is a reduction",
                 fz_value_label(f->ops[i]->result, label, sizeof label));
      return false;
    }
  /* The reference: an output with the most elements; among those, try the
   * ones with more axes first, since a reshape maps affinely only from
   * split axes to merged ones. Then the operands of reshapes that merge
   * axes ([2, 8, 5] -> [16, 5]): from the output's space the operand
   * would need a division, from the operand's space the output is a
   * merge. The first candidate that reaches every output one-to-one wins;
   * its physical order is that of the largest output's memory. */
  const fz_value *cand[64];
  int64_t csizes[64][FZ_MAX_RANK];
  int crank[64], n = 0;
  for (int i = 0; i < f->num_outputs && n < 64; i++) {
    cand[n] = f->outputs[i];
    crank[n] = pb->outputs[i].rank;
    memcpy(csizes[n], pb->outputs[i].sizes, sizeof csizes[n]);
    n++;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0; j--) {
      int64_t na = numel_of(csizes[j], crank[j]),
              nb = numel_of(csizes[j - 1], crank[j - 1]);
      if (na < nb || (na == nb && crank[j] <= crank[j - 1]))
        break;
      swap_candidates(cand, csizes, crank, j);
    }
  int outputs_first = n;
  int64_t most = n ? numel_of(csizes[0], crank[0]) : 0;
  for (int i = 0; i < f->num_ops && n < 64; i++) {
    const fz_op *op = f->ops[i];
    const fz_value *v = op->operands[0];
    if (fz_op_table[op->code].kind != FZ_KIND_RESHAPE ||
        v->type.rank <= op->result->type.rank)
      continue;
    cand[n] = v;
    crank[n] = v->type.rank;
    for (int k = 0; k < v->type.rank; k++)
      csizes[n][k] = fz_axis_size(&v->type.axes[k], pb->symbols);
    if (numel_of(csizes[n], crank[n]) == most)
      n++;
  }
  int ref = -1;
  int64_t order[FZ_MAX_RANK] = {0};
  for (int c = 0; c < n && ref < 0; c++) {
    fz_dag_init(d, pb, arena, csizes[c], crank[c], why);
    if (!fz_dag_find_maps(d, cand[c]))
      continue;
    bool ok = true;
    for (int i = 0; i < f->num_outputs && ok; i++) {
      const fz_value *o = f->outputs[i];
      int64_t s[FZ_MAX_RANK] = {0};
      fz_index_map_strides(d->maps[o->id], pb->outputs[i].strides, s);
      if (fz_desc_numel(&pb->outputs[i]) != numel_of(csizes[c], crank[c]) ||
          !fz_dense_cover(csizes[c], s, crank[c]))
        ok = fz_dag_decline_at(d, o,
                               "output %s is not one-to-one with the reference",
                               fz_dag_label(d, o, label, sizeof label));
      else if (o == cand[0] || (c >= outputs_first && i == 0))
        memcpy(order, s, sizeof order);
    }
    /* every value the outputs need must be readable from this space */
    for (int i = 0; i < f->num_outputs && ok; i++) {
      const fz_value *o = f->outputs[i];
      int src = fz_dag_node(d, o, d->maps[o->id], false);
      if (src < 0)
        ok = false;
      else
        fz_dag_store(d, i, src, false);
    }
    if (ok)
      ref = c;
  }
  if (ref < 0)
    return false;
  fz_canon c;
  fz_dag_canonical(d, order, NULL, &c);
  fz_plan *p = fz_arena_alloc(arena, sizeof *p);
  p->kind = FZ_PLAN_POINTWISE;
  p->fusion = f;
  p->reference =
      fz_arena_strdup(arena, fz_value_label(cand[ref], label, sizeof label));
  p->kernel_name = fz_arena_strdup(arena, "fz_pointwise");
  fz_dag_finish(d, &c, p);
  choose_launch(pb, p);
  if (!fz_plan_params_fit(p, why))
    return false;
  *out = p;
  return true;
}

bool fz_pointwise_try(const fz_problem *problem, fz_arena *arena,
                      fz_plan **out, fz_reason *why) {
  fz_dag d = {0};
  *out = NULL;
  if (why)
    *why = (fz_reason){0};
  bool ok = build(&d, problem, arena, why, out);
  if (ok && why) /* a reference candidate tried before may have declined */
    *why = (fz_reason){0};
  return ok;
}
