/* schedule_util.h - kernel plans from the scheduler for lowering tests:
 * parse (or take) a fusion, make up the problem as fuse-opt does without a
 * GPU (dense tensors in their declared layouts, symbols from a bind list,
 * an H200), and schedule it. Shared by the reduction and persistent
 * lowering tests. */
#ifndef FZ_TEST_SCHEDULE_UTIL_H
#define FZ_TEST_SCHEDULE_UTIL_H

#include <stdio.h>
#include <string.h>

#include "test_util.h"

#include "sched/plan.h"

/* ---- plans from the scheduler -------------------------------------------- */

enum { MAX_TENSORS = 16 };

typedef struct scheduled {
  fz_fusion *f;
  fz_arena *arena;
  int64_t symbols[32];
  fz_tensor_desc in[MAX_TENSORS], out[MAX_TENSORS];
  fz_problem pb;
  fz_plan *plan;
} scheduled;

/* Dense in the declared layout (row-major when none), as fuse-opt does. */
static inline void describe(const fz_value *v, const int64_t *symbols,
                     fz_tensor_desc *d) {
  const fz_type *t = &v->type;
  *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    d->sizes[axis] = fz_axis_size(&t->axes[axis], symbols);
    d->strides[axis] = stride;
    stride *= d->sizes[axis] > 1 ? d->sizes[axis] : 1;
  }
}

/* The problem alone, in s->pb (binds: "M=8,N=1000"; unbound symbols are
 * 8); s owns f from here. */
static inline void describe_problem(scheduled *s, fz_fusion *f,
                                    const char *binds) {
  memset(s, 0, sizeof *s);
  s->f = f;
  s->arena = fz_arena_create();
  ck_assert_int_le(s->f->num_symbols, 32);
  for (int i = 0; i < s->f->num_symbols; i++)
    s->symbols[i] = 8;
  for (const char *p = binds; p && *p;) {
    char name[32];
    long long v;
    int used = 0;
    ck_assert_int_eq(sscanf(p, "%31[^=]=%lld%n", name, &v, &used), 2);
    int sym = fz_fusion_find_symbol(s->f, name);
    ck_assert_int_ge(sym, 0);
    s->symbols[sym] = v;
    p += used;
    if (*p == ',')
      p++;
  }
  ck_assert_int_le(s->f->num_inputs, MAX_TENSORS);
  ck_assert_int_le(s->f->num_outputs, MAX_TENSORS);
  for (int i = 0; i < s->f->num_inputs; i++)
    describe(s->f->inputs[i], s->symbols, &s->in[i]);
  for (int i = 0; i < s->f->num_outputs; i++)
    describe(s->f->outputs[i], s->symbols, &s->out[i]);
  s->pb = (fz_problem){.fusion = s->f,
                       .inputs = s->in,
                       .outputs = s->out,
                       .symbols = s->symbols,
                       .device = fz_device_info_default(90)};
}

/* binds: "M=8,N=1000"; unbound symbols are 8. */
static inline fz_plan *schedule_fusion(scheduled *s, fz_fusion *f, const char *binds) {
  describe_problem(s, f, binds);
  fz_error err = {0};
  fz_status st = fz_schedule(&s->pb, s->arena, &s->plan, &err);
  ck_assert_msg(st == FZ_OK, "scheduling failed: %s", err.message);
  return s->plan;
}

static inline fz_plan *schedule(scheduled *s, const char *text, const char *binds) {
  return schedule_fusion(s, test_parse(text), binds);
}

static inline void scheduled_free(scheduled *s) {
  fz_arena_destroy(s->arena);
  fz_fusion_destroy(s->f);
}

#endif
