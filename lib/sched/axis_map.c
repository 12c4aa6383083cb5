/* axis_map.c - the union-find over axes that tells schedulers which axes
 * are the same loop (rules in axis_map.h).
 *
 * Why a union-find and not a walk: seed 000 (nvFuser's "unsupported post
 * reduction normalization") asked "is this post-reduction broadcast axis
 * the reduction axis?" by following one producer chain backwards, and the
 * chain sum -> broadcast -> set -> squeeze -> broadcast -> set -> set ->
 * expand broke at the squeeze, where no axis survives. Here every op joins
 * axes locally, in both directions at once, and the question becomes class
 * membership: the expanded axis meets the reduction's input axis at the
 * pointwise op that consumes it, so the answer is the same whatever chain
 * of shape ops (or none, after canonicalize) lies in between.
 *
 * Nodes are numbered value->id * FZ_MAX_RANK + axis: value ids are dense
 * and unique in a fusion, so no hashing is needed, and a node knows its
 * value and axis without a side table. Relations that must not merge
 * classes (a b1 stretched by a pointwise op, a keepdim image of a reduced
 * axis, the axes of a reshape split or merge) are kept as edges between
 * nodes and resolved to classes when asked.
 */
#include "sched/axis_map.h"

#include <stdlib.h>
#include <string.h>

typedef enum edge_kind {
  EDGE_IMAGE,    /* keepdim b1 of a reduction -> the reduced operand axis */
  EDGE_BCAST_TO, /* b1 operand axis -> the result axis it is stretched to */
  EDGE_RESHAPE,  /* reshape operand axis -> result axis of a split/merge */
} edge_kind;

typedef struct edge {
  edge_kind kind;
  int from, to; /* nodes */
} edge;

typedef struct mark {
  int node;        /* a reduced operand axis */
  const fz_op *op; /* the reduction */
} mark;

typedef struct class_info {
  bool has_iter;   /* some member is an iteration axis */
  bool has_extent; /* extent is known (an iteration or expanded member) */
  fz_extent extent;
  bool has_expanded; /* some member is expanded; expanded_to is the first */
  fz_extent expanded_to;
  bool conflict; /* members have provably different extents */
  bool reduced;
} class_info;

struct fz_axis_map {
  const fz_fusion *fusion;
  fz_arena *arena;
  int num_values;          /* ids below this can have nodes */
  const fz_value **values; /* by id; NULL for literals and strangers */
  int num_nodes;
  int *parent;   /* union-find, by node */
  int *class_of; /* by node; -1 for no axis */
  int num_classes;
  class_info *classes;
  int num_order;
  int *order; /* nodes in program order */
  edge *edges;
  int num_edges, cap_edges;
  mark *marks;
  int num_marks, cap_marks;
};

/* ---- nodes and the union-find ------------------------------------------ */

static int node_of(const fz_axis_map *m, const fz_value *v, int axis) {
  if (!v || v->id < 0 || v->id >= m->num_values || m->values[v->id] != v)
    return -1;
  if (axis < 0 || axis >= v->type.rank)
    return -1;
  return v->id * FZ_MAX_RANK + axis;
}

static const fz_axis *node_axis(const fz_axis_map *m, int node) {
  return &m->values[node / FZ_MAX_RANK]->type.axes[node % FZ_MAX_RANK];
}

static int find(int *parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

static void join(fz_axis_map *m, int a, int b) {
  if (a < 0 || b < 0)
    return;
  a = find(m->parent, a);
  b = find(m->parent, b);
  /* The smaller node becomes the root: any choice is correct, this one
   * is at least reproducible when debugging. */
  if (a < b)
    m->parent[b] = a;
  else if (b < a)
    m->parent[a] = b;
}

static void join_axes(fz_axis_map *m, const fz_value *a, int ia,
                      const fz_value *b, int ib) {
  join(m, node_of(m, a, ia), node_of(m, b, ib));
}

static void add_edge(fz_axis_map *m, edge_kind kind, int from, int to) {
  if (from < 0 || to < 0)
    return;
  if (m->num_edges == m->cap_edges) {
    int cap = m->cap_edges ? 2 * m->cap_edges : 16;
    edge *e = fz_arena_alloc(m->arena, sizeof *e * (size_t)cap);
    if (m->num_edges)
      memcpy(e, m->edges, sizeof *e * (size_t)m->num_edges);
    m->edges = e;
    m->cap_edges = cap;
  }
  m->edges[m->num_edges++] = (edge){kind, from, to};
}

static void add_mark(fz_axis_map *m, int node, const fz_op *op) {
  if (node < 0)
    return;
  if (m->num_marks == m->cap_marks) {
    int cap = m->cap_marks ? 2 * m->cap_marks : 8;
    mark *k = fz_arena_alloc(m->arena, sizeof *k * (size_t)cap);
    if (m->num_marks)
      memcpy(k, m->marks, sizeof *k * (size_t)m->num_marks);
    m->marks = k;
    m->cap_marks = cap;
  }
  m->marks[m->num_marks++] = (mark){node, op};
}

/* ---- reshape groups ------------------------------------------------------ */

/* Element counts are monomials (symbol_expr.c), as infer.c proves reshape
 * counts equal: derived symbols (`N*K`) expand into their base symbols. */
static bool is_size_one(const fz_axis *a) {
  fz_extent e = fz_axis_extent(a);
  return e.symbol < 0 && e.value == 1;
}

static void product_mul(const fz_fusion *f, fz_monomial *p, const fz_axis *a) {
  fz_monomial_mul_extent(f, p, fz_axis_extent(a), 1);
}

int fz_reshape_groups(const fz_fusion *f, const fz_type *from,
                      const fz_type *to,
                      fz_reshape_group groups[2 * FZ_MAX_RANK]) {
  int i = 0, j = 0, n = 0;
  int rin = from->rank, rout = to->rank;
  while (i < rin || j < rout) {
    fz_reshape_group *g = &groups[n++];
    memset(g, 0, sizeof *g);
    g->exact = true;
    bool in1 = i < rin && is_size_one(&from->axes[i]);
    bool out1 = j < rout && is_size_one(&to->axes[j]);
    if (in1 || out1) {
      /* Size-1 axes pair up when both sides have one; otherwise each is a
       * group alone (it carries no elements). */
      if (in1)
        g->from[g->num_from++] = i++;
      if (out1)
        g->to[g->num_to++] = j++;
      continue;
    }
    if (i == rin || j == rout) {
      /* Only possible when the counts are not provably equal (or one
       * side holds zero elements): everything left is one group. */
      while (i < rin)
        g->from[g->num_from++] = i++;
      while (j < rout)
        g->to[g->num_to++] = j++;
      g->exact = false;
      break;
    }
    fz_monomial pin, pout;
    fz_monomial_init(&pin);
    fz_monomial_init(&pout);
    product_mul(f, &pin, &from->axes[i]);
    g->from[g->num_from++] = i++;
    product_mul(f, &pout, &to->axes[j]);
    g->to[g->num_to++] = j++;
    /* Grow the side whose count divides the other's; when neither does
     * (2 vs 3 in [2, 3] -> [3, 2]), grow the operand side: the group then
     * closes at the first common multiple the axes reach. */
    while (!fz_monomial_equal(&pin, &pout)) {
      bool take_in;
      if (i < rin && fz_monomial_divides(&pin, &pout))
        take_in = true;
      else if (j < rout && fz_monomial_divides(&pout, &pin))
        take_in = false;
      else if (i < rin)
        take_in = true;
      else if (j < rout)
        take_in = false;
      else
        break;
      if (take_in) {
        product_mul(f, &pin, &from->axes[i]);
        g->from[g->num_from++] = i++;
      } else {
        product_mul(f, &pout, &to->axes[j]);
        g->to[g->num_to++] = j++;
      }
    }
    g->exact = fz_monomial_equal(&pin, &pout);
  }
  return n;
}

/* ---- the join rules, by op kind ------------------------------------------ */

static bool is_b1(const fz_axis *a) {
  return a->kind == FZ_AXIS_BROADCAST && !a->expanded;
}

static void map_pointwise(fz_axis_map *m, const fz_op *op) {
  const fz_value *r = op->result;
  for (int k = 0; k < op->num_operands; k++) {
    const fz_value *x = op->operands[k];
    if (!x || x->kind == FZ_VALUE_LITERAL || x->type.rank != r->type.rank)
      continue; /* rank-0 operands broadcast without axes */
    for (int i = 0; i < r->type.rank; i++) {
      if (is_b1(&x->type.axes[i]) && !is_b1(&r->type.axes[i]))
        add_edge(m, EDGE_BCAST_TO, node_of(m, x, i), node_of(m, r, i));
      else
        join_axes(m, x, i, r, i);
    }
  }
}

static void map_reduction(fz_axis_map *m, const fz_op *op) {
  const fz_value *x = op->operands[0], *r = op->result;
  int d = 0, out = 0;
  for (int i = 0; i < x->type.rank; i++) {
    bool reduced = d < op->num_dims && op->dims[d] == i;
    d += reduced;
    if (!reduced) {
      join_axes(m, x, i, r, out++);
      continue;
    }
    add_mark(m, node_of(m, x, i), op);
    if (op->keepdim)
      add_edge(m, EDGE_IMAGE, node_of(m, r, out++), node_of(m, x, i));
  }
}

static void map_broadcast(fz_axis_map *m, const fz_op *op) {
  const fz_value *x = op->operands[0], *r = op->result;
  int d = 0, k = 0;
  for (int i = 0; i < r->type.rank; i++) {
    if (d < op->num_dims && op->dims[d] == i)
      d++; /* inserted: a class of its own */
    else
      join_axes(m, x, k++, r, i);
  }
}

static void map_squeeze(fz_axis_map *m, const fz_op *op) {
  const fz_value *x = op->operands[0], *r = op->result;
  int d = 0, out = 0;
  for (int i = 0; i < x->type.rank; i++) {
    if (d < op->num_dims && op->dims[d] == i)
      d++;
    else
      join_axes(m, x, i, r, out++);
  }
}

static void map_reshape(fz_axis_map *m, const fz_op *op) {
  const fz_value *x = op->operands[0], *r = op->result;
  fz_reshape_group groups[2 * FZ_MAX_RANK];
  int n = fz_reshape_groups(m->fusion, &x->type, &r->type, groups);
  for (int g = 0; g < n; g++) {
    const fz_reshape_group *grp = &groups[g];
    if (grp->num_from == 1 && grp->num_to == 1 && grp->exact) {
      join_axes(m, x, grp->from[0], r, grp->to[0]);
      continue;
    }
    for (int a = 0; a < grp->num_from; a++)
      for (int b = 0; b < grp->num_to; b++)
        add_edge(m, EDGE_RESHAPE, node_of(m, x, grp->from[a]),
                 node_of(m, r, grp->to[b]));
  }
}

static void map_op(fz_axis_map *m, const fz_op *op) {
  const fz_value *r = op->result;
  if (!r || (int)op->code < 0 || op->code >= FZ_NUM_OPCODES)
    return;
  if (fz_op_table[op->code].arity > 0 &&
      (op->num_operands < 1 || !op->operands[0]))
    return;
  const fz_value *x = op->operands[0];
  switch (fz_op_table[op->code].kind) {
  case FZ_KIND_UNARY:
  case FZ_KIND_CAST:
  case FZ_KIND_BINARY:
  case FZ_KIND_TERNARY:
  case FZ_KIND_SET:
    map_pointwise(m, op);
    break;
  case FZ_KIND_REDUCTION:
    map_reduction(m, op);
    break;
  case FZ_KIND_BROADCAST:
    map_broadcast(m, op);
    break;
  case FZ_KIND_SQUEEZE:
    map_squeeze(m, op);
    break;
  case FZ_KIND_EXPAND:
    for (int i = 0; i < r->type.rank; i++)
      join_axes(m, x, i, r, i);
    break;
  case FZ_KIND_PERMUTE:
    for (int i = 0; i < r->type.rank; i++)
      join_axes(m, x, op->perm[i], r, i);
    break;
  case FZ_KIND_RESHAPE:
    map_reshape(m, op);
    break;
  case FZ_KIND_FULL:
  case FZ_KIND_IOTA:
  case FZ_KIND_SYMBOL:
  /* a resized axis is a loop of another extent: no axis is shared */
  case FZ_KIND_SLICE:
  case FZ_KIND_PAD:
  case FZ_KIND_CAT:
  case FZ_KIND_RANDOM:
    break;
  case FZ_KIND_GATHER: /* every axis but dims' is read at its coordinate */
    for (int i = 0; i < r->type.rank; i++)
      if (i != op->dims[0])
        join_axes(m, x, i, r, i);
    if (op->code == FZ_OP_GATHER)
      for (int i = 0; i < r->type.rank; i++)
        join_axes(m, op->operands[1], i, r, i);
    else
      join_axes(m, op->operands[1], 0, r, op->dims[0]);
    break;
  }
}

/* ---- building ------------------------------------------------------------ */

static void note_value(fz_axis_map *m, const fz_value *v) {
  if (v && v->kind != FZ_VALUE_LITERAL && v->id >= 0 && v->id < m->num_values &&
      v->type.rank > 0 && v->type.rank <= FZ_MAX_RANK)
    m->values[v->id] = v;
}

static void add_extent(class_info *c, fz_extent e) {
  if (!c->has_extent) {
    c->has_extent = true;
    c->extent = e;
  } else if (!fz_extent_equal(c->extent, e)) {
    c->conflict = true;
  }
}

/* Number the classes by first member in program order and summarise each. */
static void finish(fz_axis_map *m) {
  const fz_fusion *f = m->fusion;
  size_t n = (size_t)m->num_nodes + 1;
  int *root_class = fz_arena_alloc(m->arena, sizeof(int) * n);
  m->class_of = fz_arena_alloc(m->arena, sizeof(int) * n);
  m->order = fz_arena_alloc(m->arena, sizeof(int) * n);
  m->classes = fz_arena_alloc(m->arena, sizeof(class_info) * n);
  for (int i = 0; i < m->num_nodes; i++)
    root_class[i] = m->class_of[i] = -1;
  int count = f->num_inputs + f->num_ops;
  for (int k = 0; k < count; k++) {
    const fz_value *v =
        k < f->num_inputs ? f->inputs[k] : f->ops[k - f->num_inputs]->result;
    for (int a = 0; v && a < v->type.rank; a++) {
      int node = node_of(m, v, a);
      if (node < 0 || m->class_of[node] >= 0)
        continue;
      int root = find(m->parent, node);
      if (root_class[root] < 0)
        root_class[root] = m->num_classes++;
      int c = m->class_of[node] = root_class[root];
      m->order[m->num_order++] = node;
      class_info *info = &m->classes[c];
      const fz_axis *ax = &v->type.axes[a];
      if (ax->kind == FZ_AXIS_ITER) {
        info->has_iter = true;
        add_extent(info, ax->extent);
      } else if (ax->kind == FZ_AXIS_BROADCAST && ax->expanded) {
        if (!info->has_expanded) {
          info->has_expanded = true;
          info->expanded_to = ax->expanded_to;
        }
        add_extent(info, ax->expanded_to);
      }
    }
  }
  for (int i = 0; i < m->num_marks; i++) {
    int c = m->class_of[m->marks[i].node];
    if (c >= 0)
      m->classes[c].reduced = true;
  }
}

fz_axis_map *fz_axis_map_build(const fz_fusion *f, fz_arena *arena) {
  fz_axis_map *m = fz_arena_alloc(arena, sizeof *m);
  m->fusion = f;
  m->arena = arena;
  m->num_values = f->next_value_id > 0 ? f->next_value_id : 0;
  m->values =
      fz_arena_alloc(arena, sizeof m->values[0] * (size_t)(m->num_values + 1));
  for (int i = 0; i < f->num_inputs; i++)
    note_value(m, f->inputs[i]);
  for (int i = 0; i < f->num_ops; i++)
    note_value(m, f->ops[i]->result);
  m->num_nodes = m->num_values * FZ_MAX_RANK;
  m->parent = fz_arena_alloc(arena, sizeof(int) * (size_t)(m->num_nodes + 1));
  for (int i = 0; i < m->num_nodes; i++)
    m->parent[i] = i;
  for (int i = 0; i < f->num_ops; i++)
    map_op(m, f->ops[i]);
  finish(m);
  return m;
}

/* ---- questions ----------------------------------------------------------- */

int fz_axis_map_num_classes(const fz_axis_map *m) { return m->num_classes; }

int fz_axis_map_class(const fz_axis_map *m, const fz_value *v, int axis) {
  int node = node_of(m, v, axis);
  return node < 0 ? -1 : m->class_of[node];
}

bool fz_axis_map_class_is_reduced(const fz_axis_map *m, int c) {
  return c >= 0 && c < m->num_classes && m->classes[c].reduced;
}

static int edge_class(const fz_axis_map *m, int node) {
  return m->class_of[node];
}

/* The extent of the loop an axis denotes (see fz_axis_map_same_extent). */
static bool loop_extent(const fz_axis_map *m, int node, fz_extent *out) {
  const fz_axis *ax = node_axis(m, node);
  if (ax->kind == FZ_AXIS_ITER) {
    *out = ax->extent;
    return true;
  }
  if (ax->expanded) {
    *out = ax->expanded_to;
    return true;
  }
  const class_info *c = &m->classes[m->class_of[node]];
  if (!c->has_extent || c->conflict)
    return false;
  *out = c->extent;
  return true;
}

bool fz_axis_map_same_extent(const fz_axis_map *m, const fz_value *a,
                             int axis_a, const fz_value *b, int axis_b) {
  int na = node_of(m, a, axis_a), nb = node_of(m, b, axis_b);
  if (na < 0 || nb < 0)
    return false;
  int ca = m->class_of[na], cb = m->class_of[nb];
  if (ca == cb && !m->classes[ca].conflict)
    return true;
  fz_extent ea, eb;
  return loop_extent(m, na, &ea) && loop_extent(m, nb, &eb) &&
         fz_extent_equal(ea, eb);
}

static bool has_edge(const fz_axis_map *m, int from_class, int to_class) {
  for (int i = 0; i < m->num_edges; i++) {
    const edge *e = &m->edges[i];
    if (e->kind != EDGE_RESHAPE && edge_class(m, e->from) == from_class &&
        (to_class < 0 || edge_class(m, e->to) == to_class))
      return true;
  }
  return false;
}

bool fz_axis_map_is_reduction_broadcast(const fz_axis_map *m, const fz_value *v,
                                        int axis, const fz_op *red) {
  int node = node_of(m, v, axis);
  if (node < 0 || !red || (int)red->code < 0 || red->code >= FZ_NUM_OPCODES ||
      fz_op_table[red->code].kind != FZ_KIND_REDUCTION || red->num_operands < 1)
    return false;
  int c = m->class_of[node];
  const fz_value *x = red->operands[0];
  for (int i = 0; i < red->num_dims; i++) {
    int rnode = node_of(m, x, red->dims[i]);
    if (rnode < 0)
      continue;
    int r = m->class_of[rnode];
    fz_extent e, er;
    if (c == r) {
      /* A class that mixes extents (one b1 expanded two ways) cannot
       * vouch for its members: then only the extents themselves can. */
      if (!m->classes[c].conflict ||
          (loop_extent(m, node, &e) && loop_extent(m, rnode, &er) &&
           fz_extent_equal(e, er)))
        return true;
      continue;
    }
    if (has_edge(m, c, r))
      return true;
  }
  /* A broadcast class that meets no loop (an expanded value that is only
   * stored) has nothing to be joined with; its expanded extent is all
   * there is to compare. */
  const class_info *info = &m->classes[c];
  if (info->has_iter || !info->has_extent || info->conflict ||
      has_edge(m, c, -1))
    return false;
  for (int i = 0; i < red->num_dims; i++) {
    int rnode = node_of(m, x, red->dims[i]);
    fz_extent er;
    if (rnode >= 0 && loop_extent(m, rnode, &er) &&
        fz_extent_equal(info->extent, er))
      return true;
  }
  return false;
}

/* ---- printing ------------------------------------------------------------ */

/* Prints " (<label> class a, class b)" for the distinct classes, other
 * than c, at the far end of edges of `kind` touching c; `incoming` picks
 * the direction. seen has num_classes entries, all false on entry and on
 * return. */
static void print_edges(fz_buf *b, const fz_axis_map *m, int c, edge_kind kind,
                        bool incoming, const char *label, bool *seen) {
  for (int i = 0; i < m->num_edges; i++) {
    const edge *e = &m->edges[i];
    int near = edge_class(m, incoming ? e->to : e->from);
    int far = edge_class(m, incoming ? e->from : e->to);
    if (e->kind == kind && near == c && far != c && far >= 0)
      seen[far] = true;
  }
  bool first = true;
  for (int k = 0; k < m->num_classes; k++) {
    if (!seen[k])
      continue;
    fz_buf_printf(b, "%s class %d", first ? label : ",", k);
    first = false;
    seen[k] = false;
  }
  if (!first)
    fz_buf_puts(b, ")");
}

void fz_axis_map_print(const fz_axis_map *m, fz_buf *b) {
  int *number = fz_print_value_numbers(m->fusion);
  bool *seen = calloc((size_t)m->num_classes + 1, sizeof(bool));
  /* Members grouped by class, each group in program order. */
  int *start = calloc((size_t)m->num_classes + 2, sizeof(int));
  int *members = malloc(sizeof(int) * (size_t)(m->num_order + 1));
  if (!number || !seen || !start || !members) {
    b->oom = true;
    goto done;
  }
  for (int i = 0; i < m->num_order; i++)
    start[m->class_of[m->order[i]] + 2]++;
  for (int c = 0; c < m->num_classes; c++)
    start[c + 2] += start[c + 1];
  for (int i = 0; i < m->num_order; i++)
    members[start[m->class_of[m->order[i]] + 1]++] = m->order[i];

  for (int c = 0; c < m->num_classes; c++) {
    const class_info *info = &m->classes[c];
    fz_buf_printf(b, "class %d:", c);
    for (int i = start[c]; i < start[c + 1]; i++) {
      int node = members[i];
      fz_buf_puts(b, " ");
      fz_print_value_label(b, m->values[node / FZ_MAX_RANK], number);
      fz_buf_printf(b, "[%d]", node % FZ_MAX_RANK);
    }
    bool first = true;
    for (int i = 0; i < m->num_marks; i++) {
      const mark *k = &m->marks[i];
      if (m->class_of[k->node] != c)
        continue;
      bool dup = false; /* one reduction may reduce two axes of a class */
      for (int j = 0; j < i && !dup; j++)
        dup = m->marks[j].op == k->op && m->class_of[m->marks[j].node] == c;
      if (dup)
        continue;
      fz_buf_puts(b, first ? " (reduced by " : ", ");
      fz_print_value_label(b, k->op->result, number);
      first = false;
    }
    if (!first)
      fz_buf_puts(b, ")");
    if (info->has_expanded) {
      char e[64];
      fz_buf_printf(
          b, " (expanded to %s)",
          fz_format_extent(m->fusion, info->expanded_to, e, sizeof e));
    }
    print_edges(b, m, c, EDGE_IMAGE, false, " (broadcast of", seen);
    print_edges(b, m, c, EDGE_BCAST_TO, false, " (broadcast to", seen);
    print_edges(b, m, c, EDGE_RESHAPE, true, " (reshaped from", seen);
    if (info->conflict)
      fz_buf_puts(b, " (conflicting extents)");
    fz_buf_puts(b, "\n");
  }
done:
  free(number);
  free(seen);
  free(start);
  free(members);
}
