/* cli.c - option parsing, --help, --version and strict numbers for the
 * tools (cli.h). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>

#include "fz/fz.h"
#include "fz/ir.h"

void cli_init(cli_parser *p, const char *tool, const cli_option *options,
              int num_options) {
  FZ_CHECK(num_options <= CLI_MAX_OPTIONS);
  *p = (cli_parser){
      .tool = tool, .options = options, .num_options = num_options};
  /* ':' first: a missing value is told apart from an unknown option */
  char *s = p->shortopts;
  *s++ = ':';
  for (int i = 0; i < num_options; i++) {
    const cli_option *o = &options[i];
    FZ_CHECK(o->short_name ? o->key == o->short_name : o->key >= 256);
    p->longopts[i] =
        (struct option){.name = o->name,
                        .has_arg = o->value ? required_argument : no_argument,
                        .val = o->key};
    if (o->short_name) {
      *s++ = o->short_name;
      if (o->value)
        *s++ = ':';
    }
  }
  *s = '\0';
  opterr = 0; /* the messages are ours */
}

/* The option as the user wrote it, for a message: "-x" or "--name". */
static void option_text(const cli_parser *p, int key, bool long_form, char *buf,
                        size_t size) {
  for (int i = 0; long_form && i < p->num_options; i++)
    if (p->options[i].key == key) {
      snprintf(buf, size, "--%s", p->options[i].name);
      return;
    }
  snprintf(buf, size, "-%c", key);
}

int cli_next(cli_parser *p, int argc, char **argv, const char **value) {
  *value = NULL;
  int c = getopt_long(argc, argv, p->shortopts, p->longopts, NULL);
  if (c == -1)
    return CLI_DONE;
  if (c == ':') {
    char name[64];
    option_text(p, optopt, strncmp(argv[optind - 1], "--", 2) == 0, name,
                sizeof name);
    cli_usage_error(p->tool, "option '%s' needs a value", name);
    return CLI_ERROR;
  }
  if (c == '?') {
    /* getopt's optopt: 0 for an unknown long option (or an ambiguous
     * abbreviation), the key of a long option given a value it does not
     * take, else the unknown short option's letter */
    const char *word = argv[optind - 1]; /* a long option's own word */
    bool is_key = false;
    for (int i = 0; i < p->num_options; i++)
      is_key |= p->options[i].key == optopt;
    if (optopt == 0) {
      cli_usage_error(p->tool, "unknown option '%.*s'", (int)strcspn(word, "="),
                      word);
    } else if (is_key) {
      char name[64];
      option_text(p, optopt, true, name, sizeof name);
      cli_usage_error(p->tool, "option '%s' takes no value", name);
    } else {
      cli_usage_error(p->tool, "unknown option '-%c'", optopt);
    }
    return CLI_ERROR;
  }
  *value = optarg;
  return c;
}

void cli_print_options(const cli_parser *p, FILE *out) {
  enum { COLUMN = 26 };
  for (int i = 0; i < p->num_options; i++) {
    const cli_option *o = &p->options[i];
    char lhs[96];
    int n = snprintf(
        lhs, sizeof lhs, "  %c%c%s--%s%s%s", o->short_name ? '-' : ' ',
        o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ",
        o->name, o->value ? "=" : "", o->value ? o->value : "");
    if (n >= COLUMN - 1)
      fprintf(out, "%s\n%*s%s\n", lhs, COLUMN, "", o->help);
    else
      fprintf(out, "%-*s%s\n", COLUMN, lhs, o->help);
  }
}

void cli_print_version(const char *tool, FILE *out) {
  /* the headers of the LLVM that libfz is built and linked with */
  fprintf(out, "%s (fz) %s, commit %s\nLLVM version %s\n", tool, fz_version(),
          fz_build_commit(), LLVM_VERSION_STRING);
}

int cli_usage_error(const char *tool, const char *fmt, ...) {
  fprintf(stderr, "%s: error: ", tool);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(run '%s --help' for usage)\n", tool);
  return CLI_EXIT_USAGE;
}

/* The one integer grammar: an optional '-', then decimal digits only.
 * False on anything else or a magnitude beyond uint64. */
static bool parse_digits(const char *text, bool *negative,
                         uint64_t *magnitude) {
  const char *s = text;
  *negative = *s == '-';
  if (*negative)
    s++;
  if (*s < '0' || *s > '9')
    return false; /* also refuses "", "+1", " 1" */
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return false;
  *magnitude = v;
  return true;
}

bool cli_int_in(const char *text, int64_t min, int64_t max, int64_t *out) {
  bool negative;
  uint64_t m;
  if (!parse_digits(text, &negative, &m) ||
      m > (negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
    return false;
  int64_t v = negative
                  ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m)
                  : (int64_t)m;
  if (v < min || v > max)
    return false;
  *out = v;
  return true;
}

bool cli_parse_int(const char *tool, const char *option, const char *text,
                   int64_t min, int64_t max, int64_t *out) {
  if (cli_int_in(text, min, max, out))
    return true;
  cli_usage_error(
      tool, "%s wants an integer from %" PRId64 " to %" PRId64 ", not '%s'",
      option, min, max, text);
  return false;
}

bool cli_parse_uint(const char *tool, const char *option, const char *text,
                    uint64_t max, uint64_t *out) {
  bool negative;
  uint64_t m;
  if (!parse_digits(text, &negative, &m) || negative || m > max) {
    cli_usage_error(tool, "%s wants an integer from 0 to %" PRIu64 ", not '%s'",
                    option, max, text);
    return false;
  }
  *out = m;
  return true;
}

bool cli_parse_double(const char *tool, const char *option, const char *text,
                      double min, double max, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  bool ok = end != text && !isspace((unsigned char)text[0]) && !*end &&
            errno != ERANGE && isfinite(v) && v >= min && v <= max;
  if (!ok) {
    cli_usage_error(tool, "%s wants a finite number from %g to %g, not '%s'",
                    option, min, max, text);
    return false;
  }
  *out = v;
  return true;
}
