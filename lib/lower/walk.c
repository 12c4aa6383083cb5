/* walk.c - evaluating a plan node after the nodes it reads, on demand,
 * without recursion.
 *
 * Persistent kernels evaluate nodes where they are needed (a row's value
 * before the loop over the row, a column's in the final pass) rather than
 * in plan order, so each asks for a node and gets its operands evaluated
 * first. Nodes can form chains as long as the fusion (a 100,000-op chain
 * is a 100,000-deep walk), so the walk keeps its own stack instead of the
 * C stack. It visits exactly what the recursion
 *
 *   eval(i): enter(i); for each operand o in order: eval(o); leave(i)
 *
 * visits, in that order, which keeps the emitted instructions (and so the
 * PTX) the same as such a recursion's.
 */
#include "lower/emit.h"

#include <stdlib.h>

typedef struct walk_frame {
  int node;
  int next; /* the operand to evaluate next */
} walk_frame;

bool fz_walk_nodes(fz_emit *e, int root, fz_walk_step (*enter)(void *, int),
                   bool (*leave)(void *, int), void *ctx) {
  const fz_plan *p = e->plan;
  walk_frame *stack = NULL;
  int depth = 0, cap = 0;
  bool ok = true;
  int push = root; /* a node to enter, or -1 */
  while (ok && (push >= 0 || depth > 0)) {
    if (push >= 0) {
      fz_walk_step step = enter(ctx, push);
      if (step == FZ_WALK_FAIL) {
        ok = false;
        break;
      }
      if (step == FZ_WALK_DONE) {
        push = -1;
        continue;
      }
      if (depth == cap) {
        cap = cap ? 2 * cap : 64;
        walk_frame *grown = realloc(stack, sizeof *grown * (size_t)cap);
        if (!grown) {
          fz_emit_fail(e, FZ_ERR_OUT_OF_MEMORY, "out of memory evaluating n%d",
                       push);
          ok = false;
          break;
        }
        stack = grown;
      }
      stack[depth++] = (walk_frame){
          push, step == FZ_WALK_OPERANDS ? 0 : p->nodes[push].num_operands};
      push = -1;
      continue;
    }
    walk_frame *f = &stack[depth - 1];
    if (f->next < p->nodes[f->node].num_operands) {
      push = p->nodes[f->node].operands[f->next++];
      continue;
    }
    ok = leave(ctx, f->node);
    depth--;
  }
  free(stack);
  return ok;
}
