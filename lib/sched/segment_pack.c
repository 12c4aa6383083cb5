/* segment_pack.c - segments for fusions too large for the greedy search:
 * W's live ops in program order, cut into the longest runs of consecutive
 * ops that a scheduler accepts.
 *
 * Program order is a topological order, so runs executed one after the
 * other read only what earlier runs (or the parent's inputs) hold: any cut
 * is a valid segmentation, and each run only has to be accepted. From the
 * first op not yet placed, the run doubles in length while it is accepted
 * and is then bisected between the longest length accepted and the
 * shortest rejected, so a run of length L costs O(log L) candidates of at
 * most 2L ops: near-linear time overall. Acceptance need not be monotone
 * in the length (a run that ends halfway through a normalization may be
 * rejected where a longer one is accepted), so the run found is one that
 * is accepted and whose next longer try was not, not necessarily the
 * longest; the segments are valid, not necessarily the fewest.
 *
 * A single op that no scheduler accepts on its own may still be accepted
 * together with the ops after it (an expand feeding a reduction); up to
 * MAX_LEAD ops are tried before the fusion is rejected.
 *
 * The notes say why the first runs stopped where they did: the
 * schedulers' reasons for the shortest rejected run.
 */
#include "sched/segment_ctx.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_LEAD = 16 };

typedef struct packer {
  fz_seg_ctx *c;
  const int *live; /* the live ops, ascending */
  int num_live;
} packer;

/* Whether the run of `len` live ops from `from` is accepted; with `why`,
 * also the schedulers' reasons when it is not. */
static fz_status accepted(packer *p, int from, int len, bool *ok, char **why,
                          fz_error *err) {
  fz_seg_cand cd;
  fz_status st = fz_seg_build_cand(p->c, p->live + from, len,
                                   p->c->parent->name, &cd, why, err);
  if (st != FZ_OK)
    return st;
  *ok = cd.scheduler != NULL;
  fz_seg_cand_free(&cd);
  return FZ_OK;
}

/* The length of the run from `from`: *len 0 when none of up to MAX_LEAD
 * ops is accepted; *rejected the shortest length tried and rejected, 0
 * when the run reaches the last op. `hint`, the length of the previous
 * run, is tried first: consecutive runs of a large fusion tend to be
 * alike (the same kind of op, up to the same parameter limit). */
static fz_status longest_run(packer *p, int from, int hint, int *len,
                             int *rejected, fz_error *err) {
  int left = p->num_live - from;
  int good = 0, bad = 0;
  bool ok = false;
  fz_status st = FZ_OK;
  if (hint > 1 && hint <= left) {
    if ((st = accepted(p, from, hint, &ok, NULL, err)) != FZ_OK)
      return st;
    if (ok)
      good = hint;
    else
      bad = hint;
  }
  /* the shortest accepted run (past a rejected hint, if it has to be) */
  for (int l = 1; !good && l <= left && l <= MAX_LEAD; l++) {
    if (l == bad)
      continue;
    if ((st = accepted(p, from, l, &ok, NULL, err)) != FZ_OK)
      return st;
    if (ok)
      good = l;
  }
  if (good > bad)
    bad = 0; /* the bisection needs good < bad */
  if (!good) {
    *len = 0;
    *rejected = left < MAX_LEAD ? left : MAX_LEAD;
    return FZ_OK;
  }
  /* doubling while accepted */
  while (!bad && good < left) {
    int l = 2 * good < left ? 2 * good : left;
    if ((st = accepted(p, from, l, &ok, NULL, err)) != FZ_OK)
      return st;
    if (ok)
      good = l;
    else
      bad = l;
  }
  /* bisection between the longest accepted and the shortest rejected */
  while (bad && bad - good > 1) {
    int l = good + (bad - good) / 2;
    if ((st = accepted(p, from, l, &ok, NULL, err)) != FZ_OK)
      return st;
    if (ok)
      good = l;
    else
      bad = l;
  }
  *len = good;
  *rejected = bad;
  return FZ_OK;
}

/* Note: why the run from `from` stopped before op `from + rejected - 1`. */
static fz_status note_cut(packer *p, int from, int rejected, fz_error *err) {
  if (!fz_seg_note_room(p->c)) {
    fz_seg_note(p->c, "");
    return FZ_OK;
  }
  char *why = NULL;
  bool ok;
  fz_status st = accepted(p, from, rejected, &ok, &why, err);
  if (st != FZ_OK)
    return st;
  fz_buf line = {0};
  fz_buf_puts(&line, "run from ");
  fz_seg_put_label(&line, p->c->w->ops[p->live[from]]->result);
  fz_buf_puts(&line, " through ");
  fz_seg_put_label(&line, p->c->w->ops[p->live[from + rejected - 1]]->result);
  fz_buf_printf(&line, " (%d ops): %s", rejected, why ? why : "accepted");
  free(why);
  char *text = fz_buf_take(&line);
  if (!text)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  fz_seg_note(p->c, text);
  free(text);
  return FZ_OK;
}

/* Runs of ops whose first op no scheduler accepts even with the ones
 * after it: the error names the first of them. */
static fz_status reject(packer *p, int from, int tried, fz_error *err) {
  char *why = NULL;
  bool ok;
  fz_status st = accepted(p, from, tried, &ok, &why, err);
  if (st != FZ_OK)
    return st;
  const fz_op *op = p->c->w->ops[p->live[from]];
  fz_buf b = {0};
  fz_seg_put_label(&b, op->result);
  char *label = fz_buf_take(&b);
  st = fz_error_set(err, FZ_ERR_UNSUPPORTED,
                    "fusion @%s: no scheduler accepts %s (%s), alone or with "
                    "the %d ops after it (%s)",
                    p->c->parent->name, label ? label : "?",
                    fz_op_table[op->code].name, tried - 1,
                    why ? why : "no reasons");
  free(label);
  free(why);
  return st;
}

fz_status fz_seg_pack(fz_seg_ctx *c, int **ops, int **start, int *count,
                      fz_error *err) {
  *ops = calloc((size_t)c->num_live + 1, sizeof **ops);
  *start = calloc((size_t)c->num_live + 2, sizeof **start);
  if (!*ops || !*start)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  int m = 0;
  for (int i = 0; i < c->n; i++)
    if (c->live[i])
      (*ops)[m++] = i;
  packer p = {.c = c, .live = *ops, .num_live = m};
  char head[160];
  snprintf(head, sizeof head,
           "greedy merging: %d ops are more than it searches (%d); runs of "
           "consecutive ops instead",
           c->n, FZ_SEG_GREEDY_MAX_OPS);
  fz_seg_note(c, head);
  int k = 0, len = 0;
  for (int from = 0; from < m;) {
    int rejected = 0;
    fz_status st = longest_run(&p, from, len, &len, &rejected, err);
    if (st == FZ_OK && len == 0)
      st = reject(&p, from, rejected, err);
    if (st == FZ_OK && rejected)
      st = note_cut(&p, from, rejected, err);
    if (st != FZ_OK)
      return st;
    (*start)[k++] = from;
    from += len;
  }
  (*start)[k] = m;
  *count = k;
  return FZ_OK;
}
