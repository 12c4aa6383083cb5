/* dump.h - FZ_DUMP: the stages of every kernel fz compiles, for a person.
 *
 *   FZ_DUMP=fusion,segments,plan,llvm,ptx   (any subset, or "all")
 *   FZ_DUMP_DIR=DIR                          (optional)
 *
 * Both are read once per process, on the first compile. Unknown names get
 * a one-line warning on stderr that lists the valid ones; the rest still
 * apply. Each dump starts with a header line in its stage's comment
 * syntax ("// fz dump: @softmax kernel 0: PTX (sm_90)"); without
 * FZ_DUMP_DIR the dumps go to stderr, one after another; with it, each is
 * a file named after the fusion, the kernel and the stage:
 *
 *   <fusion>.fusion.fz  <fusion>.segments.txt  <fusion>.k<K>.plan.txt
 *   <fusion>.k<K>.llvm-lowered.ll  <fusion>.k<K>.llvm-optimized.ll
 *   <fusion>.k<K>.ptx
 *
 * <fusion> is the fusion's name, made unique within the process (".2",
 * ".3", ... when the same fusion is compiled again, e.g. for new shapes).
 * The executor (lib/runtime) dumps the fusion and its segments and passes
 * its unit and kernel index to fz_compile_plan, which dumps the plan, the
 * LLVM IR before and after optimisation and the PTX: so every caller of
 * the library (C API, Python, fuse-run, fuse-opt) dumps the same way.
 * Dumping is best effort: a file that cannot be written gets a warning on
 * stderr, never an error.
 */
#ifndef FZ_CODEGEN_DUMP_H
#define FZ_CODEGEN_DUMP_H

#include "sched/segment.h"

typedef enum fz_dump_stage {
  FZ_DUMP_FUSION = 1 << 0,
  FZ_DUMP_SEGMENTS = 1 << 1,
  FZ_DUMP_PLAN = 1 << 2,
  FZ_DUMP_LLVM = 1 << 3,
  FZ_DUMP_PTX = 1 << 4,
} fz_dump_stage;

/* What one dump is: a stage, and for LLVM IR which side of the optimiser. */
typedef enum fz_dump_kind {
  FZ_DUMP_KIND_FUSION,
  FZ_DUMP_KIND_SEGMENTS,
  FZ_DUMP_KIND_PLAN,
  FZ_DUMP_KIND_LLVM_LOWERED,
  FZ_DUMP_KIND_LLVM_OPTIMIZED,
  FZ_DUMP_KIND_PTX,
} fz_dump_kind;

/* The fz_dump_stage bits of a FZ_DUMP value. Unknown names are left out
 * and, when warning is non-NULL, described there in one line. */
unsigned fz_dump_parse(const char *spec, fz_buf *warning);

/* Whether FZ_DUMP asks for a stage (FZ_DUMP and FZ_DUMP_DIR read on the
 * first call). */
bool fz_dump_wants(fz_dump_stage stage);

/* Tests only: replaces what FZ_DUMP and FZ_DUMP_DIR said (dir NULL:
 * stderr). Not thread-safe. */
void fz_dump_configure(unsigned stages, const char *dir);

/* One fusion's compilation: the name its dumps are filed under. */
typedef struct fz_dump_unit {
  char name[160];
} fz_dump_unit;

/* Names a unit after the fusion, unique within the process. Does nothing
 * (and the unit dumps nothing) unless some stage is dumped. */
void fz_dump_unit_begin(fz_dump_unit *unit, const char *fusion_name);

/* Dumps text as `kind` of the unit's kernel `kernel` (< 0: of the whole
 * fusion), if FZ_DUMP asks for that stage; detail, when non-NULL, ends
 * the header line in parentheses. */
void fz_dump_text(const fz_dump_unit *unit, int kernel, fz_dump_kind kind,
                  const char *detail, const char *text);

/* The executor's dumps, from lib/ir's and lib/sched's printers. */
void fz_dump_fusion(const fz_dump_unit *unit, const fz_fusion *fusion);
void fz_dump_segments(const fz_dump_unit *unit,
                      const fz_segmentation *segmentation);

#endif
