/* segment_greedy.c - the fewest segments, by greedy merging (as nvFuser
 * does), for fusions of up to FZ_SEG_GREEDY_MAX_OPS ops.
 *
 * Grouping starts with one group per live op. Candidate merges are
 * producer->consumer edges between two groups, largest tensor on the edge
 * first, since a merge keeps that tensor on chip; then groups that read
 * the same tensor (horizontal merges, largest shared tensor first), which
 * saves a read. A merge is taken when no path joins the two groups
 * through a third one (the merged group would both feed and consume it)
 * and some scheduler accepts the merged group as a fusion of its own, on
 * this problem's sizes and layouts. After each merge the candidates are
 * ranked again from the largest; the loop ends when none is taken. The
 * rejections of that last round are the notes: exactly why the segments
 * that remain stay apart.
 *
 * Ranking everything again after each merge would cost a sort of every
 * candidate per merge; two facts let the search keep its candidates
 * instead, in two heaps (producer->consumer, then horizontal), and still
 * take exactly the merges the rounds would. A merge only adds paths
 * between the other groups: a candidate whose two groups it leaves alone
 * that formed a cycle keeps forming one, and two groups that became
 * related stay related. And whether a group is accepted depends only on
 * its set of ops. So a candidate that failed keeps failing until one of
 * its groups changes, and then it is a new candidate: each merge retires
 * the candidates of the two groups it joined (a group's version changes)
 * and adds those of the merged group. Popping in rank order, dropping
 * stale candidates and horizontal ones whose groups became related, gives
 * each round's first success. The reachability between groups is updated
 * per merge rather than recomputed. Sets of ops found rejected are
 * remembered (a set can come back through another pair of groups), and
 * the schedulers' reasons are only asked for the notes, written after the
 * last round.
 */
#include "sched/segment_ctx.h"

#include "sched/itable.h"

#include <stdlib.h>
#include <string.h>

typedef struct edge {
  int a, b; /* a < b for horizontal edges; producer, consumer otherwise */
  int64_t bytes;
  unsigned va, vb; /* versions of a and b when the edge was found */
} edge;

typedef struct heap {
  edge *items;
  int count, cap;
} heap;

typedef struct greedy {
  fz_seg_ctx *c;
  int n;
  int *group;           /* op -> group (its smallest op), -1 if dead */
  unsigned *version;    /* per group */
  unsigned char *reach; /* n*n: reach[a*n+b], path from group a to b */
  heap cands[2];        /* producer->consumer, horizontal */
  /* rejected sets of ops (n flags each); the reason once asked for */
  fz_arena *arena;
  fz_itable rejected_index;
  unsigned char **rejected;
  char **rejected_why;
  int num_rejected, cap_rejected;
  unsigned char *set; /* scratch: n flags */
  int *list;          /* scratch: n op indices */
  edge *found;        /* scratch: edges found */
  int num_found, cap_found;
  /* scratch for the edges of one group, by the other group: the largest
   * tensor into it, out of it, shared with it (-1: none), and which are
   * set */
  int64_t *best_in, *best_out, *best_shared;
  int *touched;
  int num_touched;
} greedy;

/* ---- the group graph ---------------------------------------------------- */

static unsigned char *reach_row(const greedy *g, int a) {
  return g->reach + (size_t)a * (size_t)g->n;
}

static bool reaches(const greedy *g, int a, int b) {
  return reach_row(g, a)[b] != 0;
}

/* reach[a*n+b]: a path of one or more edges leads from group a to group
 * b, for the initial groups (one op each). */
static void compute_reach(greedy *g) {
  int n = g->n;
  memset(g->reach, 0, (size_t)n * (size_t)n);
  /* Ops in SSA order: a producer's row is final before its users'. Walk
   * backwards so that each op's row is complete when its producers read
   * it. */
  for (int i = n - 1; i >= 0; i--) {
    if (g->group[i] < 0)
      continue;
    const fz_op *op = g->c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind != FZ_VALUE_RESULT)
        continue;
      int a = g->group[g->c->producer[v->id]];
      unsigned char *ra = reach_row(g, a);
      const unsigned char *ri = reach_row(g, i);
      ra[i] = 1;
      for (int x = 0; x < n; x++)
        ra[x] |= ri[x];
    }
  }
}

/* After `from` joined `to`: paths through either now pass through `to`. */
static void merge_reach(greedy *g, int to, int from) {
  size_t n = (size_t)g->n;
  unsigned char *rt = reach_row(g, to), *rf = reach_row(g, from);
  for (size_t x = 0; x < n; x++)
    rt[x] |= rf[x];
  rt[to] = rt[from] = 0;
  memset(rf, 0, n);
  for (int x = 0; x < g->n; x++) {
    if (x == to || g->group[x] != x)
      continue;
    unsigned char *rx = reach_row(g, x);
    if (rx[to] || rx[from]) {
      for (size_t y = 0; y < n; y++)
        rx[y] |= rt[y];
      rx[to] = 1;
    }
    rx[from] = 0;
  }
}

/* A third group on a path between a and b, or -1. */
static int between(const greedy *g, int a, int b) {
  for (int x = 0; x < g->n; x++) {
    if (g->group[x] != x || x == a || x == b)
      continue;
    if ((reaches(g, a, x) && reaches(g, x, b)) ||
        (reaches(g, b, x) && reaches(g, x, a)))
      return x;
  }
  return -1;
}

/* The ops of groups a and b (b may be -1) as g->set flags and g->list. */
static int group_ops(greedy *g, int a, int b) {
  int count = 0;
  for (int i = 0; i < g->n; i++) {
    g->set[i] = g->group[i] >= 0 && (g->group[i] == a || g->group[i] == b);
    if (g->set[i])
      g->list[count++] = i;
  }
  return count;
}

/* ---- candidates ----------------------------------------------------------- */

/* Rank: largest tensor first, then by the groups. */
static bool before(const edge *p, const edge *q) {
  if (p->bytes != q->bytes)
    return p->bytes > q->bytes;
  if (p->a != q->a)
    return p->a < q->a;
  return p->b < q->b;
}

static bool heap_push(heap *h, edge e) {
  if (h->count == h->cap) {
    int cap = h->cap ? 2 * h->cap : 64;
    edge *grown = realloc(h->items, sizeof *grown * (size_t)cap);
    if (!grown)
      return false;
    h->items = grown;
    h->cap = cap;
  }
  int i = h->count++;
  while (i > 0 && before(&e, &h->items[(i - 1) / 2])) {
    h->items[i] = h->items[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->items[i] = e;
  return true;
}

static edge heap_pop(heap *h) {
  edge top = h->items[0], last = h->items[--h->count];
  int i = 0;
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    const edge *best = &last;
    if (l < h->count && before(&h->items[l], best))
      m = l, best = &h->items[l];
    if (r < h->count && before(&h->items[r], best))
      m = r;
    if (m == i)
      break;
    h->items[i] = h->items[m];
    i = m;
  }
  if (h->count > 0)
    h->items[i] = last;
  return top;
}

static bool found_add(greedy *g, int a, int b, int64_t bytes) {
  if (g->num_found == g->cap_found) {
    int cap = g->cap_found ? 2 * g->cap_found : 64;
    edge *grown = realloc(g->found, sizeof *grown * (size_t)cap);
    if (!grown)
      return false;
    g->found = grown;
    g->cap_found = cap;
  }
  g->found[g->num_found++] =
      (edge){a, b, bytes, g->version[a], g->version[b]};
  return true;
}

static int cmp_pair(const void *x, const void *y) {
  const edge *p = x, *q = y;
  if (p->a != q->a)
    return p->a < q->a ? -1 : 1;
  if (p->b != q->b)
    return p->b < q->b ? -1 : 1;
  return (p->bytes < q->bytes) - (p->bytes > q->bytes); /* largest first */
}

/* g->found, one edge per pair with its largest tensor. */
static void found_unique(greedy *g) {
  if (g->num_found < 2)
    return;
  qsort(g->found, (size_t)g->num_found, sizeof *g->found, cmp_pair);
  int kept = 0;
  for (int e = 0; e < g->num_found; e++)
    if (kept == 0 || g->found[kept - 1].a != g->found[e].a ||
        g->found[kept - 1].b != g->found[e].b)
      g->found[kept++] = g->found[e];
  g->num_found = kept;
}

/* One edge of group `only` to group x (whose best entry is *best). */
static void note_edge(greedy *g, int64_t *best, int x, int64_t bytes) {
  if (g->best_in[x] < 0 && g->best_out[x] < 0 && g->best_shared[x] < 0)
    g->touched[g->num_touched++] = x;
  if (bytes > *best)
    *best = bytes;
}

/* Into g->found, the edges of group `only` (as find_edges), one per pair
 * with its largest tensor: the other groups are few, the tensors they
 * share with `only` may be many. */
static bool find_edges_of(greedy *g, bool horizontal, int only) {
  const fz_seg_ctx *c = g->c;
  g->num_found = 0;
  g->num_touched = 0;
  for (int i = 0; i < g->n; i++) {
    if (g->group[i] != only)
      continue;
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind == FZ_VALUE_LITERAL)
        continue;
      int src = c->producer[v->id] >= 0 ? g->group[c->producer[v->id]] : -1;
      if (!horizontal) {
        if (src >= 0 && src != only)
          note_edge(g, &g->best_in[src], src, c->bytes[v->id]);
        continue;
      }
      for (int u = c->user_start[v->id]; u < c->user_start[v->id + 1]; u++) {
        int gj = g->group[c->users[u]];
        if (gj >= 0 && gj != only && !reaches(g, only, gj) &&
            !reaches(g, gj, only))
          note_edge(g, &g->best_shared[gj], gj, c->bytes[v->id]);
      }
    }
    if (!horizontal) {
      const fz_value *r = op->result;
      for (int u = c->user_start[r->id]; u < c->user_start[r->id + 1]; u++) {
        int gj = g->group[c->users[u]];
        if (gj >= 0 && gj != only)
          note_edge(g, &g->best_out[gj], gj, c->bytes[r->id]);
      }
    }
  }
  bool ok = true;
  for (int t = 0; t < g->num_touched; t++) {
    int x = g->touched[t];
    if (ok && g->best_in[x] >= 0)
      ok = found_add(g, x, only, g->best_in[x]);
    if (ok && g->best_out[x] >= 0)
      ok = found_add(g, only, x, g->best_out[x]);
    if (ok && g->best_shared[x] >= 0)
      ok = found_add(g, only < x ? only : x, only < x ? x : only,
                     g->best_shared[x]);
    g->best_in[x] = g->best_out[x] = g->best_shared[x] = -1;
  }
  return ok;
}

/* Into g->found, the producer->consumer (horizontal: unrelated groups
 * reading one tensor) pairs of groups, one per pair with its largest
 * tensor; with only >= 0, those of group `only`. */
static bool find_edges(greedy *g, bool horizontal, int only) {
  if (only >= 0)
    return find_edges_of(g, horizontal, only);
  const fz_seg_ctx *c = g->c;
  g->num_found = 0;
  for (int i = 0; i < g->n; i++) {
    int gi = g->group[i];
    if (gi < 0)
      continue;
    const fz_op *op = c->w->ops[i];
    for (int k = 0; k < op->num_operands; k++) {
      const fz_value *v = op->operands[k];
      if (v->kind == FZ_VALUE_LITERAL)
        continue;
      int src = c->producer[v->id] >= 0 ? g->group[c->producer[v->id]] : -1;
      int64_t bytes = c->bytes[v->id];
      if (!horizontal) {
        if (src >= 0 && src != gi && !found_add(g, src, gi, bytes))
          return false;
        continue;
      }
      /* other groups reading v; a group that produces v or reads what
       * another produces is related to it and left out */
      for (int u = c->user_start[v->id]; u < c->user_start[v->id + 1]; u++) {
        int j = c->users[u], gj = g->group[j];
        if (gj < 0 || gj == gi || j >= i || reaches(g, gi, gj) ||
            reaches(g, gj, gi))
          continue;
        if (!found_add(g, gi < gj ? gi : gj, gi < gj ? gj : gi, bytes))
          return false;
      }
    }
  }
  found_unique(g);
  return true;
}

static bool push_found(greedy *g, heap *h) {
  for (int e = 0; e < g->num_found; e++)
    if (!heap_push(h, g->found[e]))
      return false;
  return true;
}

/* ---- rejected sets -------------------------------------------------------- */

static uint64_t set_hash(const greedy *g, const unsigned char *set) {
  uint64_t h = 0;
  for (int i = 0; i < g->n; i++)
    if (set[i])
      h = fz_hash_mix(h, (uint64_t)i);
  return h;
}

typedef struct set_probe {
  const greedy *g;
  const unsigned char *set;
} set_probe;

static bool same_set(const void *ctx, int r) {
  const set_probe *p = ctx;
  return memcmp(p->g->rejected[r], p->set, (size_t)p->g->n) == 0;
}

/* The index of `set` among the rejected sets, or -1. */
static int find_rejected(const greedy *g, const unsigned char *set) {
  set_probe p = {g, set};
  return fz_itable_find(&g->rejected_index, set_hash(g, set), same_set, &p);
}

static fz_status remember(greedy *g, const unsigned char *set, fz_error *err) {
  if (g->num_rejected == g->cap_rejected) {
    int cap = g->cap_rejected ? 2 * g->cap_rejected : 16;
    unsigned char **sets = realloc(g->rejected, sizeof *sets * (size_t)cap);
    if (sets)
      g->rejected = sets;
    char **whys = realloc(g->rejected_why, sizeof *whys * (size_t)cap);
    if (whys)
      g->rejected_why = whys;
    if (!sets || !whys)
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    g->cap_rejected = cap;
  }
  unsigned char *copy = fz_arena_alloc(g->arena, (size_t)g->n);
  memcpy(copy, set, (size_t)g->n);
  int r = g->num_rejected++;
  g->rejected[r] = copy;
  g->rejected_why[r] = NULL;
  fz_itable_add(&g->rejected_index, set_hash(g, set), r);
  return FZ_OK;
}

/* ---- merging ------------------------------------------------------------ */

static bool stale(const greedy *g, const edge *e) {
  return g->group[e->a] != e->a || g->group[e->b] != e->b ||
         g->version[e->a] != e->va || g->version[e->b] != e->vb;
}

/* Try merging the groups of e; *merged says whether it was taken. */
static fz_status try_merge(greedy *g, const edge *e, bool *merged,
                           fz_error *err) {
  *merged = false;
  int a = e->a, b = e->b;
  if (between(g, a, b) >= 0)
    return FZ_OK;
  int count = group_ops(g, a, b);
  if (find_rejected(g, g->set) >= 0)
    return FZ_OK;
  fz_seg_cand cd;
  fz_status st = fz_seg_build_cand(g->c, g->list, count, g->c->parent->name,
                                   &cd, NULL, err);
  if (st != FZ_OK)
    return st;
  bool ok = cd.scheduler != NULL;
  fz_seg_cand_free(&cd);
  if (!ok)
    return remember(g, g->set, err);
  int to = a < b ? a : b, from = a < b ? b : a;
  for (int i = 0; i < g->n; i++)
    if (g->group[i] == from)
      g->group[i] = to;
  g->version[to]++;
  merge_reach(g, to, from);
  for (int pass = 0; pass < 2; pass++)
    if (!find_edges(g, pass == 1, to) || !push_found(g, &g->cands[pass]))
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  *merged = true;
  return FZ_OK;
}

/* Each round: the first candidate, in rank order, that merges; producer->
 * consumer candidates before horizontal ones. */
static fz_status merge_all(greedy *g, fz_error *err) {
  for (bool merged = true; merged;) {
    merged = false;
    for (int pass = 0; pass < 2 && !merged; pass++) {
      heap *h = &g->cands[pass];
      while (h->count > 0 && !merged) {
        edge e = heap_pop(h);
        if (stale(g, &e) ||
            (pass == 1 && (reaches(g, e.a, e.b) || reaches(g, e.b, e.a))))
          continue; /* no longer a candidate */
        fz_status st = try_merge(g, &e, &merged, err);
        if (st != FZ_OK)
          return st;
      }
    }
  }
  return FZ_OK;
}

/* ---- notes -------------------------------------------------------------- */

static void put_group(greedy *g, fz_buf *b, int group) {
  int listed = 0, total = 0;
  fz_buf_puts(b, "{");
  for (int i = 0; i < g->n; i++) {
    if (g->group[i] != group)
      continue;
    if (listed < 4) {
      fz_buf_puts(b, listed ? " " : "");
      fz_seg_put_label(b, g->c->w->ops[i]->result);
      listed++;
    }
    total++;
  }
  if (total > listed)
    fz_buf_printf(b, " +%d", total - listed);
  fz_buf_puts(b, "}");
}

/* The schedulers' reasons for rejecting groups a and b merged. */
static fz_status rejection(greedy *g, int a, int b, const char **why,
                           fz_error *err) {
  int count = group_ops(g, a, b);
  int r = find_rejected(g, g->set);
  FZ_CHECK(r >= 0); /* every candidate of the last round failed */
  if (!g->rejected_why[r]) {
    fz_seg_cand cd;
    fz_status st = fz_seg_build_cand(g->c, g->list, count,
                                     g->c->parent->name, &cd,
                                     &g->rejected_why[r], err);
    if (st != FZ_OK)
      return st;
    fz_seg_cand_free(&cd);
  }
  *why = g->rejected_why[r];
  return FZ_OK;
}

/* One line per candidate of the last round, in the order it tried them:
 * merge {a} + {b}: why. */
static fz_status write_notes(greedy *g, fz_error *err) {
  for (int pass = 0; pass < 2; pass++) {
    if (!find_edges(g, pass == 1, -1))
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    heap order = {0};
    if (!push_found(g, &order)) {
      free(order.items);
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    }
    fz_status st = FZ_OK;
    while (order.count > 0 && st == FZ_OK) {
      edge e = heap_pop(&order);
      if (!fz_seg_note_room(g->c)) {
        fz_seg_note(g->c, "");
        continue;
      }
      int third = between(g, e.a, e.b);
      const char *why = NULL;
      if (third < 0 && (st = rejection(g, e.a, e.b, &why, err)) != FZ_OK)
        break;
      fz_buf line = {0};
      fz_buf_puts(&line, "merge ");
      put_group(g, &line, e.a);
      fz_buf_puts(&line, " + ");
      put_group(g, &line, e.b);
      fz_buf_printf(&line, "%s: ", pass == 1 ? " (siblings)" : "");
      if (third >= 0) {
        fz_buf_puts(&line, "would form a cycle through ");
        put_group(g, &line, third);
      } else {
        fz_buf_puts(&line, why);
      }
      char *text = fz_buf_take(&line);
      if (!text)
        st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
      else
        fz_seg_note(g->c, text);
      free(text);
    }
    free(order.items);
    if (st != FZ_OK)
      return st;
  }
  return FZ_OK;
}

/* ---- the result --------------------------------------------------------- */

/* Groups in a topological order, the one holding the earliest op first
 * among those ready, as op lists. */
static fz_status order_groups(greedy *g, int *ops, int *start, int *count,
                              fz_error *err) {
  int n = g->n, k = 0, placed = 0;
  bool *done = calloc((size_t)n + 1, sizeof *done);
  if (!done)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  for (;;) {
    int pick = -1;
    for (int x = 0; x < n && pick < 0; x++) {
      if (g->group[x] != x || done[x])
        continue;
      bool ready = true;
      for (int h = 0; h < n && ready; h++)
        ready = !(g->group[h] == h && !done[h] && h != x && reaches(g, h, x));
      if (ready)
        pick = x;
    }
    if (pick < 0)
      break;
    done[pick] = true;
    start[k++] = placed;
    for (int i = 0; i < n; i++)
      if (g->group[i] == pick)
        ops[placed++] = i;
  }
  start[k] = placed;
  *count = k;
  free(done);
  return FZ_OK;
}

fz_status fz_seg_greedy(fz_seg_ctx *c, int **ops, int **start, int *count,
                        fz_error *err) {
  int n = c->n;
  greedy g = {.c = c, .n = n, .arena = fz_arena_create()};
  fz_itable_init(&g.rejected_index, g.arena);
  g.group = calloc((size_t)n + 1, sizeof *g.group);
  g.version = calloc((size_t)n + 1, sizeof *g.version);
  g.reach = calloc((size_t)n * (size_t)n + 1, 1);
  g.set = calloc((size_t)n + 1, 1);
  g.list = calloc((size_t)n + 1, sizeof *g.list);
  g.best_in = calloc((size_t)n + 1, sizeof *g.best_in);
  g.best_out = calloc((size_t)n + 1, sizeof *g.best_out);
  g.best_shared = calloc((size_t)n + 1, sizeof *g.best_shared);
  g.touched = calloc((size_t)n + 1, sizeof *g.touched);
  *ops = calloc((size_t)n + 1, sizeof **ops);
  *start = calloc((size_t)n + 2, sizeof **start);
  fz_status st = FZ_OK;
  if (!g.group || !g.version || !g.reach || !g.set || !g.list ||
      !g.best_in || !g.best_out || !g.best_shared || !g.touched || !*ops ||
      !*start) {
    st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    g.group[i] = c->live[i] ? i : -1;
    g.best_in[i] = g.best_out[i] = g.best_shared[i] = -1;
  }
  compute_reach(&g);
  for (int pass = 0; pass < 2 && st == FZ_OK; pass++)
    if (!find_edges(&g, pass == 1, -1) || !push_found(&g, &g.cands[pass]))
      st = fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  if (st == FZ_OK)
    st = merge_all(&g, err);
  if (st == FZ_OK)
    st = write_notes(&g, err);
  if (st == FZ_OK)
    st = order_groups(&g, *ops, *start, count, err);
done:
  for (int r = 0; r < g.num_rejected; r++)
    free(g.rejected_why[r]);
  free(g.rejected);
  free(g.rejected_why);
  free(g.group);
  free(g.version);
  free(g.reach);
  free(g.set);
  free(g.list);
  free(g.found);
  free(g.best_in);
  free(g.best_out);
  free(g.best_shared);
  free(g.touched);
  free(g.cands[0].items);
  free(g.cands[1].items);
  fz_arena_destroy(g.arena);
  return st;
}
