/* argreduce.c - arg-reductions (argmax, argmin) in kernel plans.
 *
 * An arg-reduction's REDUCE node reads two full-space nodes: the value
 * (operands[0]) and its position (operands[1]), an i64 IOTA node whose
 * coefficients give the position row-major over the reduced axes of the
 * reduction's operand in their logical order. The position is found
 * through the operand's index map like any iota, so a permuted or
 * channels-last operand, whose canonical (physical) order differs from
 * its logical one, still gives PyTorch's index; and the canonical space
 * merges two reduced axes only where the position steps alike along them
 * (dag.c treats the IOTA node as it treats every iota). The lowering
 * carries a (value, position) pair through every combine
 * (lib/lower/argreduce.c).
 */
#include "sched/dag.h"
#include "sched/heuristics.h"

bool fz_plan_node_is_arg(const fz_plan_node *n) {
  return n->kind == FZ_NODE_REDUCE && (unsigned)n->code < FZ_NUM_OPCODES &&
         (fz_op_table[n->code].flags & FZ_F_ARG);
}

fz_dtype fz_plan_reduce_acc(const fz_plan *p, const fz_plan_node *n) {
  if (fz_plan_node_is_arg(n))
    return fz_reduce_acc_dtype(p->nodes[n->operands[0]].dtype);
  return fz_reduce_acc_dtype(n->dtype);
}

size_t fz_plan_reduce_bytes(const fz_plan *p, const fz_plan_node *n) {
  if (fz_plan_node_is_arg(n))
    return FZ_ARG_STATE_BYTES;
  (void)p;
  return fz_reduce_partial_bytes(n->code, n->dtype);
}

fz_status fz_plan_verify_arg(const fz_plan *p, int i, fz_error *err) {
  const fz_plan_node *n = &p->nodes[i];
  if (n->num_operands != 2)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "plan: arg reduce n%d has %d operands, not 2", i,
                        n->num_operands);
  const fz_plan_node *pos = &p->nodes[n->operands[1]];
  if (pos->kind != FZ_NODE_IOTA || pos->dtype != FZ_I64 ||
      pos->space != FZ_SPACE_FULL)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "plan: arg reduce n%d: its position n%d is not a "
                        "full-space i64 iota",
                        i, n->operands[1]);
  if (n->space == FZ_SPACE_COLUMN)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "plan: arg reduce n%d is a column reduction (not "
                        "supported)",
                        i);
  if (n->dtype != FZ_I64)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "plan: arg reduce n%d is not an i64", i);
  return FZ_OK;
}

fz_plan_node fz_dag_arg_position(const fz_dag *d, const fz_op *op) {
  const fz_value *in = op->operands[0];
  int64_t position[FZ_MAX_RANK] = {0}, span = 1;
  for (int a = in->type.rank - 1; a >= 0; a--)
    if (fz_op_reduces_axis(op, a)) {
      position[a] = span;
      span *= fz_axis_size(&in->type.axes[a], d->problem->symbols);
    }
  fz_plan_node n = {.kind = FZ_NODE_IOTA,
                    .dtype = FZ_I64,
                    .literal = {.i = 0},
                    .step = {.i = 1},
                    .value = op->result,
                    .space = FZ_SPACE_FULL};
  fz_index_map_strides(d->maps[in->id], position, n.coeff);
  return n;
}
