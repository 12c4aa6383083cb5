/* fuse-opt.h - shared between the files of the fuse-opt tool: its options,
 * the table of emitters (--emit=) and the reference runner. */
#ifndef FUSE_OPT_H
#define FUSE_OPT_H

#include <stdint.h>
#include <stdio.h>

#include "fz/ir.h"

#define FO_MAX_PASSES 64
#define FO_MAX_BINDS 64

typedef struct fo_bind {
  const char *symbol; /* points into argv */
  size_t symbol_len;
  int64_t value;
} fo_bind;

struct fo_emitter;

typedef struct fo_options {
  const char *input;  /* a path, or "-" for stdin */
  const char *output; /* -o: a path, "-" or NULL for stdout */
  const char *passes[FO_MAX_PASSES];
  int num_passes;
  bool print_after_all;
  const struct fo_emitter *emit;
  bool emit_given; /* --emit named explicitly */
  bool split_input_file;
  bool run_reference;
  uint64_t seed;
  fo_bind binds[FO_MAX_BINDS];
  int num_binds;
  int sm; /* --arch=sm_NN for sched/llvm/ptx (default 90) */
  bool exact_sizes; /* --exact-sizes: fz_problem's exact_sizes */
} fo_options;

/* ---- output.c: -o FILE ------------------------------------------------ */

typedef struct fo_output {
  FILE *file;       /* where to write */
  const char *path; /* -o FILE; NULL for stdout */
  char *temp;       /* the file written until it is renamed to path */
} fo_output;

/* stdout for NULL or "-", else a temporary file next to path. False
 * (after saying why on stderr) when it cannot be created. */
bool fo_output_open(fo_output *output, const char *path);
/* Flushes and closes; with keep, moves the text to its path, else drops
 * it (path untouched). False (after saying why) if writing failed. */
bool fo_output_close(fo_output *output, bool keep);

/* ---- emit.c: what fuse-opt prints after the passes (--emit=NAME) ------- */

/* An emitter writes one fusion's form at its stage to out. Adding a stage
 * (sched, llvm, ptx) is one row in emit.c's table. */
typedef struct fo_emitter {
  const char *name;
  const char *description;
  fz_status (*emit)(fz_fusion *fusion, const fo_options *options, FILE *out,
                    fz_error *err);
} fo_emitter;

int fo_emitter_count(void);
const fo_emitter *fo_emitter_at(int index);
const fo_emitter *fo_emitter_find(const char *name);

/* ---- reference.c: --run-reference ------------------------------------- */

/* Symbol values from --bind, 8 for the others (announced on out as a
 * comment), in *values (malloc'd, one per symbol). FZ_ERR_ARGUMENT, naming
 * the value, when they make any value's element count or byte size
 * overflow int64 (fz_check_sizes); FZ_ERR_OUT_OF_MEMORY. *values is NULL
 * on failure. */
fz_status fo_bind_symbols(const fz_fusion *fusion, const fo_options *options,
                          FILE *out, int64_t **values, fz_error *err);

/* ---- stages.c: --emit=sched, llvm, ptx --------------------------------- */

fz_status fo_emit_sched(fz_fusion *fusion, const fo_options *options,
                        FILE *out, fz_error *err);
fz_status fo_emit_llvm(fz_fusion *fusion, const fo_options *options, FILE *out,
                       fz_error *err);
fz_status fo_emit_llvm_lowered(fz_fusion *fusion, const fo_options *options,
                               FILE *out, fz_error *err);
fz_status fo_emit_segments(fz_fusion *fusion, const fo_options *options,
                           FILE *out, fz_error *err);
fz_status fo_emit_explain(fz_fusion *fusion, const fo_options *options,
                          FILE *out, fz_error *err);
fz_status fo_emit_axis_map(fz_fusion *fusion, const fo_options *options,
                           FILE *out, fz_error *err);
fz_status fo_emit_ptx(fz_fusion *fusion, const fo_options *options, FILE *out,
                      fz_error *err);

/* Interprets the fusion on inputs drawn from options->seed (sizes from
 * --bind, 8 for unbound symbols) and writes one checksum line per output. */
fz_status fo_run_reference(const fz_fusion *fusion, const fo_options *options,
                           FILE *out, fz_error *err);

#endif
