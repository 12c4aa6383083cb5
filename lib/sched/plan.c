/* plan.c - what every consumer of a kernel plan shares: the kernel's
 * parameter order (lowering declares it, the launcher fills it), the
 * structural key that names a compiled kernel, and the text form.
 */
#include "sched/plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fz_device_info fz_device_info_default(int sm) {
  /* H200 SXM: 132 SMs, 227 KiB opt-in shared memory per block, 60 MiB L2
   * (NVIDIA H200 datasheet; SM count as reported by the driver). */
  return (fz_device_info){.sm = sm ? sm : 90,
                          .num_sms = 132,
                          .max_threads_per_block = 1024,
                          .max_shared_per_block = 227 * 1024,
                          .l2_bytes = 60 * 1024 * 1024};
}

static bool is_reduction(const fz_plan *p) {
  return p->kind != FZ_PLAN_POINTWISE && p->kind != FZ_PLAN_TRANSPOSE;
}

void fz_plan_launch_shape(const fz_plan *p, unsigned grid[3],
                          unsigned block[3]) {
  bool reduction = is_reduction(p);
  grid[0] = (unsigned)(reduction ? p->grid_x : p->blocks);
  grid[1] = reduction ? (unsigned)p->split : 1;
  grid[2] = 1;
  block[0] = (unsigned)p->threads;
  block[1] = 1;
  block[2] = 1;
}

/* Whether access a's strides move it from row to row (*along_rows) and
 * along the row (*along_row). */
static void access_varies(const fz_plan *p, int a, bool *along_rows,
                          bool *along_row) {
  const fz_plan_access *acc = &p->accesses[a];
  *along_rows = *along_row = false;
  for (int d = 0; d < p->rank; d++) {
    *along_rows |= !p->row_axes[d] && acc->strides[d] != 0;
    *along_row |= p->row_axes[d] && acc->strides[d] != 0;
  }
}

/* An input read in the full space that varies along the rows and along
 * the row: what a prefetch copies ahead and a held_shared plan keeps. */
static bool row_varying_input(const fz_plan *p, int a) {
  const fz_plan_access *acc = &p->accesses[a];
  if (acc->is_output || acc->clamp)
    return false;
  bool along_rows, along_row, full_load = false;
  access_varies(p, a, &along_rows, &along_row);
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    full_load |=
        n->kind == FZ_NODE_LOAD && n->access == a && n->space == FZ_SPACE_FULL;
  }
  return along_rows && along_row && full_load;
}

bool fz_plan_prefetched(const fz_plan *p, int a) {
  return p->prefetch && row_varying_input(p, a);
}

/* An input read by LOAD nodes that varies along the rows and not along
 * the row, in whole cp.async pieces. */
static bool row_constant_input(const fz_plan *p, int a) {
  const fz_plan_access *acc = &p->accesses[a];
  size_t bytes = fz_dtype_size(acc->dtype);
  if (acc->is_output || acc->clamp || acc->gathered ||
      !(bytes == 4 || bytes == 8))
    return false;
  bool along_rows, along_row, load = false;
  access_varies(p, a, &along_rows, &along_row);
  for (int i = 0; i < p->num_nodes; i++)
    load |= p->nodes[i].kind == FZ_NODE_LOAD && p->nodes[i].access == a;
  return along_rows && !along_row && load;
}

bool fz_plan_row_value_staged(const fz_plan *p, int a) {
  return p->prefetch && p->prefetch_row_values && row_constant_input(p, a);
}

bool fz_plan_has_row_values(const fz_plan *p) {
  if (!fz_plan_is_persistent(p))
    return false;
  for (int a = 0; a < p->num_accesses; a++)
    if (row_constant_input(p, a))
      return true;
  return false;
}

const char *fz_trace_mark_name(fz_trace_mark m) {
  static const char *const names[FZ_TRACE_MARKS] = {
      [FZ_TRACE_START] = "start",         [FZ_TRACE_FIRST_ROW] = "first-row",
      [FZ_TRACE_ROWS] = "rows",           [FZ_TRACE_PUBLISHED] = "published",
      [FZ_TRACE_BARRIER] = "grid-barrier", [FZ_TRACE_END] = "end"};
  return (int)m >= 0 && m < FZ_TRACE_MARKS ? names[m] : "?";
}

bool fz_plan_has_weight_row(const fz_plan *p) {
  if (!fz_plan_is_persistent(p))
    return false;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_LOAD || n->space != FZ_SPACE_FULL)
      continue;
    bool along_rows, along_row;
    access_varies(p, n->access, &along_rows, &along_row);
    if (along_row && !along_rows)
      return true;
  }
  return false;
}

bool fz_plan_refetchable_bf16(const fz_plan *p, int a) {
  if (!fz_plan_is_persistent(p) || p->accesses[a].dtype != FZ_BF16 ||
      fz_plan_prefetched(p, a) || fz_plan_held_in_shared(p, a))
    return false;
  /* it varies along the row and from row to row (a weight row is loaded
   * once where first used) */
  bool along_rows, along_row;
  access_varies(p, a, &along_rows, &along_row);
  return along_rows && along_row;
}

bool fz_plan_has_refetchable_bf16(const fz_plan *p) {
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind == FZ_NODE_LOAD && n->space == FZ_SPACE_FULL &&
        fz_plan_refetchable_bf16(p, n->access))
      return true;
  }
  return false;
}

bool fz_plan_held_in_shared(const fz_plan *p, int a) {
  return p->held_shared && p->kind == FZ_PLAN_OUTER_PERSISTENT &&
         row_varying_input(p, a);
}

/* Whether every access that `copied` picks moves whole cp.async pieces
 * (4, 8 or 16 bytes) a group, and there is at least one. */
static bool pieces_fit(const fz_plan *p, bool (*copied)(const fz_plan *, int)) {
  bool any = false;
  for (int a = 0; a < p->num_accesses; a++) {
    if (!copied(p, a))
      continue;
    size_t bytes = (size_t)p->vector * fz_dtype_size(p->accesses[a].dtype);
    if (p->accesses[a].vector != p->vector ||
        !(bytes == 4 || bytes == 8 || bytes % 16 == 0))
      return false;
    any = true;
  }
  return any;
}

bool fz_plan_held_pieces_fit(const fz_plan *p) {
  return pieces_fit(p, fz_plan_held_in_shared);
}

bool fz_plan_prefetch_pieces_fit(const fz_plan *p) {
  return pieces_fit(p, row_varying_input);
}

int fz_plan_prefetch_buffers(const fz_plan *p) {
  return !p->prefetch ? 0 : p->prefetch_single ? 1 : p->prefetch_deep ? 3 : 2;
}

/* Dynamic shared memory: a prefetching plan's buffers
 * (fz_plan_prefetch_buffers), each with every prefetched access's groups for every
 * thread and every staged row value's slot for every thread; a held_shared plan's held rows, each with every held access's
 * groups for every thread. */
size_t fz_plan_shared_bytes(const fz_plan *p) {
  size_t one = 0, held = 0, row_values = 0;
  for (int a = 0; a < p->num_accesses; a++) {
    size_t groups = (size_t)p->persistent * (size_t)p->threads *
                    (size_t)p->vector * fz_dtype_size(p->accesses[a].dtype);
    if (fz_plan_prefetched(p, a))
      one += groups;
    if (fz_plan_row_value_staged(p, a))
      row_values += (size_t)p->threads * fz_dtype_size(p->accesses[a].dtype);
    if (fz_plan_held_in_shared(p, a))
      held += (size_t)p->unroll * groups;
  }
  /* a buffer's row-value slots follow its groups, padded so that the
   * second buffer's 16-byte pieces stay aligned */
  one += (row_values + 15) / 16 * 16;
  /* the column exchange overlays the prefetch buffers */
  size_t buffers = (size_t)fz_plan_prefetch_buffers(p) * one;
  size_t exchange = fz_plan_column_exchange_bytes(p);
  return (exchange > buffers ? exchange : buffers) + held;
}

size_t fz_tile_element_bytes(fz_dtype d) {
  return fz_dtype_size(d) > 4 ? 8 : 4;
}

size_t fz_plan_tile_bytes(const fz_plan *p) {
  if (p->kind != FZ_PLAN_TRANSPOSE || !p->tiled)
    return 0;
  size_t bytes = 0;
  for (int i = 0; i < p->num_accesses; i++)
    if (p->tiled[i])
      bytes += fz_tile_element_bytes(p->accesses[i].dtype) *
               (size_t)p->tile_a * (size_t)(p->tile_b + 1);
  return bytes;
}

int64_t fz_plan_num_groups(const fz_plan *p) {
  int64_t n = 1;
  for (int k = 0; k < p->rank; k++)
    n *= p->extents[k];
  return n / p->vector;
}

int64_t fz_plan_kept_points(const fz_plan *p) {
  int64_t n = 1;
  for (int k = 0; k < p->rank; k++)
    if (!p->reduced[k])
      n *= p->extents[k];
  return n;
}

int64_t fz_plan_reduced_points(const fz_plan *p) {
  int64_t n = 1;
  for (int k = 0; k < p->rank; k++)
    if (p->reduced[k])
      n *= p->extents[k];
  return n;
}

int64_t fz_plan_rows(const fz_plan *p) {
  int64_t n = 1;
  for (int k = 0; k < p->rank; k++)
    if (!p->row_axes[k])
      n *= p->extents[k];
  return n;
}

int64_t fz_plan_row_points(const fz_plan *p) {
  int64_t n = 1;
  for (int k = 0; k < p->rank; k++)
    if (p->row_axes[k])
      n *= p->extents[k];
  return n;
}

fz_dtype fz_reduce_acc_dtype(fz_dtype result) {
  switch (result) {
  case FZ_F64:
    return FZ_F64;
  case FZ_F32:
  case FZ_F16:
  case FZ_BF16:
    return FZ_F32;
  default:
    return FZ_I64;
  }
}

bool fz_plan_is_persistent(const fz_plan *p) {
  return p->kind == FZ_PLAN_INNER_PERSISTENT ||
         p->kind == FZ_PLAN_INNER_OUTER_PERSISTENT ||
         p->kind == FZ_PLAN_OUTER_PERSISTENT;
}

bool fz_plan_has_grid_columns(const fz_plan *p) {
  return p->kind == FZ_PLAN_INNER_OUTER_PERSISTENT ||
         p->kind == FZ_PLAN_OUTER_PERSISTENT;
}

static bool has_workspace(const fz_plan *p) {
  return fz_plan_has_grid_columns(p) ||
         ((p->kind == FZ_PLAN_INNER_REDUCTION ||
           p->kind == FZ_PLAN_OUTER_REDUCTION) &&
          p->split > 1);
}

int64_t fz_plan_num_tiles(const fz_plan *p) {
  if (fz_plan_is_persistent(p))
    return (fz_plan_rows(p) + p->block_y - 1) / p->block_y;
  if (p->kind == FZ_PLAN_INNER_REDUCTION)
    return (fz_plan_kept_points(p) + p->block_y - 1) / p->block_y;
  if (p->kind == FZ_PLAN_OUTER_REDUCTION) {
    int64_t lanes = (int64_t)p->block_x * p->vector;
    return (fz_plan_kept_points(p) + lanes - 1) / lanes;
  }
  if (p->kind == FZ_PLAN_TRANSPOSE) {
    int a = p->rank - 1, b = p->tile_axis;
    int64_t n = ((p->extents[a] + p->tile_a - 1) / p->tile_a) *
                ((p->extents[b] + p->tile_b - 1) / p->tile_b);
    for (int k = 0; k < p->rank; k++)
      if (k != a && k != b)
        n *= p->extents[k];
    return n;
  }
  return 0;
}

size_t fz_plan_workspace_bytes(const fz_plan *p) {
  if (!has_workspace(p))
    return 0;
  if (fz_plan_has_grid_columns(p)) {
    /* one row of column partials per block and column REDUCE node; an
     * outer plan adds a row of results per node, which every block reads
     * back into its rows */
    size_t bytes = 0;
    for (int i = 0; i < p->num_nodes; i++)
      if (p->nodes[i].kind == FZ_NODE_REDUCE &&
          p->nodes[i].space == FZ_SPACE_COLUMN)
        bytes += fz_plan_reduce_bytes(p, &p->nodes[i]);
    bool outer = p->kind == FZ_PLAN_OUTER_PERSISTENT;
    /* a row per cluster when a cluster combines its blocks' partials */
    size_t rows = (size_t)(p->column_cluster ? p->grid_x / p->column_cluster
                                             : p->grid_x) +
                  (outer ? 1 : 0);
    /* the results start at a 16-byte boundary after the partials */
    return bytes * (size_t)fz_plan_row_points(p) * rows + (outer ? 16 : 0);
  }
  size_t bytes = 0;
  for (int i = 0; i < p->num_nodes; i++)
    if (p->nodes[i].kind == FZ_NODE_REDUCE)
      bytes += fz_plan_reduce_bytes(p, &p->nodes[i]);
  return bytes * (size_t)fz_plan_kept_points(p) * (size_t)p->split;
}

size_t fz_plan_counter_bytes(const fz_plan *p) {
  if (!has_workspace(p))
    return 0;
  if (p->kind == FZ_PLAN_OUTER_PERSISTENT && p->column_slices > 1)
    return 4 * (size_t)p->column_slices; /* a barrier counter per slice */
  if (fz_plan_has_grid_columns(p))
    return 8; /* grid barrier: arrivals, generation */
  return 4 * (size_t)fz_plan_num_tiles(p);
}

static int num_gathered(const fz_plan *p) {
  int n = 0;
  for (int i = 0; i < p->num_accesses; i++)
    n += p->accesses[i].gathered;
  return n;
}

bool fz_plan_has_gather(const fz_plan *p) { return num_gathered(p) > 0; }

int fz_plan_gather_param(const fz_plan *p, int a) {
  int n = 1 + p->rank + p->num_accesses * (p->rank + 1) + p->num_symbols;
  for (int i = 0; i < a; i++)
    n += 3 * p->accesses[i].gathered;
  return n;
}

int fz_plan_num_scalar_params(const fz_plan *p) {
  return 1 + p->rank + p->num_accesses * (p->rank + 1) + p->num_symbols +
         3 * num_gathered(p);
}

int fz_plan_num_params(const fz_plan *p) {
  int n = p->num_accesses + fz_plan_num_scalar_params(p);
  if (has_workspace(p))
    n += 2;
  if (fz_plan_has_gather(p))
    n += 1; /* the error word */
  return n;
}

int fz_plan_symbol_param(const fz_plan *p, const fz_plan_node *n) {
  for (int s = 0; s < p->num_symbols; s++)
    if (p->symbols[s] == n->symbol)
      return s;
  FZ_DIE("symbol node reads symbol %d, which the plan does not pass",
         n->symbol);
}

bool fz_plan_params_fit(const fz_plan *p, fz_reason *why) {
  int n = fz_plan_num_params(p);
  if (n <= FZ_MAX_PARAMS)
    return true;
  if (why)
    snprintf(why->text, sizeof why->text,
             "the kernel would take %d bytes of parameters for %d tensor "
             "accesses (at most %d bytes)",
             8 * n, p->num_accesses, FZ_MAX_PARAM_BYTES);
  return false;
}

bool fz_outputs_params_fit(int num_outputs, fz_reason *why) {
  /* per output: pointer, one stride, offset; then group count, extent */
  int64_t n = 3 * (int64_t)num_outputs + 2;
  if (n <= FZ_MAX_PARAMS)
    return true;
  if (why)
    snprintf(why->text, sizeof why->text,
             "%d outputs need at least %" PRId64
             " bytes of kernel parameters (at most %d bytes)",
             num_outputs, 8 * n, FZ_MAX_PARAM_BYTES);
  return false;
}

bool fz_problem_params_fit(const fz_problem *pb, fz_reason *why) {
  return fz_outputs_params_fit(pb->fusion->num_outputs, why);
}

void fz_plan_scalar_params(const fz_plan *p, int64_t *out) {
  int n = 0;
  out[n++] = fz_plan_is_persistent(p)       ? fz_plan_rows(p)
             : is_reduction(p)              ? fz_plan_kept_points(p)
             : p->kind == FZ_PLAN_TRANSPOSE ? fz_plan_num_tiles(p)
                                            : fz_plan_num_groups(p);
  for (int k = 0; k < p->rank; k++)
    out[n++] = p->extents[k];
  for (int i = 0; i < p->num_accesses; i++) {
    for (int k = 0; k < p->rank; k++)
      out[n++] = p->accesses[i].strides[k];
    out[n++] = p->accesses[i].offset;
  }
  for (int s = 0; s < p->num_symbols; s++)
    out[n++] = p->symbol_values[s];
  for (int i = 0; i < p->num_accesses; i++)
    if (p->accesses[i].gathered) {
      out[n++] = p->accesses[i].gather_stride;
      out[n++] = p->accesses[i].gather_extent;
      out[n++] = 0; /* the site: the executor's */
    }
}

static const char *kind_name(fz_plan_kind k) {
  switch (k) {
  case FZ_PLAN_POINTWISE:
    return "pointwise";
  case FZ_PLAN_INNER_REDUCTION:
    return "inner-reduction";
  case FZ_PLAN_OUTER_REDUCTION:
    return "outer-reduction";
  case FZ_PLAN_INNER_PERSISTENT:
    return "inner-persistent";
  case FZ_PLAN_INNER_OUTER_PERSISTENT:
    return "inner-outer-persistent";
  case FZ_PLAN_TRANSPOSE:
    return "transpose";
  case FZ_PLAN_OUTER_PERSISTENT:
    return "outer-persistent";
  }
  return "?";
}

static bool is_tiled(const fz_plan *p, int i) {
  return p->kind == FZ_PLAN_TRANSPOSE && p->tiled && p->tiled[i];
}

/* The innermost stride decides the shape of the memory instructions, so it
 * is part of the kernel's structure; the other strides are parameters. A
 * tiled access's stride along the tile axis is 1 by construction: also
 * structure (its vector runs along that axis). */
static const char *inner_class(const fz_plan *p, const fz_plan_access *a) {
  if (is_tiled(p, (int)(a - p->accesses)))
    return "tiled";
  int64_t s = a->strides[p->rank - 1];
  return s == 0 ? "splat" : s == 1 ? "unit" : "strided";
}

static void print_scalar(fz_buf *b, fz_dtype dtype, fz_scalar v) {
  if (fz_dtype_is_float(dtype))
    fz_buf_printf(b, "%.17g", v.f);
  else
    fz_buf_printf(b, "%" PRId64, v.i);
}

static void print_nodes(const fz_plan *p, fz_buf *b, bool with_values) {
  int domain = -1;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    const char *dt = fz_dtype_name(n->dtype);
    bool persistent = fz_plan_is_persistent(p);
    if (is_reduction(p) && !persistent && (int)n->space != domain) {
      fz_buf_puts(b, n->space == FZ_SPACE_ROW ? "  post:\n" : "  pre:\n");
      domain = (int)n->space;
    }
    if (persistent) {
      const char *space = n->space == FZ_SPACE_ROW      ? "row"
                          : n->space == FZ_SPACE_COLUMN ? "col"
                                                        : "full";
      fz_buf_printf(b, "  [%s p%d]", space, n->phase);
    }
    switch (n->kind) {
    case FZ_NODE_LOAD:
      fz_buf_printf(b, "  n%d = load a%d : %s\n", i, n->access, dt);
      break;
    case FZ_NODE_LITERAL:
      fz_buf_printf(b, "  n%d = literal ", i);
      print_scalar(b, n->dtype, n->literal);
      fz_buf_printf(b, " : %s\n", dt);
      break;
    case FZ_NODE_IOTA:
      fz_buf_printf(b, "  n%d = iota start ", i);
      print_scalar(b, n->dtype, n->literal);
      fz_buf_puts(b, " step ");
      print_scalar(b, n->dtype, n->step);
      fz_buf_puts(b, " coeff(");
      for (int k = 0; k < p->rank; k++)
        fz_buf_printf(b, "%s%" PRId64, k ? ", " : "", n->coeff[k]);
      fz_buf_printf(b, ") : %s\n", dt);
      break;
    case FZ_NODE_OP:
      fz_buf_printf(b, "  n%d = %s", i, fz_op_table[n->code].name);
      for (int k = 0; k < n->num_operands; k++)
        fz_buf_printf(b, "%s n%d", k ? "," : "", n->operands[k]);
      fz_buf_printf(b, " : %s\n", dt);
      break;
    case FZ_NODE_STORE:
      fz_buf_printf(b, "  store a%d, n%d : %s\n", n->access, n->operands[0],
                    dt);
      break;
    case FZ_NODE_REDUCE:
      if (fz_plan_node_is_arg(n)) {
        fz_buf_printf(b, "  n%d = reduce %s n%d at n%d : %s (accumulate %s)\n",
                      i, fz_op_table[n->code].name, n->operands[0],
                      n->operands[1], dt,
                      fz_dtype_name(fz_plan_reduce_acc(p, n)));
        break;
      }
      fz_buf_printf(b, "  n%d = reduce %s n%d", i, fz_op_table[n->code].name,
                    n->operands[0]);
      if (n->code == FZ_OP_VAR) /* compiled in: part of the key */
        fz_buf_printf(b, " correction(%.17g)", n->correction);
      fz_buf_printf(b, " : %s (accumulate %s)\n", dt,
                    fz_dtype_name(fz_reduce_acc_dtype(n->dtype)));
      break;
    case FZ_NODE_RANDOM:
      /* the coefficients are constants of the kernel, as iota's */
      fz_buf_printf(b, "  n%d = %s n%d, n%d coeff(", i,
                    fz_op_table[n->code].name, n->operands[0], n->operands[1]);
      for (int k = 0; k < p->rank; k++)
        fz_buf_printf(b, "%s%" PRId64, k ? ", " : "", n->coeff[k]);
      fz_buf_printf(b, ") : %s\n", dt);
      break;
    case FZ_NODE_GATHER:
      fz_buf_printf(b, "  n%d = gather a%d at n%d : %s\n", i, n->access,
                    n->operands[0], dt);
      break;
    case FZ_NODE_SYMBOL: {
      /* the key names the parameter, not the symbol: one kernel serves
       * any symbol read from the same parameter */
      int s = fz_plan_symbol_param(p, n);
      fz_buf_printf(b, "  n%d = symbol s%d", i, s);
      if (with_values)
        fz_buf_printf(b, " (%s)", p->fusion->symbols[n->symbol].name);
      fz_buf_printf(b, " : %s\n", dt);
      break;
    }
    }
  }
}

/* How a plan prefetches: two buffers print as they did before there
 * was a choice. */
static const char *prefetch_text(const fz_plan *p) {
  static const char *const text[4][2] = {
      {"", ""},
      {" prefetch=1", " prefetch=1 row-values=shared"},
      {" prefetch", " prefetch row-values=shared"},
      {" prefetch=3", " prefetch=3 row-values=shared"},
  };
  return text[fz_plan_prefetch_buffers(p)][p->prefetch_row_values];
}

/* A field added here goes into plan_id.c's fz_plan_identify too, in the
 * same place (test_plan_id compares the two). */
const char *fz_plan_key(const fz_plan *p, fz_arena *arena) {
  fz_buf b = {0};
  /* a dynamic block's width is the launch's: not the kernel's */
  if (p->dynamic_block)
    fz_buf_printf(&b, "%s rank=%d vec=%d unroll=%d threads=dyn idx%d\n",
                  kind_name(p->kind), p->rank, p->vector, p->unroll,
                  p->index32 ? 32 : 64);
  else
    fz_buf_printf(&b, "%s rank=%d vec=%d unroll=%d threads=%d idx%d\n",
                  kind_name(p->kind), p->rank, p->vector, p->unroll,
                  p->threads, p->index32 ? 32 : 64);
  if (is_reduction(p)) {
    if (p->dynamic_block)
      fz_buf_printf(&b, "block=dynx%d", p->block_y);
    else
      fz_buf_printf(&b, "block=%dx%d", p->block_x, p->block_y);
    fz_buf_printf(&b, " split=%s persistent=%d phases=%d%s%s%s%s%s",
                  p->split > 1 ? "grid" : "none", p->persistent, p->phases,
                  p->cooperative ? " coop" : "", prefetch_text(p),
                  p->weights_early ? " weights=early" : "",
                  p->refetch_bf16 ? " refetch=bf16" : "",
                  p->trace_phases ? " trace=phases" : "");
    if (p->column_parts > 1)
      fz_buf_printf(&b, " column-parts=%d", p->column_parts);
    fz_buf_puts(&b, " reduced=");
    for (int k = 0; k < p->rank; k++)
      fz_buf_puts(&b, p->reduced[k] ? "R" : "I");
    if (fz_plan_is_persistent(p)) {
      fz_buf_puts(&b, " row=");
      for (int k = 0; k < p->rank; k++)
        fz_buf_puts(&b, p->row_axes[k] ? "x" : "-");
      fz_buf_printf(&b, " full=%d", p->persistent_full);
    }
    if (p->cluster)
      fz_buf_printf(&b, " cluster=%d", p->cluster);
    if (p->column_cluster)
      fz_buf_printf(&b, " column-cluster=%d chunk=%d", p->column_cluster,
                    p->column_chunk);
    if (p->column_slices > 1)
      fz_buf_printf(&b, " slices=%d", p->column_slices);
    if (p->multipass)
      fz_buf_puts(&b, " multipass");
    if (p->held_shared)
      fz_buf_puts(&b, " held=shared");
    fz_buf_puts(&b, "\n");
  }
  if (p->kind == FZ_PLAN_TRANSPOSE)
    fz_buf_printf(&b, "tile=%dx%d axis=%d\n", p->tile_a, p->tile_b,
                  p->tile_axis);
  for (int i = 0; i < p->num_accesses; i++) {
    const fz_plan_access *a = &p->accesses[i];
    fz_buf_printf(&b, "a%d %s %s vec=%d %s%s", i, a->is_output ? "w" : "r",
                  fz_dtype_name(a->dtype), a->vector, inner_class(p, a),
                  a->gathered ? " gathered" : "");
    if (a->clamp) /* a constant of the kernel */
      fz_buf_printf(&b, " clamp=%" PRId64, a->clamp);
    fz_buf_puts(&b, "\n");
  }
  print_nodes(p, &b, false);
  char *s = fz_buf_take(&b);
  if (!s)
    FZ_DIE("out of memory building a plan key");
  const char *key = fz_arena_strdup(arena, s);
  free(s);
  return key;
}

void fz_plan_print(const fz_plan *p, fz_buf *b) {
  const fz_fusion *f = p->fusion;
  fz_buf_printf(b, "plan @%s %s kernel=%s\n", f->name, kind_name(p->kind),
                p->kernel_name);
  fz_buf_printf(b, "  space [");
  for (int k = 0; k < p->rank; k++)
    fz_buf_printf(b, "%s%s%" PRId64, k ? ", " : "",
                  is_reduction(p) ? (p->reduced[k] ? "R" : "I") : "",
                  p->extents[k]);
  fz_buf_printf(b, "] reference %s index%d\n", p->reference,
                p->index32 ? 32 : 64);
  char slices_text[32], parts_text[32];
  snprintf(slices_text, sizeof slices_text, " slices=%d", p->column_slices);
  snprintf(parts_text, sizeof parts_text, " column-parts=%d", p->column_parts);
  if (p->kind == FZ_PLAN_OUTER_PERSISTENT)
    fz_buf_printf(b,
                  "  launch grid=%" PRId64 " block=%dx%d vector=%d "
                  "persistent=%d rows-held=%d%s phases=%d cooperative%s%s\n",
                  p->grid_x, p->block_x, p->block_y, p->vector, p->persistent,
                  p->unroll, p->held_shared ? " in-shared" : "", p->phases,
                  p->column_slices > 1 ? slices_text : "",
                  p->column_parts > 1 ? parts_text : "");
  else if (fz_plan_is_persistent(p)) {
    fz_buf_printf(b,
                  "  launch grid=%" PRId64 " block=%dx%d vector=%d "
                  "persistent=%d phases=%d%s%s",
                  p->grid_x, p->block_x, p->block_y, p->vector, p->persistent,
                  p->phases, p->cooperative ? " cooperative" : "",
                  prefetch_text(p));
    /* a size class: groups from persistent_full on are masked */
    if (p->persistent_full != p->persistent - 1 && !p->multipass)
      fz_buf_printf(b, " masked-from=%d", p->persistent_full);
    if (p->cluster)
      fz_buf_printf(b, " cluster=%d", p->cluster);
    if (p->column_cluster)
      fz_buf_printf(b, " column-cluster=%d chunk=%d", p->column_cluster,
                    p->column_chunk);
    if (p->multipass)
      fz_buf_puts(b, " multipass");
    if (p->weights_early)
      fz_buf_puts(b, " weights=early");
    if (p->refetch_bf16)
      fz_buf_puts(b, " refetch=bf16");
    if (p->trace_phases)
      fz_buf_puts(b, " trace=phases");
    if (p->column_parts > 1)
      fz_buf_printf(b, " column-parts=%d", p->column_parts);
    fz_buf_puts(b, p->dynamic_block ? " dynamic-block\n" : "\n");
  }
  else if (is_reduction(p)) {
    fz_buf_printf(b,
                  "  launch grid=%" PRId64 "x%d block=%dx%d vector=%d "
                  "unroll=%d%s",
                  p->grid_x, p->split, p->block_x, p->block_y, p->vector,
                  p->unroll, p->split > 1 ? " grid-reduction" : "");
    /* the executor sizes the grid again from the loaded kernel */
    if (p->resident_per_sm)
      fz_buf_printf(b, "; grid sized at load (%s: %d blocks/SM)",
                    p->resident_measured ? "occupancy" : "estimate",
                    p->resident_per_sm);
    fz_buf_puts(b, "\n");
  }
  else if (p->kind == FZ_PLAN_TRANSPOSE)
    fz_buf_printf(b,
                  "  launch grid=%" PRId64 " block=%d vector=%d tile=%dx%d "
                  "(axes %d x %d) shared=%zu\n",
                  p->blocks, p->threads, p->vector, p->tile_a, p->tile_b,
                  p->rank - 1, p->tile_axis, fz_plan_tile_bytes(p));
  else
    fz_buf_printf(b,
                  "  launch grid=%" PRId64 " block=%d vector=%d unroll=%d\n",
                  p->blocks, p->threads, p->vector, p->unroll);
  for (int i = 0; i < p->num_accesses; i++) {
    const fz_plan_access *a = &p->accesses[i];
    const fz_value *v = a->is_output ? f->outputs[a->io] : f->inputs[a->io];
    fz_buf_printf(b, "  a%d = %s %s%s%d %%%s : %s strides(", i,
                  a->is_output ? "write" : "read",
                  a->is_output ? "output" : "input", "#", a->io,
                  v->name ? v->name : "?", fz_dtype_name(a->dtype));
    for (int k = 0; k < p->rank; k++)
      fz_buf_printf(b, "%s%" PRId64, k ? ", " : "", a->strides[k]);
    fz_buf_printf(b, ")");
    if (a->offset)
      fz_buf_printf(b, " offset %" PRId64, a->offset);
    if (a->clamp)
      fz_buf_printf(b, " window clamp(0, %" PRId64 ")", a->clamp);
    if (a->gathered)
      fz_buf_printf(b, " gathered along axis %d (stride %" PRId64
                       ", extent %" PRId64 ")",
                    a->gather_axis, a->gather_stride, a->gather_extent);
    if (is_tiled(p, i))
      fz_buf_printf(b, " tiled vector %d (%zu bytes) along axis %d",
                    a->vector, (size_t)a->vector * fz_dtype_size(a->dtype),
                    p->tile_axis);
    else if (a->strides[p->rank - 1] == 0)
      fz_buf_puts(b, " splat");
    else if (a->vector > 1)
      fz_buf_printf(b, " vector %d (%zu bytes)", a->vector,
                    (size_t)a->vector * fz_dtype_size(a->dtype));
    else
      fz_buf_puts(b, " scalar");
    fz_buf_puts(b, "\n");
  }
  for (int k = 0; k < p->num_symbols; k++)
    fz_buf_printf(b, "  s%d = symbol %s = %" PRId64 " (parameter)\n", k,
                  f->symbols[p->symbols[k]].name, p->symbol_values[k]);
  print_nodes(p, b, true);
}
