/* dag.c - see dag.h. */
#include "sched/dag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vdecline(fz_dag *d, fz_loc loc, const char *fmt, va_list ap) {
  if (d->why) {
    vsnprintf(d->why->text, sizeof d->why->text, fmt, ap);
    d->why->loc = loc;
  }
}

bool fz_dag_decline(fz_dag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vdecline(d, (fz_loc){0, 0}, fmt, ap);
  va_end(ap);
  return false;
}

bool fz_dag_decline_at(fz_dag *d, const fz_value *about, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vdecline(d, fz_value_loc(about), fmt, ap);
  va_end(ap);
  return false;
}

int64_t fz_desc_numel(const fz_tensor_desc *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->sizes[i];
  return n;
}

bool fz_dense_cover(const int64_t *sizes, const int64_t *strides, int rank) {
  int64_t sz[FZ_MAX_RANK], st[FZ_MAX_RANK];
  int n = 0;
  for (int i = 0; i < rank; i++) {
    if (sizes[i] == 1)
      continue;
    if (strides[i] <= 0)
      return false;
    sz[n] = sizes[i];
    st[n] = strides[i];
    n++;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && st[j] < st[j - 1]; j--) {
      int64_t t = st[j];
      st[j] = st[j - 1];
      st[j - 1] = t;
      t = sz[j];
      sz[j] = sz[j - 1];
      sz[j - 1] = t;
    }
  int64_t expect = 1;
  for (int i = 0; i < n; i++) {
    if (st[i] != expect)
      return false;
    expect *= sz[i];
  }
  return true;
}

void fz_dag_init(fz_dag *d, const fz_problem *problem, fz_arena *arena,
                 const int64_t *ref_sizes, int ref_rank, fz_reason *why) {
  *d = (fz_dag){.problem = problem, .arena = arena, .why = why,
                .ref_rank = ref_rank};
  memcpy(d->ref_sizes, ref_sizes, sizeof(int64_t) * (size_t)ref_rank);
  int n = problem->fusion->next_value_id + 1;
  d->maps = fz_arena_alloc(arena, sizeof *d->maps * (size_t)n);
  d->has_map = fz_arena_alloc(arena, sizeof(bool) * (size_t)n);
}

static bool fz_dag_find_maps_more(fz_dag *d, const fz_value *seed);

bool fz_dag_find_maps(fz_dag *d, const fz_value *reference) {
  return fz_dag_find_maps_more(d, reference);
}

/* Seeds the identity at `seed` (a value of the reference's shape) and
 * propagates. */
static bool fz_dag_find_maps_more(fz_dag *d, const fz_value *seed) {
  const fz_fusion *f = d->problem->fusion;
  const int64_t *sym = d->problem->symbols;
  d->maps[seed->id] = fz_index_map_identity(seed->type.rank);
  d->has_map[seed->id] = true;
  char why[200];
  /* Backward from the reference, then forward; repeat while anything new
   * is found (a forward step can open a backward one: y = f(x) found
   * forward, then z in w = g(y, z) backward). */
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = f->num_ops - 1; i >= 0; i--) {
      const fz_op *op = f->ops[i];
      if (!d->has_map[op->result->id])
        continue;
      for (int k = 0; k < op->num_operands; k++) {
        const fz_value *o = op->operands[k];
        if (o->kind == FZ_VALUE_LITERAL || d->has_map[o->id])
          continue;
        if (fz_index_map_to_operand(op, k, &d->maps[op->result->id], sym,
                                    &d->maps[o->id], why, sizeof why))
          d->has_map[o->id] = changed = true;
      }
    }
    for (int i = 0; i < f->num_ops; i++) {
      const fz_op *op = f->ops[i];
      if (d->has_map[op->result->id])
        continue;
      for (int k = 0; k < op->num_operands; k++) {
        const fz_value *o = op->operands[k];
        if (o->kind == FZ_VALUE_LITERAL || !d->has_map[o->id])
          continue;
        if (fz_index_map_from_operand(op, k, &d->maps[o->id], sym,
                                      &d->maps[op->result->id])) {
          d->has_map[op->result->id] = changed = true;
          break;
        }
      }
    }
  }
  /* Outputs unrelated to the reference through any op (y * s beside
   * x * s) but of exactly its shape correspond position by position. */
  for (int i = 0; i < f->num_outputs; i++) {
    const fz_value *o = f->outputs[i];
    if (d->has_map[o->id] || o->type.rank != d->ref_rank)
      continue;
    bool same = true;
    for (int k = 0; k < o->type.rank && same; k++)
      same = fz_axis_size(&o->type.axes[k], sym) == d->ref_sizes[k];
    if (same)
      return fz_dag_find_maps_more(d, o);
  }
  char label[64];
  for (int i = 0; i < f->num_outputs; i++)
    if (!d->has_map[f->outputs[i]->id])
      return fz_dag_decline_at(
          d, f->outputs[i],
          "output %s is not in the reference's iteration space",
          fz_value_label(f->outputs[i], label, sizeof label));
  return true;
}

static int push_node(fz_dag *d, fz_plan_node node, const fz_index_map *m) {
  if (d->num_nodes == d->cap_nodes) {
    int cap = d->cap_nodes ? d->cap_nodes * 2 : 32;
    fz_plan_node *n = fz_arena_alloc(d->arena, sizeof *n * (size_t)cap);
    fz_index_map *mm = fz_arena_alloc(d->arena, sizeof *mm * (size_t)cap);
    if (d->num_nodes) {
      memcpy(n, d->nodes, sizeof *n * (size_t)d->num_nodes);
      memcpy(mm, d->node_maps, sizeof *mm * (size_t)d->num_nodes);
    }
    d->nodes = n;
    d->node_maps = mm;
    d->cap_nodes = cap;
  }
  d->nodes[d->num_nodes] = node;
  d->node_maps[d->num_nodes] = m ? *m : (fz_index_map){0};
  return d->num_nodes++;
}

static int push_access(fz_dag *d, bool is_output, int io, fz_dtype dtype,
                       const int64_t *ref_strides) {
  for (int i = 0; i < d->num_accesses; i++) {
    const fz_plan_access *a = &d->accesses[i];
    if (a->is_output == is_output && a->io == io &&
        memcmp(d->ref_strides[i], ref_strides,
               sizeof(int64_t) * (size_t)d->ref_rank) == 0)
      return i;
  }
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
  d->accesses[d->num_accesses] = (fz_plan_access){
      .is_output = is_output, .io = io, .dtype = dtype, .vector = 1};
  memset(d->ref_strides[d->num_accesses], 0, sizeof d->ref_strides[0]);
  memcpy(d->ref_strides[d->num_accesses], ref_strides,
         sizeof(int64_t) * (size_t)d->ref_rank);
  return d->num_accesses++;
}

static int node_at(fz_dag *d, const fz_value *v, const fz_index_map *m,
                   fz_space space, int depth);

unsigned fz_map_row_columns(const fz_index_map *m, int row) {
  unsigned cols = 0;
  for (int r = 0; r < m->cols; r++)
    if (m->a[row][r] != 0)
      cols |= 1u << r;
  return cols;
}

unsigned fz_map_columns(const fz_index_map *m) {
  unsigned cols = 0;
  for (int i = 0; i < m->rows; i++)
    cols |= fz_map_row_columns(m, i);
  return cols;
}

static fz_plan_node in_space(fz_plan_node n, fz_space space) {
  n.post = space == FZ_SPACE_ROW;
  n.column = space == FZ_SPACE_COLUMN;
  return n;
}

static bool same_space(const fz_plan_node *n, fz_space space) {
  return n->post == (space == FZ_SPACE_ROW) &&
         n->column == (space == FZ_SPACE_COLUMN);
}

static int literal_node(fz_dag *d, const fz_value *v, fz_space space) {
  for (int i = 0; i < d->num_nodes; i++) {
    const fz_plan_node *n = &d->nodes[i];
    if (n->kind == FZ_NODE_LITERAL && n->value == v && same_space(n, space))
      return i;
  }
  return push_node(d,
                   in_space((fz_plan_node){.kind = FZ_NODE_LITERAL,
                                           .dtype = v->type.dtype,
                                           .literal = v->literal,
                                           .value = v},
                            space),
                   NULL);
}

static bool is_reduced_dim(const fz_op *op, int axis) {
  for (int k = 0; k < op->num_dims; k++)
    if (op->dims[k] == axis)
      return true;
  return false;
}

static int reduce_node(fz_dag *d, const fz_op *op, const fz_index_map *m,
                       fz_space space, int depth) {
  char label[64];
  const fz_value *v = op->result;
  const fz_value *in = op->operands[0];
  fz_value_label(v, label, sizeof label);
  if (!d->persistent && space != FZ_SPACE_ROW)
    return fz_dag_decline_at(d, v,
                             "%s is used at every point of the reduced space "
                             "(a normalization: needs the persistent "
                             "scheduler)",
                             label),
           -1;
  if (!d->has_map[in->id] || !d->has_map[v->id] ||
      !fz_index_map_equal(&d->maps[v->id], m))
    return fz_dag_decline_at(d, v, "%s is read at points it does not compute",
                             label),
           -1;
  fz_space result_space = FZ_SPACE_ROW;
  if (d->persistent) {
    unsigned nontrivial = 0, reduced = 0;
    for (int r = 0; r < d->ref_rank; r++)
      if (d->ref_sizes[r] > 1)
        nontrivial |= 1u << r;
    for (int a = 0; a < in->type.rank; a++)
      if (is_reduced_dim(op, a))
        reduced |= fz_map_row_columns(&d->maps[in->id], a);
    reduced &= nontrivial;
    if (reduced == (d->rcols & nontrivial))
      result_space = FZ_SPACE_ROW;
    else if (reduced == (nontrivial & ~d->rcols))
      result_space = FZ_SPACE_COLUMN;
    else
      return fz_dag_decline_at(d, v,
                               "reduction %s reduces neither the rows' axes "
                               "nor exactly the other ones",
                               label),
             -1;
  }
  int src = node_at(d, in, &d->maps[in->id], FZ_SPACE_FULL, depth + 1);
  if (src < 0)
    return -1;
  for (int i = 0; i < d->num_nodes; i++)
    if (d->nodes[i].kind == FZ_NODE_REDUCE && d->nodes[i].value == v)
      return i;
  return push_node(d,
                   in_space((fz_plan_node){.kind = FZ_NODE_REDUCE,
                                           .code = op->code,
                                           .dtype = v->type.dtype,
                                           .num_operands = 1,
                                           .operands = {src},
                                           .value = v},
                            result_space),
                   m);
}

static int op_node(fz_dag *d, const fz_op *op, const fz_index_map *m,
                   fz_space space, int depth) {
  const fz_value *v = op->result;
  char why[200];
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
    if (d->has_map[o->id] &&
        fz_index_map_from_operand(op, 0, &d->maps[o->id], d->problem->symbols,
                                  &fwd) &&
        fz_index_map_equal(&fwd, m))
      return node_at(d, o, &d->maps[o->id], space, depth + 1);
    if (!fz_index_map_to_operand(op, 0, m, d->problem->symbols, &om, why,
                                 sizeof why))
      return fz_dag_decline_at(d, v, "%s", why), -1;
    return node_at(d, o, &om, space, depth + 1);
  }
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY: {
    fz_plan_node n = in_space(
        (fz_plan_node){.kind = FZ_NODE_OP, .code = op->code,
                       .dtype = v->type.dtype,
                       .num_operands = op->num_operands, .value = v},
        space);
    for (int k = 0; k < op->num_operands; k++) {
      fz_index_map om;
      if (!fz_index_map_to_operand(op, k, m, d->problem->symbols, &om, why,
                                   sizeof why))
        return fz_dag_decline_at(d, v, "%s", why), -1;
      n.operands[k] = node_at(d, op->operands[k], &om, space, depth + 1);
      if (n.operands[k] < 0)
        return -1;
    }
    return push_node(d, n, m);
  }
  case FZ_KIND_FULL:
    return push_node(d,
                     in_space((fz_plan_node){.kind = FZ_NODE_LITERAL,
                                             .dtype = v->type.dtype,
                                             .literal = op->fill,
                                             .value = v},
                              space),
                     m);
  case FZ_KIND_IOTA: {
    fz_plan_node n = in_space(
        (fz_plan_node){.kind = FZ_NODE_IOTA, .dtype = v->type.dtype,
                       .literal = op->iota_start, .step = op->iota_step,
                       .value = v},
        space);
    for (int r = 0; r < m->cols; r++)
      n.coeff[r] = m->rows ? m->a[0][r] : 0;
    return push_node(d, n, m);
  }
  case FZ_KIND_REDUCTION:
    return reduce_node(d, op, m, space, depth);
  }
  return -1;
}

static int node_at(fz_dag *d, const fz_value *v, const fz_index_map *m,
                   fz_space space, int depth) {
  if (depth > 10000)
    return fz_dag_decline(d, "fusion too deep"), -1;
  if (v->kind == FZ_VALUE_LITERAL)
    return literal_node(d, v, space);
  for (int i = 0; i < d->num_nodes; i++)
    if (d->nodes[i].value == v && d->nodes[i].kind != FZ_NODE_STORE &&
        d->nodes[i].kind != FZ_NODE_REDUCE && same_space(&d->nodes[i], space) &&
        fz_index_map_equal(&d->node_maps[i], m))
      return i;
  if (v->kind == FZ_VALUE_INPUT) {
    const fz_tensor_desc *t = &d->problem->inputs[v->input_index];
    int64_t strides[FZ_MAX_RANK] = {0};
    fz_index_map_strides(m, t->strides, strides);
    int a = push_access(d, false, v->input_index, v->type.dtype, strides);
    return push_node(d,
                     in_space((fz_plan_node){.kind = FZ_NODE_LOAD,
                                             .dtype = v->type.dtype,
                                             .access = a, .value = v},
                              space),
                     m);
  }
  return op_node(d, v->def, m, space, depth);
}

int fz_dag_node(fz_dag *d, const fz_value *v, const fz_index_map *m,
                bool post) {
  return node_at(d, v, m, post ? FZ_SPACE_ROW : FZ_SPACE_FULL, 0);
}

int fz_dag_node_in(fz_dag *d, const fz_value *v, const fz_index_map *m,
                   fz_space space) {
  return node_at(d, v, m, space, 0);
}

int fz_dag_store(fz_dag *d, int output, int source, bool post) {
  return fz_dag_store_in(d, output, source,
                         post ? FZ_SPACE_ROW : FZ_SPACE_FULL);
}

int fz_dag_store_in(fz_dag *d, int output, int source, fz_space space) {
  const fz_value *o = d->problem->fusion->outputs[output];
  int64_t s[FZ_MAX_RANK] = {0};
  fz_index_map_strides(&d->maps[o->id], d->problem->outputs[output].strides,
                       s);
  int a = push_access(d, true, output, o->type.dtype, s);
  return push_node(d,
                   in_space((fz_plan_node){.kind = FZ_NODE_STORE,
                                           .dtype = o->type.dtype,
                                           .num_operands = 1,
                                           .operands = {source}, .access = a,
                                           .value = o},
                            space),
                   NULL);
}

int fz_dag_reference_candidates(const fz_problem *pb, const fz_op *reduction,
                                const fz_value **cands, int max) {
  int n = 0;
  int64_t numel = -1;
  for (const fz_value *v = reduction->operands[0]; v && n < max;) {
    int64_t count = 1;
    for (int k = 0; k < v->type.rank; k++)
      count *= fz_axis_size(&v->type.axes[k], pb->symbols);
    if (numel < 0)
      numel = count;
    if (count == numel)
      cands[n++] = v;
    if (v->kind != FZ_VALUE_RESULT)
      break;
    fz_op_kind kind = fz_op_table[v->def->code].kind;
    bool through = kind == FZ_KIND_RESHAPE || kind == FZ_KIND_PERMUTE ||
                   kind == FZ_KIND_SET || kind == FZ_KIND_CAST ||
                   kind == FZ_KIND_UNARY;
    v = through ? v->def->operands[0] : NULL;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && cands[j]->type.rank > cands[j - 1]->type.rank;
         j--) {
      const fz_value *t = cands[j];
      cands[j] = cands[j - 1];
      cands[j - 1] = t;
    }
  return n;
}

void fz_dag_canonical(const fz_dag *d, const int64_t *order_strides,
                      const bool *reduced, fz_canon *c) {
  int order[FZ_MAX_RANK], n = 0;
  for (int i = 0; i < d->ref_rank; i++)
    if (d->ref_sizes[i] != 1)
      order[n++] = i;
  for (int i = 1; i < n; i++)
    for (int j = i;
         j > 0 && order_strides[order[j]] > order_strides[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  *c = (fz_canon){0};
  for (int i = 0; i < n; i++) {
    int r = order[i];
    bool red = reduced && reduced[r];
    bool merge = c->rank > 0 && c->reduced[c->rank - 1] == red;
    if (merge) {
      int prev = c->axes[c->rank - 1][c->num_axes[c->rank - 1] - 1];
      int64_t size = d->ref_sizes[r];
      for (int a = 0; a < d->num_accesses && merge; a++)
        merge = d->ref_strides[a][prev] == d->ref_strides[a][r] * size;
      for (int k = 0; k < d->num_nodes && merge; k++)
        if (d->nodes[k].kind == FZ_NODE_IOTA)
          merge = d->nodes[k].coeff[prev] == d->nodes[k].coeff[r] * size;
    }
    if (merge) {
      int ci = c->rank - 1;
      c->axes[ci][c->num_axes[ci]++] = r;
      c->extents[ci] *= d->ref_sizes[r];
    } else {
      c->axes[c->rank][0] = r;
      c->num_axes[c->rank] = 1;
      c->extents[c->rank] = d->ref_sizes[r];
      c->reduced[c->rank] = red;
      c->rank++;
    }
  }
  if (c->rank == 0) {
    c->rank = 1;
    c->extents[0] = 1;
    c->num_axes[0] = 0;
  }
}

/* The stride of a canonical axis is that of its innermost reference axis. */
static int64_t canon_stride(const fz_canon *c, int ci, const int64_t *ref) {
  if (c->num_axes[ci] == 0)
    return 0;
  return ref[c->axes[ci][c->num_axes[ci] - 1]];
}

void fz_dag_finish(fz_dag *d, const fz_canon *c, fz_plan *p) {
  p->rank = c->rank;
  memcpy(p->extents, c->extents, sizeof p->extents);
  memcpy(p->reduced, c->reduced, sizeof p->reduced);
  p->num_accesses = d->num_accesses;
  p->accesses = d->accesses;
  for (int i = 0; i < d->num_accesses; i++) {
    int64_t s[FZ_MAX_RANK] = {0};
    for (int ci = 0; ci < c->rank; ci++)
      s[ci] = canon_stride(c, ci, d->ref_strides[i]);
    memcpy(p->accesses[i].strides, s, sizeof s);
  }
  p->num_nodes = d->num_nodes;
  p->nodes = d->nodes;
  for (int i = 0; i < d->num_nodes; i++) {
    fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_IOTA)
      continue;
    int64_t coeff[FZ_MAX_RANK] = {0};
    for (int ci = 0; ci < c->rank; ci++)
      coeff[ci] = canon_stride(c, ci, n->coeff);
    memcpy(n->coeff, coeff, sizeof coeff);
  }
}

static bool build_over_candidates(fz_dag *d, const fz_problem *pb,
                                  fz_arena *arena, fz_reason *why,
                                  fz_dag_build_fn build, fz_plan **out) {
  const fz_fusion *f = pb->fusion;
  const fz_op *first = NULL;
  for (int i = 0; i < f->num_ops && !first; i++)
    if (fz_op_table[f->ops[i]->code].kind == FZ_KIND_REDUCTION)
      first = f->ops[i];
  if (!first) {
    if (why)
      snprintf(why->text, sizeof why->text, "fusion has no reduction");
    return false;
  }
  const fz_value *cands[32];
  int n = fz_dag_reference_candidates(pb, first, cands, 32);
  fz_reason first_why = {0};
  for (int i = 0; i < n; i++) {
    fz_reason w = {0};
    if (build(d, pb, arena, &w, first, cands[i], out))
      return true;
    if (i == 0)
      first_why = w;
  }
  if (why)
    *why = first_why;
  return false;
}

bool fz_dag_can_schedule(const fz_problem *pb, fz_reason *why,
                         fz_dag_build_fn build) {
  fz_arena *arena = fz_arena_create();
  fz_dag d;
  fz_plan *plan = NULL;
  bool ok = build_over_candidates(&d, pb, arena, why, build, &plan);
  fz_arena_destroy(arena);
  return ok;
}

fz_status fz_dag_schedule(const fz_problem *pb, fz_arena *arena,
                          fz_plan **out, fz_error *err, fz_dag_build_fn build,
                          const char *scheduler) {
  fz_reason why = {0};
  fz_dag d;
  if (!build_over_candidates(&d, pb, arena, &why, build, out))
    return fz_error_at(err, why.loc, FZ_ERR_UNSUPPORTED,
                       "%s scheduler declined: %s", scheduler, why.text);
  return FZ_OK;
}
