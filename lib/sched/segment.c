/* segment.c - splitting a fusion that no single scheduler accepts into
 * segments that schedulers do.
 *
 * The segmenter works on W, a copy of the parent in which every output
 * that is an input of the fusion or repeats an earlier output is replaced
 * by a `set` of it: a segment writes each output buffer exactly once, so
 * such outputs need an op that writes them, and making it an ordinary op
 * lets a strategy place it like any other. W's ops 0..n-1 are the
 * parent's ops in the same order; the copies come after. Ops that feed no
 * output are left out.
 *
 * Two strategies group W's live ops (segment_ctx.h):
 *  - greedy merging, as nvFuser does (segment_greedy.c), for fusions of
 *    up to FZ_SEG_GREEDY_MAX_OPS live ops: the fewest segments it finds;
 *  - cutting in program order into the longest runs of consecutive ops a
 *    scheduler accepts (segment_pack.c), for larger ones, where the
 *    greedy search would take minutes: near-linear time, segments valid
 *    but not necessarily the fewest.
 * This file holds what both share: W and its analysis, building a group
 * as a fusion of its own and asking the schedulers about it, and turning
 * the final groups into segments.
 *
 * What a scheduler sees for a group: a fusion (segment_extract.c) whose
 * inputs are what the group reads from outside it and whose outputs are
 * what later groups or the parent need; the descriptors of parent inputs
 * and outputs come from the problem; an intermediate is dense in its
 * declared layout, else in the order allocation-order propagation gives
 * it (computed once on a copy of W), so that it is written in the memory
 * order of what it is computed from.
 *
 * Building a group costs the size of the group and of what it reads: the
 * users of every value are indexed once, and the scratch arrays that mark
 * a group's ops and values are stamped per group rather than cleared.
 */
#include "sched/segment_ctx.h"

#include "sched/pass.h"
#include "sched/itable.h"
#include "sched/segment_extract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

void fz_seg_cand_free(fz_seg_cand *c) {
  fz_fusion_destroy(c->f);
  free(c->in);
  free(c->out);
  free(c->in_vals);
  free(c->out_vals);
  *c = (fz_seg_cand){0};
}

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
                      .symbols = parent->symbols, .device = parent->device,
                      .exact_sizes = parent->exact_sizes};
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

void fz_seg_put_label(fz_buf *b, const fz_value *v) {
  fz_print_value_label(b, v, NULL);
}

bool fz_seg_note_room(const fz_seg_ctx *c) {
  return c->num_notes < FZ_SEG_MAX_NOTES;
}

void fz_seg_note(fz_seg_ctx *c, const char *text) {
  if (!fz_seg_note_room(c)) {
    c->more_notes++;
    return;
  }
  size_t len = strlen(text);
  if (len > FZ_SEG_NOTE_CHARS)
    fz_buf_printf(&c->notes, "%.*s...\n", FZ_SEG_NOTE_CHARS - 3, text);
  else
    fz_buf_printf(&c->notes, "%s\n", text);
  c->num_notes++;
}

/* ---- building a group --------------------------------------------------- */

static bool in_group(const fz_seg_ctx *c, int op) {
  return c->op_stamp[op] == c->stamp;
}

static bool used_outside(const fz_seg_ctx *c, const fz_value *v) {
  if (c->out_index[v->id] >= 0)
    return true;
  for (int u = c->user_start[v->id]; u < c->user_start[v->id + 1]; u++) {
    int i = c->users[u];
    if (!in_group(c, i) && c->live[i])
      return true;
  }
  return false;
}

static fz_buffer_ref ref_of(const fz_seg_ctx *c, const fz_value *v) {
  if (v->kind == FZ_VALUE_INPUT)
    return (fz_buffer_ref){FZ_BUFFER_INPUT, v->input_index};
  if (c->out_index[v->id] >= 0)
    return (fz_buffer_ref){FZ_BUFFER_OUTPUT, c->out_index[v->id]};
  return (fz_buffer_ref){FZ_BUFFER_INTERMEDIATE, v->id};
}

/* fn for a symbol and, for a derived one (`N*K`), the base symbols it is
 * computed from, which must be bound for it to be. */
static void with_bases(fz_seg_ctx *c, int sym,
                       void (*fn)(fz_seg_ctx *, int, void *), void *arg) {
  fn(c, sym, arg);
  const fz_symbol *s = &c->w->symbols[sym];
  for (int k = 0; k < s->num_terms; k++)
    fn(c, s->terms[k].symbol, arg);
}

/* Calls fn(c, symbol, arg) for each symbol an extent of t names. */
static void each_symbol(fz_seg_ctx *c, const fz_type *t,
                        void (*fn)(fz_seg_ctx *, int, void *), void *arg) {
  for (int i = 0; i < t->rank; i++) {
    const fz_axis *a = &t->axes[i];
    if (a->kind == FZ_AXIS_ITER && a->extent.symbol >= 0)
      with_bases(c, a->extent.symbol, fn, arg);
    if (a->kind == FZ_AXIS_BROADCAST && a->expanded &&
        a->expanded_to.symbol >= 0)
      with_bases(c, a->expanded_to.symbol, fn, arg);
  }
}

typedef struct int_list {
  int *items;
  int count, cap;
} int_list;

static bool list_push(int_list *l, int v) {
  if (l->count == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    int *grown = realloc(l->items, sizeof *grown * (size_t)cap);
    if (!grown)
      return false;
    l->items = grown;
    l->cap = cap;
  }
  l->items[l->count++] = v;
  return true;
}

static void need_symbol(fz_seg_ctx *c, int sym, void *arg) {
  int_list *need = arg;
  if (c->need_stamp[sym] == c->stamp)
    return;
  c->need_stamp[sym] = c->stamp;
  if (!list_push(need, sym))
    c->need_stamp[sym] = 0; /* dropped: left unbound, as out of memory */
}

static void have_symbol(fz_seg_ctx *c, int sym, void *arg) {
  (void)arg;
  c->have_stamp[sym] = c->stamp;
}

static int cmp_int(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y;
  return (a > b) - (a < b);
}

/* Inputs first, in the parent's order, then results in SSA order: a group
 * holding every op reads its inputs as the parent does. */
typedef struct keyed_read {
  int key;
  const fz_value *v;
} keyed_read;

static int cmp_read(const void *x, const void *y) {
  int a = ((const keyed_read *)x)->key, b = ((const keyed_read *)y)->key;
  return (a > b) - (a < b);
}

static fz_status sort_reads(const fz_seg_ctx *c, const fz_value **reads,
                            int n, fz_error *err) {
  keyed_read *k = xcalloc((size_t)n, sizeof *k);
  if (!k)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int j = 0; j < n; j++)
    k[j] = (keyed_read){reads[j]->kind == FZ_VALUE_INPUT
                            ? reads[j]->input_index
                            : c->w->num_inputs + c->producer[reads[j]->id],
                        reads[j]};
  qsort(k, (size_t)n, sizeof *k, cmp_read);
  for (int j = 0; j < n; j++)
    reads[j] = k[j].v;
  free(k);
  return FZ_OK;
}

/* The values the group reads from outside it, in read_key order, then the
 * inputs that only bind symbols: a symbol that only the group's ops name
 * (the shape of a full, reshape or expand; a symbol read) is bound by no
 * input of the group; a parent input that carries it becomes an input of
 * the segment, unread, so that the segment binds its symbols from its
 * inputs like any fusion. */
static fz_status collect_reads(fz_seg_ctx *c, const int *ops, int num_ops,
                               const fz_value ***out, int *count,
                               fz_error *err) {
  const fz_value **reads = xcalloc((size_t)num_ops * 3 + 1, sizeof *reads);
  int_list need = {0};
  int n = 0;
  if (!reads)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int j = 0; j < num_ops; j++) {
    const fz_op *op = c->w->ops[ops[j]];
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind == FZ_VALUE_LITERAL ||
          (c->producer[v->id] >= 0 && in_group(c, c->producer[v->id])) ||
          c->value_stamp[v->id] == c->stamp)
        continue;
      c->value_stamp[v->id] = c->stamp;
      reads[n++] = v;
    }
    each_symbol(c, &op->result->type, need_symbol, &need);
    if (op->code == FZ_OP_SYMBOL) /* reads its symbol's value */
      with_bases(c, op->symbol, need_symbol, &need);
  }
  if (sort_reads(c, reads, n, err) != FZ_OK) {
    free(reads);
    free(need.items);
    return FZ_ERR_OUT_OF_MEMORY;
  }
  for (int j = 0; j < n; j++)
    each_symbol(c, &reads[j]->type, have_symbol, NULL);
  if (need.count > 1)
    qsort(need.items, (size_t)need.count, sizeof *need.items, cmp_int);
  int binding = 0;
  for (int j = 0; j < need.count; j++)
    binding += c->have_stamp[need.items[j]] != c->stamp;
  const fz_value **all = realloc(reads, sizeof *all * (size_t)(n + binding + 1));
  if (!all) {
    free(reads);
    free(need.items);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
  reads = all;
  for (int j = 0; j < need.count; j++) {
    int sym = need.items[j];
    if (c->have_stamp[sym] == c->stamp)
      continue;
    /* The first input naming the symbol: it is not read (or the symbol
     * would be had), so it is not an input of the group yet. */
    int i = c->symbol_input[sym];
    if (i < 0)
      continue; /* left unbound: the executor binds from the parent */
    const fz_value *v = c->w->inputs[i];
    FZ_CHECK(c->value_stamp[v->id] != c->stamp);
    c->value_stamp[v->id] = c->stamp;
    reads[n++] = v;
    each_symbol(c, &v->type, have_symbol, NULL);
  }
  free(need.items);
  *out = reads;
  *count = n;
  return FZ_OK;
}

fz_status fz_seg_build_cand(fz_seg_ctx *c, const int *ops, int num_ops,
                            const char *name, fz_seg_cand *out, char **why,
                            fz_error *err) {
  *out = (fz_seg_cand){0};
  c->stamp++;
  for (int j = 0; j < num_ops; j++)
    c->op_stamp[ops[j]] = c->stamp;
  int ni = 0;
  fz_status st = collect_reads(c, ops, num_ops, &out->in_vals, &ni, err);
  if (st != FZ_OK)
    return st;
  size_t nin = (size_t)ni + 1, nout = (size_t)num_ops + 1;
  out->out_vals = xcalloc(nout, sizeof *out->out_vals);
  out->in = xcalloc(nin, sizeof *out->in);
  out->out = xcalloc(nout, sizeof *out->out);
  fz_type *in_types = xcalloc(nin, sizeof *in_types);
  fz_type *out_types = xcalloc(nout, sizeof *out_types);
  const fz_type **out_lay = xcalloc(nout, sizeof *out_lay);
  fz_tensor_desc *din = xcalloc(nin, sizeof *din);
  fz_tensor_desc *dout = xcalloc(nout, sizeof *dout);
  if (!out->out_vals || !out->in || !out->out || !in_types || !out_types ||
      !out_lay || !din || !dout) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  out->num_inputs = ni;
  for (int j = 0; j < ni; j++) {
    const fz_value *v = out->in_vals[j];
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
  /* Outputs: what the group computes for later groups or the parent. */
  for (int jj = 0; jj < num_ops; jj++) {
    const fz_value *v = c->w->ops[ops[jj]]->result;
    if (!used_outside(c, v))
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
  if (!why && !fz_outputs_params_fit(out->num_outputs, NULL)) {
    /* no scheduler takes this many outputs (plan.h): no need to build it */
    out->scheduler = NULL;
    goto done;
  }
  fz_extract x = {.parent = c->w, .name = name, .ops = ops,
                  .num_ops = num_ops, .num_inputs = out->num_inputs,
                  .inputs = out->in_vals, .input_types = in_types,
                  .num_outputs = out->num_outputs, .outputs = out->out_vals,
                  .output_layouts = out_lay};
  st = fz_extract_fusion(&x, &out->f, c->map, err);
  for (int j = 0; j < ni; j++) /* the map is all NULL between groups */
    c->map[out->in_vals[j]->id] = NULL;
  for (int j = 0; j < num_ops; j++)
    c->map[c->w->ops[ops[j]]->result->id] = NULL;
  if (st != FZ_OK)
    goto done;
  fz_problem pb = {.fusion = out->f, .inputs = din, .outputs = dout,
                   .symbols = c->pb->symbols, .device = c->pb->device,
                   .exact_sizes = c->pb->exact_sizes};
  /* one attempt per scheduler answers both which one and, when none, why */
  fz_reason reasons[FZ_NUM_SCHEDULERS];
  out->scheduler = fz_schedule_first(&pb, NULL, NULL, why ? reasons : NULL);
  if (!out->scheduler && why) {
    char text[FZ_SCHEDULE_REASONS_CHARS];
    fz_schedule_reasons(reasons, text, sizeof text);
    size_t len = strlen(text) + 1;
    if ((*why = malloc(len)))
      memcpy(*why, text, len);
    else
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
done:
  free(in_types);
  free(out_types);
  free(out_lay);
  free(din);
  free(dout);
  if (st != FZ_OK)
    fz_seg_cand_free(out);
  return st;
}

/* ---- set up ------------------------------------------------------------- */

typedef struct name_probe {
  const char *const *names;
  const char *name;
} name_probe;

static bool same_name(const void *ctx, int i) {
  const name_probe *p = ctx;
  return strcmp(p->names[i], p->name) == 0;
}

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The value names of a fusion, to find a free name for each copy without
 * a scan of every value per copy. */
typedef struct name_set {
  fz_itable table;
  const char **names;
  int count, cap;
} name_set;

static bool name_taken(const name_set *s, const char *name) {
  name_probe p = {s->names, name};
  return fz_itable_find(&s->table, name_hash(name), same_name, &p) >= 0;
}

static void name_add(name_set *s, fz_arena *arena, const char *name) {
  if (!name || name_taken(s, name))
    return;
  if (s->count == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    const char **grown = fz_arena_alloc(arena, sizeof *grown * (size_t)cap);
    if (s->count)
      memcpy(grown, s->names, sizeof *grown * (size_t)s->count);
    s->names = grown;
    s->cap = cap;
  }
  s->names[s->count] = name;
  fz_itable_add(&s->table, name_hash(name), s->count++);
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

static int *all_ops(int n) {
  int *ops = xcalloc((size_t)n, sizeof *ops);
  for (int i = 0; ops && i < n; i++)
    ops[i] = i;
  return ops;
}

/* Gives each output that is an input or repeats an earlier output a `set`
 * of its own, named after the value ("x.copy3": the first free among
 * .copyJ, .copyJ+1, ... for output J). */
static fz_status add_copies(fz_fusion *w, fz_error *err) {
  fz_arena *scratch = fz_arena_create();
  bool *written = xcalloc((size_t)w->next_value_id + 1, sizeof *written);
  name_set names = {0};
  fz_itable_init(&names.table, scratch);
  fz_status st = FZ_OK;
  if (!written) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < w->num_inputs; i++)
    name_add(&names, scratch, w->inputs[i]->name);
  for (int i = 0; i < w->num_ops; i++)
    name_add(&names, scratch, w->ops[i]->result->name);
  for (int j = 0; j < w->num_outputs; j++) {
    fz_value *v = w->outputs[j];
    bool copy = v->kind == FZ_VALUE_INPUT || written[v->id];
    written[v->id] = true;
    if (!copy)
      continue;
    fz_value *c = fz_set(w, v, err);
    if (!c) {
      st = FZ_ERR_INTERNAL;
      goto done;
    }
    if (v->name) {
      char name[256];
      for (int k = j;; k++) {
        snprintf(name, sizeof name, "%.200s.copy%d", v->name, k);
        if (!name_taken(&names, name))
          break;
      }
      c->name = fz_arena_strdup(w->arena, name);
      name_add(&names, scratch, c->name);
    }
    w->outputs[j] = c;
  }
done:
  free(written);
  fz_arena_destroy(scratch);
  return st;
}

/* W: the parent, with a `set` for each output that needs its own write. */
static fz_status make_w(fz_seg_ctx *c, fz_error *err) {
  const fz_fusion *p = c->parent;
  int *all = all_ops(p->num_ops);
  fz_type *types = xcalloc((size_t)p->num_inputs, sizeof *types);
  fz_value **map = xcalloc((size_t)p->next_value_id, sizeof *map);
  fz_status st = FZ_OK;
  if (!all || !types || !map) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < p->num_inputs; i++)
    types[i] = p->inputs[i]->type;
  fz_extract x = {.parent = p, .name = p->name, .ops = all,
                  .num_ops = p->num_ops, .num_inputs = p->num_inputs,
                  .inputs = (const fz_value *const *)p->inputs,
                  .input_types = types, .num_outputs = p->num_outputs,
                  .outputs = (const fz_value *const *)p->outputs};
  st = fz_extract_fusion(&x, &c->w, map, err);
  if (st != FZ_OK)
    goto done;
  fz_fusion *w = c->w;
  FZ_CHECK(w->num_ops == p->num_ops);
  st = name_like_printer(w, err);
  if (st == FZ_OK)
    st = add_copies(w, err);
  if (st != FZ_OK)
    goto done;
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

/* The ops reading each value, as one array in value id order. */
static fz_status index_users(fz_seg_ctx *c, fz_error *err) {
  c->user_start = xcalloc((size_t)c->nv + 2, sizeof *c->user_start);
  int total = 0;
  for (int i = 0; i < c->n; i++)
    total += c->w->ops[i]->num_operands;
  c->users = xcalloc((size_t)total + 1, sizeof *c->users);
  if (!c->user_start || !c->users)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < c->n; i++) {
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++)
      if (op->operands[k]->kind != FZ_VALUE_LITERAL)
        c->user_start[op->operands[k]->id + 2]++;
  }
  for (int id = 0; id < c->nv; id++)
    c->user_start[id + 2] += c->user_start[id + 1];
  for (int i = 0; i < c->n; i++) {
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++)
      if (op->operands[k]->kind != FZ_VALUE_LITERAL)
        c->users[c->user_start[op->operands[k]->id + 1]++] = i;
  }
  return FZ_OK;
}

static void first_input(fz_seg_ctx *c, int sym, void *arg) {
  int i = *(int *)arg;
  if (c->symbol_input[sym] < 0)
    c->symbol_input[sym] = i;
}

/* Per W value: producer, first output index, size, and the layout it gets
 * as an intermediate (declared, else propagated on a copy of W); the
 * users of each value, the first input naming each symbol, and the
 * scratch for building groups. */
static fz_status analyse(fz_seg_ctx *c, fz_error *err) {
  fz_fusion *w = c->w;
  size_t nv = (size_t)c->nv, ns = (size_t)w->num_symbols;
  c->producer = xcalloc(nv, sizeof *c->producer);
  c->out_index = xcalloc(nv, sizeof *c->out_index);
  c->live = xcalloc((size_t)c->n, sizeof *c->live);
  c->store = xcalloc(nv, sizeof *c->store);
  c->desc = xcalloc(nv, sizeof *c->desc);
  c->bytes = xcalloc(nv, sizeof *c->bytes);
  c->symbol_input = xcalloc(ns, sizeof *c->symbol_input);
  c->op_stamp = xcalloc((size_t)c->n, sizeof *c->op_stamp);
  c->value_stamp = xcalloc(nv, sizeof *c->value_stamp);
  c->need_stamp = xcalloc(ns, sizeof *c->need_stamp);
  c->have_stamp = xcalloc(ns, sizeof *c->have_stamp);
  c->map = xcalloc(nv, sizeof *c->map);
  fz_fusion *l = NULL;
  fz_status st = FZ_OK;
  if (!c->producer || !c->out_index || !c->live || !c->store || !c->desc ||
      !c->bytes || !c->symbol_input || !c->op_stamp || !c->value_stamp ||
      !c->need_stamp || !c->have_stamp || !c->map) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if ((st = index_users(c, err)) != FZ_OK)
    goto done;
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
    c->num_live += c->live[i];
  }
  for (size_t s = 0; s < ns; s++)
    c->symbol_input[s] = -1;
  for (int i = 0; i < w->num_inputs; i++)
    each_symbol(c, &w->inputs[i]->type, first_input, &i);

  /* a copy keeps W's own layouts undeclared; it has W's ops in order */
  l = fz_fusion_clone(w, err);
  st = l ? fz_pass_alloc_order(l, err) : FZ_ERR_INTERNAL;
  if (st != FZ_OK)
    goto done;
  for (int i = 0; i < c->n; i++) {
    const fz_value *v = w->ops[i]->result;
    fz_type t = l->ops[i]->result->type;
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

static fz_status unsupported(fz_seg_ctx *c, const int *ops, int num_ops,
                             fz_error *err) {
  fz_seg_cand cd;
  char *why = NULL;
  fz_status st =
      fz_seg_build_cand(c, ops, num_ops, c->parent->name, &cd, &why, err);
  if (st != FZ_OK)
    return st;
  fz_seg_cand_free(&cd);
  const fz_op *op = c->w->ops[ops[0]];
  fz_buf b = {0};
  fz_seg_put_label(&b, op->result);
  char *label = fz_buf_take(&b);
  if (num_ops == 1)
    st = fz_error_at(err, op->loc, FZ_ERR_UNSUPPORTED,
                      "fusion @%s: no scheduler accepts %s (%s) even as a "
                      "segment of its own (%s)",
                      c->parent->name, label ? label : "?",
                      fz_op_table[op->code].name, why ? why : "no reasons");
  else
    st = fz_error_at(err, op->loc, FZ_ERR_UNSUPPORTED,
                      "fusion @%s: no scheduler accepts the %d ops from %s "
                      "(%s) on, nor any run of them (%s)",
                      c->parent->name, num_ops, label ? label : "?",
                      fz_op_table[op->code].name, why ? why : "no reasons");
  free(label);
  free(why);
  return st;
}

/* Moves the final groups (in execution order) into s, numbering the
 * intermediates. */
static fz_status build_segments(fz_seg_ctx *c, const int *ops,
                                const int *start, int count,
                                fz_segmentation *s, fz_error *err) {
  int *im_index = xcalloc((size_t)c->nv, sizeof *im_index);
  s->segments = xcalloc((size_t)count, sizeof *s->segments);
  s->intermediates = xcalloc((size_t)c->nv, sizeof *s->intermediates);
  fz_status st = FZ_OK;
  if (!im_index || !s->segments || !s->intermediates) {
    free(im_index);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int id = 0; id < c->nv; id++)
    im_index[id] = -1;
  for (int k = 0; k < count && st == FZ_OK; k++) {
    const int *g = ops + start[k];
    int size = start[k + 1] - start[k];
    char name[256];
    snprintf(name, sizeof name, "%.200s_s%d", c->parent->name, k);
    fz_seg_cand cd;
    st = fz_seg_build_cand(c, g, size, name, &cd, NULL, err);
    if (st != FZ_OK)
      break;
    if (!cd.scheduler) {
      fz_seg_cand_free(&cd);
      st = unsupported(c, g, size, err);
      break;
    }
    fz_segment *seg = &s->segments[s->num_segments++];
    *seg = (fz_segment){.fusion = cd.f, .owned = true,
                        .scheduler = cd.scheduler, .inputs = cd.in,
                        .outputs = cd.out};
    seg->parent_ops = xcalloc((size_t)size, sizeof *seg->parent_ops);
    cd.f = NULL;
    cd.in = cd.out = NULL;
    if (!seg->parent_ops) {
      fz_seg_cand_free(&cd);
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    for (int i = 0; i < size; i++)
      if (g[i] < c->parent->num_ops) /* W's copies are not parent ops */
        seg->parent_ops[seg->num_ops++] = g[i];
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
    fz_seg_cand_free(&cd);
  }
  free(im_index);
  return st;
}

static void ctx_free(fz_seg_ctx *c) {
  fz_fusion_destroy(c->w);
  free(c->parent_of);
  free(c->producer);
  free(c->out_index);
  free(c->live);
  free(c->store);
  free(c->desc);
  free(c->bytes);
  free(c->user_start);
  free(c->users);
  free(c->symbol_input);
  free(c->op_stamp);
  free(c->value_stamp);
  free(c->need_stamp);
  free(c->have_stamp);
  free(c->map);
  free(c->notes.data);
}

static fz_status segment(fz_seg_ctx *c, fz_segmentation *s, fz_error *err) {
  fz_status st = make_w(c, err);
  if (st == FZ_OK)
    st = analyse(c, err);
  int *ops = NULL, *start = NULL, count = 0;
  if (st == FZ_OK)
    st = c->n <= FZ_SEG_GREEDY_MAX_OPS
             ? fz_seg_greedy(c, &ops, &start, &count, err)
             : fz_seg_pack(c, &ops, &start, &count, err);
  if (st == FZ_OK)
    st = build_segments(c, ops, start, count, s, err);
  free(ops);
  free(start);
  if (st != FZ_OK)
    return st;
  if (c->more_notes)
    fz_buf_printf(&c->notes, "... and %d more\n", c->more_notes);
  if (c->notes.len || c->notes.oom) {
    s->notes = fz_buf_take(&c->notes);
    if (!s->notes)
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
  return FZ_OK;
}

fz_status fz_segment_fusion(const fz_problem *problem, fz_segmentation **out,
                            fz_error *err) {
  return fz_segment_fusion_planned(problem, NULL, out, NULL, err);
}

fz_status fz_segment_fusion_planned(const fz_problem *problem,
                                    fz_arena *plan_arena,
                                    fz_segmentation **out,
                                    fz_plan **whole_plan, fz_error *err) {
  if (whole_plan)
    *whole_plan = NULL;
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
  /* the whole fusion's plan, kept when asked for: a caller would build
   * the same one again */
  fz_plan *plan = NULL;
  bool keep = plan_arena && whole_plan;
  const char *whole_scheduler = keep
      ? fz_schedule_first(problem, plan_arena, &plan, NULL)
      : fz_schedule_pick(problem);
  fz_status st;
  if (whole_scheduler) {
    st = whole(problem, whole_scheduler, s, err);
    if (st == FZ_OK && keep)
      st = fz_plan_verify(plan, err);
    if (st == FZ_OK && keep)
      *whole_plan = plan;
  } else {
    fz_seg_ctx c = {.pb = problem, .parent = problem->fusion};
    st = segment(&c, s, err);
    ctx_free(&c);
  }
  if (st != FZ_OK) {
    fz_segmentation_destroy(s);
    return st;
  }
  *out = s;
  return FZ_OK;
}
