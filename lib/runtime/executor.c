/* executor.c - run a fusion on a device, compiling once per signature.
 *
 * At creation the executor copies the fusion and runs allocation-order
 * propagation on the copy: outputs (and intermediates) the caller left
 * undeclared follow the layout of the inputs they are computed from, as in
 * PyTorch (a channels-last input gives a channels-last result), and the
 * caller's fusion is never touched.
 *
 * A call goes: check inputs against the fusion (dtype, rank, sizes through
 * the symbol bindings, strides, alignment) -> outputs' layouts (declared or
 * propagated) and allocation -> look the call's *signature* up (sizes,
 * strides and pointer alignment classes of every tensor) -> on a miss,
 * segment, schedule each segment, find or compile each kernel by the
 * plan's structural key, and remember it all (executor_prepare.c) ->
 * take the call's scratch memory (scratch.c) -> launch the segments'
 * kernels in order on the caller's stream, with the signature's
 * precomputed parameters.
 *
 * Signatures are kept up to a limit, the least recently used evicted
 * beyond it, so that a job whose shapes keep changing holds a bounded
 * amount of host and device memory. A miss is refused while the stream
 * is being captured into a CUDA graph: it compiles and may allocate.
 *
 * Two caches, because two different things repeat: the same shapes call
 * after call (signature cache: a hit costs a short compare), and different
 * shapes that schedule the same way (kernel cache by plan key: no
 * recompilation). The disk cache of lib/codegen survives the process.
 */
#include "runtime/executor.h"

#include "sched/pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

fz_status fz_executor_create(const fz_fusion *fusion, fz_device *device,
                             fz_executor **out, fz_error *err) {
  if (!out)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_create: out is NULL");
  *out = NULL;
  if (!fusion || !device)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_create: fusion and device are required");
  fz_status st = fz_verify(fusion, err);
  if (st != FZ_OK)
    return st;
  fz_error local;
  fz_fusion *copy = fz_fusion_clone(fusion, &local);
  if (!copy)
    return fz_error_set(err, local.status, "%s", local.message);
  /* a no-op without resize ops; before alloc-order, which lays out
   * what it builds */
  if ((st = fz_pass_resize_pushdown(copy, err)) != FZ_OK ||
      (st = fz_pass_gather_pushdown(copy, err)) != FZ_OK ||
      (st = fz_pass_alloc_order(copy, err)) != FZ_OK ||
      (st = fz_verify(copy, err)) != FZ_OK) {
    fz_fusion_destroy(copy);
    return st;
  }
  fz_arena *arena = fz_arena_create();
  fz_executor *ex = fz_arena_alloc(arena, sizeof *ex);
  ex->fusion = copy;
  ex->device = device;
  ex->arena = arena;
  ex->opt_level = 3;
  const char *classes = getenv("FZ_PLAN_CLASSES");
  ex->exact_sizes = classes && strcmp(classes, "off") == 0;
  ex->always_classes = classes && strcmp(classes, "always") == 0;
  const char *grid = getenv("FZ_GRID_AT_LOAD");
  ex->grid_from_estimate = grid && strcmp(grid, "off") == 0;
  ex->max_signatures = FZ_EXECUTOR_DEFAULT_SIGNATURES;
  *out = ex;
  return FZ_OK;
}

void fz_executor_destroy(fz_executor *ex) {
  if (!ex)
    return;
  for (int i = 0; i < ex->num_signatures; i++)
    fz_executor_signature_free(ex, ex->signatures[i]);
  for (int i = 0; i < ex->num_kernels; i++) {
    fz_module_unload(ex->kernels[i]->module);
    free(ex->kernels[i]->ptx);
  }
  fz_gather_free(ex);
  fz_fusion_destroy(ex->fusion);
  fz_arena_destroy(ex->arena);
}

fz_status fz_executor_set_allocator(fz_executor *ex, const fz_allocator *a,
                                    fz_error *err) {
  if (!ex)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_set_allocator: the executor is NULL");
  if (a && (!a->alloc || !a->free))
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_set_allocator: the allocator needs both "
                        "alloc and free");
  for (int i = 0; i < ex->num_signatures; i++)
    fz_scratch_free_blocks(ex, ex->signatures[i]);
  ex->has_allocator = a != NULL;
  ex->allocator = a ? *a : (fz_allocator){0};
  return FZ_OK;
}

fz_status fz_executor_set_signature_limit(fz_executor *ex, int max_signatures,
                                          fz_error *err) {
  if (!ex || max_signatures < 1)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_set_signature_limit: %s",
                        !ex ? "the executor is NULL"
                            : "the limit must be at least 1");
  ex->max_signatures = max_signatures;
  return FZ_OK;
}

void fz_executor_get_stats(const fz_executor *ex, fz_executor_stats *out) {
  *out = ex ? ex->stats : (fz_executor_stats){0};
  if (ex) {
    out->signatures_kept = ex->num_signatures;
    out->kernels_kept = ex->num_kernels;
  }
}

/* The last call's entry with its texts made (they are made when first
 * asked for: the entry is the executor's, only the pointer is const), or
 * NULL. */
static signature_entry *last_with_texts(const fz_executor *ex) {
  if (!ex || !ex->last)
    return NULL;
  signature_entry *e = (signature_entry *)ex->last;
  fz_error err = {0};
  return fz_executor_signature_texts(e, &err) == FZ_OK ? e : NULL;
}

const char *fz_executor_last_plan(const fz_executor *ex) {
  const signature_entry *e = last_with_texts(ex);
  return e ? e->plan_text : NULL;
}

const char *fz_executor_last_ptx(const fz_executor *ex) {
  const signature_entry *e = last_with_texts(ex);
  if (!e)
    return NULL;
  return e->ptx_text ? e->ptx_text : e->launches[0].kernel->ptx;
}

fz_status fz_device_memory_alloc(fz_device *device, size_t bytes,
                                 uint64_t *out, fz_error *err) {
  if (!out)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_device_memory_alloc: out is NULL");
  *out = 0;
  if (!device)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_device_memory_alloc: device is NULL");
  CUdeviceptr p = 0;
  fz_status st = fz_device_alloc(device, bytes, &p, err);
  *out = p;
  return st;
}

fz_status fz_device_memory_free(fz_device *device, uint64_t ptr,
                                fz_error *err) {
  if (!device && ptr)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_device_memory_free: device is NULL");
  return fz_device_free(device, (CUdeviceptr)ptr, err);
}

/* ---- checks ------------------------------------------------------------- */

static unsigned alignment_of(uint64_t ptr) {
  unsigned a = 16;
  while (a > 1 && ptr % a)
    a /= 2;
  return a;
}

static fz_status check_tensor(const fz_device_tensor *t, const fz_value *v,
                              const char *what, fz_error *err) {
  /* the label is made for a message only: every call checks its tensors */
  char label[64];
  if (t->dtype != v->type.dtype)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "%s %s: dtype %s, but the fusion declares %s", what,
                        fz_value_label(v, label, sizeof label),
                        fz_dtype_name(t->dtype), fz_dtype_name(v->type.dtype));
  if (t->rank != v->type.rank)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "%s %s: rank %d, but the fusion declares rank %d",
                        what, fz_value_label(v, label, sizeof label), t->rank,
                        v->type.rank);
  for (int i = 0; i < t->rank; i++) {
    if (t->sizes[i] < 0)
      return fz_error_set(err, FZ_ERR_ARGUMENT, "%s %s: size %d is negative",
                          what, fz_value_label(v, label, sizeof label), i);
    if (t->strides[i] < 0)
      return fz_error_set(err, FZ_ERR_ARGUMENT,
                          "%s %s: stride %d is negative (%lld); negative "
                          "strides are not supported",
                          what, fz_value_label(v, label, sizeof label), i,
                          (long long)t->strides[i]);
  }
  /* Offsets up to the span, in bytes, must fit the kernels' int64
   * arithmetic: this is where a caller's sizes and strides enter. */
  int64_t span;
  if (fz_size_span(t->rank, t->sizes, t->strides, t->dtype, "",
                   FZ_ERR_ARGUMENT, &span, NULL) != FZ_OK) {
    char whose[96];
    snprintf(whose, sizeof whose, "%s %s", what,
             fz_value_label(v, label, sizeof label));
    return fz_size_span(t->rank, t->sizes, t->strides, t->dtype, whose,
                        FZ_ERR_ARGUMENT, &span, err);
  }
  size_t esize = fz_dtype_size(t->dtype);
  if (span > 0 && t->data == 0)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "%s %s: data is NULL", what,
                        fz_value_label(v, label, sizeof label));
  if (t->data % esize != 0)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "%s %s: address 0x%llx is not aligned to its %zu-byte "
                        "elements",
                        what, fz_value_label(v, label, sizeof label),
                        (unsigned long long)t->data, esize);
  return FZ_OK;
}

/* Writes race unless no two elements share an address. */
static bool non_overlapping(const fz_device_tensor *t) {
  int idx[FZ_MAX_RANK], n = 0;
  for (int i = 0; i < t->rank; i++)
    if (t->sizes[i] > 1)
      idx[n++] = i;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && t->strides[idx[j]] < t->strides[idx[j - 1]]; j--) {
      int tmp = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = tmp;
    }
  int64_t span = 1;
  for (int i = 0; i < n; i++) {
    if (t->strides[idx[i]] < span)
      return false;
    if (!fz_size_mul(t->strides[idx[i]], t->sizes[idx[i]], &span))
      span = INT64_MAX; /* past the checked span: nothing may follow */
  }
  return true;
}

static fz_status bind(const fz_fusion *f, const fz_device_tensor *inputs,
                      int num_inputs, fz_bindings *b, fz_error *err) {
  fz_host_tensor host[64];
  if (num_inputs > 64)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED, "more than 64 inputs");
  for (int i = 0; i < num_inputs; i++) {
    host[i] = (fz_host_tensor){.dtype = inputs[i].dtype,
                               .rank = inputs[i].rank};
    memcpy(host[i].sizes, inputs[i].sizes, sizeof host[i].sizes);
    memcpy(host[i].strides, inputs[i].strides, sizeof host[i].strides);
  }
  return fz_bind_inputs(f, host, num_inputs, b, err);
}

static void layout_for(const fz_value *v, const int64_t *sizes,
                       fz_device_tensor *out) {
  const fz_type *t = &v->type;
  *out = (fz_device_tensor){.dtype = t->dtype, .rank = t->rank};
  for (int k = 0; k < t->rank; k++)
    out->sizes[k] = sizes[k];
  fz_type_dense_strides(t, sizes, out->strides);
}

fz_status fz_executor_output_layout(fz_executor *ex,
                                    const fz_device_tensor *inputs,
                                    int num_inputs, int output,
                                    fz_device_tensor *out, fz_error *err) {
  if (!ex || !out || (num_inputs > 0 && !inputs))
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_output_layout: %s is NULL",
                        !ex ? "the executor" : !out ? "out" : "inputs");
  const fz_fusion *f = ex->fusion;
  if (output < 0 || output >= f->num_outputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "no output %d (fusion has %d)",
                        output, f->num_outputs);
  fz_bindings b = {0};
  fz_status st = bind(f, inputs, num_inputs, &b, err);
  if (st != FZ_OK)
    return st;
  int64_t sizes[FZ_MAX_RANK];
  st = fz_output_sizes(f, output, &b, sizes, err);
  if (st == FZ_OK)
    layout_for(f->outputs[output], sizes, out);
  fz_bindings_free(&b);
  return st;
}

/* ---- signature cache ---------------------------------------------------- */

static int signature(const fz_executor *ex, const fz_device_tensor *in,
                     const fz_device_tensor *out, int64_t *sig) {
  int n = 0;
  for (int i = 0; i < ex->fusion->num_inputs; i++) {
    for (int k = 0; k < in[i].rank; k++) {
      sig[n++] = in[i].sizes[k];
      sig[n++] = in[i].strides[k];
    }
    sig[n++] = alignment_of(in[i].data);
  }
  for (int i = 0; i < ex->fusion->num_outputs; i++) {
    for (int k = 0; k < out[i].rank; k++)
      sig[n++] = out[i].strides[k];
    sig[n++] = alignment_of(out[i].data);
  }
  return n;
}

/* A hash of the signature, so that looking it up among up to
 * FZ_EXECUTOR_DEFAULT_SIGNATURES entries compares one word per entry. */
static uint64_t signature_hash(const int64_t *sig, int sig_len) {
  uint64_t h = (uint64_t)sig_len;
  for (int i = 0; i < sig_len; i++) {
    h = (h ^ (uint64_t)sig[i]) * 0x9e3779b97f4a7c15u;
    h ^= h >> 29;
  }
  return h;
}

static signature_entry *find_signature(const fz_executor *ex,
                                       const int64_t *sig, int sig_len,
                                       uint64_t hash) {
  for (int i = 0; i < ex->num_signatures; i++) {
    signature_entry *c = ex->signatures[i];
    if (c->sig_hash == hash && c->sig_len == sig_len &&
        memcmp(c->sig, sig, sizeof(int64_t) * (size_t)sig_len) == 0)
      return c;
  }
  return NULL;
}

/* Beyond the limit, the least recently used entry other than `keep` goes
 * (with its built-in scratch blocks). */
static void evict(fz_executor *ex, const signature_entry *keep) {
  while (ex->num_signatures > ex->max_signatures) {
    int victim = -1;
    for (int i = 0; i < ex->num_signatures; i++)
      if (ex->signatures[i] != keep &&
          (victim < 0 ||
           ex->signatures[i]->last_used < ex->signatures[victim]->last_used))
        victim = i;
    if (victim < 0)
      return;
    signature_entry *v = ex->signatures[victim];
    if (ex->last == v)
      ex->last = NULL;
    ex->signatures[victim] = ex->signatures[--ex->num_signatures];
    fz_executor_signature_free(ex, v);
    ex->stats.signatures_evicted++;
  }
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A signature miss: refused during graph capture (it compiles, loads
 * modules and may allocate), timed, and followed by eviction. */
static fz_status prepare(fz_executor *ex, const fz_device_tensor *in,
                         const fz_device_tensor *out, const fz_bindings *b,
                         const int64_t *sig, int sig_len, uint64_t sig_hash,
                         void *stream, signature_entry **e, fz_error *err) {
  fz_status st = fz_stream_check_not_capturing(
      ex->device, (CUstream)stream, "a call with a new signature", err);
  if (st != FZ_OK)
    return st;
  double start = seconds_now();
  st = fz_executor_prepare(ex, in, out, b, sig, sig_len, sig_hash, e, err);
  ex->stats.miss_seconds += seconds_now() - start;
  ex->stats.signature_misses++;
  if (st == FZ_OK)
    evict(ex, *e);
  return st;
}

/* ---- launch -------------------------------------------------------------- */

static uint64_t buffer(const signature_entry *e, fz_buffer_ref ref,
                       const fz_device_tensor *in, const fz_device_tensor *out,
                       CUdeviceptr scratch) {
  switch (ref.kind) {
  case FZ_BUFFER_INPUT: return in[ref.index].data;
  case FZ_BUFFER_OUTPUT: return out[ref.index].data;
  case FZ_BUFFER_INTERMEDIATE:
    return scratch + e->intermediate_offsets[ref.index];
  }
  FZ_DIE("bad buffer kind %d", (int)ref.kind);
}

/* One segment launch on `stream`: its pointers from the parent's inputs and
 * outputs or the call's scratch memory (intermediates), then the
 * precomputed scalars, then the workspace (scratch memory too). */
static fz_status launch(const fz_executor *ex, const signature_entry *e,
                        const segment_launch *s, const fz_device_tensor *in,
                        const fz_device_tensor *out, CUdeviceptr scratch,
                        void *stream, fz_error *err) {
  const fz_plan *plan = s->plan;
  void *params[FZ_MAX_PARAMS]; /* the plan fits (plan.h) */
  uint64_t ptrs[FZ_MAX_PARAMS];
  for (int i = 0; i < plan->num_accesses; i++) {
    const fz_plan_access *a = &plan->accesses[i];
    ptrs[i] = buffer(e,
                     a->is_output ? s->segment->outputs[a->io]
                                  : s->segment->inputs[a->io],
                     in, out, scratch);
    params[i] = &ptrs[i];
  }
  for (int i = 0; i < s->num_scalars; i++)
    params[plan->num_accesses + i] = &s->scalars[i];
  int np = plan->num_accesses + s->num_scalars;
  uint64_t ws_ptrs[2] = {scratch + s->workspace_offset,
                         scratch + s->counters_offset};
  if (s->has_workspace) {
    params[np++] = &ws_ptrs[0];
    params[np++] = &ws_ptrs[1];
  }
  uint64_t error_word = ex->gather.word;
  if (s->has_gather)
    params[np++] = &error_word;
  if (fz_plan_cluster_dim(plan))
    return fz_module_launch_cluster(s->kernel->module, s->grid, s->block,
                                    s->shared_bytes, (CUstream)stream, params,
                                    fz_plan_cluster_dim(plan),
                                    plan->cooperative, err);
  return fz_module_launch(s->kernel->module, s->grid, s->block,
                          s->shared_bytes, (CUstream)stream, params,
                          plan->cooperative, err);
}

/* ---- run ---------------------------------------------------------------- */

fz_status fz_executor_run(fz_executor *ex, const fz_device_tensor *inputs,
                          int num_inputs, fz_device_tensor *outputs,
                          int num_outputs, void *stream, fz_error *err) {
  if (!ex || (num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_executor_run: %s is NULL",
                        !ex       ? "the executor"
                        : !inputs ? "inputs"
                                  : "outputs");
  const fz_fusion *f = ex->fusion;
  if (num_inputs != f->num_inputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fusion @%s takes %d inputs, got %d", f->name,
                        f->num_inputs, num_inputs);
  if (num_outputs != f->num_outputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fusion @%s has %d outputs, got %d", f->name,
                        f->num_outputs, num_outputs);
  fz_status st;
  for (int i = 0; i < num_inputs; i++)
    if ((st = check_tensor(&inputs[i], f->inputs[i], "input", err)) != FZ_OK)
      return st;
  fz_bindings b = {0};
  if ((st = bind(f, inputs, num_inputs, &b, err)) != FZ_OK)
    return st;

  /* Outputs: check the caller's, lay out (not yet allocate) the others. */
  fz_device_tensor out[64];
  if (num_outputs > 64) {
    fz_bindings_free(&b);
    return fz_error_set(err, FZ_ERR_UNSUPPORTED, "more than 64 outputs");
  }
  char label[64];
  for (int i = 0; i < num_outputs && st == FZ_OK; i++) {
    int64_t sizes[FZ_MAX_RANK];
    if ((st = fz_output_sizes(f, i, &b, sizes, err)) != FZ_OK)
      break;
    if (outputs[i].data == 0) {
      layout_for(f->outputs[i], sizes, &out[i]);
      continue;
    }
    out[i] = outputs[i];
    if ((st = check_tensor(&out[i], f->outputs[i], "output", err)) != FZ_OK)
      break;
    for (int k = 0; k < out[i].rank && st == FZ_OK; k++)
      if (out[i].sizes[k] != sizes[k])
        st = fz_error_set(err, FZ_ERR_ARGUMENT,
                          "output %s: size %d is %lld, expected %lld",
                          fz_value_label(f->outputs[i], label, sizeof label), k,
                          (long long)out[i].sizes[k], (long long)sizes[k]);
    if (st == FZ_OK && !non_overlapping(&out[i]))
      st = fz_error_set(err, FZ_ERR_ARGUMENT,
                        "output %s: strides make elements overlap",
                        fz_value_label(f->outputs[i], label, sizeof label));
  }
  if (st != FZ_OK) {
    fz_bindings_free(&b);
    return st;
  }
  if ((st = fz_device_make_current(ex->device, err)) != FZ_OK ||
      (st = fz_gather_poll(ex, err)) != FZ_OK) {
    fz_bindings_free(&b);
    return st;
  }
  /* Allocate outputs the caller left to us (16-byte aligned by cuMemAlloc),
   * with a placeholder address of the same alignment class for the
   * signature when nothing is allocated yet. */
  int allocated[64], num_allocated = 0;
  for (int i = 0; i < num_outputs && st == FZ_OK; i++) {
    if (outputs[i].data != 0)
      continue;
    if (num_allocated == 0 &&
        (st = fz_stream_check_not_capturing(
             ex->device, (CUstream)stream,
             "an output left for the executor to allocate", err)) != FZ_OK)
      break;
    int64_t bytes = 0;
    st = fz_size_of(out[i].rank, out[i].sizes, out[i].dtype,
                    fz_value_label(f->outputs[i], label, sizeof label),
                    FZ_ERR_ARGUMENT, NULL, &bytes, err);
    CUdeviceptr p = 0;
    if (st == FZ_OK)
      st = fz_device_alloc(ex->device, bytes ? (size_t)bytes : 1, &p, err);
    out[i].data = p;
    if (st == FZ_OK)
      allocated[num_allocated++] = i;
  }

  signature_entry *e = NULL;
  int64_t sig[64 * (2 * FZ_MAX_RANK + 1) * 2];
  int sig_len = 0;
  if (st == FZ_OK) {
    sig_len = signature(ex, inputs, out, sig);
    uint64_t hash = signature_hash(sig, sig_len);
    e = find_signature(ex, sig, sig_len, hash);
    if (!e)
      st = prepare(ex, inputs, out, &b, sig, sig_len, hash, stream, &e, err);
  }
  fz_bindings_free(&b);

  CUdeviceptr scratch = 0;
  if (st == FZ_OK)
    st = fz_scratch_acquire(ex, e, (CUstream)stream, &scratch, err);
  for (int k = 0; st == FZ_OK && k < e->num_launches; k++)
    if (!e->launches[k].skip)
      st = launch(ex, e, &e->launches[k], inputs, out, scratch, stream, err);
  if (st == FZ_OK)
    st = fz_gather_after_launches(ex, e, (CUstream)stream, err);
  if (e)
    fz_scratch_release(ex, e, (CUstream)stream, scratch);
  if (st != FZ_OK) {
    for (int i = 0; i < num_allocated; i++)
      fz_device_free(ex->device, out[allocated[i]].data, NULL);
    return st;
  }
  e->last_used = ++ex->stats.runs;
  ex->last = e;
  for (int i = 0; i < num_allocated; i++)
    outputs[allocated[i]] = out[allocated[i]];
  return FZ_OK;
}
