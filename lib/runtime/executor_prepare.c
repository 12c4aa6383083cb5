/* executor_prepare.c - what the executor builds on a signature miss.
 *
 * The whole fusion (the executor's copy, with allocation orders
 * propagated) is segmented for this call's problem: usually one segment,
 * the fusion itself, scheduled whole; otherwise the fewest segments the
 * schedulers accept, with the intermediates between them materialised in
 * global memory. Per segment, in execution order: its problem (the
 * parent's descriptors for parent inputs and outputs, dense descriptors
 * for intermediates), a plan, the kernel for the plan's structural key
 * (found in the executor's kernel cache or compiled), its workspace and
 * its cooperative grid, and the i64 launch parameters. All of it is kept
 * per signature, so that a later call with the same signature only
 * launches.
 *
 * With FZ_DUMP set (lib/codegen/dump.h), a miss dumps the fusion (as the
 * executor compiles it: after alloc-order) and its segments, and each
 * kernel it compiles dumps its plan, LLVM IR and PTX, all filed under
 * one unit named after the fusion; kernels found in the kernel cache were
 * dumped when they were compiled.
 *
 * Nothing is allocated here: intermediates, workspaces and counters get
 * offsets in the signature's scratch layout (executor.h), and each call
 * takes the memory from the executor's allocator (scratch.c).
 */
#include "runtime/executor.h"
#include "sched/split_grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned alignment_of(uint64_t ptr) {
  unsigned a = 16;
  while (a > 1 && ptr % a)
    a /= 2;
  return a;
}

static void describe(const fz_device_tensor *t, fz_tensor_desc *d) {
  *d = (fz_tensor_desc){
      .dtype = t->dtype, .rank = t->rank, .align = alignment_of(t->data)};
  memcpy(d->sizes, t->sizes, sizeof d->sizes);
  memcpy(d->strides, t->strides, sizeof d->strides);
}

/* The sizes of every value were checked when the call's inputs were bound
 * (fz_bind_inputs runs fz_check_sizes), so this cannot fail here. */
static int64_t desc_numel(const fz_tensor_desc *d) {
  int64_t n = 0;
  fz_size_of(d->rank, d->sizes, d->dtype, "tensor", FZ_ERR_INTERNAL, &n, NULL,
             NULL);
  return n;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void fz_executor_signature_free(fz_executor *ex, signature_entry *e) {
  if (!e)
    return;
  fz_scratch_free_blocks(ex, e);
  free(e->plan_text);
  free(e->ptx_text);
  fz_segmentation_destroy(e->segmentation);
  fz_arena_destroy(e->arena); /* e itself lives in it */
}

/* Kernel k of the signature: from the executor's kernel cache, or
 * compiled (and dumped, when FZ_DUMP asks, under `dump`'s name). */
static fz_status find_or_compile_kernel(fz_executor *ex, const fz_plan *plan,
                                        fz_arena *plan_arena,
                                        const fz_dump_unit *dump, int k,
                                        kernel_entry **out, fz_error *err) {
  fz_plan_id id = fz_plan_identify(plan, plan_arena);
  for (int i = 0; i < ex->num_kernels; i++)
    if (fz_plan_id_equal(&ex->kernels[i]->id, &id)) {
      *out = ex->kernels[i];
      return FZ_OK;
    }
  const fz_device_props *props = fz_device_get_props(ex->device);
  fz_compile_options opts = fz_codegen_options(props->sm);
  opts.opt_level = ex->opt_level;
  opts.dump_unit = dump;
  opts.dump_kernel = k;
  fz_kernel_code code;
  fz_status st = fz_compile_plan(plan, &opts, &code, err);
  if (st != FZ_OK)
    return st;
  if (code.from_cache)
    ex->stats.kernels_from_disk++;
  else
    ex->stats.kernels_compiled++;
  fz_module *module = NULL;
  if ((st = fz_module_load(ex->device, code.ptx, plan->kernel_name, &module,
                           err)) != FZ_OK) {
    fz_kernel_code_free(&code);
    return st;
  }
  kernel_entry *entry = fz_arena_alloc(ex->arena, sizeof *entry);
  unsigned char *bytes = fz_arena_alloc(ex->arena, id.len);
  memcpy(bytes, id.bytes, id.len);
  entry->id = (fz_plan_id){.hash = id.hash, .len = id.len, .bytes = bytes};
  entry->module = module;
  entry->ptx = code.ptx;
  code.ptx = NULL;
  fz_kernel_code_free(&code);
  fz_arena_push(ex->arena, (void ***)&ex->kernels, &ex->num_kernels,
                &ex->cap_kernels, entry);
  *out = entry;
  return FZ_OK;
}

/* Reserves `bytes` at the end of the scratch layout, 256-byte aligned. */
static fz_status reserve(signature_entry *e, size_t bytes, const char *name,
                         size_t *offset, fz_error *err) {
  *offset = e->scratch_bytes;
  if (__builtin_add_overflow(e->scratch_bytes, round_up(bytes, 256),
                             &e->scratch_bytes))
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "the scratch memory of @%s needs more than %zu bytes",
                        name, SIZE_MAX);
  return FZ_OK;
}

/* The intermediates' descriptors and their places in the scratch layout. */
static fz_status layout_intermediates(fz_executor *ex, signature_entry *e,
                                      const int64_t *symbols,
                                      fz_tensor_desc **descs, fz_error *err) {
  const fz_segmentation *s = e->segmentation;
  int n = s->num_intermediates;
  *descs = fz_arena_alloc(e->arena, sizeof **descs * (size_t)(n + 1));
  e->intermediate_offsets =
      fz_arena_alloc(e->arena, sizeof(size_t) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    const fz_tensor_desc *d = &(*descs)[i];
    fz_intermediate_desc(&s->intermediates[i], symbols, &(*descs)[i]);
    int64_t bytes = 0;
    fz_status st = fz_size_of(d->rank, d->sizes, d->dtype, "intermediate",
                              FZ_ERR_OUT_OF_MEMORY, NULL, &bytes, err);
    if (st == FZ_OK)
      st = reserve(e, (size_t)bytes, ex->fusion->name,
                   &e->intermediate_offsets[i], err);
    if (st != FZ_OK)
      return st;
  }
  return FZ_OK;
}

/* Workspaces after the intermediates, then every counter: one range to
 * zero when scratch memory is fresh. */
static fz_status layout_workspaces(fz_executor *ex, signature_entry *e,
                                   fz_error *err) {
  fz_status st = FZ_OK;
  for (int k = 0; k < e->num_launches && st == FZ_OK; k++)
    if (e->launches[k].workspace_bytes)
      st = reserve(e, e->launches[k].workspace_bytes, ex->fusion->name,
                   &e->launches[k].workspace_offset, err);
  e->counters_begin = e->scratch_bytes;
  for (int k = 0; k < e->num_launches && st == FZ_OK; k++)
    if (e->launches[k].counter_bytes)
      st = reserve(e, e->launches[k].counter_bytes, ex->fusion->name,
                   &e->launches[k].counters_offset, err);
  return st;
}

static bool step_outputs_empty(const fz_segment *seg, const fz_problem *pb) {
  for (int j = 0; j < seg->fusion->num_outputs; j++)
    if (desc_numel(&pb->outputs[j]) != 0)
      return false;
  return true;
}

/* An inner or outer reduction's grid, sized again for the blocks an SM
 * keeps of the loaded kernel: its registers, which only the driver's JIT
 * knows, often allow fewer than the scheduler's estimate, and a grid of
 * 1.5 waves takes as long as two. Before the workspace is laid out, which
 * follows the split. */
static fz_status size_grid_at_load(fz_executor *ex, fz_plan *plan,
                                   const kernel_entry *kernel, fz_error *err) {
  if (ex->grid_from_estimate || (plan->kind != FZ_PLAN_INNER_REDUCTION &&
                                 plan->kind != FZ_PLAN_OUTER_REDUCTION))
    return FZ_OK;
  /* a driver table without the query (one made by hand, as the tests'
   * fake drivers are): the scheduler's estimate stands */
  if (!ex->device->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor)
    return FZ_OK;
  int per_sm = 0;
  fz_status st =
      fz_module_occupancy(kernel->module, plan->threads,
                          (unsigned)fz_plan_shared_bytes(plan), &per_sm, err);
  if (st != FZ_OK)
    return st;
  /* none resident: the launch reports it; 0 keeps the estimate */
  const fz_device_props *props = fz_device_get_props(ex->device);
  fz_reduction_size_grid(plan, props->sm_count, per_sm, true);
  return FZ_OK;
}

/* A cooperative grid in clusters (a column_cluster plan): every block
 * must be resident at once, and blocks are resident in whole clusters,
 * each within one GPC, which may leave SMs without a block that the
 * per-SM count *resident gave one. So *resident becomes the blocks of the
 * clusters cuOccupancyMaxActiveClusters keeps, at most what it was,
 * a whole number of clusters either way (the plan's grid is one too). */
static fz_status resident_in_clusters(fz_executor *ex, const fz_plan *plan,
                                      const kernel_entry *kernel,
                                      int64_t *resident, fz_error *err) {
  int c = plan->column_cluster, clusters = 0;
  fz_status st = fz_module_cluster_occupancy(
      kernel->module, plan->threads, (unsigned)fz_plan_shared_bytes(plan), c,
      &clusters, err);
  if (st != FZ_OK)
    return st;
  if (clusters < 1)
    return fz_error_set(
        err, FZ_ERR_UNSUPPORTED,
        "kernel %s cannot keep even one cluster of %d blocks of %d threads "
        "resident on %s (FZ_INNER_OUTER_CLUSTER=off combines its column "
        "partials without clusters)",
        plan->kernel_name, c, plan->threads,
        fz_device_get_props(ex->device)->name);
  int64_t in_clusters = (int64_t)clusters * c;
  if (in_clusters < *resident)
    *resident = in_clusters;
  *resident -= *resident % c;
  return FZ_OK;
}

/* Plan, kernel, workspace and parameters of launch k. */
static fz_status prepare_launch(fz_executor *ex, signature_entry *e, int k,
                              const fz_problem *parent,
                              const fz_tensor_desc *intermediate_descs,
                              fz_plan *whole_plan, const fz_dump_unit *dump,
                              fz_error *err) {
  const fz_segment *seg = &e->segmentation->segments[k];
  segment_launch *s = &e->launches[k];
  s->segment = seg;
  fz_problem pb;
  fz_segment_problem(e->segmentation, k, parent, intermediate_descs, e->arena,
                     &pb);
  if (step_outputs_empty(seg, &pb)) {
    s->skip = true; /* nothing to write: no plan, no kernel */
    return FZ_OK;
  }
  /* a fusion scheduled whole was planned while it was segmented */
  fz_status st = FZ_OK;
  if (whole_plan)
    s->plan = whole_plan;
  else if ((st = fz_schedule(&pb, e->arena, &s->plan, err)) != FZ_OK)
    return st;
  fz_plan *plan = s->plan;
  /* The parameter order of plan.h: pointers, then the scalars, then the
   * two workspace pointers when the plan takes them. */
  s->num_scalars = fz_plan_num_scalar_params(plan);
  int extra = fz_plan_num_params(plan) - plan->num_accesses - s->num_scalars -
              (fz_plan_has_gather(plan) ? 1 : 0);
  FZ_CHECK(extra == 0 || extra == 2);
  s->has_workspace = extra == 2;
  /* schedulers decline plans whose parameters do not fit (plan.h) */
  FZ_CHECK(fz_plan_num_params(plan) <= FZ_MAX_PARAMS);
  if ((st = find_or_compile_kernel(ex, plan, e->arena, dump, k, &s->kernel,
                                   err)) != FZ_OK)
    return st;
  if ((st = size_grid_at_load(ex, plan, s->kernel, err)) != FZ_OK)
    return st;

  s->workspace_bytes = fz_plan_workspace_bytes(plan);
  s->counter_bytes = fz_plan_counter_bytes(plan);
  const fz_device_props *props = fz_device_get_props(ex->device);
  unsigned grid[3], block[3];
  fz_plan_launch_shape(plan, grid, block);
  if (plan->cooperative) {
    int per_sm = 0;
    if ((st = fz_module_occupancy(s->kernel->module, plan->threads,
                                  (unsigned)fz_plan_shared_bytes(plan), &per_sm,
                                  err)) != FZ_OK)
      return st;
    int64_t resident = (int64_t)per_sm * props->sm_count;
    if (resident < 1)
      return fz_error_set(
          err, FZ_ERR_UNSUPPORTED,
          "kernel %s cannot run even one block of %d threads per SM",
          plan->kernel_name, plan->threads);
    /* an outer plan holds a fixed share of the rows in each block: with
     * fewer blocks some rows would have no block */
    if (plan->kind == FZ_PLAN_OUTER_PERSISTENT && resident < plan->grid_x)
      return fz_error_set(
          err, FZ_ERR_UNSUPPORTED,
          "kernel %s needs %lld resident blocks of %d threads; this device "
          "keeps %lld",
          plan->kernel_name, (long long)plan->grid_x, plan->threads,
          (long long)resident);
    if (plan->column_cluster &&
        (st = resident_in_clusters(ex, plan, s->kernel, &resident, err)))
      return st;
    s->cooperative_grid =
        (unsigned)(plan->grid_x < resident ? plan->grid_x : resident);
    grid[0] = s->cooperative_grid;
  }
  if (plan->cluster) {
    /* the device must keep at least one cluster of the kernel resident
     * (a launch would fail with a less telling error) */
    int clusters = 0;
    if ((st = fz_module_cluster_occupancy(
             s->kernel->module, plan->threads,
             (unsigned)fz_plan_shared_bytes(plan), plan->cluster, &clusters,
             err)) != FZ_OK)
      return st;
    if (clusters < 1)
      return fz_error_set(
          err, FZ_ERR_UNSUPPORTED,
          "kernel %s cannot keep even one cluster of %d blocks of %d threads "
          "resident on %s",
          plan->kernel_name, plan->cluster, plan->threads, props->name);
    /* a prefetching plan's clusters walk the rows, one wave of them
     * (lib/sched/persistent_cluster.c); a cluster past the ones the
     * device keeps would start only when another has walked all its
     * rows, doubling the time */
    uint64_t most = (uint64_t)clusters * (uint64_t)plan->cluster;
    if (plan->prefetch && grid[0] > most)
      grid[0] = (unsigned)most;
  }
  s->skip = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
  memcpy(s->grid, grid, sizeof s->grid);
  memcpy(s->block, block, sizeof s->block);
  s->shared_bytes = (unsigned)fz_plan_shared_bytes(plan);
  s->has_gather = fz_plan_has_gather(plan);
  e->has_gather |= s->has_gather && !s->skip;
  s->scalars =
      fz_arena_alloc(e->arena, sizeof(int64_t) * (size_t)(s->num_scalars + 1));
  fz_plan_scalar_params(plan, s->scalars);
  return fz_gather_register(ex, s, err);
}

/* plan_text: the plan of every launch that has one; ptx_text: their PTX,
 * except for a single scheduled launch, whose kernel's PTX is used as it is
 * (so a fusion scheduled whole shows exactly its one plan and PTX). Made
 * when first asked for (fz_executor_last_plan, _last_ptx), not on every
 * miss: printing the plans costs a miss as much as scheduling them. */
fz_status fz_executor_signature_texts(signature_entry *e, fz_error *err) {
  if (e->plan_text) /* set last: both texts are there */
    return FZ_OK;
  if (!(e->num_launches == 1 && e->launches[0].kernel) && !e->ptx_text) {
    fz_buf ptx = {0};
    for (int k = 0; k < e->num_launches; k++)
      if (e->launches[k].kernel)
        fz_buf_puts(&ptx, e->launches[k].kernel->ptx);
    e->ptx_text = fz_buf_take(&ptx);
    if (!e->ptx_text)
      return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  }
  fz_buf plans = {0};
  for (int k = 0; k < e->num_launches; k++)
    if (e->launches[k].plan)
      fz_plan_print(e->launches[k].plan, &plans);
  e->plan_text = fz_buf_take(&plans);
  if (!e->plan_text)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  return FZ_OK;
}

static bool all_outputs_empty(const fz_problem *pb) {
  for (int j = 0; j < pb->fusion->num_outputs; j++)
    if (desc_numel(&pb->outputs[j]) != 0)
      return false;
  return true;
}

fz_status fz_executor_prepare(fz_executor *ex, const fz_device_tensor *in,
                              const fz_device_tensor *out, const fz_bindings *b,
                              const int64_t *sig, int sig_len,
                              uint64_t sig_hash, signature_entry **entry,
                              fz_error *err) {
  *entry = NULL;
  const fz_fusion *f = ex->fusion;
  fz_arena *arena = fz_arena_create();
  signature_entry *e = fz_arena_alloc(arena, sizeof *e);
  e->arena = arena;
  fz_tensor_desc *di =
      fz_arena_alloc(arena, sizeof *di * (size_t)(f->num_inputs + 1));
  fz_tensor_desc *dout =
      fz_arena_alloc(arena, sizeof *dout * (size_t)(f->num_outputs + 1));
  for (int i = 0; i < f->num_inputs; i++)
    describe(&in[i], &di[i]);
  for (int i = 0; i < f->num_outputs; i++)
    describe(&out[i], &dout[i]);
  const fz_device_props *props = fz_device_get_props(ex->device);
  fz_device_info info = {.sm = props->sm,
                         .num_sms = props->sm_count,
                         .max_threads_per_block = props->max_threads_per_block,
                         .max_shared_per_block = props->max_shared_per_block,
                         .l2_bytes = props->l2_bytes};
  size_t symbol_bytes = sizeof(int64_t) * (size_t)f->num_symbols;
  if (!ex->sizes_seen) {
    ex->first_symbols = fz_arena_alloc(ex->arena, symbol_bytes + 1);
    if (symbol_bytes)
      memcpy(ex->first_symbols, b->values, symbol_bytes);
    ex->sizes_seen = true;
  } else if (symbol_bytes &&
             memcmp(ex->first_symbols, b->values, symbol_bytes) != 0) {
    ex->sizes_vary = true;
  }
  fz_problem problem = {.fusion = f,
                        .inputs = di,
                        .outputs = dout,
                        .symbols = b->values,
                        .device = info,
                        .exact_sizes = ex->exact_sizes ||
                                       (!ex->sizes_vary && !ex->always_classes)};

  /* Every output empty: nothing to compute, so nothing is segmented or
   * scheduled (heuristics need not cope with empty spaces); the entry has
   * no launches. */
  fz_tensor_desc *intermediate_descs = NULL;
  fz_status st = FZ_OK;
  /* FZ_DUMP: this signature's kernels are filed under one unit. */
  fz_dump_unit dump;
  fz_dump_unit_begin(&dump, f->name);
  fz_dump_fusion(&dump, f);
  fz_plan *whole_plan = NULL;
  if (!all_outputs_empty(&problem)) {
    st = fz_segment_fusion_planned(&problem, arena, &e->segmentation,
                                   &whole_plan, err);
    if (st == FZ_OK)
      fz_dump_segments(&dump, e->segmentation);
    if (st == FZ_OK)
      st = layout_intermediates(ex, e, b->values, &intermediate_descs, err);
  }
  if (st == FZ_OK && e->segmentation) {
    int n = e->segmentation->num_segments;
    e->launches =
        fz_arena_alloc(arena, sizeof *e->launches * (size_t)(n + 1));
    for (int k = 0; k < n && st == FZ_OK; k++) {
      st = prepare_launch(ex, e, k, &problem, intermediate_descs,
                          n == 1 ? whole_plan : NULL, &dump, err);
      e->num_launches = k + 1;
    }
  }
  if (st == FZ_OK)
    st = layout_workspaces(ex, e, err);
  if (st != FZ_OK) {
    fz_executor_signature_free(ex, e);
    return st;
  }
  e->sig_len = sig_len;
  e->sig_hash = sig_hash;
  e->sig = fz_arena_alloc(arena, sizeof(int64_t) * (size_t)(sig_len + 1));
  memcpy(e->sig, sig, sizeof(int64_t) * (size_t)sig_len);
  fz_arena_push(ex->arena, (void ***)&ex->signatures, &ex->num_signatures,
                &ex->cap_signatures, e);
  *entry = e;
  return FZ_OK;
}
