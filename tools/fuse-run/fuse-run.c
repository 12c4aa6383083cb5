/* fuse-run - run a fusion on the GPU, validate it, time it.
 *
 *   fuse-run FILE [--size SYM=N,...] [--iters K] [--warmup W] [--seed S]
 *            [--offset E] [--pad P] [--no-canonicalize] [--print-plan]
 *            [--print-ptx] [--rtol R] [--atol A] [--no-validate]
 *            [--expect-layout K=P0,P1,...]
 *   fuse-run --split-input-file FILE [the options of a file]
 *   fuse-run --random=COUNT [--seed S] [--reductions] [--max-extent E]
 *            [--max-elements N] [--offset E] [--pad P] [--no-canonicalize]
 *
 * A file: inputs are fresh random numbers (never zeros) from a seed that
 * is printed (pass --seed to repeat a run), laid out as the fusion declares
 * them; outputs are poisoned, then compared with the reference
 * interpreter; the median kernel time is reported with GB/s and the
 * fraction of a device copy (run.c does all of it). A fusion no single
 * scheduler takes runs in segments, as the executor splits it.
 * Kernels planned with FZ_TRACE=phases record when each block reached
 * each phase; the report of the last run (fz_executor_last_trace)
 * follows the time, and a trace that cannot be read fails the run.
 * --expect-layout K=P0,P1,... (repeatable) also fails the run unless
 * output K is allocated densely in allocation order (P0, P1, ...), as
 * fz_executor_output_layout gives it: how GPU tests check that layouts
 * propagate from the inputs.
 *
 * --random=COUNT: COUNT fusions from fz_random_fusion, from consecutive
 * seeds starting at S (printed; from the clock unless given), each with
 * its own sizes (fz_random_bindings) and inputs from its seed. Each runs
 * as a file would (canonicalized, segmented when it must be, validated,
 * not timed); only one the executor reports unsupported is declined. Each
 * failure is printed with its seed, the fusion's text and the command
 * that repeats it. One line per fusion, then the counts.
 *
 * An error about one op of the file (the verifier's, the executor's, the
 * interpreter's) is printed as "FILE:LINE:COL: error: ..." at the op.
 *
 * Options follow the tools' shared conventions (tools/common/cli.h):
 * `--opt v` or `--opt=v`, numbers checked whole and in range, -h/--help
 * lists every option.
 *
 * Exit status: 0 all outputs match; 1 a mismatch or an error; 2 bad usage;
 * 77 no GPU (the run is skipped, not passed).
 */
#include "run.h"
#include "testing/random.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

enum { EXIT_MISMATCH = 1, EXIT_USAGE = 2, EXIT_SKIP = 77 };

typedef struct options {
  const char *file;
  char *sizes[32];
  int num_sizes;
  int iters, warmup;
  uint64_t seed;
  bool seed_given;
  int64_t offset, pad;
  bool canonicalize, print_plan, print_ptx, validate;
  double rtol, atol;
  /* --split-input-file: many fusions separated by `// -----` lines */
  bool split;
  bool iters_given;
  /* --random */
  int random;
  bool reductions;
  int max_extent;
  int64_t max_elements;
  /* --expect-layout */
  int num_expect;
  int expect_output[8], expect_rank[8], expect_order[8][FZ_MAX_RANK];
} options;

enum {
  OPT_SIZE = 256,
  OPT_ITERS,
  OPT_WARMUP,
  OPT_SEED,
  OPT_OFFSET,
  OPT_PAD,
  OPT_NO_CANONICALIZE,
  OPT_PRINT_PLAN,
  OPT_PRINT_PTX,
  OPT_RTOL,
  OPT_ATOL,
  OPT_NO_VALIDATE,
  OPT_EXPECT_LAYOUT,
  OPT_SPLIT_INPUT_FILE,
  OPT_RANDOM,
  OPT_REDUCTIONS,
  OPT_MAX_EXTENT,
  OPT_MAX_ELEMENTS,
};

static const cli_option cli_options[] = {
    {"size", 0, "SYM=N,...", "bind symbol SYM to N (repeatable)", OPT_SIZE},
    {"iters", 0, "K", "timed runs, 1 to 100000 (default 50)", OPT_ITERS},
    {"warmup", 0, "W", "untimed runs before them, 0 to 100000 (default 5)",
     OPT_WARMUP},
    {"seed", 0, "S",
     "seed of the inputs (default: from the clock; printed)",
     OPT_SEED},
    {"offset", 0, "E",
     "shift inputs by E elements (misaligned), 0 to 1024",
     OPT_OFFSET},
    {"pad", 0, "P",
     "gap on non-contiguous axes, 0 to 1024 (default 3)", OPT_PAD},
    {"no-canonicalize", 0, NULL, "run the fusion as written (no canonicalize)",
     OPT_NO_CANONICALIZE},
    {"print-plan", 0, NULL, "print the kernel plan of every segment",
     OPT_PRINT_PLAN},
    {"print-ptx", 0, NULL, "print the PTX of every kernel", OPT_PRINT_PTX},
    {"rtol", 0, "R", "relative tolerance, >= 0 (default: by dtype)",
     OPT_RTOL},
    {"atol", 0, "A", "absolute tolerance, >= 0 (default: by dtype)",
     OPT_ATOL},
    {"no-validate", 0, NULL,
     "time only (sizes too big for the interpreter)",
     OPT_NO_VALIDATE},
    {"expect-layout", 0, "K=P0,P1,...",
     "fail unless output K is dense in that order (<= 8)",
     OPT_EXPECT_LAYOUT},
    {"split-input-file", 0, NULL,
     "run each '// -----' chunk of FILE; untimed",
     OPT_SPLIT_INPUT_FILE},
    {"random", 0, "COUNT",
     "COUNT random fusions (1 to 1000000), not a FILE",
     OPT_RANDOM},
    {"reductions", 0, NULL, "--random: fusions with reductions too",
     OPT_REDUCTIONS},
    {"max-extent", 0, "E", "--random: largest extent, 1 to 16777216",
     OPT_MAX_EXTENT},
    {"max-elements", 0, "N", "--random: most elements of a tensor, >= 1",
     OPT_MAX_ELEMENTS},
    {"help", 'h', NULL, "print this and exit", 'h'},
    {"version", 'V', NULL, "print the versions of fuse-run and LLVM",
     'V'},
};

enum { NUM_CLI_OPTIONS = sizeof cli_options / sizeof cli_options[0] };

static void usage(const cli_parser *p, FILE *f) {
  fprintf(f,
          "usage: fuse-run [options] FILE|-\n"
          "       fuse-run --random=COUNT [options]\n"
          "\n"
          "Runs a fusion on the GPU, validates it against the reference "
          "interpreter\nand times it.\n"
          "\n"
          "options:\n");
  cli_print_options(p, f);
  fprintf(f, "\nexit status: 0 all outputs match, 1 a mismatch or an error, "
             "2 bad usage,\n77 no GPU (skipped)\n");
}

/* "K=P0,P1,...": output K, allocation order P (a permutation). */
static bool parse_expect(const char *s, options *o) {
  int k = o->num_expect, rank = 0, n = 0;
  if (sscanf(s, "%d=%n", &o->expect_output[k], &n) != 1 || n == 0 ||
      o->expect_output[k] < 0)
    return false;
  bool seen[FZ_MAX_RANK] = {0};
  for (const char *p = s + n; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v >= FZ_MAX_RANK || seen[v] ||
        rank == FZ_MAX_RANK || (*end && *end != ','))
      return false;
    seen[v] = true;
    o->expect_order[k][rank++] = (int)v;
    p = *end ? end + 1 : end;
  }
  for (int i = 0; i < rank; i++)
    if (!seen[i])
      return false;
  o->expect_rank[k] = rank;
  o->num_expect++;
  return true;
}

/* An integer option in [min, max], or the usage exit code from `rc`. */
#define INT_OPTION(name, min, max, dest)                                       \
  do {                                                                         \
    int64_t n_;                                                                \
    if (!cli_parse_int("fuse-run", name, v, min, max, &n_))                    \
      return EXIT_USAGE;                                                       \
    dest = n_;                                                                 \
  } while (0)

/* Returns -1 to go on, else the exit code. Nothing here touches the GPU:
 * a usage error is reported on any machine. */
static int parse_options(int argc, char **argv, options *o) {
  *o = (options){.iters = 50, .warmup = 5, .pad = 3, .canonicalize = true,
                 .validate = true,
                 .rtol = -1, .atol = -1};
  cli_parser p;
  cli_init(&p, "fuse-run", cli_options, NUM_CLI_OPTIONS);
  const char *v;
  int key;
  while ((key = cli_next(&p, argc, argv, &v)) != CLI_DONE) {
    switch (key) {
    case CLI_ERROR:
      return EXIT_USAGE;
    case 'h':
      usage(&p, stdout);
      return 0;
    case 'V':
      cli_print_version("fuse-run", stdout);
      return 0;
    case OPT_SIZE:
      if (o->num_sizes == 32)
        return cli_usage_error("fuse-run", "more than 32 --size options");
      o->sizes[o->num_sizes++] = (char *)v;
      break;
    case OPT_ITERS:
      INT_OPTION("--iters", 1, 100000, o->iters);
      o->iters_given = true;
      break;
    case OPT_WARMUP:
      INT_OPTION("--warmup", 0, 100000, o->warmup);
      break;
    case OPT_SEED:
      if (!cli_parse_uint("fuse-run", "--seed", v, UINT64_MAX, &o->seed))
        return EXIT_USAGE;
      o->seed_given = true;
      break;
    case OPT_OFFSET:
      INT_OPTION("--offset", 0, 1024, o->offset);
      break;
    case OPT_PAD:
      INT_OPTION("--pad", 0, 1024, o->pad);
      break;
    case OPT_SPLIT_INPUT_FILE:
      o->split = true;
      break;
    case OPT_RANDOM:
      INT_OPTION("--random", 1, 1000000, o->random);
      break;
    case OPT_MAX_EXTENT:
      INT_OPTION("--max-extent", 1, 1 << 24, o->max_extent);
      break;
    case OPT_MAX_ELEMENTS:
      INT_OPTION("--max-elements", 1, INT64_MAX, o->max_elements);
      break;
    case OPT_EXPECT_LAYOUT:
      if (o->num_expect == 8 || !parse_expect(v, o))
        return cli_usage_error("fuse-run",
                               "bad --expect-layout '%s' (want K=P0,P1,...; "
                               "at most 8)",
                               v);
      break;
    case OPT_REDUCTIONS:
      o->reductions = true;
      break;
    case OPT_RTOL:
      if (!cli_parse_double("fuse-run", "--rtol", v, 0, DBL_MAX, &o->rtol))
        return EXIT_USAGE;
      break;
    case OPT_ATOL:
      if (!cli_parse_double("fuse-run", "--atol", v, 0, DBL_MAX, &o->atol))
        return EXIT_USAGE;
      break;
    case OPT_NO_VALIDATE:
      o->validate = false;
      break;
    case OPT_NO_CANONICALIZE:
      o->canonicalize = false;
      break;
    case OPT_PRINT_PLAN:
      o->print_plan = true;
      break;
    case OPT_PRINT_PTX:
      o->print_ptx = true;
      break;
    default:
      FZ_DIE("option key %d has no case", key);
    }
  }
  if (argc - optind > 1)
    return cli_usage_error("fuse-run", "more than one input file ('%s')",
                           argv[optind + 1]);
  o->file = optind < argc ? argv[optind] : NULL;
  if (o->random && o->file)
    return cli_usage_error("fuse-run", "--random takes no input file");
  if (!o->file && !o->random)
    return cli_usage_error("fuse-run", "no input file (or --random=COUNT)");
  return -1;
}

#undef INT_OPTION

static char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap)
      break;
    char *grown = realloc(buf, cap * 2);
    if (!grown) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = grown;
    cap *= 2;
  }
  if (f != stdin)
    fclose(f);
  if (buf) {
    char *t = realloc(buf, n + 1);
    if (t)
      buf = t;
    buf[n] = 0;
    *len = n;
  }
  return buf;
}

/* Bind symbols from --size SYM=N,... */
static int bind_sizes(const options *o, const fz_fusion *f, int64_t *values) {
  for (int i = 0; i < f->num_symbols; i++)
    values[i] = -1;
  for (int s = 0; s < o->num_sizes; s++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->sizes[s]);
    for (char *item = strtok(buf, ","); item; item = strtok(NULL, ",")) {
      char *eq = strchr(item, '=');
      int64_t n;
      if (!eq || !cli_int_in(eq + 1, 0, INT64_MAX, &n)) {
        fprintf(stderr, "fuse-run: bad --size item '%s' (want SYM=N)\n", item);
        return EXIT_USAGE;
      }
      *eq = 0;
      int sym = fz_fusion_find_symbol(f, item);
      if (sym >= 0 && f->symbols[sym].num_terms) {
        fprintf(stderr, "fuse-run: %s is computed from other symbols; bind "
                        "those\n", item);
        return EXIT_USAGE;
      }
      if (sym < 0) {
        fprintf(stderr, "fuse-run: fusion @%s has no symbol '%s'\n", f->name,
                item);
        return EXIT_USAGE;
      }
      values[sym] = n;
    }
  }
  for (int i = 0; i < f->num_symbols; i++)
    if (values[i] < 0 && !f->symbols[i].num_terms) {
      fprintf(stderr, "fuse-run: symbol %s is not bound: pass --size %s=N\n",
              f->symbols[i].name ? f->symbols[i].name : "?",
              f->symbols[i].name ? f->symbols[i].name : "?");
      return EXIT_USAGE;
    }
  fz_error err;
  if (fz_symbols_derive(f, values, &err) != FZ_OK ||
      fz_check_sizes(f, values, FZ_ERR_ARGUMENT, &err) != FZ_OK) {
    fprintf(stderr, "fuse-run: --size: %s\n", err.message);
    return EXIT_USAGE;
  }
  return 0;
}

static uint64_t clock_seed(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
}

static run_config config_of(const options *o) {
  run_config c = {.file = o->file, .iters = o->iters, .warmup = o->warmup,
                  .offset = o->offset, .pad = o->pad,
                  .print_plan = o->print_plan, .print_ptx = o->print_ptx,
                  .validate = o->validate, .rtol = o->rtol,
                  .atol = o->atol, .num_expect = o->num_expect};
  memcpy(c.expect_output, o->expect_output, sizeof c.expect_output);
  memcpy(c.expect_rank, o->expect_rank, sizeof c.expect_rank);
  memcpy(c.expect_order, o->expect_order, sizeof c.expect_order);
  return c;
}

static int run_file(options *o) {
  size_t len = 0;
  char *text = read_file(o->file, &len);
  if (!text) {
    fprintf(stderr, "fuse-run: cannot read %s: %s\n", o->file,
            strerror(errno));
    return EXIT_MISMATCH;
  }
  fz_error err = {0};
  fz_fusion *f = NULL;
  fz_device *dev = NULL;
  int64_t symbols[64];
  int rc = 0;
  if (fz_parse(o->file, text, len, &f, &err) != FZ_OK) {
    fprintf(stderr, "%s\n", err.message);
    free(text);
    return EXIT_MISMATCH;
  }
  free(text);
  if (fz_verify(f, &err) != FZ_OK ||
      (o->canonicalize && fz_run_pass(f, "canonicalize", &err) != FZ_OK)) {
    char msg[sizeof err.message + 256];
    run_error_text(o->file, &err, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
    rc = EXIT_MISMATCH;
    goto done;
  }
  if (f->num_inputs > 64 || f->num_outputs > 64 || f->num_symbols > 64) {
    fprintf(stderr, "fuse-run: fusion too large for fuse-run\n");
    rc = EXIT_MISMATCH;
    goto done;
  }
  if ((rc = bind_sizes(o, f, symbols)))
    goto done;

  fz_status st = fz_device_open(0, &dev, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("fuse-run: %s: SKIPPED, no GPU (%s)\n", o->file, err.message);
    rc = EXIT_SKIP;
    goto done;
  }
  if (st != FZ_OK) {
    fprintf(stderr, "fuse-run: %s\n", err.message);
    rc = EXIT_MISMATCH;
    goto done;
  }
  if (!o->seed_given)
    o->seed = clock_seed();
  printf("fuse-run: %s on %s, seed %" PRIu64 "\n", o->file,
         fz_device_get_props(dev)->name, o->seed);
  run_config c = config_of(o);
  rc = run_fusion(dev, f, symbols, o->seed, &c) == RUN_PASSED ? 0
                                                              : EXIT_MISMATCH;
done:
  fz_device_close(dev);
  fz_fusion_destroy(f);
  return rc;
}

/* "N=3,M=17": the sizes as --size takes them. */
static void format_sizes(const fz_fusion *f, const int64_t *symbols,
                         char *out, size_t size) {
  size_t used = 0;
  out[0] = 0;
  for (int s = 0; s < f->num_symbols && used < size; s++)
    used += (size_t)snprintf(out + used, size - used, "%s%s=%" PRId64,
                             s ? "," : "",
                             f->symbols[s].name ? f->symbols[s].name : "?",
                             symbols[s]);
}

/* One random fusion: RUN_PASSED, RUN_FAILED or RUN_DECLINED, with what
 * there is to say about it in `log`. */
static int run_random_one(fz_device *dev, const options *o,
                          const fz_random_options *ro, uint64_t seed,
                          fz_buf *log, char **text, char *sizes,
                          size_t sizes_size) {
  fz_error err = {0};
  fz_fusion *f = fz_random_fusion(seed, ro);
  if (!f) {
    fz_buf_puts(log, "fuse-run: out of memory\n");
    return RUN_FAILED;
  }
  *text = fz_print(f);
  int64_t symbols[64];
  int rc = RUN_FAILED;
  if (f->num_symbols > 64) {
    fz_buf_puts(log, "fuse-run: fusion too large for fuse-run\n");
    goto done;
  }
  if (fz_verify(f, &err) != FZ_OK) {
    fz_buf_printf(log, "fuse-run: the generated fusion does not verify: %s\n",
                  err.message);
    goto done;
  }
  /* sizes for the fusion as generated (and as printed) */
  fz_random_bindings(f, seed, ro, symbols);
  format_sizes(f, symbols, sizes, sizes_size);
  if (o->canonicalize && fz_run_pass(f, "canonicalize", &err) != FZ_OK) {
    fz_buf_printf(log, "fuse-run: canonicalize: %s\n", err.message);
    goto done;
  }
  run_config c = config_of(o);
  c.iters = 0;
  c.scale_tolerance = c.check_schedule = true;
  c.log = log;
  rc = run_fusion(dev, f, symbols, seed, &c);
done:
  fz_fusion_destroy(f);
  return rc;
}

static int run_random(options *o) {
  fz_error err = {0};
  fz_device *dev = NULL;
  fz_status st = fz_device_open(0, &dev, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("fuse-run: --random: SKIPPED, no GPU (%s)\n", err.message);
    return EXIT_SKIP;
  }
  if (st != FZ_OK) {
    fprintf(stderr, "fuse-run: %s\n", err.message);
    return EXIT_MISMATCH;
  }
  if (!o->seed_given)
    o->seed = clock_seed();
  fz_random_options ro = {.allow_reductions = o->reductions,
                          .max_extent = o->max_extent,
                          .max_elements = o->max_elements};
  /* what repeats one fusion: the options that shape it, and those of
   * the run (for --random=1 and for a file alike) */
  char shape[128] = "", run[128] = "";
  if (o->reductions)
    strcat(shape, " --reductions");
  if (o->max_extent)
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape),
             " --max-extent %d", o->max_extent);
  if (o->max_elements)
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape),
             " --max-elements %" PRId64, o->max_elements);
  snprintf(run, sizeof run, "%s", o->canonicalize ? "" : " --no-canonicalize");
  if (o->offset || o->pad != 3)
    snprintf(run + strlen(run), sizeof run - strlen(run),
             " --offset %" PRId64 " --pad %" PRId64, o->offset, o->pad);
  printf("fuse-run: %d random fusions%s from seed %" PRIu64 " on %s\n",
         o->random, o->reductions ? " with reductions" : "", o->seed,
         fz_device_get_props(dev)->name);
  int passed = 0, failed = 0, declined = 0;
  char failures[512] = "";
  for (int i = 0; i < o->random; i++) {
    uint64_t seed = o->seed + (uint64_t)i;
    printf("seed %" PRIu64 ": ", seed);
    fflush(stdout);
    fz_buf log = {0};
    char *text = NULL, sizes[256] = "";
    int rc = run_random_one(dev, o, &ro, seed, &log, &text, sizes,
                            sizeof sizes);
    char *said = fz_buf_take(&log);
    if (rc == RUN_PASSED) {
      printf("passed\n");
      passed++;
    } else if (rc == RUN_DECLINED) {
      printf("declined: %s", said ? said : "\n");
      declined++;
    } else {
      failed++;
      size_t used = strlen(failures);
      if (used < sizeof failures - 32)
        snprintf(failures + used, sizeof failures - used, " %" PRIu64, seed);
      printf("FAILED\n%s", said ? said : "");
      printf("  repeat: fuse-run --random=1 --seed %" PRIu64 "%s%s\n", seed,
             shape, run);
      printf("  or save the fusion below as F.fz: fuse-run F.fz --seed "
             "%" PRIu64 "%s%s%s\n%s\n",
             seed, sizes[0] ? " --size " : "", sizes, run, text ? text : "");
    }
    fflush(stdout);
    free(said);
    free(text);
    /* A fault in a kernel (a misaligned or illegal address) leaves the
     * CUDA context unusable; without a fresh one every later seed would
     * fail for it too. */
    if (rc == RUN_FAILED) {
      fz_device_close(dev);
      dev = NULL;
      if (fz_device_open(0, &dev, &err) != FZ_OK) {
        printf("fuse-run: reopening the device after seed %" PRIu64
               " failed (%s); the %d seeds after it did not run\n",
               seed, err.message, o->random - i - 1);
        failed += o->random - i - 1;
        break;
      }
    }
  }
  printf("fuse-run: %d random fusions from seed %" PRIu64 ": %d passed, %d "
         "failed, %d declined as unsupported\n",
         o->random, o->seed, passed, failed, declined);
  if (failed)
    printf("fuse-run: FAILED (seeds%s)\n", failures);
  if (dev)
    fz_device_close(dev);
  return failed ? EXIT_MISMATCH : 0;
}

/* --split-input-file: every fusion of the file in one process (one CUDA
 * context, one kernel cache), validated, not timed: the sweeps of
 * test/gpu/sweep run hundreds of small fusions this way. */
static int run_split(options *o) {
  size_t len = 0;
  char *text = read_file(o->file, &len);
  if (!text) {
    fprintf(stderr, "fuse-run: cannot read %s: %s\n", o->file,
            strerror(errno));
    return EXIT_MISMATCH;
  }
  fz_error err = {0};
  fz_device *dev = NULL;
  fz_status st = fz_device_open(0, &dev, &err);
  if (st == FZ_ERR_NO_DEVICE) {
    printf("fuse-run: %s: SKIPPED, no GPU (%s)\n", o->file, err.message);
    free(text);
    return EXIT_SKIP;
  }
  if (st != FZ_OK) {
    fprintf(stderr, "fuse-run: %s\n", err.message);
    free(text);
    return EXIT_MISMATCH;
  }
  if (!o->seed_given)
    o->seed = clock_seed();
  printf("fuse-run: %s on %s, seed %" PRIu64 "\n", o->file,
         fz_device_get_props(dev)->name, o->seed);
  run_config c = config_of(o);
  if (!o->iters_given)
    c.iters = 0;
  int passed = 0, failed = 0, line = 1;
  char *chunk = text;
  for (int index = 0; chunk; index++) {
    /* find the next separator line */
    char *sep = NULL, *p = chunk;
    int lines = 0;
    while (*p) {
      if (strncmp(p, "// -----", 8) == 0 && (p == text || p[-1] == '\n')) {
        sep = p;
        break;
      }
      char *nl = strchr(p, '\n');
      if (!nl)
        break;
      lines++;
      p = nl + 1;
    }
    size_t n = sep ? (size_t)(sep - chunk) : strlen(chunk);
    fz_fusion *f = NULL;
    int64_t symbols[64];
    bool parsed = fz_parse_at(o->file, line, chunk, n, &f, &err) == FZ_OK;
    bool ok =
        parsed && fz_verify(f, &err) == FZ_OK &&
        (!o->canonicalize || fz_run_pass(f, "canonicalize", &err) == FZ_OK);
    if (!ok) {
      char msg[sizeof err.message + 256];
      run_error_text(o->file, &err, msg, sizeof msg);
      printf("case %d: FAILED: %s\n", index, parsed ? msg : err.message);
      failed++;
    } else if (f->num_symbols > 64 || bind_sizes(o, f, symbols) != 0) {
      printf("case %d: FAILED: cannot bind sizes\n", index);
      failed++;
    } else {
      printf("case %d @%s:\n", index, f->name);
      int rc = run_fusion(dev, f, symbols, o->seed + (uint64_t)index, &c);
      if (rc == RUN_PASSED)
        passed++;
      else
        failed++;
    }
    fz_fusion_destroy(f);
    line += lines + 1;
    if (!sep)
      break;
    char *nl = strchr(sep, '\n');
    chunk = nl ? nl + 1 : NULL;
  }
  printf("fuse-run: %s: %d passed, %d failed\n", o->file, passed, failed);
  fz_device_close(dev);
  free(text);
  return failed ? EXIT_MISMATCH : 0;
}

int main(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc >= 0)
    return rc;
  if (o.random)
    return run_random(&o);
  return o.split ? run_split(&o) : run_file(&o);
}
