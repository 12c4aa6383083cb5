/* segment_extract.h - private to the segmenter: copying a subset of a
 * fusion's ops into a fusion of their own, and labelling values. */
#ifndef FZ_SCHED_SEGMENT_EXTRACT_H
#define FZ_SCHED_SEGMENT_EXTRACT_H

#include "fz/ir.h"

/* What to build: the ops of `parent` listed in `ops` (indices, ascending:
 * the parent's SSA order), reading `inputs` (parent values, each an input of the parent or
 * the result of an op not copied; typed input_types[i], which must have a
 * layout) and returning `outputs` (parent values available in the new
 * fusion). output_layouts may be NULL; where output_layouts[i] is non-NULL
 * and has a layout, output i gets it (fully contiguous), replacing a layout
 * copied from the parent. */
typedef struct fz_extract {
  const fz_fusion *parent;
  const char *name;
  const int *ops;
  int num_ops;
  int num_inputs;
  const fz_value *const *inputs;
  const fz_type *input_types;
  int num_outputs;
  const fz_value *const *outputs;
  const fz_type *const *output_layouts;
} fz_extract;

/* A new fusion with the parent's symbols at the same indices, value names
 * kept, literals copied, ops rebuilt through the builder with their
 * attributes and declared result layouts, verified. map (may be NULL; else
 * parent->next_value_id entries, all NULL on entry) receives, per parent
 * input and copied op result, its copy; a caller that extracts many
 * fusions from one parent passes the same map and clears those entries
 * after each, so that an extraction costs the size of what it copies.
 * FZ_ERR_INTERNAL when the copy does not build or verify (a bug in the
 * caller's choice of inputs). */
fz_status fz_extract_fusion(const fz_extract *x, fz_fusion **out,
                            fz_value **map, fz_error *err);

#endif
