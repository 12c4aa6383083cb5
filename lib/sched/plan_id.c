/* plan_id.c - the plan key in binary: what the executor's kernel cache
 * compares on every signature miss.
 *
 * fz_plan_key (plan.c) names a compiled kernel by the plan's text without
 * sizes, strides or grid; printing it costs a miss about as much as
 * scheduling. fz_plan_identify writes the same fields, under the same
 * conditions, as integers (zigzag LEB128, so that most take one byte)
 * into one byte string, and hashes it: two plans have equal ids exactly
 * when their text keys are equal. Every variable-length part is preceded
 * by its count or sized by a field written before it (rank, the access
 * and node counts, a node's kind and operand count), so the bytes decode
 * one way only; floats are written as their bits, every NaN of one sign
 * as one pattern (the text prints them alike).
 *
 * A field added to fz_plan_key must be added here in the same place:
 * test_plan_id checks that the two agree over many plans.
 */
#include "sched/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct writer {
  unsigned char *at;
} writer;

static void put_u(writer *w, uint64_t x) {
  while (x >= 0x80) {
    *w->at++ = (unsigned char)(x | 0x80);
    x >>= 7;
  }
  *w->at++ = (unsigned char)x;
}

static void put_i(writer *w, int64_t x) {
  put_u(w, ((uint64_t)x << 1) ^ (uint64_t)(x >> 63));
}

/* What print_scalar shows: %.17g of a float (exact but for NaN
 * payloads), the integer otherwise. */
static void put_scalar(writer *w, fz_dtype dtype, fz_scalar v) {
  if (!fz_dtype_is_float(dtype)) {
    put_i(w, v.i);
    return;
  }
  uint64_t bits;
  double f = isnan(v.f) ? copysign(NAN, v.f) : v.f;
  memcpy(&bits, &f, sizeof bits);
  put_u(w, bits);
}

static void put_double(writer *w, double d) {
  put_scalar(w, FZ_F64, (fz_scalar){.f = d});
}

static bool is_reduction(const fz_plan *p) {
  return p->kind != FZ_PLAN_POINTWISE && p->kind != FZ_PLAN_TRANSPOSE;
}

/* inner_class of plan.c: tiled, splat, unit, strided. */
static int inner_class(const fz_plan *p, int i) {
  if (p->kind == FZ_PLAN_TRANSPOSE && p->tiled && p->tiled[i])
    return 0;
  int64_t s = p->accesses[i].strides[p->rank - 1];
  return s == 0 ? 1 : s == 1 ? 2 : 3;
}

/* The header lines of fz_plan_key. */
static void put_launch(writer *w, const fz_plan *p) {
  put_u(w, (uint64_t)p->kind);
  put_i(w, p->rank);
  put_i(w, p->vector);
  put_i(w, p->unroll);
  put_u(w, p->dynamic_block);
  if (!p->dynamic_block)
    put_i(w, p->threads);
  put_u(w, p->index32);
  if (is_reduction(p)) {
    if (!p->dynamic_block)
      put_i(w, p->block_x);
    put_i(w, p->block_y);
    put_u(w, p->split > 1);
    put_i(w, p->persistent);
    put_i(w, p->phases);
    put_u(w, p->cooperative);
    put_u(w, p->prefetch);
    if (p->prefetch) { /* the key prints them only then */
      put_u(w, (unsigned)fz_plan_prefetch_buffers(p));
      put_u(w, p->prefetch_row_values);
    }
    put_u(w, p->weights_early);
    put_u(w, p->refetch_bf16);
    put_u(w, p->trace_phases);
    put_i(w, p->column_parts);
    for (int k = 0; k < p->rank; k++)
      put_u(w, p->reduced[k]);
    if (fz_plan_is_persistent(p)) {
      for (int k = 0; k < p->rank; k++)
        put_u(w, p->row_axes[k]);
      put_i(w, p->persistent_full);
    }
    put_i(w, p->cluster);
    put_i(w, p->column_cluster);
    if (p->column_cluster)
      put_i(w, p->column_chunk);
    put_i(w, p->column_slices > 1 ? p->column_slices : 0);
    put_u(w, p->multipass);
    put_u(w, p->held_shared);
  }
  if (p->kind == FZ_PLAN_TRANSPOSE) {
    put_i(w, p->tile_a);
    put_i(w, p->tile_b);
    put_i(w, p->tile_axis);
  }
}

static void put_accesses(writer *w, const fz_plan *p) {
  put_i(w, p->num_accesses);
  for (int i = 0; i < p->num_accesses; i++) {
    const fz_plan_access *a = &p->accesses[i];
    put_u(w, a->is_output);
    put_u(w, (uint64_t)a->dtype);
    put_i(w, a->vector);
    put_u(w, (uint64_t)inner_class(p, i));
    put_u(w, a->gathered);
    put_i(w, a->clamp); /* a constant of the kernel */
  }
}

/* print_nodes without values: a reduction plan's pre/post headers follow
 * the node spaces, a persistent plan prints each node's space and phase. */
static void put_nodes(writer *w, const fz_plan *p) {
  bool persistent = fz_plan_is_persistent(p);
  bool spaces = is_reduction(p);
  put_i(w, p->num_nodes);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    put_u(w, (uint64_t)n->kind);
    put_u(w, (uint64_t)n->dtype);
    if (spaces)
      put_u(w, (uint64_t)n->space);
    if (persistent)
      put_i(w, n->phase);
    switch (n->kind) {
    case FZ_NODE_LOAD:
      put_i(w, n->access);
      break;
    case FZ_NODE_LITERAL:
      put_scalar(w, n->dtype, n->literal);
      break;
    case FZ_NODE_IOTA:
      put_scalar(w, n->dtype, n->literal);
      put_scalar(w, n->dtype, n->step);
      for (int k = 0; k < p->rank; k++)
        put_i(w, n->coeff[k]);
      break;
    case FZ_NODE_OP:
      put_u(w, (uint64_t)n->code);
      put_i(w, n->num_operands);
      for (int k = 0; k < n->num_operands; k++)
        put_i(w, n->operands[k]);
      break;
    case FZ_NODE_STORE:
      put_i(w, n->access);
      put_i(w, n->operands[0]);
      break;
    case FZ_NODE_REDUCE:
      put_u(w, (uint64_t)n->code);
      put_i(w, n->operands[0]);
      if (fz_plan_node_is_arg(n))
        put_i(w, n->operands[1]);
      else if (n->code == FZ_OP_VAR) /* compiled in */
        put_double(w, n->correction);
      put_u(w, (uint64_t)fz_plan_reduce_acc(p, n));
      break;
    case FZ_NODE_RANDOM:
      put_u(w, (uint64_t)n->code);
      put_i(w, n->operands[0]);
      put_i(w, n->operands[1]);
      for (int k = 0; k < p->rank; k++)
        put_i(w, n->coeff[k]);
      break;
    case FZ_NODE_GATHER:
      put_i(w, n->access);
      put_i(w, n->operands[0]);
      break;
    case FZ_NODE_SYMBOL:
      /* the parameter, not the symbol (as the text key) */
      put_i(w, fz_plan_symbol_param(p, n));
      break;
    }
  }
}

/* The most bytes a plan's id takes: every integer at most 10 bytes, at
 * most 16 + 2 * rank of them in the header, 7 per access, and 5 + rank
 * past a node's kind, dtype, space and phase. */
static size_t bound(const fz_plan *p) {
  size_t ints = 24 + 2 * (size_t)FZ_MAX_RANK +
                7 * (size_t)p->num_accesses +
                (9 + (size_t)FZ_MAX_RANK) * (size_t)p->num_nodes;
  return 10 * ints;
}

static uint64_t hash_bytes(const unsigned char *b, size_t n) {
  uint64_t h = 0x84222325cbf29ce4u ^ (uint64_t)n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, b + i, sizeof x);
    h = (h ^ x) * 0x9e3779b97f4a7c15u;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  memcpy(&tail, b + i, n - i);
  h = (h ^ tail) * 0xbf58476d1ce4e5b9u;
  h ^= h >> 31;
  return h;
}

fz_plan_id fz_plan_identify(const fz_plan *p, fz_arena *arena) {
  unsigned char stack[4096];
  size_t most = bound(p);
  unsigned char *buf = most <= sizeof stack ? stack : malloc(most);
  if (!buf)
    FZ_DIE("out of memory building a plan id");
  writer w = {buf};
  put_launch(&w, p);
  put_accesses(&w, p);
  put_nodes(&w, p);
  size_t len = (size_t)(w.at - buf);
  FZ_CHECK(len <= most);
  unsigned char *bytes = fz_arena_alloc(arena, len);
  memcpy(bytes, buf, len);
  if (buf != stack)
    free(buf);
  return (fz_plan_id){.hash = hash_bytes(bytes, len), .len = len,
                      .bytes = bytes};
}

bool fz_plan_id_equal(const fz_plan_id *a, const fz_plan_id *b) {
  return a->hash == b->hash && a->len == b->len &&
         memcmp(a->bytes, b->bytes, a->len) == 0;
}
