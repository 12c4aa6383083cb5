/* dag_nodes.c - building a plan's node DAG from the outputs down (see
 * dag.h): the node for a value at a map, memoised, in a given space.
 *
 * The walk follows operands from a use to its definition, so its depth is
 * the length of the longest chain of ops: a 100,000-op chain is a 100,000
 * deep walk. It runs on an explicit stack of frames (malloc'd, freed when
 * the call returns) instead of the C stack, and does exactly what the
 * recursion "node for v at m = memo, or a load, or the op's node over its
 * operands' nodes, first operand first" describes, in the same order, so
 * that nodes are numbered as that recursion numbers them.
 *
 * Memoisation finds the earliest node of a value at a map in a space, the
 * REDUCE node of a value and the access of a tensor at given strides
 * through hash tables (itable.h) instead of scanning every node: with them
 * the DAG is built in time linear in its size. Maps are interned (dag.h),
 * so a frame or a node holds a pointer and maps compare by address.
 */
#include "sched/dag.h"
#include "sched/heuristics.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys ------------------------------------------------------------- */

static uint64_t node_key(const fz_value *v, fz_space space,
                         const fz_index_map *m) {
  return fz_hash_mix(fz_hash_mix((uint64_t)(uintptr_t)v, (uint64_t)space),
                     (uint64_t)(uintptr_t)m);
}

typedef struct node_probe {
  const fz_dag *d;
  const fz_value *v;
  fz_space space;
  const fz_index_map *m; /* interned */
} node_probe;

static bool same_node(const void *ctx, int i) {
  const node_probe *p = ctx;
  const fz_plan_node *n = &p->d->nodes[i];
  return n->value == p->v && n->space == p->space && p->d->node_maps[i] == p->m;
}

/* The earliest node (not REDUCE or STORE) computing v at m (interned) in
 * space. */
static int find_node(const fz_dag *d, const fz_value *v, const fz_index_map *m,
                     fz_space space) {
  node_probe p = {d, v, space, m};
  return fz_itable_find(&d->node_index, node_key(v, space, m), same_node, &p);
}

static bool same_reduce(const void *ctx, int i) {
  const node_probe *p = ctx;
  return p->d->nodes[i].value == p->v;
}

static int find_reduce(const fz_dag *d, const fz_value *v) {
  node_probe p = {.d = d, .v = v};
  return fz_itable_find(&d->reduce_index,
                        fz_hash_mix((uint64_t)(uintptr_t)v, 0), same_reduce,
                        &p);
}

/* ---- nodes and accesses ------------------------------------------------ */

/* The interned map of no coefficients: a literal's, a store's. */
static const fz_index_map *no_map(fz_dag *d) {
  static const fz_index_map none;
  if (!d->no_map)
    d->no_map = fz_dag_intern(d, &none);
  return d->no_map;
}

/* m: interned, or NULL for a node at no map (a literal's, a store). */
static int push_node(fz_dag *d, fz_plan_node node, const fz_index_map *m) {
  if (d->num_nodes == d->cap_nodes) {
    int cap = d->cap_nodes ? d->cap_nodes * 2 : 32;
    fz_plan_node *n = fz_arena_alloc(d->arena, sizeof *n * (size_t)cap);
    const fz_index_map **mm =
        fz_arena_alloc(d->arena, sizeof *mm * (size_t)cap);
    if (d->num_nodes) {
      memcpy(n, d->nodes, sizeof *n * (size_t)d->num_nodes);
      memcpy(mm, d->node_maps, sizeof *mm * (size_t)d->num_nodes);
    }
    d->nodes = n;
    d->node_maps = mm;
    d->cap_nodes = cap;
  }
  if (!m)
    m = no_map(d);
  int i = d->num_nodes++;
  d->nodes[i] = node;
  d->node_maps[i] = m;
  if (node.kind == FZ_NODE_REDUCE) {
    if (find_reduce(d, node.value) < 0)
      fz_itable_add(&d->reduce_index,
                    fz_hash_mix((uint64_t)(uintptr_t)node.value, 0), i);
  } else if (node.kind != FZ_NODE_STORE) {
    fz_space space = node.space;
    if (find_node(d, node.value, m, space) < 0)
      fz_itable_add(&d->node_index, node_key(node.value, space, m), i);
  }
  return i;
}

typedef struct access_probe {
  const fz_dag *d;
  bool is_output;
  int io;
  const int64_t *ref_strides;
  int64_t offset, clamp; /* a window of a resize op (dag_resize.c) */
  int gather_axis; /* -1: a plain access */
} access_probe;

static bool same_access(const void *ctx, int i) {
  const access_probe *p = ctx;
  const fz_plan_access *a = &p->d->accesses[i];
  return a->is_output == p->is_output && a->io == p->io &&
         a->offset == p->offset && a->clamp == p->clamp &&
         a->gathered == (p->gather_axis >= 0) &&
         (!a->gathered || a->gather_axis == p->gather_axis) &&
         memcmp(p->d->ref_strides[i], p->ref_strides,
                sizeof(int64_t) * (size_t)p->d->ref_rank) == 0;
}

static uint64_t access_key(const fz_dag *d, bool is_output, int io,
                           const int64_t *ref_strides, int64_t offset,
                           int64_t clamp) {
  uint64_t h = fz_hash_mix((uint64_t)is_output, (uint64_t)io);
  for (int r = 0; r < d->ref_rank; r++)
    h = fz_hash_mix(h, (uint64_t)ref_strides[r]);
  if (offset || clamp)
    h = fz_hash_mix(fz_hash_mix(h, (uint64_t)offset), (uint64_t)clamp);
  return h;
}

/* An access of input or output io at these strides, offset and clamp
 * (a window of a resize op, dag_resize.c); gather_axis >= 0: a
 * gathered one along that logical axis of the input (never the same
 * access as a plain read at the same strides). */
static int push_access_of(fz_dag *d, bool is_output, int io, fz_dtype dtype,
                          const int64_t *ref_strides, int64_t offset,
                          int64_t clamp, int gather_axis) {
  uint64_t h = access_key(d, is_output, io, ref_strides, offset, clamp);
  if (gather_axis >= 0)
    h = fz_hash_mix(h, (uint64_t)gather_axis + 1);
  access_probe p = {d,      is_output, io,         ref_strides,
                    offset, clamp,     gather_axis};
  int found = fz_itable_find(&d->access_index, h, same_access, &p);
  if (found >= 0)
    return found;
  if (d->num_accesses == d->cap_accesses) {
    int cap = d->cap_accesses ? d->cap_accesses * 2 : 8;
    fz_plan_access *a = fz_arena_alloc(d->arena, sizeof *a * (size_t)cap);
    int64_t(*s)[FZ_MAX_RANK] = fz_arena_alloc(d->arena, sizeof *s * (size_t)cap);
    if (d->num_accesses) {
      memcpy(a, d->accesses, sizeof *a * (size_t)d->num_accesses);
      memcpy(s, d->ref_strides, sizeof *s * (size_t)d->num_accesses);
    }
    d->accesses = a;
    d->ref_strides = s;
    d->cap_accesses = cap;
  }
  d->accesses[d->num_accesses] =
      (fz_plan_access){.is_output = is_output,
                       .io = io,
                       .dtype = dtype,
                       .offset = offset,
                       .clamp = clamp,
                       .vector = 1};
  if (gather_axis >= 0) {
    const fz_tensor_desc *t = &d->problem->inputs[io];
    fz_plan_access *a = &d->accesses[d->num_accesses];
    a->gathered = true;
    a->gather_axis = gather_axis;
    a->gather_stride = t->strides[gather_axis];
    a->gather_extent = t->sizes[gather_axis];
  }
  memset(d->ref_strides[d->num_accesses], 0, sizeof d->ref_strides[0]);
  memcpy(d->ref_strides[d->num_accesses], ref_strides,
         sizeof(int64_t) * (size_t)d->ref_rank);
  fz_itable_add(&d->access_index, h, d->num_accesses);
  return d->num_accesses++;
}

static int push_access(fz_dag *d, bool is_output, int io, fz_dtype dtype,
                       const int64_t *ref_strides) {
  return push_access_of(d, is_output, io, dtype, ref_strides, 0, 0, -1);
}

static int literal_node(fz_dag *d, const fz_value *v, fz_space space) {
  int found = find_node(d, v, no_map(d), space);
  if (found >= 0)
    return found;
  return push_node(d,
                   (fz_plan_node){.kind = FZ_NODE_LITERAL,
                                  .dtype = v->type.dtype,
                                  .literal = v->literal,
                                  .value = v,
                                  .space = space},
                   NULL);
}

/* The space a reduction's result lives in, or false (declined) when the
 * reduction cannot be computed where it is used. */
static bool reduce_space(fz_dag *d, const fz_op *op, const fz_index_map *m,
                         fz_space space, fz_space *out) {
  char label[64];
  const fz_value *v = op->result;
  const fz_value *in = op->operands[0];
  if (!d->persistent && space != FZ_SPACE_ROW)
    return fz_dag_decline_at(d, v,
                          "%s is used at every point of the reduced space "
                          "(a normalization: needs the persistent scheduler)",
                          fz_dag_label(d, v, label, sizeof label));
  if (!d->maps[in->id] || d->maps[v->id] != m)
    return fz_dag_decline_at(d, v, "%s is read at points it does not compute",
                          fz_dag_label(d, v, label, sizeof label));
  *out = FZ_SPACE_ROW;
  if (d->persistent) {
    unsigned nontrivial = 0, reduced = 0;
    for (int r = 0; r < d->ref_rank; r++)
      if (d->ref_sizes[r] > 1)
        nontrivial |= 1u << r;
    for (int a = 0; a < in->type.rank; a++)
      if (fz_op_reduces_axis(op, a))
        reduced |= fz_map_row_columns(d->maps[in->id], a);
    reduced &= nontrivial;
    if (reduced == (d->rcols & nontrivial))
      *out = FZ_SPACE_ROW;
    else if (reduced == (nontrivial & ~d->rcols) &&
             (fz_op_table[op->code].flags & FZ_F_ARG))
      return fz_dag_decline_at(d, v,
                               "%s is an arg-reduction across rows (column "
                               "arg-reductions are not supported)",
                               fz_dag_label(d, v, label, sizeof label));
    else if (reduced == (nontrivial & ~d->rcols))
      *out = FZ_SPACE_COLUMN;
    else
      return fz_dag_decline_at(d, v,
                            "reduction %s reduces neither the rows' axes nor "
                            "exactly the other ones",
                            fz_dag_label(d, v, label, sizeof label));
  }
  return true;
}

/* ---- the walk ------------------------------------------------------------ */

/* One value being built. A frame starts as "v at m in space"; shape ops
 * replace v and m in place (they make no node); an arithmetic op collects
 * its operands' nodes, awaiting operand `next`; a reduction awaits its
 * input's node. A frame is a few dozen bytes: a deep walk is cheap. */
typedef enum frame_state {
  FRAME_START,
  FRAME_OPERANDS,
  FRAME_REDUCE,
  FRAME_GATHER, /* awaits the index's node */
} frame_state;

typedef struct frame {
  frame_state state;
  const fz_value *v;
  const fz_index_map *m; /* interned */
  fz_space space;
  fz_space result_space; /* FRAME_REDUCE */
  int next;              /* FRAME_OPERANDS: the operand awaited */
  int operands[3];       /* FRAME_OPERANDS: the nodes of those before it */
} frame;

typedef struct stack {
  frame *frames;
  int count, cap;
} stack;

static void push_frame(stack *s, const fz_value *v, const fz_index_map *m,
                       fz_space space) {
  if (s->count == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    frame *grown = realloc(s->frames, sizeof *grown * (size_t)cap);
    if (!grown)
      FZ_DIE("out of memory building a kernel plan");
    s->frames = grown;
    s->cap = cap;
  }
  s->frames[s->count++] =
      (frame){.state = FRAME_START, .v = v, .m = m, .space = space};
}

/* Advances the top frame, in FRAME_START: finishes it with a node index
 * (or -1, declined) in *done, or turns it into a frame that waits for
 * operands or pushes the child it waits for. Returns true when the frame
 * finished. */
static bool start(fz_dag *d, stack *s, int *done) {
  char why[200];
  frame *f = &s->frames[s->count - 1];
  for (;;) {
    const fz_value *v = f->v;
    if (v->kind == FZ_VALUE_LITERAL) {
      *done = literal_node(d, v, f->space);
      return true;
    }
    int found = find_node(d, v, f->m, f->space);
    if (found >= 0) {
      *done = found;
      return true;
    }
    if (v->kind == FZ_VALUE_INPUT) {
      const fz_tensor_desc *t = &d->problem->inputs[v->input_index];
      int64_t strides[FZ_MAX_RANK] = {0};
      fz_index_map_strides(f->m, t->strides, strides);
      int a = push_access(d, false, v->input_index, v->type.dtype, strides);
      *done = push_node(d,
                        (fz_plan_node){.kind = FZ_NODE_LOAD,
                                       .dtype = v->type.dtype,
                                       .access = a,
                                       .value = v,
                                       .space = f->space},
                        f->m);
      return true;
    }
    const fz_op *op = v->def;
    switch (fz_op_table[op->code].kind) {
    case FZ_KIND_BROADCAST:
    case FZ_KIND_SQUEEZE:
    case FZ_KIND_EXPAND:
    case FZ_KIND_PERMUTE:
    case FZ_KIND_RESHAPE:
    case FZ_KIND_SET: {
      /* The operand's own map, when carrying it forward gives m: a reshape
       * that splits axes backward is exact when we came from the finer
       * space (seed 004's permute -> reshape -> sum). */
      const fz_value *o = op->operands[0];
      fz_index_map om, fwd;
      if (d->maps[o->id] &&
          fz_index_map_from_operand(op, 0, d->maps[o->id],
                                    d->problem->symbols, &fwd) &&
          fz_index_map_equal(&fwd, f->m)) {
        f->m = d->maps[o->id];
      } else if (fz_index_map_to_operand(op, 0, f->m, d->problem->symbols,
                                         &om, why, sizeof why)) {
        f->m = fz_dag_intern(d, &om);
      } else {
        *done = -1;
        return fz_dag_decline_at(d, op->result, "%s", why), true;
      }
      f->v = o;
      continue;
    }
    case FZ_KIND_UNARY:
    case FZ_KIND_CAST:
    case FZ_KIND_BINARY:
    case FZ_KIND_TERNARY:
    case FZ_KIND_RANDOM:
      f->state = FRAME_OPERANDS;
      f->next = 0;
      return false;
    case FZ_KIND_FULL:
      *done = push_node(d,
                        (fz_plan_node){.kind = FZ_NODE_LITERAL,
                                       .dtype = v->type.dtype,
                                       .literal = op->fill,
                                       .value = v,
                                       .space = f->space},
                        f->m);
      return true;
    case FZ_KIND_IOTA: {
      fz_plan_node n = (fz_plan_node){.kind = FZ_NODE_IOTA,
                                      .dtype = v->type.dtype,
                                      .literal = op->iota_start,
                                      .step = op->iota_step,
                                      .value = v,
                                      .space = f->space};
      for (int r = 0; r < f->m->cols; r++)
        n.coeff[r] = f->m->rows ? f->m->a[0][r] : 0;
      *done = push_node(d, n, f->m);
      return true;
    }
    case FZ_KIND_REDUCTION: {
      fz_space result_space;
      if (!reduce_space(d, op, f->m, f->space, &result_space)) {
        *done = -1;
        return true;
      }
      const fz_value *in = op->operands[0];
      f->state = FRAME_REDUCE;
      f->result_space = result_space;
      push_frame(s, in, d->maps[in->id], FZ_SPACE_FULL); /* moves f */
      return false;
    }
    case FZ_KIND_SLICE:
    case FZ_KIND_PAD:
    case FZ_KIND_CAT:
      *done = fz_dag_resize_node(d, v, f->m, f->space);
      return true;
    case FZ_KIND_GATHER: {
      /* A gathered load of a fusion input; the gather_pushdown pass has
       * moved gathers of computed values onto the inputs where it could,
       * and the segmenter makes the rest read an intermediate. */
      const fz_value *x = op->operands[0];
      char label[64], xl[64];
      if (x->kind != FZ_VALUE_INPUT) {
        *done = -1;
        return fz_dag_decline_at(
                   d, op->result,
                   "%s gathers from %s, a value computed in the kernel "
                   "(only a fusion input can be read where an index says)",
                   fz_dag_label(d, op->result, label, sizeof label),
                   fz_dag_label(d, x, xl, sizeof xl)),
               true;
      }
      fz_index_map im;
      if (!fz_index_map_to_operand(op, 1, f->m, d->problem->symbols, &im, why,
                                   sizeof why)) {
        *done = -1;
        return fz_dag_decline_at(d, op->result, "%s", why), true;
      }
      f->state = FRAME_GATHER;
      push_frame(s, op->operands[1], fz_dag_intern(d, &im),
                 f->space); /* moves f */
      return false;
    }
    case FZ_KIND_SYMBOL: /* a rank-0 value, the same at every point */
      *done = push_node(d,
                        (fz_plan_node){.kind = FZ_NODE_SYMBOL,
                                       .dtype = v->type.dtype,
                                       .symbol = op->symbol,
                                       .value = v,
                                       .space = f->space},
                        f->m);
      return true;
    }
    *done = -1;
    return true;
  }
}

/* The element index of a rand/randn value at reference coordinate c:
 * its row-major strides seen through m (sizes checked when the problem
 * was bound, so the products fit). */
static void random_coeff(const fz_dag *d, const fz_value *v,
                         const fz_index_map *m, int64_t *coeff) {
  int64_t sizes[FZ_MAX_RANK], strides[FZ_MAX_RANK];
  FZ_CHECK(fz_type_sizes(&v->type, d->problem->symbols, "random",
                         FZ_ERR_INVALID, sizes, NULL, NULL, NULL) == FZ_OK);
  int64_t stride = 1;
  for (int j = v->type.rank - 1; j >= 0; j--) {
    strides[j] = stride;
    stride *= sizes[j];
  }
  fz_index_map_strides(m, strides, coeff);
}

/* The GATHER node of v (gather or index_select of an input) at f's map,
 * reading at the index node operands[0]. */
static int finish_gather(fz_dag *d, const frame *f) {
  const fz_value *v = f->v;
  const fz_op *op = v->def;
  const fz_value *x = op->operands[0];
  fz_index_map xm = fz_index_map_gathered(op, f->m);
  int64_t strides[FZ_MAX_RANK] = {0};
  fz_index_map_strides(&xm, d->problem->inputs[x->input_index].strides,
                       strides);
  int a = push_access_of(d, false, x->input_index, x->type.dtype, strides,
                         0, 0, op->dims[0]);
  return push_node(d,
                   (fz_plan_node){.kind = FZ_NODE_GATHER,
                                  .dtype = v->type.dtype,
                                  .num_operands = 1,
                                  .operands = {f->operands[0]},
                                  .access = a,
                                  .value = v,
                                  .space = f->space},
                   f->m);
}

/* A frame's node, once what it waited for is built. */
static int finish(fz_dag *d, const frame *f) {
  const fz_value *v = f->v;
  if (f->state == FRAME_GATHER)
    return finish_gather(d, f);
  if (f->state == FRAME_REDUCE) { /* operands[0]: the input's node */
    int existing = find_reduce(d, v);
    if (existing >= 0)
      return existing;
    fz_plan_node r = (fz_plan_node){.kind = FZ_NODE_REDUCE,
                                    .code = v->def->code,
                                    .dtype = v->type.dtype,
                                    .num_operands = 1,
                                    .operands = {f->operands[0]},
                                    .correction = v->def->correction,
                                    .value = v,
                                    .space = f->result_space};
    if (fz_plan_node_is_arg(&r)) { /* and the value's position */
      const fz_value *in = v->def->operands[0];
      r.operands[r.num_operands++] = push_node(
          d, fz_dag_arg_position(d, v->def), d->maps[in->id]);
    }
    return push_node(d, r, f->m);
  }
  fz_plan_node n = (fz_plan_node){.kind = FZ_NODE_OP,
                                  .code = v->def->code,
                                  .dtype = v->type.dtype,
                                  .num_operands = v->def->num_operands,
                                  .value = v,
                                  .space = f->space};
  memcpy(n.operands, f->operands, sizeof n.operands);
  if (fz_op_table[v->def->code].kind == FZ_KIND_RANDOM) {
    n.kind = FZ_NODE_RANDOM;
    random_coeff(d, v, f->m, n.coeff);
  }
  return push_node(d, n, f->m);
}

/* The node of v at m in space, or -1 with a reason. */
static int build(fz_dag *d, const fz_value *v, const fz_index_map *m,
                 fz_space space) {
  stack s = {0};
  push_frame(&s, v, fz_dag_intern(d, m), space);
  int result = -1;
  bool finished = false; /* the top frame's node is `result` */
  while (s.count > 0) {
    if (finished) {
      s.count--;
      if (s.count == 0 || result < 0)
        break; /* done, or a decline: every frame below fails with it */
      frame *f = &s.frames[s.count - 1];
      if (f->state == FRAME_REDUCE || f->state == FRAME_GATHER) {
        f->operands[0] = result;
        result = finish(d, f);
      } else {
        f->operands[f->next++] = result;
        finished = false;
      }
      continue;
    }
    frame *f = &s.frames[s.count - 1];
    if (f->state == FRAME_START) {
      finished = start(d, &s, &result);
      continue;
    }
    /* FRAME_OPERANDS: the next operand, or the op's node */
    const fz_op *op = f->v->def;
    if (f->next == op->num_operands) {
      result = finish(d, f);
      finished = true;
      continue;
    }
    char why[200];
    fz_index_map om;
    if (!fz_index_map_to_operand(op, f->next, f->m, d->problem->symbols, &om,
                                 why, sizeof why)) {
      fz_dag_decline_at(d, op->result, "%s", why);
      result = -1;
      finished = true;
      continue;
    }
    /* mostly the operand's own map (found when maps were): no lookup */
    const fz_value *o = op->operands[f->next];
    const fz_index_map *own = o->kind == FZ_VALUE_LITERAL ? NULL : d->maps[o->id];
    push_frame(&s, o,
               own && fz_index_map_equal(own, &om) ? own
                                                   : fz_dag_intern(d, &om),
               f->space);
  }
  free(s.frames);
  return result;
}

/* ---- the entry points ---------------------------------------------------- */

int fz_dag_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                bool post) {
  return build(d, v, m, post ? FZ_SPACE_ROW : FZ_SPACE_FULL);
}

int fz_dag_node_in(fz_dag *d, const fz_value *v, const fz_index_map *m,
                   fz_space space) {
  return build(d, v, m, space);
}

int fz_dag_store(fz_dag *d, int output, int source, bool post) {
  return fz_dag_store_in(d, output, source,
                         post ? FZ_SPACE_ROW : FZ_SPACE_FULL);
}

int fz_dag_store_in(fz_dag *d, int output, int source, fz_space space) {
  const fz_value *o = d->problem->fusion->outputs[output];
  int64_t s[FZ_MAX_RANK] = {0};
  fz_index_map_strides(d->maps[o->id], d->problem->outputs[output].strides,
                       s);
  int a = push_access(d, true, output, o->type.dtype, s);
  return push_node(d,
                   (fz_plan_node){.kind = FZ_NODE_STORE,
                                  .dtype = o->type.dtype,
                                  .num_operands = 1,
                                  .operands = {source},
                                  .access = a,
                                  .value = o,
                                  .space = space},
                   NULL);
}

int fz_dag_push_node(fz_dag *d, fz_plan_node node, const fz_index_map *m) {
  return push_node(d, node, m);
}

int fz_dag_push_access(fz_dag *d, int input, const int64_t *ref_strides,
                       int64_t offset, int64_t clamp) {
  return push_access_of(d, false, input,
                        d->problem->fusion->inputs[input]->type.dtype,
                        ref_strides, offset, clamp, -1);
}
