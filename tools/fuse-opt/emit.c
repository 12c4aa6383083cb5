/* emit.c - the table of fuse-opt's output stages (--emit=NAME).
 *
 * Each row turns the fusion, after the requested passes, into the text of
 * one pipeline stage. Only the IR exists so far; the scheduler's kernel
 * plans, LLVM IR and PTX each become one more row here.
 */
#include "fuse-opt.h"

#include <stdlib.h>
#include <string.h>

static fz_status emit_ir(fz_fusion *fusion, const fo_options *options,
                         FILE *out, fz_error *err) {
  (void)options;
  char *text = fz_print(fusion);
  if (!text)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory printing the fusion");
  fputs(text, out);
  free(text);
  return FZ_OK;
}

static const fo_emitter emitters[] = {
    {"ir", "the Fusion IR in the text format (the default)", emit_ir},
    {"sched", "the kernel plan of each scheduler's choice (sizes from --bind)",
     fo_emit_sched},
    {"axis-map", "the axis map: classes of axes that are one loop",
     fo_emit_axis_map},
    {"segments", "the segments and the scheduler of each", fo_emit_segments},
    {"explain", "every scheduler's verdict on each segment candidate",
     fo_emit_explain},
    {"llvm-lowered", "the kernel's LLVM IR as lowered, before the O3 pipeline",
     fo_emit_llvm_lowered},
    {"llvm", "the kernel's LLVM IR after the O3 pipeline", fo_emit_llvm},
    {"ptx", "the kernel's PTX for --arch (default sm_90)", fo_emit_ptx},
};

int fo_emitter_count(void) {
  return (int)(sizeof emitters / sizeof emitters[0]);
}

const fo_emitter *fo_emitter_at(int index) {
  return index >= 0 && index < fo_emitter_count() ? &emitters[index] : NULL;
}

const fo_emitter *fo_emitter_find(const char *name) {
  for (int i = 0; i < fo_emitter_count(); i++)
    if (strcmp(emitters[i].name, name) == 0)
      return &emitters[i];
  return NULL;
}
