/* fuse-opt.c - the pass driver: parse a fusion, verify it, run passes,
 * print the result at the requested stage.
 *
 *   fuse-opt [options] FILE|-
 *
 * It is what lit tests run, so its output is the text format and its
 * failures are the library's diagnostics on stderr, unchanged. Modelled on
 * mlir-opt: --pass lists the pipeline, --print-after-all dumps the IR after
 * every pass under a banner a test can check in order, and
 * --split-input-file runs each `// -----` chunk of a file as its own input
 * (a failing chunk does not stop the others, but makes the exit code 1;
 * a last chunk of only blanks and comments, after a trailing marker, is
 * skipped). A failure after parsing is reported as
 * "FILE:LINE:COL: error: ..." at the op it is about (the verifier's, a
 * pass's, a stage's), or as "FILE:LINE: error: ..." at the fusion's first
 * line when it is about no one op.
 * -o FILE writes the output to FILE (replaced only when every fusion
 * succeeded: output.c). Options follow the tools' shared conventions
 * (tools/common/cli.h): `--opt=v` or `--opt v`, -h/--help lists them all.
 * Exit codes: 0 ok, 1 a fusion failed, 2 bad usage.
 */
#include "fuse-opt.h"

#include "cli.h"
#include "sched/pass.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BANNER_FMT "// -----// IR Dump After %s //----- //\n"
#define SPLIT_MARKER "// -----"

enum {
  OPT_PASS = 256,
  OPT_PRINT_AFTER_ALL,
  OPT_EMIT,
  OPT_SPLIT_INPUT_FILE,
  OPT_RUN_REFERENCE,
  OPT_SEED,
  OPT_PRINT_AXIS_MAP,
  OPT_ARCH,
  OPT_BIND,
  OPT_EXACT_SIZES,
};

static const cli_option options[] = {
    {"pass", 0, "NAME[,NAME...]", "run these passes in order (repeatable)",
     OPT_PASS},
    {"print-after-all", 0, NULL,
     "print the IR after each pass, under a banner",
     OPT_PRINT_AFTER_ALL},
    {"emit", 0, "STAGE", "what to print at the end (default ir; below)",
     OPT_EMIT},
    {"output", 'o', "FILE",
     "write to FILE ('-': stdout), only if all succeed",
     'o'},
    {"split-input-file", 0, NULL,
     "each '// -----' chunk is an input of its own",
     OPT_SPLIT_INPUT_FILE},
    {"run-reference", 0, NULL,
     "print the interpreter's checksums on random inputs",
     OPT_RUN_REFERENCE},
    {"seed", 0, "N", "seed for --run-reference's inputs (default 0)",
     OPT_SEED},
    {"print-axis-map", 0, NULL, "the same as --emit=axis-map",
     OPT_PRINT_AXIS_MAP},
    {"arch", 0, "sm_NN",
     "target of sched, llvm*, ptx (default sm_90)", OPT_ARCH},
    {"bind", 0, "SYM=N[,...]",
     "extent of symbol SYM (default 8)",
     OPT_BIND},
    {"exact-sizes", 0, NULL,
     "plan for exactly the bound sizes, without size classes (as "
     "FZ_PLAN_CLASSES=off at run time)",
     OPT_EXACT_SIZES},
    {"help", 'h', NULL, "print this and exit", 'h'},
    {"version", 'V', NULL, "print the versions of fuse-opt and LLVM",
     'V'},
};

enum { NUM_OPTIONS = sizeof options / sizeof options[0] };

static void usage(const cli_parser *p, FILE *out) {
  fprintf(out, "usage: fuse-opt [options] FILE|-\n"
               "\n"
               "Parses a fusion (.fz), verifies it, runs passes and prints it.\n"
               "\n"
               "options:\n");
  cli_print_options(p, out);
  fprintf(out, "\npasses:\n");
  for (int i = 0; i < fz_pass_count(); i++)
    fprintf(out, "  %-14s %s\n", fz_pass_at(i)->name,
            fz_pass_at(i)->description);
  fprintf(out, "\nstages (--emit):\n");
  for (int i = 0; i < fo_emitter_count(); i++)
    fprintf(out, "  %-14s %s\n", fo_emitter_at(i)->name,
            fo_emitter_at(i)->description);
}

static int add_passes(fo_options *o, char *list) {
  for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
    if (!fz_pass_find(name)) {
      char known[512] = "";
      for (int i = 0; i < fz_pass_count(); i++) {
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                 fz_pass_at(i)->name);
      }
      fprintf(stderr,
              "fuse-opt: error: unknown pass '%s' (known passes: %s)\n", name,
              known);
      return 2;
    }
    if (o->num_passes == FO_MAX_PASSES)
      return cli_usage_error("fuse-opt", "more than %d passes", FO_MAX_PASSES);
    o->passes[o->num_passes++] = name;
  }
  return 0;
}

static int add_binds(fo_options *o, const char *list) {
  for (const char *p = list;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq || eq == p)
      return cli_usage_error("fuse-opt",
                             "--bind wants SYM=N with N a non-negative "
                             "integer, not '%s'",
                             list);
    char option[96], *number = malloc((size_t)(end - eq));
    if (!number)
      return cli_usage_error("fuse-opt", "out of memory");
    memcpy(number, eq + 1, (size_t)(end - eq - 1));
    number[end - eq - 1] = '\0';
    snprintf(option, sizeof option, "--bind %.*s", (int)(eq - p), p);
    int64_t v;
    bool ok = cli_parse_int("fuse-opt", option, number, 0, INT64_MAX, &v);
    free(number);
    if (!ok)
      return CLI_EXIT_USAGE;
    if (o->num_binds == FO_MAX_BINDS)
      return cli_usage_error("fuse-opt", "more than %d --bind entries",
                             FO_MAX_BINDS);
    o->binds[o->num_binds++] = (fo_bind){
        .symbol = p, .symbol_len = (size_t)(eq - p), .value = v};
    if (!comma)
      return 0;
    p = comma + 1;
  }
}

/* Returns -1 to go on, else the exit code. argv strings are modified
 * (strtok on --pass lists) and referenced by the options. */
static int parse_args(int argc, char **argv, fo_options *o) {
  o->emit = fo_emitter_at(0);
  o->sm = 90;
  cli_parser p;
  cli_init(&p, "fuse-opt", options, NUM_OPTIONS);
  const char *v;
  int key;
  while ((key = cli_next(&p, argc, argv, &v)) != CLI_DONE) {
    int rc = 0;
    int64_t n;
    switch (key) {
    case CLI_ERROR:
      return CLI_EXIT_USAGE;
    case 'h':
      usage(&p, stdout);
      return 0;
    case 'V':
      cli_print_version("fuse-opt", stdout);
      return 0;
    case OPT_PASS:
      rc = add_passes(o, (char *)v);
      break;
    case OPT_PRINT_AFTER_ALL:
      o->print_after_all = true;
      break;
    case OPT_EMIT:
      o->emit = fo_emitter_find(v);
      o->emit_given = true;
      if (!o->emit)
        return cli_usage_error("fuse-opt", "unknown stage '%s' for --emit",
                               v);
      break;
    case 'o':
      o->output = v;
      break;
    case OPT_PRINT_AXIS_MAP:
      o->emit = fo_emitter_find("axis-map"); /* same as --emit=axis-map */
      o->emit_given = true;
      break;
    case OPT_SPLIT_INPUT_FILE:
      o->split_input_file = true;
      break;
    case OPT_RUN_REFERENCE:
      o->run_reference = true;
      break;
    case OPT_SEED:
      if (!cli_parse_uint("fuse-opt", "--seed", v, UINT64_MAX, &o->seed))
        return CLI_EXIT_USAGE;
      break;
    case OPT_BIND:
      rc = add_binds(o, v);
      break;
    case OPT_EXACT_SIZES:
      o->exact_sizes = true;
      break;
    case OPT_ARCH:
      if (strncmp(v, "sm_", 3) != 0 || !cli_int_in(v + 3, 70, 200, &n))
        return cli_usage_error("fuse-opt",
                               "--arch wants sm_NN (e.g. sm_90), not '%s'", v);
      o->sm = (int)n;
      break;
    default:
      FZ_DIE("option key %d has no case", key);
    }
    if (rc)
      return rc;
  }
  if (optind == argc)
    return cli_usage_error("fuse-opt", "no input file (use '-' for stdin)");
  if (argc - optind > 1)
    return cli_usage_error("fuse-opt", "more than one input file ('%s')",
                           argv[optind + 1]);
  o->input = argv[optind];
  return -1;
}

/* The whole file (or stdin) in a malloc'd, NUL-terminated buffer. */
static char *read_input(const char *path, size_t *length) {
  FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!in) {
    fprintf(stderr, "fuse-opt: error: cannot open '%s': %s\n", path,
            strerror(errno));
    return NULL;
  }
  size_t len = 0, cap = 1 << 16;
  char *text = malloc(cap);
  while (text) {
    len += fread(text + len, 1, cap - len - 1, in);
    if (len < cap - 1)
      break;
    char *grown = realloc(text, cap *= 2);
    if (!grown)
      free(text);
    text = grown;
  }
  bool failed = ferror(in) || !text;
  if (in != stdin)
    fclose(in);
  if (failed) {
    fprintf(stderr, "fuse-opt: error: cannot read '%s'\n", path);
    free(text);
    return NULL;
  }
  text[len] = '\0';
  *length = len;
  return text;
}

static void print_message(const char *msg) {
  size_t n = strlen(msg);
  fputs(msg, stderr);
  if (n == 0 || msg[n - 1] != '\n')
    fputc('\n', stderr);
}

/* "FILE:LINE:COL: error: " and what failed (printf-style), then the
 * message: at the op err points at, else at the fusion's first line. */
static void report(const char *filename, int first_line, const fz_error *err,
                   const char *what, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void report(const char *filename, int first_line, const fz_error *err,
                   const char *what, ...) {
  if (err->line > 0)
    fprintf(stderr, "%s:%d:%d: error: ", filename, err->line, err->col);
  else
    fprintf(stderr, "%s:%d: error: ", filename, first_line);
  va_list ap;
  va_start(ap, what);
  vfprintf(stderr, what, ap);
  va_end(ap);
  print_message(err->message);
}

/* One fusion from start to end. Returns 0 or 1. */
static int process(const fo_options *o, const char *filename, int first_line,
                   const char *text, size_t length, FILE *out) {
  fz_error err = {0};
  fz_fusion *f = NULL;
  if (fz_parse_at(filename, first_line, text, length, &f, &err) != FZ_OK) {
    print_message(err.message);
    return 1;
  }
  int rc = 0;
  if (fz_verify(f, &err) != FZ_OK) {
    report(filename, first_line, &err, "invalid fusion @%s: ", f->name);
    rc = 1;
    goto done;
  }
  for (int i = 0; i < o->num_passes; i++) {
    if (fz_run_pass(f, o->passes[i], &err) != FZ_OK) {
      report(filename, first_line, &err, "pass '%s' failed on @%s: ",
             o->passes[i], f->name);
      rc = 1;
      goto done;
    }
    if (o->print_after_all) {
      fprintf(out, BANNER_FMT, o->passes[i]);
      if (fo_emitter_find("ir")->emit(f, o, out, &err) != FZ_OK) {
        print_message(err.message);
        rc = 1;
        goto done;
      }
    }
  }
  if (!o->run_reference || o->emit_given) {
    if (o->emit->emit(f, o, out, &err) != FZ_OK) {
      report(filename, first_line, &err, "--emit=%s failed on @%s: ",
             o->emit->name, f->name);
      rc = 1;
      goto done;
    }
  }
  if (o->run_reference && fo_run_reference(f, o, out, &err) != FZ_OK) {
    report(filename, first_line, &err, "--run-reference failed on @%s: ",
           f->name);
    rc = 1;
  }
done:
  fz_fusion_destroy(f);
  return rc;
}

/* A line that is exactly the split marker, up to trailing blanks. */
static bool is_split_line(const char *line, const char *end) {
  size_t n = strlen(SPLIT_MARKER);
  if ((size_t)(end - line) < n || memcmp(line, SPLIT_MARKER, n) != 0)
    return false;
  for (const char *p = line + n; p < end; p++)
    if (*p != ' ' && *p != '\t' && *p != '\r')
      return false;
  return true;
}

/* Only blanks and // comments: the chunk after a trailing marker, which
 * is skipped (as mlir-opt skips it) rather than parsed as an empty
 * fusion. */
static bool is_blank_chunk(const char *p, const char *end) {
  while (p < end) {
    if (*p == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n')
        p++;
    } else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' ||
               *p == '\f' || *p == '\v') {
      p++;
    } else {
      return false;
    }
  }
  return true;
}

static int process_split(const fo_options *o, const char *filename,
                         const char *text, size_t length, FILE *out) {
  int rc = 0, line = 1, chunk_line = 1;
  const char *chunk = text, *p = text, *end = text + length;
  bool first = true;
  while (p <= end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *line_end = eol ? eol : end;
    bool split = is_split_line(p, line_end);
    bool trailing_blank =
        !split && !eol && !first && is_blank_chunk(chunk, end);
    if ((split || !eol) && !trailing_blank) {
      const char *chunk_end = split ? p : end;
      if (!first)
        fputs(SPLIT_MARKER "\n", out);
      first = false;
      fflush(out);
      rc |= process(o, filename, chunk_line, chunk,
                    (size_t)(chunk_end - chunk), out);
      fflush(out);
      if (!eol)
        break;
      chunk = eol + 1;
      chunk_line = line + 1;
    }
    if (!eol)
      break;
    p = eol + 1;
    line++;
  }
  return rc;
}

int main(int argc, char **argv) {
  fo_options o = {0};
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0)
    return rc;
  fo_output output;
  if (!fo_output_open(&output, o.output))
    return 1;
  size_t length = 0;
  char *text = read_input(o.input, &length);
  if (!text) {
    fo_output_close(&output, false);
    return 1;
  }
  const char *filename = strcmp(o.input, "-") == 0 ? "<stdin>" : o.input;
  if (o.split_input_file)
    rc = process_split(&o, filename, text, length, output.file);
  else
    rc = process(&o, filename, 1, text, length, output.file);
  free(text);
  if (!fo_output_close(&output, rc == 0))
    rc = 1;
  return rc;
}
