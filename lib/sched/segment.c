/* segment.c - splitting a fusion that no single scheduler accepts into the
 * fewest segments that schedulers do (greedy merging, as nvFuser does).
 *
 * The segmenter works on W, a copy of the parent in which every output
 * that is an input of the fusion or repeats an earlier output is replaced
 * by a `set` of it: a segment writes each output buffer exactly once, so
 * such outputs need an op that writes them, and making it an ordinary op
 * lets the greedy merge place it like any other. W's ops 0..n-1 are the
 * parent's ops in the same order; the copies come after.
 *
 * Grouping starts with one group per live op (ops that feed no output are
 * left out). Candidate merges are producer->consumer edges between two
 * groups, largest tensor on the edge first, since a merge keeps that
 * tensor on chip; then groups that read the same tensor (horizontal
 * merges, largest shared tensor first), which saves a read. A merge is
 * taken when no path joins the two groups through a third one (the merged
 * group would both feed and consume it) and some scheduler accepts the
 * merged group as a fusion of its own, on this problem's sizes and
 * layouts. After each merge the candidates are ranked again from the
 * largest; the loop ends when none is taken. The rejections of that last
 * round are the notes: exactly why the segments that remain stay apart.
 *
 * What a scheduler sees for a group: a fusion (segment_extract.c) whose
 * inputs are what the group reads from outside it and whose outputs are
 * what later groups or the parent need; the descriptors of parent inputs
 * and outputs come from the problem; an intermediate is dense in its
 * declared layout, else in the order allocation-order propagation gives
 * it (computed once on a copy of W), so that it is written in the memory
 * order of what it is computed from.
 *
 * Whether a group is accepted depends only on its set of ops, so rejected
 * sets are remembered and not built again when the candidates are ranked
 * anew.
 */
#include "sched/segment.h"

#include "sched/pass.h"
#include "sched/segment_extract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NOTES = 12, NOTE_CHARS = 360 };

/* ---- the segmenter's state ---------------------------------------------- */

typedef struct rejected_set {
  unsigned char *ops; /* n flags */
  char *why;
} rejected_set;

typedef struct ctx {
  const fz_problem *pb;
  const fz_fusion *parent;
  fz_fusion *w;
  int n;  /* w->num_ops */
  int nv; /* w->next_value_id */
  const fz_value **parent_of; /* w value id -> parent value; NULL: a copy */
  int *producer;              /* w value id -> op index, or -1 */
  int *out_index;             /* w value id -> first output index, or -1 */
  bool *live;                 /* per op */
  fz_type *store;             /* w value id -> layout as an intermediate */
  fz_tensor_desc *desc;       /* w value id -> descriptor as intermediate */
  int64_t *bytes;             /* w value id */
  int *group;                 /* op -> group (its smallest op), -1 if dead */
  unsigned char *reach;       /* n*n: reach[a*n+b], path from group a to b */
  rejected_set *rejected;
  int num_rejected, cap_rejected;
  fz_buf notes;
  int num_notes, more_notes;
} ctx;

/* A group built as a fusion of its own. INTERMEDIATE refs carry a W value
 * id until the segmentation numbers its intermediates. */
typedef struct cand {
  fz_fusion *f;
  const char *scheduler;
  int num_inputs, num_outputs;
  fz_buffer_ref *in, *out;
  const fz_value **in_vals, **out_vals; /* W values */
} cand;

static void cand_free(cand *c) {
  fz_fusion_destroy(c->f);
  free(c->in);
  free(c->out);
  free(c->in_vals);
  free(c->out_vals);
  *c = (cand){0};
}

static void *xcalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

/* ---- descriptors -------------------------------------------------------- */

void fz_intermediate_desc(const fz_intermediate *im, const int64_t *symbols,
                          fz_tensor_desc *out) {
  const fz_type *t = &im->type;
  *out = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
  for (int k = 0; k < t->rank; k++)
    out->sizes[k] = fz_axis_size(&t->axes[k], symbols);
  fz_type_dense_strides(t, out->sizes, out->strides);
}

static const fz_tensor_desc *resolve(fz_buffer_ref ref, const fz_problem *pb,
                                     const fz_tensor_desc *intermediates) {
  switch (ref.kind) {
  case FZ_BUFFER_INPUT: return &pb->inputs[ref.index];
  case FZ_BUFFER_OUTPUT: return &pb->outputs[ref.index];
  case FZ_BUFFER_INTERMEDIATE: return &intermediates[ref.index];
  }
  FZ_DIE("bad buffer kind %d", (int)ref.kind);
}

void fz_segment_problem(const fz_segmentation *s, int segment,
                        const fz_problem *parent,
                        const fz_tensor_desc *intermediate_descs,
                        fz_arena *arena, fz_problem *out) {
  const fz_segment *seg = &s->segments[segment];
  const fz_fusion *f = seg->fusion;
  fz_tensor_desc *in =
      fz_arena_alloc(arena, sizeof *in * (size_t)(f->num_inputs + 1));
  fz_tensor_desc *o =
      fz_arena_alloc(arena, sizeof *o * (size_t)(f->num_outputs + 1));
  for (int i = 0; i < f->num_inputs; i++)
    in[i] = *resolve(seg->inputs[i], parent, intermediate_descs);
  for (int i = 0; i < f->num_outputs; i++)
    o[i] = *resolve(seg->outputs[i], parent, intermediate_descs);
  *out = (fz_problem){.fusion = f, .inputs = in, .outputs = o,
                      .symbols = parent->symbols, .device = parent->device};
}

/* The allocation order a descriptor's strides give: larger strides outer,
 * ties (size-1 axes) in logical order. */
static void order_of_strides(const fz_tensor_desc *d, fz_type *t) {
  int order[FZ_MAX_RANK];
  for (int i = 0; i < d->rank; i++) {
    int k = i;
    while (k > 0 && d->strides[order[k - 1]] < d->strides[i]) {
      order[k] = order[k - 1];
      k--;
    }
    order[k] = i;
  }
  t->has_layout = true;
  for (int p = 0; p < d->rank; p++) {
    t->alloc_order[p] = order[p];
    t->contiguous[p] = true;
  }
}

/* ---- labels and notes --------------------------------------------------- */

static void put_label(fz_buf *b, const fz_value *v) {
  fz_print_value_label(b, v, NULL);
}

static void put_group(ctx *c, fz_buf *b, const unsigned char *set) {
  int listed = 0, total = 0;
  fz_buf_puts(b, "{");
  for (int i = 0; i < c->n; i++) {
    if (!set[i])
      continue;
    if (listed < 4) {
      fz_buf_puts(b, listed ? " " : "");
      put_label(b, c->w->ops[i]->result);
      listed++;
    }
    total++;
  }
  if (total > listed)
    fz_buf_printf(b, " +%d", total - listed);
  fz_buf_puts(b, "}");
}

static void group_set(const ctx *c, int g, unsigned char *set) {
  for (int i = 0; i < c->n; i++)
    set[i] = c->group[i] == g;
}

/* One line: merge {a} + {b}: why. At most MAX_NOTES, each cut to
 * NOTE_CHARS, so the notes stay readable for large fusions. */
static void note(ctx *c, int a, int b, const char *kind, const char *why) {
  if (c->num_notes == MAX_NOTES) {
    c->more_notes++;
    return;
  }
  unsigned char *set = xcalloc((size_t)c->n, 1);
  fz_buf line = {0};
  if (set) {
    fz_buf_puts(&line, "merge ");
    group_set(c, a, set);
    put_group(c, &line, set);
    fz_buf_puts(&line, " + ");
    group_set(c, b, set);
    put_group(c, &line, set);
    fz_buf_printf(&line, "%s: %s", kind, why);
  }
  free(set);
  char *text = fz_buf_take(&line);
  if (!text) {
    c->notes.oom = true;
    return;
  }
  if (strlen(text) > NOTE_CHARS)
    strcpy(text + NOTE_CHARS - 3, "...");
  fz_buf_printf(&c->notes, "%s\n", text);
  free(text);
  c->num_notes++;
}

static void reset_notes(ctx *c) {
  free(c->notes.data);
  c->notes = (fz_buf){0};
  c->num_notes = c->more_notes = 0;
}

/* fz_schedule_explain's lines ("  pointwise   rejects: why") as
 * "pointwise: why; reduction: why". */
static char *condensed_reasons(const fz_problem *pb) {
  fz_buf raw = {0}, out = {0};
  fz_schedule_explain(pb, &raw);
  char *text = fz_buf_take(&raw);
  if (!text)
    return NULL;
  bool first = true;
  for (char *line = text; *line;) {
    char *end = strchr(line, '\n');
    if (end)
      *end = 0;
    while (*line == ' ')
      line++;
    size_t name = strcspn(line, " ");
    const char *rest = line + name;
    while (*rest == ' ')
      rest++;
    if (strncmp(rest, "rejects: ", 9) == 0)
      rest += 9;
    if (name) {
      fz_buf_printf(&out, "%s%.*s: %s", first ? "" : "; ", (int)name, line,
                    rest);
      first = false;
    }
    if (!end)
      break;
    line = end + 1;
  }
  free(text);
  return fz_buf_take(&out);
}

/* ---- building a group --------------------------------------------------- */

static bool used_outside(const ctx *c, const fz_value *v,
                         const unsigned char *set) {
  if (c->out_index[v->id] >= 0)
    return true;
  for (int i = 0; i < c->n; i++) {
    if (set[i] || !c->live[i])
      continue;
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++)
      if (op->operands[k] == v)
        return true;
  }
  return false;
}

static fz_buffer_ref ref_of(const ctx *c, const fz_value *v) {
  if (v->kind == FZ_VALUE_INPUT)
    return (fz_buffer_ref){FZ_BUFFER_INPUT, v->input_index};
  if (c->out_index[v->id] >= 0)
    return (fz_buffer_ref){FZ_BUFFER_OUTPUT, c->out_index[v->id]};
  return (fz_buffer_ref){FZ_BUFFER_INTERMEDIATE, v->id};
}

static void mark_symbols(const fz_type *t, bool *marks) {
  for (int i = 0; i < t->rank; i++) {
    const fz_axis *a = &t->axes[i];
    if (a->kind == FZ_AXIS_ITER && a->extent.symbol >= 0)
      marks[a->extent.symbol] = true;
    if (a->kind == FZ_AXIS_BROADCAST && a->expanded &&
        a->expanded_to.symbol >= 0)
      marks[a->expanded_to.symbol] = true;
  }
}

/* A symbol that only the group's ops name (the shape of a full, reshape
 * or expand) is bound by no input of the group; a parent input that
 * carries it becomes an input of the segment, unread, so that the segment
 * binds its symbols from its inputs like any fusion. */
static void add_binding_inputs(const ctx *c, const unsigned char *set,
                               cand *out, fz_type *in_types,
                               fz_tensor_desc *din, bool *seen) {
  size_t ns = (size_t)c->w->num_symbols;
  bool *need = xcalloc(ns, sizeof *need), *have = xcalloc(ns, sizeof *have);
  bool *marks = xcalloc(ns, sizeof *marks);
  if (!need || !have || !marks)
    goto done; /* left unbound: the executor binds from the parent */
  for (int i = 0; i < c->n; i++)
    if (set[i])
      mark_symbols(&c->w->ops[i]->result->type, need);
  for (int j = 0; j < out->num_inputs; j++)
    mark_symbols(&out->in_vals[j]->type, have);
  for (size_t sym = 0; sym < ns; sym++) {
    if (!need[sym] || have[sym])
      continue;
    for (int i = 0; i < c->w->num_inputs; i++) {
      const fz_value *v = c->w->inputs[i];
      memset(marks, 0, ns * sizeof *marks);
      mark_symbols(&v->type, marks);
      if (!marks[sym] || seen[v->id])
        continue;
      seen[v->id] = true;
      int j = out->num_inputs++;
      out->in_vals[j] = v;
      out->in[j] = ref_of(c, v);
      in_types[j] = v->type;
      din[j] = c->pb->inputs[i];
      mark_symbols(&v->type, have);
      break;
    }
  }
done:
  free(need);
  free(have);
  free(marks);
}

/* Builds the group `set` as fusion `name` and asks the schedulers; when
 * none accepts and `why` is not NULL, *why gets their reasons (malloc'd). */
static fz_status build_cand(ctx *c, const unsigned char *set, const char *name,
                            cand *out, char **why, fz_error *err) {
  *out = (cand){0};
  size_t nv = (size_t)c->nv;
  bool *seen = xcalloc(nv, sizeof *seen);
  bool *flags = xcalloc((size_t)c->n, sizeof *flags);
  out->in_vals = xcalloc(nv, sizeof *out->in_vals);
  out->out_vals = xcalloc(nv, sizeof *out->out_vals);
  fz_type *in_types = xcalloc(nv, sizeof *in_types);
  fz_type *out_types = xcalloc(nv, sizeof *out_types);
  const fz_type **out_lay = xcalloc(nv, sizeof *out_lay);
  out->in = xcalloc(nv, sizeof *out->in);
  out->out = xcalloc(nv, sizeof *out->out);
  fz_tensor_desc *din = xcalloc(nv, sizeof *din);
  fz_tensor_desc *dout = xcalloc(nv, sizeof *dout);
  fz_status st = FZ_OK;
  if (!seen || !flags || !out->in_vals || !out->out_vals || !in_types ||
      !out_types || !out_lay || !out->in || !out->out || !din || !dout) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  /* Inputs: what the group reads from outside; parent inputs in the
   * parent's order, then results in SSA order, so that a group holding
   * every op reads its inputs as the parent does. */
  for (int i = 0; i < c->n; i++) {
    if (!set[i])
      continue;
    flags[i] = true;
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind != FZ_VALUE_LITERAL &&
          !(c->producer[v->id] >= 0 && set[c->producer[v->id]]))
        seen[v->id] = true;
    }
  }
  for (int i = 0; i < c->w->num_inputs + c->n; i++) {
    const fz_value *v = i < c->w->num_inputs
                            ? c->w->inputs[i]
                            : c->w->ops[i - c->w->num_inputs]->result;
    if (!seen[v->id])
      continue;
    int j = out->num_inputs++;
    out->in_vals[j] = v;
    out->in[j] = ref_of(c, v);
    if (v->kind == FZ_VALUE_INPUT) {
      in_types[j] = v->type;
    } else if (out->in[j].kind == FZ_BUFFER_OUTPUT) {
      in_types[j] = v->type;
      order_of_strides(&c->pb->outputs[out->in[j].index], &in_types[j]);
    } else {
      in_types[j] = c->store[v->id];
    }
    din[j] = *resolve(out->in[j], c->pb, c->desc);
  }
  add_binding_inputs(c, set, out, in_types, din, seen);
  /* Outputs: what the group computes for later groups or the parent. */
  for (int i = 0; i < c->n; i++) {
    const fz_value *v = c->w->ops[i]->result;
    if (!set[i] || !used_outside(c, v, set))
      continue;
    int j = out->num_outputs++;
    out->out_vals[j] = v;
    out->out[j] = ref_of(c, v);
    if (out->out[j].kind == FZ_BUFFER_INTERMEDIATE) {
      out_lay[j] = &c->store[v->id];
    } else if (!v->type.has_layout) {
      out_types[j] = v->type;
      order_of_strides(&c->pb->outputs[out->out[j].index], &out_types[j]);
      out_lay[j] = &out_types[j];
    }
    dout[j] = *resolve(out->out[j], c->pb, c->desc);
  }
  fz_extract x = {.parent = c->w, .name = name, .ops = flags,
                  .num_inputs = out->num_inputs, .inputs = out->in_vals,
                  .input_types = in_types, .num_outputs = out->num_outputs,
                  .outputs = out->out_vals, .output_layouts = out_lay};
  st = fz_extract_fusion(&x, &out->f, NULL, err);
  if (st != FZ_OK)
    goto done;
  fz_problem pb = {.fusion = out->f, .inputs = din, .outputs = dout,
                   .symbols = c->pb->symbols, .device = c->pb->device};
  out->scheduler = fz_schedule_pick(&pb);
  if (!out->scheduler && why) {
    *why = condensed_reasons(&pb);
    if (!*why)
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
done:
  free(seen);
  free(flags);
  free(in_types);
  free(out_types);
  free(out_lay);
  free(din);
  free(dout);
  if (st != FZ_OK)
    cand_free(out);
  return st;
}

/* ---- set up ------------------------------------------------------------- */

static bool needs_copy(const fz_fusion *w, int j) {
  const fz_value *v = w->outputs[j];
  if (v->kind == FZ_VALUE_INPUT)
    return true;
  for (int k = 0; k < j; k++)
    if (w->outputs[k] == v)
      return true;
  return false;
}

static bool name_taken(const fz_fusion *f, const char *name) {
  for (int i = 0; i < f->num_inputs; i++)
    if (f->inputs[i]->name && strcmp(f->inputs[i]->name, name) == 0)
      return true;
  for (int i = 0; i < f->num_ops; i++)
    if (f->ops[i]->result->name && strcmp(f->ops[i]->result->name, name) == 0)
      return true;
  return false;
}

/* Names unnamed values as the printer numbers them, so that segments,
 * notes and errors name values as the printed parent does. */
static fz_status name_like_printer(fz_fusion *w, fz_error *err) {
  int *number = fz_print_value_numbers(w);
  if (!number)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < w->num_inputs + w->num_ops; i++) {
    fz_value *v =
        i < w->num_inputs ? w->inputs[i] : w->ops[i - w->num_inputs]->result;
    if (v->name)
      continue;
    char name[24];
    snprintf(name, sizeof name, "%d", number[v->id]);
    v->name = fz_arena_strdup(w->arena, name);
  }
  free(number);
  return FZ_OK;
}

/* W: the parent, with a `set` for each output that needs its own write. */
static fz_status make_w(ctx *c, fz_error *err) {
  const fz_fusion *p = c->parent;
  bool *all = xcalloc((size_t)p->num_ops, sizeof *all);
  fz_type *types = xcalloc((size_t)p->num_inputs, sizeof *types);
  fz_value **map = xcalloc((size_t)p->next_value_id, sizeof *map);
  fz_status st = FZ_OK;
  if (!all || !types || !map) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < p->num_ops; i++)
    all[i] = true;
  for (int i = 0; i < p->num_inputs; i++)
    types[i] = p->inputs[i]->type;
  fz_extract x = {.parent = p, .name = p->name, .ops = all,
                  .num_inputs = p->num_inputs,
                  .inputs = (const fz_value *const *)p->inputs,
                  .input_types = types, .num_outputs = p->num_outputs,
                  .outputs = (const fz_value *const *)p->outputs};
  st = fz_extract_fusion(&x, &c->w, map, err);
  if (st != FZ_OK)
    goto done;
  fz_fusion *w = c->w;
  FZ_CHECK(w->num_ops == p->num_ops);
  st = name_like_printer(w, err);
  if (st != FZ_OK)
    goto done;
  for (int j = 0; j < w->num_outputs; j++) {
    if (!needs_copy(w, j))
      continue;
    fz_value *v = w->outputs[j];
    fz_value *copy = fz_set(w, v, err);
    if (!copy) {
      st = FZ_ERR_INTERNAL;
      goto done;
    }
    if (v->name) {
      char name[256];
      for (int k = j;; k++) {
        snprintf(name, sizeof name, "%.200s.copy%d", v->name, k);
        if (!name_taken(w, name))
          break;
      }
      copy->name = fz_arena_strdup(w->arena, name);
    }
    w->outputs[j] = copy;
  }
  c->n = w->num_ops;
  c->nv = w->next_value_id;
  c->parent_of = xcalloc((size_t)c->nv, sizeof *c->parent_of);
  if (!c->parent_of) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < p->num_inputs; i++)
    c->parent_of[map[p->inputs[i]->id]->id] = p->inputs[i];
  for (int i = 0; i < p->num_ops; i++)
    c->parent_of[map[p->ops[i]->result->id]->id] = p->ops[i]->result;
done:
  free(all);
  free(types);
  free(map);
  return st;
}

static int64_t value_bytes(const fz_value *v, const int64_t *symbols) {
  int64_t n = (int64_t)fz_dtype_size(v->type.dtype);
  for (int i = 0; i < v->type.rank; i++) {
    int64_t s = fz_axis_size(&v->type.axes[i], symbols);
    n = s > 0 && n > INT64_MAX / s ? INT64_MAX : n * s;
  }
  return n;
}

/* Per W value: producer, first output index, size, and the layout it gets
 * as an intermediate (declared, else propagated on a copy of W). */
static fz_status analyse(ctx *c, fz_error *err) {
  fz_fusion *w = c->w;
  size_t nv = (size_t)c->nv;
  c->producer = xcalloc(nv, sizeof *c->producer);
  c->out_index = xcalloc(nv, sizeof *c->out_index);
  c->live = xcalloc((size_t)c->n, sizeof *c->live);
  c->store = xcalloc(nv, sizeof *c->store);
  c->desc = xcalloc(nv, sizeof *c->desc);
  c->bytes = xcalloc(nv, sizeof *c->bytes);
  c->group = xcalloc((size_t)c->n, sizeof *c->group);
  c->reach = xcalloc((size_t)c->n * (size_t)c->n, 1);
  bool *all = xcalloc((size_t)c->n, sizeof *all);
  fz_type *types = xcalloc((size_t)w->num_inputs, sizeof *types);
  fz_value **map = xcalloc(nv, sizeof *map);
  fz_fusion *l = NULL;
  fz_status st = FZ_OK;
  if (!c->producer || !c->out_index || !c->live || !c->store || !c->desc ||
      !c->bytes || !c->group || !c->reach || !all || !types || !map) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t id = 0; id < nv; id++)
    c->producer[id] = c->out_index[id] = -1;
  for (int i = 0; i < c->n; i++)
    c->producer[w->ops[i]->result->id] = i;
  for (int j = w->num_outputs - 1; j >= 0; j--)
    c->out_index[w->outputs[j]->id] = j;
  for (int j = 0; j < w->num_outputs; j++)
    if (c->producer[w->outputs[j]->id] >= 0)
      c->live[c->producer[w->outputs[j]->id]] = true;
  for (int i = c->n - 1; i >= 0; i--) {
    const fz_op *op = w->ops[i];
    for (int k = 0; c->live[i] && k < op->num_operands; k++)
      if (op->operands[k]->kind == FZ_VALUE_RESULT)
        c->live[c->producer[op->operands[k]->id]] = true;
    c->group[i] = c->live[i] ? i : -1;
  }

  for (int i = 0; i < c->n; i++)
    all[i] = true;
  for (int i = 0; i < w->num_inputs; i++)
    types[i] = w->inputs[i]->type;
  fz_extract x = {.parent = w, .name = w->name, .ops = all,
                  .num_inputs = w->num_inputs,
                  .inputs = (const fz_value *const *)w->inputs,
                  .input_types = types, .num_outputs = w->num_outputs,
                  .outputs = (const fz_value *const *)w->outputs};
  st = fz_extract_fusion(&x, &l, map, err);
  if (st == FZ_OK)
    st = fz_pass_alloc_order(l, err);
  if (st != FZ_OK)
    goto done;
  for (int i = 0; i < c->n; i++) {
    const fz_value *v = w->ops[i]->result;
    fz_type t = map[v->id]->type;
    if (!t.has_layout)
      fz_type_set_row_major(&t);
    for (int p = 0; p < t.rank; p++)
      t.contiguous[p] = true;
    c->store[v->id] = t;
    fz_intermediate im = {.value = v, .type = t};
    fz_intermediate_desc(&im, c->pb->symbols, &c->desc[v->id]);
  }
  for (int i = 0; i < w->num_inputs; i++)
    c->bytes[w->inputs[i]->id] = value_bytes(w->inputs[i], c->pb->symbols);
  for (int i = 0; i < c->n; i++)
    c->bytes[w->ops[i]->result->id] =
        value_bytes(w->ops[i]->result, c->pb->symbols);
done:
  fz_fusion_destroy(l);
  free(all);
  free(types);
  free(map);
  return st;
}

/* ---- the group graph ---------------------------------------------------- */

/* reach[a*n+b]: a path of one or more edges leads from group a to group b. */
static void compute_reach(ctx *c) {
  int n = c->n;
  memset(c->reach, 0, (size_t)n * (size_t)n);
  /* Groups need not be contiguous in SSA order, so one sweep does not
   * close the relation; sweep to a fixpoint (a few rounds in practice). */
  bool changed = true;
  while (changed) {
    changed = false;
    for (int i = 0; i < n; i++) {
      if (c->group[i] < 0)
        continue;
      int b = c->group[i];
      const fz_op *op = c->w->ops[i];
      for (int k = 0; k < op->num_operands; k++) {
        const fz_value *v = op->operands[k];
        if (v->kind != FZ_VALUE_RESULT)
          continue;
        int a = c->group[c->producer[v->id]];
        if (a == b)
          continue;
        /* a -> b, so a reaches b and whatever b reaches */
        unsigned char *ra = c->reach + (size_t)a * (size_t)n;
        const unsigned char *rb = c->reach + (size_t)b * (size_t)n;
        if (!ra[b])
          ra[b] = 1, changed = true;
        for (int g = 0; g < n; g++)
          if (rb[g] && !ra[g])
            ra[g] = 1, changed = true;
      }
    }
  }
}

static bool reaches(const ctx *c, int a, int b) {
  return c->reach[(size_t)a * (size_t)c->n + (size_t)b] != 0;
}

/* A third group on a path between a and b, or -1. */
static int between(const ctx *c, int a, int b) {
  for (int g = 0; g < c->n; g++) {
    if (c->group[g] != g || g == a || g == b)
      continue;
    if ((reaches(c, a, g) && reaches(c, g, b)) ||
        (reaches(c, b, g) && reaches(c, g, a)))
      return g;
  }
  return -1;
}

/* ---- merging ------------------------------------------------------------ */

typedef struct edge {
  int a, b;
  int64_t bytes;
} edge;

static int cmp_edge(const void *x, const void *y) {
  const edge *p = x, *q = y;
  if (p->bytes != q->bytes)
    return p->bytes > q->bytes ? -1 : 1;
  if (p->a != q->a)
    return p->a < q->a ? -1 : 1;
  return (p->b > q->b) - (p->b < q->b);
}

static void add_edge(edge *edges, int *count, int a, int b, int64_t bytes) {
  for (int e = 0; e < *count; e++)
    if (edges[e].a == a && edges[e].b == b) {
      if (bytes > edges[e].bytes)
        edges[e].bytes = bytes;
      return;
    }
  edges[(*count)++] = (edge){a, b, bytes};
}

/* Producer->consumer pairs of groups, or (horizontal) pairs of unrelated
 * groups that read one tensor, each with the largest tensor between them. */
static int collect(const ctx *c, bool horizontal, edge *edges) {
  int count = 0;
  for (int i = 0; i < c->n; i++) {
    if (c->group[i] < 0)
      continue;
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind == FZ_VALUE_LITERAL)
        continue;
      int src = c->producer[v->id] >= 0 ? c->group[c->producer[v->id]] : -1;
      if (!horizontal) {
        if (src >= 0 && src != c->group[i])
          add_edge(edges, &count, src, c->group[i], c->bytes[v->id]);
        continue;
      }
      for (int j = 0; j < i; j++) {
        if (c->group[j] < 0 || c->group[j] == c->group[i] ||
            c->group[j] == src)
          continue;
        const fz_op *o = c->w->ops[j];
        bool reads = false;
        for (int m = 0; m < o->num_operands; m++)
          reads |= o->operands[m] == v;
        int a = c->group[j], b = c->group[i];
        if (!reads || reaches(c, a, b) || reaches(c, b, a))
          continue;
        add_edge(edges, &count, a < b ? a : b, a < b ? b : a, c->bytes[v->id]);
      }
    }
  }
  qsort(edges, (size_t)count, sizeof *edges, cmp_edge);
  return count;
}

static const char *known_rejection(const ctx *c, const unsigned char *set) {
  for (int r = 0; r < c->num_rejected; r++)
    if (memcmp(c->rejected[r].ops, set, (size_t)c->n) == 0)
      return c->rejected[r].why;
  return NULL;
}

static fz_status remember(ctx *c, unsigned char *set, char *why,
                          fz_error *err) {
  if (c->num_rejected == c->cap_rejected) {
    int cap = c->cap_rejected ? 2 * c->cap_rejected : 16;
    rejected_set *r = realloc(c->rejected, sizeof *r * (size_t)cap);
    if (!r) {
      free(set);
      free(why);
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    }
    c->rejected = r;
    c->cap_rejected = cap;
  }
  c->rejected[c->num_rejected++] = (rejected_set){set, why};
  return FZ_OK;
}

/* Try merging groups a and b; *merged says whether it was taken. */
static fz_status try_merge(ctx *c, int a, int b, bool horizontal, bool *merged,
                           fz_error *err) {
  *merged = false;
  const char *kind = horizontal ? " (siblings)" : "";
  int third = between(c, a, b);
  if (third >= 0) {
    fz_buf why = {0};
    unsigned char *set = xcalloc((size_t)c->n, 1);
    if (set) {
      group_set(c, third, set);
      fz_buf_puts(&why, "would form a cycle through ");
      put_group(c, &why, set);
    }
    free(set);
    char *text = fz_buf_take(&why);
    if (!text)
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    note(c, a, b, kind, text);
    free(text);
    return FZ_OK;
  }
  unsigned char *set = xcalloc((size_t)c->n, 1);
  if (!set)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < c->n; i++)
    set[i] = c->group[i] >= 0 && (c->group[i] == a || c->group[i] == b);
  const char *known = known_rejection(c, set);
  if (known) {
    note(c, a, b, kind, known);
    free(set);
    return FZ_OK;
  }
  cand cd;
  char *why = NULL;
  fz_status st = build_cand(c, set, c->parent->name, &cd, &why, err);
  if (st != FZ_OK) {
    free(set);
    return st;
  }
  bool ok = cd.scheduler != NULL;
  cand_free(&cd);
  if (!ok) {
    note(c, a, b, kind, why);
    return remember(c, set, why, err);
  }
  free(set);
  int to = a < b ? a : b, from = a < b ? b : a;
  for (int i = 0; i < c->n; i++)
    if (c->group[i] == from)
      c->group[i] = to;
  *merged = true;
  return FZ_OK;
}

static fz_status merge_all(ctx *c, fz_error *err) {
  size_t cap = (size_t)c->n * (size_t)c->n + 1;
  edge *edges = malloc(sizeof *edges * cap);
  if (!edges)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  fz_status st = FZ_OK;
  for (bool merged = true; merged && st == FZ_OK;) {
    merged = false;
    reset_notes(c);
    compute_reach(c);
    for (int pass = 0; pass < 2 && !merged && st == FZ_OK; pass++) {
      int count = collect(c, pass == 1, edges);
      for (int e = 0; e < count && !merged && st == FZ_OK; e++)
        st = try_merge(c, edges[e].a, edges[e].b, pass == 1, &merged, err);
    }
  }
  free(edges);
  return st;
}

/* ---- the segmentation --------------------------------------------------- */

void fz_segmentation_destroy(fz_segmentation *s) {
  if (!s)
    return;
  for (int k = 0; k < s->num_segments; k++) {
    fz_segment *seg = &s->segments[k];
    if (seg->owned)
      fz_fusion_destroy(seg->fusion);
    free(seg->inputs);
    free(seg->outputs);
    free(seg->parent_ops);
  }
  free(s->segments);
  free(s->intermediates);
  free(s->notes);
  free(s);
}

static fz_status whole(const fz_problem *pb, const char *scheduler,
                       fz_segmentation *s, fz_error *err) {
  fz_fusion *f = (fz_fusion *)pb->fusion; /* owned = false: never freed */
  s->segments = xcalloc(1, sizeof *s->segments);
  if (!s->segments)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  s->num_segments = 1;
  fz_segment *seg = &s->segments[0];
  *seg = (fz_segment){.fusion = f, .owned = false, .scheduler = scheduler,
                      .num_ops = f->num_ops};
  seg->inputs = xcalloc((size_t)f->num_inputs, sizeof *seg->inputs);
  seg->outputs = xcalloc((size_t)f->num_outputs, sizeof *seg->outputs);
  seg->parent_ops = xcalloc((size_t)f->num_ops, sizeof *seg->parent_ops);
  if (!seg->inputs || !seg->outputs || !seg->parent_ops)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < f->num_inputs; i++)
    seg->inputs[i] = (fz_buffer_ref){FZ_BUFFER_INPUT, i};
  for (int j = 0; j < f->num_outputs; j++)
    seg->outputs[j] = (fz_buffer_ref){FZ_BUFFER_OUTPUT, j};
  for (int i = 0; i < f->num_ops; i++)
    seg->parent_ops[i] = i;
  return FZ_OK;
}

/* Groups in a topological order, the one holding the earliest op first
 * among those ready. Returns the count. */
static int order_groups(ctx *c, int *order) {
  int n = c->n, count = 0;
  bool *done = xcalloc((size_t)n, sizeof *done);
  if (!done)
    return -1;
  for (;;) {
    int pick = -1;
    for (int g = 0; g < n && pick < 0; g++) {
      if (c->group[g] != g || done[g])
        continue;
      bool ready = true;
      for (int h = 0; h < n && ready; h++)
        ready = !(c->group[h] == h && !done[h] && h != g && reaches(c, h, g));
      if (ready)
        pick = g;
    }
    if (pick < 0)
      break;
    done[pick] = true;
    order[count++] = pick;
  }
  free(done);
  return count;
}

static fz_status unsupported(ctx *c, int g, fz_error *err) {
  unsigned char *set = xcalloc((size_t)c->n, 1);
  if (!set)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  group_set(c, g, set);
  cand cd;
  char *why = NULL;
  fz_status st = build_cand(c, set, c->parent->name, &cd, &why, err);
  free(set);
  if (st != FZ_OK)
    return st;
  cand_free(&cd);
  const fz_op *op = c->w->ops[g];
  fz_buf b = {0};
  put_label(&b, op->result);
  char *label = fz_buf_take(&b);
  st = fz_error_at(err, op->loc, FZ_ERR_UNSUPPORTED,
                   "fusion @%s: no scheduler accepts %s (%s) even as a "
                   "segment of its own (%s)",
                   c->parent->name, label ? label : "?",
                   fz_op_table[op->code].name, why ? why : "no reasons");
  free(label);
  free(why);
  return st;
}

/* Moves the final groups into s, numbering the intermediates. */
static fz_status build_segments(ctx *c, fz_segmentation *s, fz_error *err) {
  int *order = xcalloc((size_t)c->n, sizeof *order);
  int *im_index = xcalloc((size_t)c->nv, sizeof *im_index);
  unsigned char *set = xcalloc((size_t)c->n, 1);
  s->segments = xcalloc((size_t)c->n, sizeof *s->segments);
  s->intermediates = xcalloc((size_t)c->nv, sizeof *s->intermediates);
  fz_status st = FZ_OK;
  int count = order && im_index && set ? order_groups(c, order) : -1;
  if (count < 0 || !s->segments || !s->intermediates) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int id = 0; id < c->nv; id++)
    im_index[id] = -1;
  for (int k = 0; k < count && st == FZ_OK; k++) {
    int g = order[k];
    group_set(c, g, set);
    char name[256];
    snprintf(name, sizeof name, "%.200s_s%d", c->parent->name, k);
    cand cd;
    st = build_cand(c, set, name, &cd, NULL, err);
    if (st != FZ_OK)
      break;
    if (!cd.scheduler) {
      cand_free(&cd);
      st = unsupported(c, g, err);
      break;
    }
    fz_segment *seg = &s->segments[s->num_segments++];
    *seg = (fz_segment){.fusion = cd.f, .owned = true,
                        .scheduler = cd.scheduler, .inputs = cd.in,
                        .outputs = cd.out};
    seg->parent_ops = xcalloc((size_t)c->n, sizeof *seg->parent_ops);
    cd.f = NULL;
    cd.in = cd.out = NULL;
    if (!seg->parent_ops) {
      cand_free(&cd);
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    for (int i = 0; i < c->parent->num_ops; i++)
      if (set[i])
        seg->parent_ops[seg->num_ops++] = i;
    for (int j = 0; j < cd.num_outputs; j++) {
      fz_buffer_ref *r = &seg->outputs[j];
      if (r->kind != FZ_BUFFER_INTERMEDIATE)
        continue;
      const fz_value *v = cd.out_vals[j];
      FZ_CHECK(im_index[v->id] < 0 && c->parent_of[v->id]);
      im_index[v->id] = s->num_intermediates;
      s->intermediates[s->num_intermediates++] =
          (fz_intermediate){.value = c->parent_of[v->id],
                            .type = c->store[v->id]};
      r->index = im_index[v->id];
    }
    for (int j = 0; j < cd.num_inputs; j++) {
      fz_buffer_ref *r = &seg->inputs[j];
      if (r->kind != FZ_BUFFER_INTERMEDIATE)
        continue;
      FZ_CHECK(im_index[r->index] >= 0); /* written by an earlier segment */
      r->index = im_index[r->index];
    }
    cand_free(&cd);
  }
done:
  free(order);
  free(im_index);
  free(set);
  return st;
}

static void ctx_free(ctx *c) {
  fz_fusion_destroy(c->w);
  free(c->parent_of);
  free(c->producer);
  free(c->out_index);
  free(c->live);
  free(c->store);
  free(c->desc);
  free(c->bytes);
  free(c->group);
  free(c->reach);
  for (int r = 0; r < c->num_rejected; r++) {
    free(c->rejected[r].ops);
    free(c->rejected[r].why);
  }
  free(c->rejected);
  free(c->notes.data);
}

fz_status fz_segment_fusion(const fz_problem *problem, fz_segmentation **out,
                            fz_error *err) {
  if (!out)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_segment_fusion: out is NULL");
  *out = NULL;
  if (!problem || !problem->fusion)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_segment_fusion: no problem or fusion");
  fz_segmentation *s = xcalloc(1, sizeof *s);
  if (!s)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  s->parent = problem->fusion;
  const char *whole_scheduler = fz_schedule_pick(problem);
  fz_status st;
  if (whole_scheduler) {
    st = whole(problem, whole_scheduler, s, err);
  } else {
    ctx c = {.pb = problem, .parent = problem->fusion};
    st = make_w(&c, err);
    if (st == FZ_OK)
      st = analyse(&c, err);
    if (st == FZ_OK)
      st = merge_all(&c, err);
    if (st == FZ_OK)
      st = build_segments(&c, s, err);
    if (st == FZ_OK) {
      if (c.more_notes)
        fz_buf_printf(&c.notes, "... and %d more\n", c.more_notes);
      if (c.notes.len || c.notes.oom) {
        s->notes = fz_buf_take(&c.notes);
        c.notes = (fz_buf){0};
        if (!s->notes)
          st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      }
    }
    ctx_free(&c);
  }
  if (st != FZ_OK) {
    fz_segmentation_destroy(s);
    return st;
  }
  *out = s;
  return FZ_OK;
}
