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

const char *fz_dag_label(const fz_dag *d, const fz_value *v, char *buf,
                         size_t size) {
  if (!d->why)
    return "";
  return fz_value_label(v, buf, size);
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

static void map_set_init(fz_map_set *set, fz_arena *arena) {
  *set = (fz_map_set){.arena = arena};
  fz_itable_init(&set->index, arena);
}

void fz_sched_memo_begin(fz_sched_memo **memo) {
  fz_arena *arena = fz_arena_create();
  *memo = fz_arena_alloc(arena, sizeof **memo);
  (*memo)->arena = arena;
  map_set_init(&(*memo)->maps, arena);
}

void fz_sched_memo_end(fz_sched_memo *memo) {
  if (memo)
    fz_arena_destroy(memo->arena); /* memo itself lives in it */
}

void fz_dag_init(fz_dag *d, const fz_problem *problem, fz_arena *arena,
                 const int64_t *ref_sizes, int ref_rank, fz_reason *why) {
  int n = problem->fusion->next_value_id + 1;
  fz_dag old = *d;
  bool reuse = old.maps && old.problem == problem && old.arena == arena;
  *d = (fz_dag){.problem = problem, .arena = arena, .why = why,
                .ref_rank = ref_rank};
  memcpy(d->ref_sizes, ref_sizes, sizeof(int64_t) * (size_t)ref_rank);
  d->map_set = problem->memo ? &problem->memo->maps : &d->own_maps;
  if (reuse) {
    /* the arrays of the previous candidate, emptied; its maps stay */
    d->own_maps = old.own_maps;
    d->maps = old.maps;
    memset(d->maps, 0, sizeof *d->maps * (size_t)n);
    d->nodes = old.nodes;
    d->node_maps = old.node_maps;
    d->cap_nodes = old.cap_nodes;
    d->accesses = old.accesses;
    d->ref_strides = old.ref_strides;
    d->cap_accesses = old.cap_accesses;
    d->node_index = old.node_index;
    d->reduce_index = old.reduce_index;
    d->access_index = old.access_index;
    fz_itable_clear(&d->node_index);
    fz_itable_clear(&d->reduce_index);
    fz_itable_clear(&d->access_index);
    return;
  }
  d->maps = fz_arena_alloc(arena, sizeof *d->maps * (size_t)n);
  if (!problem->memo)
    map_set_init(&d->own_maps, arena);
  fz_itable_init(&d->node_index, arena);
  fz_itable_init(&d->reduce_index, arena);
  fz_itable_init(&d->access_index, arena);
}

/* One multiply per coefficient and one full mix at the end: maps are
 * hashed at every lookup, and most have a handful of coefficients. */
static uint64_t map_hash(const fz_index_map *m) {
  uint64_t h = (uint64_t)m->rows << 32 | (uint64_t)(uint32_t)m->cols;
  for (int i = 0; i < m->rows; i++)
    for (int j = 0; j < m->cols; j++)
      h = (h ^ (uint64_t)m->a[i][j]) * 0x9e3779b97f4a7c15u;
  return fz_hash_mix(h, 0);
}

typedef struct map_probe {
  const fz_map_set *set;
  const fz_index_map *m;
} map_probe;

static bool same_map(const void *ctx, int i) {
  const map_probe *p = ctx;
  return fz_index_map_equal(p->set->list[i], p->m);
}

const fz_index_map *fz_dag_intern(fz_dag *d, const fz_index_map *m) {
  fz_map_set *set = d->map_set;
  uint64_t h = map_hash(m);
  map_probe p = {set, m};
  int i = fz_itable_find(&set->index, h, same_map, &p);
  if (i >= 0)
    return set->list[i];
  if (set->count == set->cap) {
    int cap = set->cap ? 2 * set->cap : 16;
    const fz_index_map **grown =
        fz_arena_alloc(set->arena, sizeof *grown * (size_t)cap);
    if (set->count)
      memcpy(grown, set->list, sizeof *grown * (size_t)set->count);
    set->list = grown;
    set->cap = cap;
  }
  /* only the rows x cols coefficients are ever read (or written: the
   * rest of m may be anything) */
  fz_index_map *copy = fz_arena_alloc(set->arena, sizeof *copy);
  copy->rows = m->rows;
  copy->cols = m->cols;
  for (int i = 0; i < m->rows; i++)
    memcpy(copy->a[i], m->a[i], sizeof(int64_t) * (size_t)m->cols);
  set->list[set->count] = copy;
  fz_itable_add(&set->index, h, set->count++);
  return copy;
}

/* Seeds the identity at `seed` (a value of the reference's shape) and
 * propagates: backward from the reference, then forward, repeated while
 * anything new is found (a forward step can open a backward one: y = f(x)
 * found forward, then z in w = g(y, z) backward). Each round is one sweep
 * over the ops each way. Returns the next seed: an output that no op
 * relates to the maps found but that has exactly the reference's shape
 * (y * s beside x * s: they correspond position by position), or NULL. */
static const fz_value *propagate(fz_dag *d, const fz_value *seed) {
  const fz_fusion *f = d->problem->fusion;
  const int64_t *sym = d->problem->symbols;
  fz_index_map identity = fz_index_map_identity(seed->type.rank), m;
  d->maps[seed->id] = fz_dag_intern(d, &identity);
  /* A sweep that finds nothing after one of the other direction that
   * found nothing ends it: the next would find nothing either. */
  for (bool changed = true, forward_found = true; changed;) {
    changed = false;
    for (int i = f->num_ops - 1; i >= 0; i--) {
      const fz_op *op = f->ops[i];
      if (!d->maps[op->result->id])
        continue;
      for (int k = 0; k < op->num_operands; k++) {
        const fz_value *o = op->operands[k];
        if (o->kind == FZ_VALUE_LITERAL || d->maps[o->id])
          continue;
        if (fz_index_map_to_operand(op, k, d->maps[op->result->id], sym, &m,
                                    NULL, 0)) {
          d->maps[o->id] = fz_dag_intern(d, &m);
          changed = true;
        }
      }
    }
    if (!changed && !forward_found)
      break;
    forward_found = false;
    for (int i = 0; i < f->num_ops; i++) {
      const fz_op *op = f->ops[i];
      if (d->maps[op->result->id])
        continue;
      for (int k = 0; k < op->num_operands; k++) {
        const fz_value *o = op->operands[k];
        if (o->kind == FZ_VALUE_LITERAL || !d->maps[o->id])
          continue;
        if (fz_index_map_from_operand(op, k, d->maps[o->id], sym, &m)) {
          d->maps[op->result->id] = fz_dag_intern(d, &m);
          changed = forward_found = true;
          break;
        }
      }
    }
  }
  for (int i = 0; i < f->num_outputs; i++) {
    const fz_value *o = f->outputs[i];
    if (d->maps[o->id] || o->type.rank != d->ref_rank)
      continue;
    bool same = true;
    for (int k = 0; k < o->type.rank && same; k++)
      same = fz_axis_size(&o->type.axes[k], sym) == d->ref_sizes[k];
    if (same)
      return o;
  }
  return NULL;
}

/* The maps found from `reference` before, copied into d->maps; false
 * when none were (or there is no memo). */
static bool recall_maps(fz_dag *d, const fz_value *reference) {
  fz_sched_memo *memo = d->problem->memo;
  if (!memo)
    return false;
  for (int i = 0; i < memo->count; i++)
    if (memo->refs[i] == reference &&
        memcmp(memo->ref_sizes[i], d->ref_sizes,
               sizeof(int64_t) * (size_t)d->ref_rank) == 0) {
      size_t n = (size_t)d->problem->fusion->next_value_id + 1;
      memcpy(d->maps, memo->found[i], sizeof *d->maps * n);
      return true;
    }
  return false;
}

static void remember_maps(fz_dag *d, const fz_value *reference) {
  fz_sched_memo *memo = d->problem->memo;
  if (!memo)
    return;
  if (memo->count == memo->cap) {
    int cap = memo->cap ? 2 * memo->cap : 4;
    const fz_value **refs =
        fz_arena_alloc(memo->arena, sizeof *refs * (size_t)cap);
    int64_t(*sizes)[FZ_MAX_RANK] =
        fz_arena_alloc(memo->arena, sizeof *sizes * (size_t)cap);
    const fz_index_map ***found =
        fz_arena_alloc(memo->arena, sizeof *found * (size_t)cap);
    if (memo->count) {
      memcpy(refs, memo->refs, sizeof *refs * (size_t)memo->count);
      memcpy(sizes, memo->ref_sizes, sizeof *sizes * (size_t)memo->count);
      memcpy(found, memo->found, sizeof *found * (size_t)memo->count);
    }
    memo->refs = refs;
    memo->ref_sizes = sizes;
    memo->found = found;
    memo->cap = cap;
  }
  size_t n = (size_t)d->problem->fusion->next_value_id + 1;
  const fz_index_map **maps = fz_arena_alloc(memo->arena, sizeof *maps * n);
  memcpy(maps, d->maps, sizeof *maps * n);
  memo->refs[memo->count] = reference;
  memcpy(memo->ref_sizes[memo->count], d->ref_sizes,
         sizeof(int64_t) * (size_t)d->ref_rank);
  memo->found[memo->count++] = maps;
}

bool fz_dag_find_maps(fz_dag *d, const fz_value *reference) {
  const fz_fusion *f = d->problem->fusion;
  if (recall_maps(d, reference))
    return true; /* found complete before */
  for (const fz_value *seed = reference; seed;)
    seed = propagate(d, seed);
  char label[64], data[64];
  bool complete = true;
  for (int i = 0; i < f->num_outputs; i++)
    complete &= d->maps[f->outputs[i]->id] != NULL;
  /* a gather of a computed value relates nothing to the maps: say so
   * rather than which output it left without one */
  for (int i = 0; i < f->num_ops && !complete; i++) {
    const fz_op *op = f->ops[i];
    if (fz_op_table[op->code].kind == FZ_KIND_GATHER &&
        op->operands[0]->kind != FZ_VALUE_INPUT)
      return fz_dag_decline_at(
          d, op->result,
          "%s gathers from %s, a value computed in the kernel (only a "
          "fusion input can be read where an index says)",
          fz_dag_label(d, op->result, label, sizeof label),
          fz_dag_label(d, op->operands[0], data, sizeof data));
  }
  for (int i = 0; i < f->num_outputs; i++)
    if (!d->maps[f->outputs[i]->id]) {
      if (fz_dag_resize_unmapped(d))
        return false; /* the reason names the resize op that cut it off */
      return fz_dag_decline_at(
          d, f->outputs[i],
          "output %s is not in the reference's iteration space",
          fz_dag_label(d, f->outputs[i], label, sizeof label));
    }
  remember_maps(d, reference);
  return true;
}

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
        if (d->nodes[k].kind == FZ_NODE_IOTA ||
            d->nodes[k].kind == FZ_NODE_RANDOM)
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

/* The symbols the SYMBOL nodes read, each once, in node order, and their
 * values in this problem: the plan passes them as parameters. */
static void plan_symbols(fz_dag *d, fz_plan *p) {
  int *symbols = NULL;
  int64_t *values = NULL;
  int count = 0;
  for (int i = 0; i < d->num_nodes; i++) {
    const fz_plan_node *n = &d->nodes[i];
    if (n->kind != FZ_NODE_SYMBOL)
      continue;
    int s = 0;
    while (s < count && symbols[s] != n->symbol)
      s++;
    if (s < count)
      continue;
    if (!symbols) {
      int most = d->problem->fusion->num_symbols;
      symbols = fz_arena_alloc(d->arena, sizeof *symbols * (size_t)most);
      values = fz_arena_alloc(d->arena, sizeof *values * (size_t)most);
    }
    symbols[count] = n->symbol;
    values[count++] = d->problem->symbols[n->symbol];
  }
  p->num_symbols = count;
  p->symbols = symbols;
  p->symbol_values = values;
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
  plan_symbols(d, p);
  for (int i = 0; i < d->num_nodes; i++) {
    fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_IOTA && n->kind != FZ_NODE_RANDOM)
      continue;
    int64_t coeff[FZ_MAX_RANK] = {0};
    for (int ci = 0; ci < c->rank; ci++)
      coeff[ci] = canon_stride(c, ci, n->coeff);
    memcpy(n->coeff, coeff, sizeof coeff);
  }
}

bool fz_dag_try(const fz_problem *pb, fz_arena *arena, fz_plan **out,
                fz_reason *why, fz_dag_build_fn build) {
  const fz_fusion *f = pb->fusion;
  *out = NULL;
  if (why)
    *why = (fz_reason){0};
  const fz_op *first = NULL;
  for (int i = 0; i < f->num_ops && !first; i++)
    if (fz_op_table[f->ops[i]->code].kind == FZ_KIND_REDUCTION)
      first = f->ops[i];
  if (!first) {
    if (why)
      snprintf(why->text, sizeof why->text, "fusion has no reduction");
    return false;
  }
  if (!fz_problem_params_fit(pb, why))
    return false;
  const fz_value *cands[32];
  int n = fz_dag_reference_candidates(pb, first, cands, 32);
  fz_dag d = {0};
  fz_reason first_why = {0};
  for (int i = 0; i < n; i++) {
    /* no reason asked for (the executor's question): none is formatted */
    fz_reason w = {0}, *wp = why ? &w : NULL;
    fz_plan *plan = NULL;
    if (build(&d, pb, arena, wp, first, cands[i], &plan) &&
        fz_plan_params_fit(plan, wp)) {
      *out = plan;
      return true;
    }
    if (i == 0)
      first_why = w;
  }
  if (why)
    *why = first_why;
  return false;
}
