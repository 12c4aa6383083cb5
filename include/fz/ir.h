/* ir.h - the Fusion IR: every data structure, and the prototypes of
 * lib/ir's functions grouped by the file that defines them. This header is
 * the table of contents of lib/ir; lib/sched's passes are declared in
 * lib/sched/pass.h.
 *
 * Model. A fusion is a list of ops in SSA order over values. A value is a
 * fusion input, an op result, or a literal scalar. Every value has a type:
 * a dtype, logical axes (each with an extent and a kind) and a layout (an
 * allocation order and per-allocated-axis contiguity). Layout is separate
 * from logical shape: a column-major [M, N] tensor has alloc_order (1, 0).
 *
 * Memory. Everything reachable from a fusion lives in its arena and is
 * freed by fz_fusion_destroy. Arrays that grow (ops, inputs, outputs,
 * symbols) are re-allocated in the arena; the old copy is simply abandoned.
 */
#ifndef FZ_IR_H
#define FZ_IR_H

#include "fz/fz.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- arena.c ------------------------------------------------------------ */

typedef struct fz_arena fz_arena;
fz_arena *fz_arena_create(void);
void fz_arena_destroy(fz_arena *arena);
/* Zeroed, 16-byte aligned. Dies (broken invariant) only if malloc fails. */
void *fz_arena_alloc(fz_arena *arena, size_t size);
/* `into` takes over every allocation of `from`, which is destroyed: what
 * was built in a scratch arena, kept only if it turned out to be wanted,
 * joins the arena it is kept in without being copied. */
void fz_arena_absorb(fz_arena *into, fz_arena *from);
/* Frees every allocation, keeping one block for the next ones: a scratch
 * arena used again without returning its memory to malloc. */
void fz_arena_reset(fz_arena *arena);
char *fz_arena_strdup(fz_arena *arena, const char *s);
char *fz_arena_strndup(fz_arena *arena, const char *s, size_t n);
/* Grow *items (an arena array of pointers) to hold one more and append. */
void fz_arena_push(fz_arena *arena, void ***items, int *count, int *capacity,
                   void *item);

/* ---- util.c ------------------------------------------------------------ */

/* Broken invariant: prints file:line and the message, then aborts. Never
 * used for bad input. */
_Noreturn void fz_die(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
#define FZ_DIE(...) fz_die(__FILE__, __LINE__, __VA_ARGS__)
#define FZ_CHECK(cond)                                                         \
  do {                                                                         \
    if (!(cond))                                                               \
      FZ_DIE("check failed: %s", #cond);                                       \
  } while (0)

/* The values an integer dtype holds ([0, 1] for bool); false for the
 * float dtypes. */
bool fz_dtype_int_range(fz_dtype dtype, int64_t *min, int64_t *max);
/* FZ_OK when v fits an integer dtype (or bool, or any float dtype), else
 * FZ_ERR_INVALID: "WHAT 300 is out of range of i8 [-128, 127]". */
fz_status fz_check_int_in_dtype(int64_t v, fz_dtype dtype, const char *what,
                                fz_error *err);
/* Growable malloc'd string, for printers. */
typedef struct fz_buf {
  char *data;
  size_t len, cap;
  bool oom; /* set once an allocation failed; further appends are no-ops */
} fz_buf;
void fz_buf_printf(fz_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void fz_buf_puts(fz_buf *b, const char *s);
/* Returns the string (caller frees) or NULL if any append ran out of memory. */
char *fz_buf_take(fz_buf *b);

/* ---- ops ---------------------------------------------------------------- */

typedef enum fz_op_kind {
  FZ_KIND_UNARY,
  FZ_KIND_CAST,
  FZ_KIND_BINARY,
  FZ_KIND_TERNARY,
  FZ_KIND_REDUCTION,
  FZ_KIND_BROADCAST,
  FZ_KIND_SQUEEZE,
  FZ_KIND_EXPAND,
  FZ_KIND_PERMUTE,
  FZ_KIND_RESHAPE,
  FZ_KIND_SET,
  FZ_KIND_FULL,
  FZ_KIND_IOTA,
  FZ_KIND_SYMBOL,
  FZ_KIND_RANDOM,
  FZ_KIND_GATHER, /* gather, index_select: data, index; dims: the axis */
  FZ_KIND_SLICE,
  FZ_KIND_PAD,
  FZ_KIND_CAT,
} fz_op_kind;

enum {
  FZ_F_TO_FLOAT = 1 << 0,    /* integer/bool operands promote to f32 */
  FZ_F_TO_BOOL = 1 << 1,     /* result is bool */
  FZ_F_COMMUTATIVE = 1 << 2, /* operands may be swapped */
  FZ_F_LIBDEVICE = 1 << 3,   /* lowering calls libdevice for float types */
  FZ_F_INT_TO_I64 = 1 << 4,  /* integer/bool inputs accumulate to i64 */
  /* Operand dtypes the op is defined on, checked on their promotion. */
  FZ_F_FLOAT_ONLY = 1 << 5, /* floats only */
  FZ_F_INT_ONLY = 1 << 6,   /* integers and bool only */
  FZ_F_NO_BOOL = 1 << 7,    /* not bool */
  /* An arg-reduction: the result is the i64 position of the reduced
   * element (argmax, argmin), not a value of the operand's dtype. */
  FZ_F_ARG = 1 << 8,
};

typedef enum fz_opcode {
#define FZ_OP(e, name, kind, arity, flags) FZ_OP_##e,
#include "fz/ops.def"
#undef FZ_OP
  FZ_NUM_OPCODES
} fz_opcode;

typedef struct fz_op_info {
  const char *name;
  fz_op_kind kind;
  int arity; /* -1: variadic (cat), at least one operand */
  unsigned flags;
} fz_op_info;

/* Indexed by fz_opcode; defined in ops.c by expanding ops.def. */
extern const fz_op_info fz_op_table[FZ_NUM_OPCODES];
/* Opcode for a text keyword, or -1. */
int fz_opcode_from_name(const char *name, size_t length);

/* ---- types -------------------------------------------------------------- */

/* An extent is a constant (symbol < 0, value >= 0) or a symbol bound at run
 * time (symbol = index into fusion->symbols; value unused). */
typedef struct fz_extent {
  int64_t value;
  int32_t symbol;
} fz_extent;

typedef enum fz_axis_kind {
  FZ_AXIS_ITER,      /* an ordinary axis */
  FZ_AXIS_BROADCAST, /* extent 1, or expanded (stride 0) to `expanded_to` */
  FZ_AXIS_REDUCE,    /* only inside kernel plans: values never carry it */
} fz_axis_kind;

typedef struct fz_axis {
  fz_axis_kind kind;
  fz_extent extent;      /* ITER: the extent; BROADCAST: constant 1 */
  bool expanded;         /* BROADCAST only: `b1->E` */
  fz_extent expanded_to; /* BROADCAST and expanded: E */
} fz_axis;

/* A symbol: a name shared by all extents that use it within a fusion, or an
 * anonymous unknown extent (`?` in text, name NULL, one symbol per `?`).
 * A *derived* symbol (num_terms > 0) is not bound by an input's size but
 * computed from named base symbols: num/den * prod(terms[i].symbol ^
 * terms[i].power), e.g. `N*K`, `M/4`, `M/K` (symbol_expr.c). Its name is
 * that expression in canonical form, so equal products are one symbol. */
typedef struct fz_symbol_term {
  int32_t symbol; /* a base symbol */
  int32_t power;  /* nonzero */
} fz_symbol_term;

typedef struct fz_symbol {
  const char *name;
  int num_terms; /* 0: a base symbol */
  const fz_symbol_term *terms;
  int64_t num, den; /* derived: the constant factor num/den, den > 0 */
} fz_symbol;

typedef struct fz_type {
  fz_dtype dtype;
  int rank; /* 0 = scalar */
  fz_axis axes[FZ_MAX_RANK];
  /* Layout. has_layout is false for op results whose layout was not
   * declared (and not yet propagated); it is always true for inputs (an
   * input without `layout(...)` is row-major). alloc_order lists logical
   * axes outermost first. contiguous[i] refers to allocated position i
   * (alloc_order[i]): false means its stride is not extent*stride of the
   * next inner allocated axis (or not 1 for the innermost). */
  bool has_layout;
  int alloc_order[FZ_MAX_RANK];
  bool contiguous[FZ_MAX_RANK];
} fz_type;

/* Fill t as a row-major, fully contiguous layout with has_layout = true. */
void fz_type_set_row_major(fz_type *t);
/* Size of the logical axis at run time (1 for an unexpanded broadcast). */
int64_t fz_axis_size(const fz_axis *axis, const int64_t *symbol_values);
/* Logical extent of an axis for shape comparison: expanded_to for an
 * expanded broadcast, 1 for a broadcast, else extent. */
fz_extent fz_axis_extent(const fz_axis *axis);
bool fz_extent_equal(fz_extent a, fz_extent b);

/* ---- size.c: checked products of sizes ---------------------------------- */
/*
 * Every product of sizes that fz computes from a user's extents (element
 * counts, byte sizes, dense strides, spans of strided views) is checked
 * through these where the sizes enter fz, so that none overflows int64.
 * Sizes that pass fz_size_of make every dense stride of the tensor, in
 * elements and in bytes and in any axis order, representable. `what`
 * starts the message (the value or tensor it is about); on failure they
 * return `status` with a message naming the numbers, e.g.
 * "%x: extent product 4611686018427387904 x 4 overflows int64".
 */

/* *out = a * b for a, b >= 0; false (and *out unspecified) on overflow. */
bool fz_size_mul(int64_t a, int64_t b, int64_t *out);
/* The element count (0 when a size is 0) and byte size of a tensor of
 * `dtype` and these sizes; either out pointer may be NULL. Fails for a
 * negative size, or when the product of the nonzero sizes, or that times
 * the element size, overflows int64. */
fz_status fz_size_of(int rank, const int64_t *sizes, fz_dtype dtype,
                     const char *what, fz_status status, int64_t *elements,
                     int64_t *bytes, fz_error *err);
/* The number of elements a strided view reaches, 1 + sum of (size - 1) *
 * |stride| (0 when a size is 0); fails for a negative size or when that
 * span, or the span in bytes, overflows int64. */
fz_status fz_size_span(int rank, const int64_t *sizes, const int64_t *strides,
                       fz_dtype dtype, const char *what, fz_status status,
                       int64_t *elements, fz_error *err);
/* The run-time sizes of a type's logical axes, with symbol s at
 * symbol_values[s] (which may be NULL when the type has no symbolic
 * extent), checked as by fz_size_of; elements and bytes may be NULL. */
fz_status fz_type_sizes(const fz_type *type, const int64_t *symbol_values,
                        const char *what, fz_status status,
                        int64_t sizes[FZ_MAX_RANK], int64_t *elements,
                        int64_t *bytes, fz_error *err);
/* fz_type_sizes for every input and op result of the fusion under these
 * symbol values (one per symbol that a value uses): what a binding of
 * run-time sizes must pass before anything is laid out, allocated or
 * scheduled. The message names the value. */
fz_status fz_check_sizes(const fz_fusion *fusion, const int64_t *symbol_values,
                         fz_status status, fz_error *err);
/* Dense strides (in elements) of a tensor of this type and these sizes,
 * laid out in its allocation order (logical order when it has no layout),
 * every axis contiguous; sizes 0 and 1 take no room. The sizes must have
 * passed fz_size_of: the products are not checked again. */
void fz_type_dense_strides(const fz_type *type, const int64_t *sizes,
                           int64_t *strides);

/* ---- symbol_expr.c: derived symbols, products of symbols ------------------- */
/*
 * An element count or a derived symbol as a monomial: num/den times a
 * product of base symbols with integer powers (terms sorted by name).
 * Reshape counts are provably equal when their monomials are (or both are
 * zero); what cannot be proven statically, that a quotient such as M/K is
 * an integer, is checked when the sizes are bound (fz_symbols_derive).
 */
#define FZ_MONOMIAL_TERMS 32
typedef struct fz_monomial {
  int64_t num, den; /* reduced, den > 0 */
  bool overflow;    /* a constant or the term list overflowed */
  int num_terms;
  fz_symbol_term terms[FZ_MONOMIAL_TERMS];
} fz_monomial;

void fz_monomial_init(fz_monomial *m);
/* m *= e^power (power +1 or -1); a derived symbol contributes its terms.
 * f may be NULL (every symbol is then a base symbol). */
void fz_monomial_mul_extent(const fz_fusion *f, fz_monomial *m, fz_extent e,
                            int power);
/* m *= the element count of t's logical axes. */
void fz_monomial_mul_type(const fz_fusion *f, fz_monomial *m,
                          const fz_type *t, int power);
bool fz_monomial_equal(const fz_monomial *a, const fz_monomial *b);
/* b / a is a monomial with an integer constant and no negative power. */
bool fz_monomial_divides(const fz_monomial *a, const fz_monomial *b);
/* "6*N*K/M" (the constant first, `/` before each divisor), as in names. */
void fz_monomial_format(const fz_fusion *f, const fz_monomial *m, fz_buf *b);
/* The extent that is m: a constant, a base symbol, or the derived symbol
 * of m's canonical name (created if new). Fails for a fraction with no
 * symbol, a term on an anonymous symbol, or too many terms. */
fz_status fz_monomial_extent(fz_fusion *f, const fz_monomial *m,
                             fz_extent *out, fz_error *err);
/* Parses an extent expression `term (("*" | "/") term)*`, a term a symbol
 * name or an integer, spaces allowed, left to right (`M/K*2` is 2*M/K).
 * Unknown names create base symbols when create_bases, else fail. */
fz_status fz_parse_extent_expr(fz_fusion *f, const char *text, size_t length,
                               bool create_bases, fz_extent *out,
                               fz_error *err);
/* Appends a copy of s (its name; a derived symbol's terms, whose base
 * symbols must have the same indices in f) to f; returns its index. */
int fz_fusion_copy_symbol(fz_fusion *f, const fz_symbol *s);
/* True when a name is an extent expression (has `*` or `/`). */
bool fz_is_extent_expr(const char *name);
/* Fills values[s] of every derived symbol whose base symbols are bound
 * (values >= 0; the others stay unbound): fails, naming the symbol, on a
 * division by zero, a quotient that is not an integer, or an overflow. */
fz_status fz_symbols_derive(const fz_fusion *f, int64_t *values,
                            fz_error *err);

/* ---- values and ops ----------------------------------------------------- */

typedef enum fz_value_kind {
  FZ_VALUE_INPUT,   /* fusion argument */
  FZ_VALUE_RESULT,  /* op result */
  FZ_VALUE_LITERAL, /* scalar literal operand (weakly typed, as in PyTorch) */
} fz_value_kind;

typedef union fz_scalar {
  double f;   /* float dtypes */
  int64_t i;  /* integer dtypes and bool (0/1) */
} fz_scalar;

/* (util.c) A number given as a double, as a scalar of the dtype's class
 * (fill values, iota's start and step): .f as it is for float dtypes (it
 * is rounded to the dtype, overflowing to inf, when the op computes, as
 * PyTorch converts), .i = v != 0 for bool, and for integer dtypes an
 * integral value in the dtype's range, else FZ_ERR_INVALID naming WHAT
 * and the value ("is out of range of i8 [-128, 127]", "is not an
 * integer"). */
fz_status fz_scalar_of_double(double v, fz_dtype dtype, const char *what,
                              fz_scalar *out, fz_error *err);


struct fz_value {
  fz_value_kind kind;
  /* The fusion whose arena holds the value: the builder refuses operands
   * and outputs of any other (they would dangle once it is destroyed). */
  const fz_fusion *owner;
  int id;           /* unique within the fusion, in creation order */
  const char *name; /* text name without '%'; NULL: printer numbers it */
  fz_type type;
  fz_op *def;        /* RESULT: defining op */
  int input_index;   /* INPUT: position in fusion->inputs */
  fz_scalar literal; /* LITERAL: value; dtype is f64, i64 or bool */
};

typedef struct fz_loc {
  int line, col; /* 1-based; 0 when built through the API */
} fz_loc;

/* Errors about one op (util.c): fz_error_set, with err->line and col set
 * from loc, the op's location (zero: none known, as for ops built through
 * the API). */
fz_status fz_error_at(fz_error *err, fz_loc loc, fz_status status,
                      const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Points an error already reported at loc, unless it has a location of its
 * own (which is more precise: the op inside a pass, a node of a kernel).
 * For callers that learn which op failed only when a callee returns. */
void fz_error_locate(fz_error *err, fz_loc loc);
/* The location an error carries (zero when none). */
fz_loc fz_error_loc(const fz_error *err);
/* The location of the op that defines v: zero for inputs, literals and
 * ops without one. For errors that name a value. */
fz_loc fz_value_loc(const fz_value *v);

/* The per-axis attributes of the resize ops, indexed by operand axis.
 * SLICE: the result takes elements start, start + step, ... below stop
 * (0 <= start <= stop <= extent, step >= 1); stop is a constant or the
 * axis's own symbol, which takes the axis to its end. PAD: low[k] and
 * high[k] elements of the fill value are added before and after axis k;
 * a negative width crops that many elements instead. */
typedef struct fz_resize {
  int64_t start[FZ_MAX_RANK];
  fz_extent stop[FZ_MAX_RANK];
  int64_t step[FZ_MAX_RANK];
  int64_t low[FZ_MAX_RANK], high[FZ_MAX_RANK];
} fz_resize;

struct fz_op {
  fz_opcode code;
  int num_operands;
  /* An arena array of exactly num_operands values (more than three only
   * for cat), allocated with the op by the builder. */
  fz_value **operands;
  fz_value *result;
  /* REDUCTION: reduced axes; BROADCAST: positions of new axes in the
   * result; SQUEEZE: axes removed (each must be size 1). Sorted, unique. */
  int num_dims;
  int dims[FZ_MAX_RANK];
  bool keepdim;             /* REDUCTION */
  int perm[FZ_MAX_RANK];    /* PERMUTE: result axis i = operand axis perm[i] */
  fz_scalar fill;           /* FULL: the value, in the result's dtype class */
  fz_scalar iota_start;     /* IOTA: start and step (default 0, 1) */
  fz_scalar iota_step;
  int symbol;               /* SYMBOL: index into fusion->symbols */
  double correction;        /* VAR: divisor is max(0, count - correction) */
  fz_loc loc;
  /* SLICE and PAD (PAD's value is `fill`); CAT's axis is dims[0] */
  fz_resize resize;
};

struct fz_fusion {
  fz_arena *arena;
  const char *name;
  fz_symbol *symbols;
  int num_symbols, cap_symbols;
  fz_value **inputs;
  int num_inputs, cap_inputs;
  fz_op **ops; /* SSA order */
  int num_ops, cap_ops;
  fz_value **outputs;
  int num_outputs, cap_outputs;
  int next_value_id;
};

/* ---- fusion.c ----------------------------------------------------------- */

/* Index of the named symbol, created if absent. name NULL: new anonymous. */
int fz_fusion_symbol(fz_fusion *fusion, const char *name);
int fz_fusion_find_symbol(const fz_fusion *fusion, const char *name);
fz_extent fz_const_extent(int64_t value);
fz_extent fz_symbol_extent(int32_t symbol);

/* Appends an input. The type must have has_layout set (see
 * fz_type_set_row_major). name may be NULL. */
fz_value *fz_add_input(fz_fusion *fusion, const char *name,
                       const fz_type *type);
/* Appends an output: an input or op result of this fusion.
 * FZ_ERR_ARGUMENT for NULL or a value of another fusion, FZ_ERR_INVALID
 * for a literal. */
fz_status fz_add_output(fz_fusion *fusion, fz_value *value, fz_error *err);
/* Replace every use of `from` (operands and outputs) by `to`. Scans every
 * op: a pass that replaces per op uses fz_uses (uses.c) instead. */
void fz_replace_uses(fz_fusion *fusion, fz_value *from, fz_value *to);
/* Number of uses as an operand or output. Scans every op, as above. */
int fz_count_uses(const fz_fusion *fusion, const fz_value *value);
/* Remove ops whose results are unused (repeat until none). Returns count.
 * Linear in the fusion's size. */
int fz_remove_dead_ops(fz_fusion *fusion);

/* ---- uses.c: an index of who reads each value ------------------------- */

/* One use of a value: operand `slot` of `op`, or (op NULL) fusion output
 * `slot`. Iterate a value's uses with fz_uses_first and `next`. */
typedef struct fz_use {
  fz_op *op;
  int slot;
  fz_value *value;
  struct fz_use *prev, *next;
} fz_use;
typedef struct fz_uses fz_uses;

/* Index of every operand and output use of f, for passes that count or
 * replace uses per op (each query O(1), each replacement O(uses moved)).
 * Valid while edits of operands and outputs go through it and no op is
 * added, removed or reordered. Allocation failure is fatal, as for an
 * arena. */
fz_uses *fz_uses_build(fz_fusion *fusion);
void fz_uses_destroy(fz_uses *uses);
int fz_uses_count(const fz_uses *uses, const fz_value *value);
bool fz_uses_is_output(const fz_uses *uses, const fz_value *value);
const fz_use *fz_uses_first(const fz_uses *uses, const fz_value *value);
/* fz_replace_uses through the index. */
void fz_uses_replace(fz_uses *uses, fz_value *from, fz_value *to);
/* Operand k of fusion->ops[op_index] becomes v. */
void fz_uses_set_operand(fz_uses *uses, int op_index, int k, fz_value *v);

/* ---- builder.c: the C builder, with shape and dtype inference --------- */
/*
 * Every call here adds to one fusion and follows the same contract:
 *
 *  Ownership: values and ops are allocated in the fusion's arena; the
 *  returned fz_value * stays valid until fz_fusion_destroy and is never
 *  freed on its own. Operands must belong to the same fusion: a value
 *  records its fusion (fz_value.owner), and an operand of another one is
 *  refused with FZ_ERR_ARGUMENT. Attribute structs and arrays passed in
 *  (fz_attrs, dims, perm, shape types) are copied: the caller may reuse
 *  or free them after the call.
 *
 *  Errors: a call that cannot build its op returns NULL and fills err
 *  (FZ_ERR_INVALID, the message starting with the op's keyword, e.g.
 *  "add: operand 1 axis 0 has extent M but operand 0 has extent N";
 *  FZ_ERR_ARGUMENT for a NULL fusion or another fusion's operand). A
 *  failed call leaves the fusion exactly as it was: no op, no value, no
 *  value id consumed. err may be NULL. Nothing aborts on bad arguments
 *  (NULL operands, out-of-range dims or opcodes are errors).
 *
 *  Axes: dims and perm entries may be negative, counting from the end as
 *  in PyTorch (-1 is the last axis; for broadcast, of the result), and
 *  dims may come in any order; naming an axis twice is an error. The op
 *  stores them wrapped to [0, rank) and dims sorted, which is how the
 *  text prints them (the parser reads negative entries the same way).
 *
 *  Threads: these calls modify the fusion; they need it to themselves
 *  (no other call on the same fusion meanwhile, reading or writing).
 *  Building distinct fusions in distinct threads is safe.
 *
 *  Types: results get their dtype from PyTorch's promotion rules
 *  (promote.c) and their shape from infer.c; their layout is undeclared
 *  (has_layout false) until fz_value_set_layout or the "alloc-order" pass.
 *  Pointwise operands must have equal ranks (rank-0 operands broadcast);
 *  broadcasting a lower-rank tensor is an explicit fz_broadcast.
 *
 * Without the struct layouts (fz_type) a program can build the same ops
 * through the handle calls at the end of fz/fz.h.
 */

/* (api.c) What every handle call that reads its operand before fz_build
 * checks: a fusion, an operand, and the operand's fusion being that one
 * ("OP: operand is NULL", "OP: the operand belongs to another fusion");
 * false with err set otherwise. */
bool fz_check_handle_operand(const fz_fusion *f, const fz_value *a,
                             const char *op, fz_error *err);

/* Attributes of an op, zero-initialised means "none". `shape` is needed by
 * reshape, expand, full and iota (dtype and extents of the result; layout
 * is ignored) and by cast (its dtype); `symbol` by symbol. The struct and what it points to
 * are only read during the call. */
typedef struct fz_attrs {
  int num_dims;
  int dims[FZ_MAX_RANK];
  bool keepdim;
  int perm[FZ_MAX_RANK];
  const fz_type *shape;
  fz_scalar fill;
  fz_scalar iota_start, iota_step;
  bool has_iota_start, has_iota_step;
  int symbol; /* symbol: the index of the symbol read */
  fz_resize resize; /* slice, pad (with `fill`); cat's axis is dims[0] */
  double correction; /* var: finite (zero-initialised: 0) */
} fz_attrs;

/* Create an op and its result with inferred dtype and shape. Rank-0
 * operands broadcast against the others. Returns NULL and fills err
 * (FZ_ERR_INVALID) when operands do not fit the op (wrong arity, shapes
 * that do not agree, dims out of range or repeated, bad shape attribute;
 * FZ_ERR_ARGUMENT as above).
 * The result's layout is undeclared (has_layout false). attrs may be NULL
 * for ops that take none. */
fz_value *fz_build(fz_fusion *fusion, fz_opcode code, int num_operands,
                   fz_value *const *operands, const fz_attrs *attrs,
                   fz_error *err);

/* Weakly typed scalar literals (PyTorch's Python numbers): f64, i64 or
 * bool, rank 0, kind FZ_VALUE_LITERAL. They are arena values usable as
 * operands of any op of their fusion, but are not fusion inputs and
 * cannot be outputs. An op whose operands convert to an integer dtype
 * (i32[N] + 300 computes in i32) refuses an integer literal out of that
 * dtype's range, as PyTorch does. NULL only for a NULL fusion (arena
 * allocation failure is fatal). */
fz_value *fz_literal_float(fz_fusion *fusion, double v);
fz_value *fz_literal_int(fz_fusion *fusion, int64_t v);
fz_value *fz_literal_bool(fz_fusion *fusion, bool v);

/* Convenience wrappers over fz_build, with its contract (NULL + err on
 * failure, fusion unchanged):
 *  fz_unary, fz_binary, fz_ternary: pointwise ops by opcode (the opcode's
 *    arity must match);
 *  fz_cast: to `dtype` (float->int truncates toward zero and saturates,
 *    NaN -> 0: docs/format.md);
 *  fz_reduce: a reduction opcode (sum prod amax amin argmax argmin) over
 *    `dims` (see
 *    Axes above); keepdim leaves b1 axes in their place;
 *  fz_broadcast: inserts b1 axes at result positions `dims` (of the
 *    result, whose rank is rank + num_dims);
 *  fz_squeeze: removes operand axes `dims`, each a b1 or constant-1 axis;
 *  fz_expand: to `shape` (same rank; only b1 axes change, written as
 *    expanded broadcasts b1->E in the shape);
 *  fz_permute: result axis i is operand axis perm[i] (rank entries);
 *  fz_reshape: to `shape`, whose element count must provably equal the
 *    operand's (row-major element order, like torch.reshape);
 *  fz_set: a copy;
 *  fz_full: a tensor of `shape` filled with `fill` (.f for float dtypes,
 *    .i otherwise; an integer dtype's fill must be in its range, bool's
 *    0 or 1);
 *  fz_read_symbol: the i64 scalar bound to symbol `symbol` (an index into
 *    fusion->symbols of a named symbol) at run time, `symbol N` in text:
 *    how a fusion computes with a size (a mean's element count) without
 *    writing the size in as a literal, so that one fusion serves every
 *    size. */
fz_value *fz_unary(fz_fusion *f, fz_opcode code, fz_value *a, fz_error *err);
fz_value *fz_binary(fz_fusion *f, fz_opcode code, fz_value *a, fz_value *b,
                    fz_error *err);
fz_value *fz_ternary(fz_fusion *f, fz_opcode code, fz_value *a, fz_value *b,
                     fz_value *c, fz_error *err);
fz_value *fz_cast(fz_fusion *f, fz_value *a, fz_dtype dtype, fz_error *err);
fz_value *fz_reduce(fz_fusion *f, fz_opcode code, fz_value *a, int num_dims,
                    const int *dims, bool keepdim, fz_error *err);
fz_value *fz_broadcast(fz_fusion *f, fz_value *a, int num_dims,
                       const int *dims, fz_error *err);
fz_value *fz_squeeze(fz_fusion *f, fz_value *a, int num_dims, const int *dims,
                     fz_error *err);
fz_value *fz_expand(fz_fusion *f, fz_value *a, const fz_type *shape,
                    fz_error *err);
fz_value *fz_permute(fz_fusion *f, fz_value *a, const int *perm,
                     fz_error *err);
fz_value *fz_reshape(fz_fusion *f, fz_value *a, const fz_type *shape,
                     fz_error *err);
fz_value *fz_set(fz_fusion *f, fz_value *a, fz_error *err);
fz_value *fz_full(fz_fusion *f, const fz_type *shape, fz_scalar fill,
                  fz_error *err);
fz_value *fz_read_symbol(fz_fusion *f, int symbol, fz_error *err);
/* var over `dims` (fz_reduce's rules) with Bessel's `correction` (finite,
 * >= 0; 1 is torch.var's default): sum((x - mean)^2) / max(0, count -
 * correction), so a correction >= count gives inf, or NaN for a constant
 * input, as PyTorch does. Floats only; f16/bf16 compute in f32. */
fz_value *fz_var(fz_fusion *f, fz_value *a, int num_dims, const int *dims,
                 double correction, bool keepdim, fz_error *err);

/* Declare the result's layout (alloc_order is a permutation of its logical
 * axes, outermost first; contiguous may be NULL for all-contiguous, else
 * one flag per allocated position). On an output this is the layout the
 * executor allocates it in. FZ_ERR_ARGUMENT for NULL arguments,
 * FZ_ERR_INVALID for an order that is not a permutation; the value is
 * unchanged on failure. Modifies the value: same threading rule as the
 * builder. */
fz_status fz_value_set_layout(fz_value *value, const int *alloc_order,
                              const bool *contiguous, fz_error *err);

/* Wraps axes given PyTorch-style in place: an entry in [-rank, 0) becomes
 * entry + rank. Returns the index of the first entry outside
 * [-rank, rank) (left as it is), or -1 when every entry is in range. */
int fz_wrap_axes(int count, int *axes, int rank);

/* ---- infer.c: shape and dtype rules, shared by builder and verifier ---- */

/* The result type of op `code` over these operands and attributes (layout
 * undeclared), or FZ_ERR_INVALID with a message starting with the op
 * keyword. attrs may be NULL. Creates nothing. */
fz_status fz_infer_type(const fz_fusion *fusion, fz_opcode code,
                        int num_operands, fz_value *const *operands,
                        const fz_attrs *attrs, fz_type *out, fz_error *err);
/* Extents and axis kinds of a type are valid in this fusion (symbols in
 * range, constants >= 0, broadcast extent 1, no reduction axes). `what`
 * starts the message ("%x", "reshape: target shape"). Layout not checked. */
fz_status fz_check_type(const fz_fusion *fusion, const fz_type *type,
                        const char *what, fz_error *err);
/* When has_layout: alloc_order is a permutation of [0, rank). */
fz_status fz_check_layout(const fz_type *type, const char *what,
                          fz_error *err);
/* Same dtype, rank and axes (kind, extent, expansion); layout ignored. */
bool fz_type_same_shape(const fz_type *a, const fz_type *b);
/* Text for messages: "f32[N, b1->128]", "N", "?". Return buf. */
const char *fz_format_type(const fz_fusion *fusion, const fz_type *type,
                           char *buf, size_t size);
const char *fz_format_extent(const fz_fusion *fusion, fz_extent extent,
                             char *buf, size_t size);

/* ---- resize.c: slice, pad and cat --------------------------------------- */

/* fz_infer_type's rules for the resize ops (docs/format.md). */
fz_status fz_infer_resize(const fz_fusion *fusion, fz_opcode code,
                          int num_operands, fz_value *const *operands,
                          const fz_attrs *attrs, fz_type *out, fz_error *err);
/* Builder calls, with fz_build's contract. fz_slice: per axis of a, start,
 * stop (a constant, or the axis's own symbol extent for the whole axis)
 * and step (NULL: all 1). fz_pad: per axis widths before (low) and after
 * (high), negative to crop, and the fill value (converted as full's fill
 * is). fz_cat: num_operands tensors of one dtype joined along `dim`
 * (negative counts from the end). */
fz_value *fz_slice(fz_fusion *f, fz_value *a, const int64_t *start,
                   const fz_extent *stop, const int64_t *step, fz_error *err);
fz_value *fz_pad(fz_fusion *f, fz_value *a, const int64_t *low,
                 const int64_t *high, double value, fz_error *err);
fz_value *fz_cat(fz_fusion *f, int num_operands, fz_value *const *operands,
                 int dim, fz_error *err);

/* ---- clone.c ------------------------------------------------------------ */

/* An exact, independent copy of f in a new arena: name, symbols (same
 * indices), inputs, ops and outputs in the same order, every value's id,
 * name, type and literal, every op's attributes and location, and
 * next_value_id. fz_print gives the same text for both, and passes on the
 * copy leave f untouched. The caller owns the copy (fz_fusion_destroy).
 * NULL with FZ_ERR_ARGUMENT for a NULL fusion, FZ_ERR_INVALID when an
 * operand or output is not an input, a literal or an earlier op's result
 * (a fusion that does not verify), FZ_ERR_OUT_OF_MEMORY. Only reads f. */
fz_fusion *fz_fusion_clone(const fz_fusion *f, fz_error *err);

/* ---- print.c ------------------------------------------------------------ */
/* fz_print is in fz.h. */

/* Appends a type as the text format writes it ("f32[N, b1->128]"); when
 * `layout` is true and the type has one, also " layout(...)" and
 * " noncontig(...)" as printed on an op result. For messages and dumps. */
void fz_print_type(fz_buf *b, const fz_fusion *fusion, const fz_type *type,
                   bool layout);
/* The numbers fz_print gives unnamed inputs and op results (in program
 * order, skipping numbers that stored names spell), indexed by value id,
 * -1 for every other id; next_value_id entries, malloc'd (caller frees),
 * NULL when out of memory. Other printers (axis map, segments) use it to
 * name values exactly as fz_print does. */
int *fz_print_value_numbers(const fz_fusion *fusion);
/* Appends how the printer refers to v: "%name", else "%N" with N =
 * numbers[v->id] (numbers from fz_print_value_numbers), else (numbers
 * NULL, or an id the printer does not number) "%<id>", v's value id. */
void fz_print_value_label(fz_buf *b, const fz_value *v, const int *numbers);
/* v as messages name it: "%name", or "%<id>" (v's value id) for a value
 * without a name. Writes at most size bytes into buf; returns buf. */
const char *fz_value_label(const fz_value *v, char *buf, size_t size);

/* ---- promote.c: PyTorch type promotion ---------------------------------- */

/* Result dtype of combining operands under PyTorch's rules: dimensioned
 * tensors (rank > 0) outrank zero-dim tensors (rank-0 inputs/results),
 * which outrank literals (weak Python scalars), within a category
 * bool < integer < float. */
fz_dtype fz_promote(int num_operands, fz_value *const *operands);
/* The dtype an op produces, given the promoted operand dtype. */
fz_dtype fz_op_result_dtype(fz_opcode code, fz_dtype promoted);

/* ---- verify.c ----------------------------------------------------------- */
/* fz_verify is in fz.h. */

/* ---- interp.c ----------------------------------------------------------- */
/* fz_interpret, fz_bind_inputs, fz_output_sizes are in fz.h. */

/* Round v to what dtype can hold, as a GPU store would (round to nearest
 * even for f32/f16/bf16; for integers truncation toward zero, saturation
 * to the range and NaN -> 0, as cvt.rzi.sat; nonzero -> 1 for bool). */
double fz_round_to_dtype(double v, fz_dtype dtype);

/* IEEE binary16 and bfloat16 bit patterns (how f16/bf16 host tensors are
 * stored) to and from double: rounded once to nearest even, gradual
 * underflow, overflow to inf, NaN stays NaN. Defined in interp_scalar.c. */
uint16_t fz_f16_from_double(double v);
double fz_f16_to_double(uint16_t bits);
uint16_t fz_bf16_from_double(double v);
double fz_bf16_to_double(uint16_t bits);

/* ---- philox.c: the numbers rand and randn generate ---------------------- */

/* Philox4x32-10 (Salmon et al., SC'11): four 32-bit words from a 128-bit
 * counter and a 64-bit key. */
void fz_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                      uint32_t out[4]);
/* 2 pi as randn's angle uses it: this double, or this double rounded to
 * float for randn of f32, f16 and bf16. */
#define FZ_PHILOX_TWO_PI 6.283185307179586
/* How many elements one Philox call feeds for rand or randn of dtype:
 * element i takes call i / G, words from (i % G) * (4 / G) on. */
int fz_philox_per_call(fz_opcode code, fz_dtype dtype);
/* The bits of a word rand keeps for dtype (24 for f32, 11 for f16, 8 for
 * bf16, 53 for f64 from two words): its values are multiples of 2^-bits
 * in [0, 1), exact in the dtype. */
int fz_philox_uniform_bits(fz_dtype dtype);
/* The value of rand or randn of dtype made from the 4 / G words at w (f16
 * and bf16 randn: the f32 value, before rounding to the dtype). */
double fz_philox_from_words(fz_opcode code, fz_dtype dtype,
                            const uint32_t *w);
/* Element `index` (row-major linear, in the result's logical shape) of
 * rand or randn of dtype under (seed, offset), before rounding to the
 * dtype (rand's values need none). */
double fz_philox_value(fz_opcode code, fz_dtype dtype, int64_t seed,
                       int64_t offset, int64_t index);

#ifdef __cplusplus
}
#endif
#endif
