/* test_plan_id.c - the binary plan key (fz_plan_identify) says what the
 * text key (fz_plan_key) says: two plans get equal ids exactly when their
 * texts are equal.
 *
 *  - every structural field, changed alone in a copy of a scheduled plan,
 *    changes the id (and the text: each change below is checked to be
 *    one the text key sees, on at least one of the plans); a parameter
 *    (extents, strides other than the innermost, offsets, grid, symbol
 *    values, gather strides and extents), or a field that means nothing
 *    in its plan (a single prefetch buffer without prefetch), changes
 *    neither;
 *  - over the plans of every fusion in test/gpu and bench/fusions at a
 *    few sizes and of 300 random fusions, ids are equal exactly when the
 *    texts are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/pass.h"
#include "sched/segment.h"
#include "testing/random.h"
#include "test_util.h"
#include "test_fusions.h"

/* The plans of every segment of f at these symbol values, in arena;
 * false when f cannot be segmented or scheduled there. */
static bool plans_of(const fz_fusion *f, const int64_t *symbols,
                     fz_arena *arena, fz_plan **plans, int max, int *count) {
  *count = 0;
  fz_tensor_desc *in =
      fz_arena_alloc(arena, sizeof *in * (size_t)(f->num_inputs + 1));
  fz_tensor_desc *out =
      fz_arena_alloc(arena, sizeof *out * (size_t)(f->num_outputs + 1));
  for (int i = 0; i < f->num_inputs; i++)
    test_dense_desc(f->inputs[i], symbols, &in[i]);
  for (int i = 0; i < f->num_outputs; i++)
    test_dense_desc(f->outputs[i], symbols, &out[i]);
  fz_problem pb = {.fusion = f, .inputs = in, .outputs = out,
                   .symbols = symbols, .device = fz_device_info_default(90)};
  fz_segmentation *seg = NULL;
  fz_error err = {0};
  if (fz_segment_fusion(&pb, &seg, &err) != FZ_OK)
    return false;
  fz_tensor_desc *ims = fz_arena_alloc(
      arena, sizeof *ims * (size_t)(seg->num_intermediates + 1));
  for (int i = 0; i < seg->num_intermediates; i++)
    fz_intermediate_desc(&seg->intermediates[i], symbols, &ims[i]);
  bool ok = true;
  for (int k = 0; k < seg->num_segments && ok && *count < max; k++) {
    fz_problem sp;
    fz_segment_problem(seg, k, &pb, ims, arena, &sp);
    ok = fz_schedule(&sp, arena, &plans[*count], &err) == FZ_OK;
    *count += ok;
  }
  fz_segmentation_destroy(seg);
  return ok;
}

static fz_fusion *prepared(const char *text) {
  fz_fusion *f = test_parse(text);
  fz_error err = {0};
  ck_assert_msg(fz_run_pass(f, "resize-pushdown", &err) == FZ_OK &&
                    fz_run_pass(f, "gather-pushdown", &err) == FZ_OK,
                "%s", err.message);
  return f;
}

/* ---- one field at a time -------------------------------------------------- */

static const char *const bases[] = {
    /* inner persistent: loads, a symbol, literals, row reductions */
    "fusion @ln(%x: f32[N, K], %w: f32[K]) {\n"
    "  %s = sum %x dims(1) keepdim : f32[N, b1]\n"
    "  %k = symbol K : i64\n"
    "  %kf = cast %k : f32\n"
    "  %m = div %s, %kf : f32[N, b1]\n"
    "  %me = expand %m : f32[N, b1->K]\n"
    "  %d = sub %x, %me : f32[N, K]\n"
    "  %q = mul %d, %d : f32[N, K]\n"
    "  %v = sum %q dims(1) keepdim : f32[N, b1]\n"
    "  %ve = add %v, 1.0e-5 : f32[N, b1]\n"
    "  %r = rsqrt %ve : f32[N, b1]\n"
    "  %re = expand %r : f32[N, b1->K]\n"
    "  %y = mul %d, %re : f32[N, K]\n"
    "  %wb = broadcast %w dims(0) : f32[b1, K]\n"
    "  %we = expand %wb : f32[b1->N, K]\n"
    "  %o = add %y, %we : f32[N, K]\n"
    "  return %o\n"
    "}\n",
    /* inner reduction: a var with its correction, an argmax */
    "fusion @var(%x: f32[N, K]) {\n"
    "  %v = var %x dims(1) correction(1) : f32[N]\n"
    "  %a = argmax %x dims(1) : i64[N]\n"
    "  return %v, %a\n"
    "}\n",
    /* pointwise: rand, iota, a pad's clamped window, a gather */
    "fusion @pw(%x: f32[N, 40], %t: f32[N, 64], %i: i64[N, 38]) {\n"
    "  %u = rand 1234, 16 : f32[N, 38]\n"
    "  %p = pad %x low(0, 3) high(0, -5) value(0.5) : f32[N, 38]\n"
    "  %j = iota start(2) step(3) : i64[38]\n"
    "  %jf = cast %j : f32[38]\n"
    "  %jb = broadcast %jf dims(0) : f32[b1, 38]\n"
    "  %je = expand %jb : f32[b1->N, 38]\n"
    "  %g = gather %t, %i dims(1) : f32[N, 38]\n"
    "  %a = add %p, %u : f32[N, 38]\n"
    "  %b = add %a, %je : f32[N, 38]\n"
    "  %c = add %b, %g : f32[N, 38]\n"
    "  return %c\n"
    "}\n",
    /* transpose */
    "fusion @tr(%x: f32[M, N]) {\n"
    "  %y = permute %x perm(1, 0) : f32[N, M]\n"
    "  return %y\n"
    "}\n",
    /* a cluster plan prefetching into one buffer (f32 rows of 256K) */
    FZ_TEST_SOFTMAX("sm", "f32"),
};

/* A copy of p whose accesses, nodes and tiles can be changed alone. */
static fz_plan *copy_plan(const fz_plan *p, fz_arena *a) {
  fz_plan *c = fz_arena_alloc(a, sizeof *c);
  *c = *p;
  c->accesses =
      fz_arena_alloc(a, sizeof *c->accesses * (size_t)(p->num_accesses + 1));
  memcpy(c->accesses, p->accesses, sizeof *c->accesses * (size_t)p->num_accesses);
  c->nodes = fz_arena_alloc(a, sizeof *c->nodes * (size_t)(p->num_nodes + 1));
  memcpy(c->nodes, p->nodes, sizeof *c->nodes * (size_t)p->num_nodes);
  if (p->tiled) {
    bool *t = fz_arena_alloc(a, sizeof *t * (size_t)(p->num_accesses + 1));
    memcpy(t, p->tiled, sizeof *t * (size_t)p->num_accesses);
    c->tiled = t;
  }
  int64_t *values = fz_arena_alloc(a, sizeof *values * (size_t)(p->num_symbols + 1));
  if (p->num_symbols) /* symbol_values may be NULL then */
    memcpy(values, p->symbol_values,
           sizeof *values * (size_t)p->num_symbols);
  c->symbol_values = values;
  return c;
}

static fz_plan_node *first_node(fz_plan *p, fz_node_kind kind) {
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == kind)
      return &p->nodes[i];
  return NULL;
}

static fz_plan_node *first_var(fz_plan *p) {
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_REDUCE && p->nodes[i].code == FZ_OP_VAR)
      return &p->nodes[i];
  return NULL;
}

/* A change to a copy; false when it does not apply to this plan. */
typedef bool (*mutation)(fz_plan *p);

#define MUT(name, body)                                                       \
  static bool name(fz_plan *p) {                                              \
    body;                                                                     \
    return true;                                                              \
  }

MUT(kind, p->kind = p->kind == FZ_PLAN_POINTWISE ? FZ_PLAN_INNER_PERSISTENT
                                                 : FZ_PLAN_POINTWISE)
MUT(vector, p->vector *= 2)
MUT(unroll, p->unroll += 1)
MUT(threads, p->threads += 32)
MUT(index32, p->index32 = !p->index32)
MUT(dynamic_block, p->dynamic_block = !p->dynamic_block)
MUT(block_x, p->block_x *= 2)
MUT(block_y, p->block_y += 1)
MUT(split, p->split = p->split > 1 ? 1 : 2)
MUT(persistent, p->persistent += 1)
MUT(phases, p->phases += 1)
MUT(cooperative, p->cooperative = !p->cooperative)
MUT(prefetch, p->prefetch = !p->prefetch)
/* one buffer or two, on a plan that prefetches; without prefetch the
 * field means nothing, and neither key shows it */
static bool prefetch_single(fz_plan *p) {
  if (!p->prefetch)
    return false;
  p->prefetch_single = !p->prefetch_single;
  return true;
}
/* three buffers, or back to two, on a plan that prefetches (a plan with
 * one buffer gets three) */
static bool prefetch_deep(fz_plan *p) {
  if (!p->prefetch)
    return false;
  p->prefetch_deep = p->prefetch_single || !p->prefetch_deep;
  p->prefetch_single = false;
  return true;
}
/* a weight row loaded before the last row combine, or where first used */
static bool weights_early(fz_plan *p) {
  p->weights_early = !p->weights_early;
  return true;
}
/* bf16 rows loaded again after each row combine, or held */
static bool refetch_bf16(fz_plan *p) {
  p->refetch_bf16 = !p->refetch_bf16;
  return true;
}
/* phase marks recorded or not */
static bool trace_phases(fz_plan *p) {
  p->trace_phases = !p->trace_phases;
  return true;
}
/* warps a column group in the final pass */
static bool column_parts(fz_plan *p) {
  p->column_parts = p->column_parts == 4 ? 1 : 4;
  return true;
}
/* row values staged in the buffers or loaded into registers */
static bool prefetch_row_values(fz_plan *p) {
  if (!p->prefetch)
    return false;
  p->prefetch_row_values = !p->prefetch_row_values;
  return true;
}
static bool single_unused(fz_plan *p) {
  if (p->prefetch)
    return false;
  p->prefetch_single = !p->prefetch_single;
  return true;
}
MUT(reduced, p->reduced[0] = !p->reduced[0])
MUT(row_axes, p->row_axes[0] = !p->row_axes[0])
MUT(persistent_full, p->persistent_full += 1)
MUT(cluster, p->cluster = p->cluster ? 0 : 2)
MUT(column_slices, p->column_slices = p->column_slices > 1 ? 0 : 3)
MUT(multipass, p->multipass = !p->multipass)
MUT(held_shared, p->held_shared = !p->held_shared)
MUT(column_cluster, p->column_chunk = 1; p->column_cluster = p->column_cluster ? 0 : 2)
MUT(column_chunk, p->column_cluster = 2; p->column_chunk += 1)
MUT(tile_a, p->tile_a *= 2)
MUT(tile_b, p->tile_b *= 2)
MUT(tile_axis, p->tile_axis += 1)
static bool tiled(fz_plan *p) {
  if (!p->tiled)
    return false;
  ((bool *)p->tiled)[0] = !p->tiled[0];
  return true;
}
MUT(access_output, p->accesses[0].is_output = !p->accesses[0].is_output)
MUT(access_dtype, p->accesses[0].dtype = p->accesses[0].dtype == FZ_F16
                                              ? FZ_F32
                                              : FZ_F16)
MUT(access_vector, p->accesses[0].vector *= 2)
MUT(access_gathered, p->accesses[0].gathered = !p->accesses[0].gathered)
MUT(access_clamp, p->accesses[0].clamp += 7)
static bool access_class(fz_plan *p) {
  int64_t *s = &p->accesses[p->num_accesses - 1].strides[p->rank - 1];
  *s = *s == 1 ? 0 : 1; /* unit <-> splat */
  return true;
}
static bool access_strided(fz_plan *p) {
  int64_t *s = &p->accesses[p->num_accesses - 1].strides[p->rank - 1];
  *s = *s == 1 ? 3 : 1;
  return true;
}
MUT(node_kind, p->nodes[0].kind = p->nodes[0].kind == FZ_NODE_LOAD
                                      ? FZ_NODE_GATHER
                                      : FZ_NODE_LOAD)
MUT(node_dtype, p->nodes[0].dtype = p->nodes[0].dtype == FZ_F64 ? FZ_F32
                                                                : FZ_F64)
MUT(node_space, p->nodes[0].space = p->nodes[0].space == FZ_SPACE_FULL
                                        ? FZ_SPACE_ROW
                                        : FZ_SPACE_FULL)
MUT(node_phase, p->nodes[p->num_nodes - 1].phase += 1)
static bool node_access(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_STORE);
  if (!n)
    return false;
  n->access = n->access ? 0 : 1;
  return true;
}
static bool node_operand(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_OP);
  if (!n)
    return false;
  n->operands[0] = n->operands[0] ? 0 : 1;
  return true;
}
static bool node_code(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_OP);
  if (!n)
    return false;
  n->code = n->code == FZ_OP_ADD ? FZ_OP_SUB : FZ_OP_ADD;
  return true;
}
static bool node_operand_count(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_OP);
  if (!n)
    return false;
  n->num_operands = n->num_operands == 1 ? 2 : 1;
  return true;
}
static bool node_literal(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_LITERAL);
  if (!n)
    return false;
  if (fz_dtype_is_float(n->dtype))
    n->literal.f = n->literal.f + 0.125;
  else
    n->literal.i += 1;
  return true;
}
static bool literal_sign(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_LITERAL);
  if (!n || !fz_dtype_is_float(n->dtype) || n->literal.f == 0)
    return false;
  n->literal.f = -n->literal.f;
  return true;
}
static bool iota_step(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_IOTA);
  if (!n)
    return false;
  n->step.i += 1;
  return true;
}
static bool iota_coeff(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_IOTA);
  if (!n)
    return false;
  n->coeff[p->rank - 1] += 1;
  return true;
}
static bool random_coeff(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_RANDOM);
  if (!n)
    return false;
  n->coeff[0] += 1;
  return true;
}
static bool correction(fz_plan *p) {
  fz_plan_node *n = first_var(p);
  if (!n)
    return false;
  n->correction += 1;
  return true;
}
static bool reduce_operand(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_REDUCE);
  if (!n)
    return false;
  n->operands[0] = n->operands[0] ? 0 : 1;
  return true;
}
static bool gather_index(fz_plan *p) {
  fz_plan_node *n = first_node(p, FZ_NODE_GATHER);
  if (!n)
    return false;
  n->operands[0] = n->operands[0] ? 0 : 1;
  return true;
}

/* Parameters: none of these is in either key. */
MUT(extent, p->extents[0] += 5)
static bool outer_stride(fz_plan *p) {
  if (p->rank < 2)
    return false; /* the innermost stride's class is structure */
  p->accesses[0].strides[0] += 5;
  return true;
}
MUT(offset, p->accesses[0].offset += 5)
MUT(grid, p->grid_x += 5; p->blocks += 5)
MUT(resident, p->resident_per_sm += 1; p->resident_measured = true)
static bool symbol_value(fz_plan *p) {
  if (!p->num_symbols)
    return false;
  ((int64_t *)p->symbol_values)[0] += 5;
  return true;
}
static bool gather_sizes(fz_plan *p) {
  for (int i = 0; i < p->num_accesses; i++)
    if (p->accesses[i].gathered) {
      p->accesses[i].gather_stride += 5;
      p->accesses[i].gather_extent += 5;
      return true;
    }
  return false;
}
static bool dynamic_threads(fz_plan *p) {
  if (!p->dynamic_block)
    return false;
  p->threads += 32;
  p->block_x += 32;
  return true;
}

typedef struct case_ {
  const char *name;
  mutation change;
  bool structural;
} case_;

#define STRUCTURAL(f) {#f, f, true}
#define PARAMETER(f) {#f, f, false}
static const case_ cases[] = {
    STRUCTURAL(kind),          STRUCTURAL(vector),
    STRUCTURAL(unroll),        STRUCTURAL(threads),
    STRUCTURAL(index32),       STRUCTURAL(dynamic_block),
    STRUCTURAL(block_x),       STRUCTURAL(block_y),
    STRUCTURAL(split),         STRUCTURAL(persistent),
    STRUCTURAL(phases),        STRUCTURAL(cooperative),
    STRUCTURAL(prefetch),      STRUCTURAL(prefetch_single),
    STRUCTURAL(prefetch_deep), STRUCTURAL(prefetch_row_values),
    STRUCTURAL(weights_early), STRUCTURAL(refetch_bf16),
    STRUCTURAL(trace_phases),  STRUCTURAL(column_parts),
    STRUCTURAL(reduced),
    STRUCTURAL(row_axes),      STRUCTURAL(persistent_full),
    STRUCTURAL(cluster),       STRUCTURAL(column_slices),
    STRUCTURAL(multipass),     STRUCTURAL(held_shared),
    STRUCTURAL(column_cluster), STRUCTURAL(column_chunk),
    STRUCTURAL(tile_a),
    STRUCTURAL(tile_b),        STRUCTURAL(tile_axis),
    STRUCTURAL(tiled),         STRUCTURAL(access_output),
    STRUCTURAL(access_dtype),  STRUCTURAL(access_vector),
    STRUCTURAL(access_gathered), STRUCTURAL(access_clamp),
    STRUCTURAL(access_class),  STRUCTURAL(access_strided),
    STRUCTURAL(node_kind),     STRUCTURAL(node_dtype),
    STRUCTURAL(node_space),    STRUCTURAL(node_phase),
    STRUCTURAL(node_access),   STRUCTURAL(node_operand),
    STRUCTURAL(node_code),     STRUCTURAL(node_operand_count),
    STRUCTURAL(node_literal),  STRUCTURAL(literal_sign),
    STRUCTURAL(iota_step),     STRUCTURAL(iota_coeff),
    STRUCTURAL(random_coeff),  STRUCTURAL(correction),
    STRUCTURAL(reduce_operand), STRUCTURAL(gather_index),
    PARAMETER(extent),         PARAMETER(outer_stride),
    PARAMETER(offset),         PARAMETER(grid),
    PARAMETER(resident),       PARAMETER(symbol_value),
    PARAMETER(gather_sizes),   PARAMETER(dynamic_threads),
    PARAMETER(single_unused),
};
enum { NUM_CASES = sizeof cases / sizeof cases[0] };

/* The sizes each base is scheduled at: a dynamic-block class for @ln. */
static const int64_t base_symbols[][2] = {
    {1000, 3000}, {1000, 700}, {500, 0}, {300, 200}, {512, 262144}};

START_TEST(each_field_changes_the_id) {
  int changed_text[NUM_CASES] = {0}, applied[NUM_CASES] = {0};
  int num_bases = (int)(sizeof bases / sizeof bases[0]);
  for (int b = 0; b < num_bases; b++) {
    fz_fusion *f = prepared(bases[b]);
    fz_arena *a = fz_arena_create();
    fz_plan *plans[4];
    int n = 0;
    ck_assert_msg(plans_of(f, base_symbols[b], a, plans, 4, &n) && n == 1,
                  "@%s is not scheduled whole", f->name);
    const fz_plan *base = plans[0];
    const char *text = fz_plan_key(base, a);
    fz_plan_id id = fz_plan_identify(base, a);
    /* an unchanged copy: equal */
    fz_plan_id same = fz_plan_identify(copy_plan(base, a), a);
    ck_assert(fz_plan_id_equal(&id, &same));
    for (int c = 0; c < NUM_CASES; c++) {
      fz_plan *p = copy_plan(base, a);
      if (!cases[c].change(p))
        continue;
      applied[c]++;
      bool text_differs = strcmp(text, fz_plan_key(p, a)) != 0;
      fz_plan_id pid = fz_plan_identify(p, a);
      changed_text[c] += text_differs;
      ck_assert_msg(text_differs == !fz_plan_id_equal(&id, &pid),
                    "@%s, %s: the text key %s but the id %s", f->name,
                    cases[c].name, text_differs ? "changed" : "did not",
                    fz_plan_id_equal(&id, &pid) ? "did not" : "did");
    }
    fz_arena_destroy(a);
    fz_fusion_destroy(f);
  }
  for (int c = 0; c < NUM_CASES; c++) {
    ck_assert_msg(applied[c] > 0, "%s applies to no plan", cases[c].name);
    if (cases[c].structural)
      ck_assert_msg(changed_text[c] > 0, "%s changes no plan's key",
                    cases[c].name);
    else
      ck_assert_msg(changed_text[c] == 0, "%s changes a plan's key",
                    cases[c].name);
  }
}
END_TEST

/* Floats as %.17g prints them: +0 and -0 apart, every NaN of one sign
 * alike. */
START_TEST(literals_as_printed) {
  fz_fusion *f = prepared(bases[0]);
  fz_arena *a = fz_arena_create();
  fz_plan *plans[4];
  int n = 0;
  ck_assert(plans_of(f, base_symbols[0], a, plans, 4, &n) && n == 1);
  fz_plan *x = copy_plan(plans[0], a), *y = copy_plan(plans[0], a);
  fz_plan_node *lx = first_node(x, FZ_NODE_LITERAL);
  fz_plan_node *ly = first_node(y, FZ_NODE_LITERAL);
  ck_assert(lx && ly && fz_dtype_is_float(lx->dtype));
  static const uint64_t pairs[][2] = {
      {0x0000000000000000u, 0x8000000000000000u}, /* 0, -0: apart */
      {0x7ff8000000000000u, 0x7ff8000000000001u}, /* NaNs: alike */
      {0xfff8000000000000u, 0xfff0000000000010u}, /* -NaNs: alike */
      {0x7ff8000000000000u, 0xfff8000000000000u}, /* NaN, -NaN: apart */
      {0x3ff0000000000000u, 0x3ff0000000000001u}, /* 1, 1 + ulp: apart */
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    memcpy(&lx->literal.f, &pairs[i][0], sizeof(double));
    memcpy(&ly->literal.f, &pairs[i][1], sizeof(double));
    bool texts = strcmp(fz_plan_key(x, a), fz_plan_key(y, a)) == 0;
    fz_plan_id ix = fz_plan_identify(x, a), iy = fz_plan_identify(y, a);
    ck_assert_int_eq(texts, fz_plan_id_equal(&ix, &iy));
    ck_assert_int_eq(texts, i == 1 || i == 2);
  }
  fz_arena_destroy(a);
  fz_fusion_destroy(f);
}
END_TEST

/* ---- many plans ------------------------------------------------------------ */

typedef struct corpus {
  fz_arena *arena;
  const char **texts;
  fz_plan_id *ids;
  int count, cap;
} corpus;

static void add_plans(corpus *c, const fz_fusion *f, const int64_t *symbols) {
  fz_arena *a = fz_arena_create();
  fz_plan *plans[64];
  int n = 0;
  plans_of(f, symbols, a, plans, 64, &n);
  for (int k = 0; k < n; k++) {
    if (c->count == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 256;
      c->texts = realloc(c->texts, sizeof *c->texts * (size_t)c->cap);
      c->ids = realloc(c->ids, sizeof *c->ids * (size_t)c->cap);
      ck_assert(c->texts && c->ids);
    }
    c->texts[c->count] = fz_plan_key(plans[k], c->arena);
    c->ids[c->count] = fz_plan_identify(plans[k], c->arena);
    c->count++;
  }
  fz_arena_destroy(a);
}

/* Every fusion of a directory at a few sizes. */
static void add_file(const char *file, fz_fusion *f, void *ctx) {
  (void)file;
  static const int64_t sizes[][2] = {{8, 8}, {1000, 700}, {37, 4100}, {4096, 96}};
  int64_t values[64];
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    if (f->num_symbols <= 64 &&
        test_bind_symbols(f, sizes[s][0], sizes[s][1], values))
      add_plans(ctx, f, values);
}

START_TEST(ids_agree_with_texts) {
  corpus c = {.arena = fz_arena_create()};
  test_each_fusion_file("test/gpu", add_file, &c);
  test_each_fusion_file("bench/fusions", add_file, &c);
  int from_files = c.count;
  for (uint64_t seed = 1; seed <= 300; seed++) {
    fz_random_options o = {.allow_reductions = seed % 2 == 0};
    fz_fusion *f = fz_random_fusion(seed, &o);
    ck_assert_ptr_nonnull(f);
    int64_t values[64] = {0};
    if (f->num_symbols <= 64) {
      fz_random_bindings(f, seed, &o, values);
      add_plans(&c, f, values);
    }
    fz_fusion_destroy(f);
  }
  ck_assert_int_gt(from_files, 300);
  ck_assert_int_gt(c.count, from_files + 300);
  int equal = 0;
  for (int i = 0; i < c.count; i++)
    for (int j = i + 1; j < c.count; j++) {
      bool texts = strcmp(c.texts[i], c.texts[j]) == 0;
      bool ids = fz_plan_id_equal(&c.ids[i], &c.ids[j]);
      equal += texts;
      if (texts != ids)
        ck_abort_msg("texts %s but ids %s:\n%s\n---\n%s",
                     texts ? "equal" : "differ", ids ? "equal" : "differ",
                     c.texts[i], c.texts[j]);
    }
  ck_assert_int_gt(equal, 0); /* some plans share a kernel */
  free(c.texts);
  free(c.ids);
  fz_arena_destroy(c.arena);
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("plan_id");
  TCase *t = tcase_create("plan_id");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, each_field_changes_the_id);
  tcase_add_test(t, literals_as_printed);
  tcase_add_test(t, ids_agree_with_texts);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return test_run_suite(make()); }
