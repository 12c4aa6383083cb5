/* stages.c - fuse-opt's compiler stages after the IR: the kernel plan
 * (--emit=sched), LLVM IR as lowered and after O3 (--emit=llvm-lowered,
 * --emit=llvm) and PTX (--emit=ptx).
 *
 * Without a GPU there is no call to schedule for, so the problem is made
 * up from the fusion itself: symbols from --bind (8 otherwise), every
 * tensor laid out as declared (row-major when undeclared; a non-contiguous
 * axis gets a one-element gap so that it stays visibly non-contiguous),
 * pointers 16-byte aligned, and the device an H200 (fz_device_info_default)
 * with --arch's compute capability. Plans are those of a call whose sizes
 * vary (size classes, lib/sched/persistent.c) unless --exact-sizes asks
 * for the plan of exactly the bound sizes.
 */
#include "fuse-opt.h"

#include "codegen/codegen.h"
#include "sched/axis_map.h"
#include "sched/pass.h"
#include "sched/segment.h"

#include <stdlib.h>
#include <string.h>

/* The gaps after non-contiguous axes can take a value whose own size fits
 * (fo_bind_symbols checked it) past int64, which is refused. */
static fz_status layout(const fz_value *v, const int64_t *symbols,
                        fz_tensor_desc *d, fz_error *err) {
  const fz_type *t = &v->type;
  *d = (fz_tensor_desc){.dtype = t->dtype, .rank = t->rank, .align = 16};
  int64_t stride = 1;
  for (int p = t->rank - 1; p >= 0; p--) {
    int axis = t->has_layout ? t->alloc_order[p] : p;
    const fz_axis *ax = &t->axes[axis];
    d->sizes[axis] = fz_axis_size(ax, symbols);
    if (t->has_layout && !t->contiguous[p] &&
        __builtin_add_overflow(stride, 1, &stride))
      break;
    if (ax->kind == FZ_AXIS_BROADCAST && v->kind == FZ_VALUE_INPUT) {
      d->strides[axis] = 0; /* an expanded input is a stride-0 view */
      continue;
    }
    d->strides[axis] = stride;
    if (!fz_size_mul(stride, d->sizes[axis] > 1 ? d->sizes[axis] : 1,
                     &stride))
      break;
  }
  char what[96];
  if (v->name)
    snprintf(what, sizeof what, "%%%.80s", v->name);
  else
    snprintf(what, sizeof what, "%%%d", v->id);
  int64_t span;
  return fz_size_span(t->rank, d->sizes, d->strides, t->dtype, what,
                      FZ_ERR_ARGUMENT, &span, err);
}

typedef struct stage_problem {
  fz_arena *arena;
  int64_t *symbols;
  fz_problem problem;
  fz_plan *plan;
} stage_problem;

/* The made-up problem, without scheduling it. */
static fz_status make_problem(fz_fusion *f, const fo_options *o, FILE *out,
                              stage_problem *sp, fz_error *err) {
  sp->arena = fz_arena_create();
  /* as the executor does: resize ops, then gathers, move to the inputs
   * before any scheduling (no-ops without them) */
  fz_status st = fz_pass_resize_pushdown(f, err);
  if (!st)
    st = fz_pass_gather_pushdown(f, err);
  if (!st)
    st = fo_bind_symbols(f, o, out, &sp->symbols, err);
  /* The schedulers multiply sizes unchecked, as they may after the
   * executor's binding: every value's element count must fit in int64
   * at the bound sizes. */
  if (!st)
    st = fz_check_sizes(f, sp->symbols, FZ_ERR_ARGUMENT, err);
  if (st)
    return st;
  fz_tensor_desc *in = fz_arena_alloc(sp->arena, sizeof *in * (size_t)(f->num_inputs + 1));
  fz_tensor_desc *outs = fz_arena_alloc(sp->arena, sizeof *outs * (size_t)(f->num_outputs + 1));
  for (int i = 0; i < f->num_inputs && !st; i++)
    st = layout(f->inputs[i], sp->symbols, &in[i], err);
  for (int i = 0; i < f->num_outputs && !st; i++)
    st = layout(f->outputs[i], sp->symbols, &outs[i], err);
  if (st)
    return st;
  sp->problem = (fz_problem){.fusion = f, .inputs = in, .outputs = outs,
                             .symbols = sp->symbols,
                             .device = fz_device_info_default(o->sm),
                             .exact_sizes = o->exact_sizes};
  return FZ_OK;
}

static fz_status schedule(fz_fusion *f, const fo_options *o, FILE *out,
                          stage_problem *sp, fz_error *err) {
  fz_status st = make_problem(f, o, out, sp, err);
  if (st != FZ_OK)
    return st;
  return fz_schedule(&sp->problem, sp->arena, &sp->plan, err);
}

static void release(stage_problem *sp) {
  free(sp->symbols);
  fz_arena_destroy(sp->arena);
}

/* Writes what `b` holds to `out` and frees it; out of memory (some append
 * failed) is an error rather than a silently short print. */
static fz_status put_buf(fz_buf *b, FILE *out, fz_error *err) {
  char *text = fz_buf_take(b);
  if (!text)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of memory");
  fputs(text, out);
  free(text);
  return FZ_OK;
}

fz_status fo_emit_sched(fz_fusion *f, const fo_options *o, FILE *out,
                        fz_error *err) {
  stage_problem sp = {0};
  fz_status st = schedule(f, o, out, &sp, err);
  if (st == FZ_OK) {
    fz_buf b = {0};
    fz_plan_print(sp.plan, &b);
    st = put_buf(&b, out, err);
  }
  release(&sp);
  return st;
}

/* Segments: the segmentation of the made-up problem (one segment when a
 * scheduler takes the whole fusion), each segment with the kernel its
 * plan names, then the merges that were rejected and why. */
static fz_status segment_kernels(const stage_problem *sp,
                                 const fz_segmentation *seg,
                                 const char **kernels, fz_error *err) {
  fz_tensor_desc *ims = fz_arena_alloc(
      sp->arena, sizeof *ims * (size_t)(seg->num_intermediates + 1));
  for (int i = 0; i < seg->num_intermediates; i++)
    fz_intermediate_desc(&seg->intermediates[i], sp->symbols, &ims[i]);
  for (int k = 0; k < seg->num_segments; k++) {
    fz_problem pb;
    fz_segment_problem(seg, k, &sp->problem, ims, sp->arena, &pb);
    fz_plan *plan = NULL;
    fz_status st = fz_schedule(&pb, sp->arena, &plan, err);
    if (st != FZ_OK)
      return st;
    kernels[k] = plan->kernel_name;
  }
  return FZ_OK;
}

fz_status fo_emit_segments(fz_fusion *f, const fo_options *o, FILE *out,
                           fz_error *err) {
  stage_problem sp = {0};
  fz_status st = make_problem(f, o, out, &sp, err);
  if (st != FZ_OK) {
    release(&sp);
    return st;
  }
  fz_segmentation *seg = NULL;
  st = fz_segment_fusion(&sp.problem, &seg, err);
  const char **kernels = NULL;
  if (st == FZ_OK) {
    kernels = fz_arena_alloc(sp.arena,
                             sizeof *kernels * (size_t)seg->num_segments);
    st = segment_kernels(&sp, seg, kernels, err);
  }
  if (st == FZ_OK) {
    fz_buf b = {0};
    fz_segmentation_print_kernels(seg, kernels, &b);
    st = put_buf(&b, out, err);
  }
  fz_segmentation_destroy(seg);
  release(&sp);
  return st;
}

/* Every scheduler's verdict on the whole fusion; when none takes it, also
 * on each segment the segmenter chose. */
fz_status fo_emit_explain(fz_fusion *f, const fo_options *o, FILE *out,
                          fz_error *err) {
  stage_problem sp = {0};
  fz_status st = schedule(f, o, out, &sp, err);
  if (!sp.problem.fusion) { /* no problem to segment or explain */
    release(&sp);
    return st;
  }
  fprintf(out, "explain @%s (the whole fusion as one segment):\n", f->name);
  fz_buf b = {0};
  fz_schedule_explain(&sp.problem, &b);
  fz_segmentation *seg = NULL;
  if (st != FZ_OK && fz_segment_fusion(&sp.problem, &seg, NULL) == FZ_OK) {
    fz_tensor_desc *ims = fz_arena_alloc(
        sp.arena, sizeof *ims * (size_t)(seg->num_intermediates + 1));
    for (int i = 0; i < seg->num_intermediates; i++)
      fz_intermediate_desc(&seg->intermediates[i], sp.symbols, &ims[i]);
    for (int k = 0; k < seg->num_segments; k++) {
      fz_problem pb;
      fz_segment_problem(seg, k, &sp.problem, ims, sp.arena, &pb);
      fz_buf_printf(&b, "explain @%s (segment %d of %d):\n",
                    seg->segments[k].fusion->name, k, seg->num_segments);
      fz_schedule_explain(&pb, &b);
    }
  }
  fz_segmentation_destroy(seg);
  char *text = fz_buf_take(&b);
  if (text)
    fputs(text, out);
  free(text);
  release(&sp);
  /* Explaining a rejection is a successful explanation. */
  *err = (fz_error){0};
  return FZ_OK;
}

typedef enum code_form { CODE_LLVM_LOWERED, CODE_LLVM, CODE_PTX } code_form;

static fz_status emit_code(fz_fusion *f, const fo_options *o, FILE *out,
                           code_form form, fz_error *err) {
  stage_problem sp = {0};
  fz_status st = schedule(f, o, out, &sp, err);
  if (st == FZ_OK) {
    /* The executor's options for a device of --arch, without the disk
     * cache: the text printed is compiled now (the cache, keyed by all
     * that determines it, would return the same). */
    fz_compile_options opts = fz_codegen_options(o->sm);
    opts.use_cache = false;
    opts.want_llvm = form != CODE_PTX;
    opts.want_unoptimized_llvm = form == CODE_LLVM_LOWERED;
    fz_kernel_code code;
    st = fz_compile_plan(sp.plan, &opts, &code, err);
    if (st == FZ_OK)
      fputs(form == CODE_PTX ? code.ptx : code.llvm, out);
    fz_kernel_code_free(&code);
  }
  release(&sp);
  return st;
}

fz_status fo_emit_llvm(fz_fusion *f, const fo_options *o, FILE *out,
                       fz_error *err) {
  return emit_code(f, o, out, CODE_LLVM, err);
}

fz_status fo_emit_llvm_lowered(fz_fusion *f, const fo_options *o, FILE *out,
                               fz_error *err) {
  return emit_code(f, o, out, CODE_LLVM_LOWERED, err);
}

fz_status fo_emit_ptx(fz_fusion *f, const fo_options *o, FILE *out,
                      fz_error *err) {
  return emit_code(f, o, out, CODE_PTX, err);
}

/* The axis map: one line per class of axes that denote the same loop,
 * with what the schedulers ask of it (reduced by, broadcast of, expanded
 * to). Built on the fusion as it is after the requested passes. */
fz_status fo_emit_axis_map(fz_fusion *f, const fo_options *o, FILE *out,
                           fz_error *err) {
  (void)o;
  fz_arena *arena = fz_arena_create();
  fz_axis_map *map = fz_axis_map_build(f, arena);
  fz_buf b = {0};
  fprintf(out, "axis map @%s:\n", f->name);
  fz_axis_map_print(map, &b);
  fz_status st = put_buf(&b, out, err);
  fz_arena_destroy(arena);
  return st;
}
