/* slot.c - one node of a slot evaluated over its lanes. A slot's values
 * live in a table indexed by (node, lane); a node whose operands are the
 * same value in every lane (splats, literals) is computed once and shared
 * by its lanes.
 */
#include "emit.h"

bool fz_kernel_load_node(fz_kernel *k, int i, LLVMValueRef *table,
                         LLVMValueRef off, int lanes) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  const fz_plan_access *a = &p->accesses[n->access];
  LLVMValueRef *out = fz_slot_val(p, table, i);
  if (!fz_emit_load(e, a, k->access[n->access].ptr, off,
                    fz_kernel_inner_stride(k, n->access), lanes, out))
    return false;
  for (int l = 0; l < lanes; l++)
    if (!(out[l] = fz_emit_convert(e, out[l], a->dtype, n->dtype)))
      return false;
  return !e->failed;
}

/* sum_k coeff[k] * c[k] as i64, the iota index of lane 0 */
static LLVMValueRef iota_index(fz_kernel *k, const LLVMValueRef *c,
                               const fz_plan_node *n) {
  LLVMBuilderRef b = k->e.b;
  const fz_plan *p = k->e.plan;
  LLVMValueRef sum = LLVMConstInt(k->e.t_i64, 0, 0);
  for (int d = 0; d < p->rank; d++) {
    if (n->coeff[d] == 0)
      continue;
    LLVMValueRef cd = LLVMBuildZExt(b, c[d], k->e.t_i64, "");
    sum = LLVMBuildAdd(
        b, sum,
        LLVMBuildMul(
            b, cd, LLVMConstInt(k->e.t_i64, (unsigned long long)n->coeff[d], 1),
            ""),
        "");
  }
  return sum;
}

static bool uniform_operands(const fz_plan *p, LLVMValueRef *table,
                             const fz_plan_node *n, int lanes) {
  for (int j = 0; j < n->num_operands; j++) {
    LLVMValueRef *v = fz_slot_val(p, table, n->operands[j]);
    for (int l = 1; l < lanes; l++)
      if (v[l] != v[0])
        return false;
  }
  return true;
}

/* A group's lanes start at an innermost coordinate that is a multiple of
 * the lanes (kernel.c counts the innermost axis in groups of `vector`),
 * so with a unit innermost coefficient and the other coefficients
 * multiples of G, lane 0's index is a multiple of G whenever the lanes
 * are. The seed and offset are scalars: lane 0 holds them. */
static bool random_node(fz_kernel *k, const fz_plan_node *n,
                        LLVMValueRef *table, const LLVMValueRef *c, int lanes,
                        LLVMValueRef *out) {
  const fz_plan *p = k->e.plan;
  int inner = p->rank - 1, per_call = fz_philox_per_call(n->code, n->dtype);
  bool aligned = n->coeff[inner] == 1 && lanes % per_call == 0;
  for (int d = 0; d < inner && aligned; d++)
    aligned = n->coeff[d] % per_call == 0;
  LLVMValueRef seed = fz_slot_val(p, table, n->operands[0])[0];
  LLVMValueRef offset = fz_slot_val(p, table, n->operands[1])[0];
  return fz_emit_random(&k->e, n, seed, offset, iota_index(k, c, n),
                        n->coeff[inner], aligned, lanes, out);
}

static bool value_node(fz_kernel *k, int i, LLVMValueRef *table,
                       const LLVMValueRef *c, int lanes) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  int inner = p->rank - 1;
  LLVMValueRef *out = fz_slot_val(p, table, i);
  switch (n->kind) {
  case FZ_NODE_LOAD:
  case FZ_NODE_STORE:
  case FZ_NODE_REDUCE: /* the skeletons handle these */
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "node n%d is not a value node", i),
           false;
  case FZ_NODE_LITERAL:
    out[0] = fz_emit_literal(e, n);
    for (int l = 1; l < lanes; l++)
      out[l] = out[0];
    break;
  case FZ_NODE_GATHER:
    return fz_kernel_gather_node(k, i, table, c, lanes);
  case FZ_NODE_SYMBOL: /* a parameter, read in the entry block */
    out[0] = k->symbol[fz_plan_symbol_param(p, n)];
    for (int l = 1; l < lanes; l++)
      out[l] = out[0];
    break;
  case FZ_NODE_IOTA: {
    LLVMValueRef index = iota_index(k, c, n);
    for (int l = 0; l < lanes; l++) {
      LLVMValueRef il = index;
      if (l > 0 && n->coeff[inner] == 0) {
        out[l] = out[0];
        continue;
      }
      if (l > 0)
        il = LLVMBuildAdd(
            e->b, index,
            LLVMConstInt(e->t_i64, (unsigned long long)(n->coeff[inner] * l),
                         1),
            "");
      out[l] = fz_emit_iota(e, n, il);
    }
    break;
  }
  case FZ_NODE_RANDOM:
    if (!random_node(k, n, table, c, lanes, out))
      return false;
    break;
  case FZ_NODE_OP: {
    int distinct = uniform_operands(p, table, n, lanes) ? 1 : lanes;
    for (int l = 0; l < lanes; l++) {
      if (l >= distinct) {
        out[l] = out[0];
        continue;
      }
      LLVMValueRef args[3];
      for (int j = 0; j < n->num_operands; j++)
        args[j] = fz_slot_val(p, table, n->operands[j])[l];
      out[l] = fz_emit_op_node(e, n, args);
      if (!out[l])
        break;
    }
    break;
  }
  }
  if (e->failed || !out[0])
    return fz_emit_fail(e, FZ_ERR_INTERNAL, "node n%d produced no value", i),
           false;
  return true;
}

bool fz_kernel_value_node(fz_kernel *k, int i, LLVMValueRef *table,
                          const LLVMValueRef *c, int lanes) {
  const fz_plan_node *outer = k->e.node;
  k->e.node = &k->e.plan->nodes[i];
  bool ok = value_node(k, i, table, c, lanes);
  k->e.node = outer;
  return ok;
}

static bool store_node(fz_kernel *k, int i, LLVMValueRef *table,
                       LLVMValueRef off, int lanes) {
  fz_emit *e = &k->e;
  const fz_plan *p = e->plan;
  const fz_plan_node *n = &p->nodes[i];
  const fz_plan_access *a = &p->accesses[n->access];
  fz_dtype src = p->nodes[n->operands[0]].dtype;
  LLVMValueRef *v = fz_slot_val(p, table, n->operands[0]);
  LLVMValueRef vals[FZ_LOWER_MAX_LANES];
  for (int l = 0; l < lanes; l++)
    if (!(vals[l] = fz_emit_convert(e, v[l], src, a->dtype)))
      return false;
  return fz_emit_store(e, a, k->access[n->access].ptr, off,
                       fz_kernel_inner_stride(k, n->access), lanes, vals) &&
         !e->failed;
}

bool fz_kernel_store_node(fz_kernel *k, int i, LLVMValueRef *table,
                          LLVMValueRef off, int lanes) {
  const fz_plan_node *outer = k->e.node;
  k->e.node = &k->e.plan->nodes[i];
  bool ok = store_node(k, i, table, off, lanes);
  k->e.node = outer;
  return ok;
}
