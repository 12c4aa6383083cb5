/* cli.h - the command-line conventions fuse-opt and fuse-run share.
 *
 * Each tool describes its options once, in a table of cli_option: the same
 * rows drive getopt_long (so `--opt=v`, `--opt v` and short forms all
 * work) and print --help, so an option cannot be accepted yet undocumented.
 * Every usage error is "TOOL: error: ..." on stderr, then a pointer to
 * --help, and the exit code CLI_EXIT_USAGE; numbers go through the strict
 * parsers below, which name the option and the bad value.
 */
#ifndef FZ_TOOLS_CLI_H
#define FZ_TOOLS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { CLI_EXIT_USAGE = 2 };

/* cli_next's answers besides an option's key: the end of the options,
 * and a usage error (already reported). Keys are positive. */
enum { CLI_DONE = -1, CLI_ERROR = -2, CLI_MAX_OPTIONS = 48 };

typedef struct cli_option {
  const char *name;  /* long name, without the "--" */
  char short_name;   /* 0: long form only */
  const char *value; /* the value's name in --help; NULL: a flag */
  const char *help;  /* one line for --help */
  int key; /* what cli_next returns: short_name if it has one, else >= 256 */
} cli_option;

typedef struct cli_parser {
  const char *tool; /* "fuse-opt": the prefix of every message */
  const cli_option *options;
  int num_options;
  struct option longopts[CLI_MAX_OPTIONS + 1];
  char shortopts[3 * CLI_MAX_OPTIONS + 2];
} cli_parser;

/* At most CLI_MAX_OPTIONS options (an internal limit: FZ_CHECK). */
void cli_init(cli_parser *p, const char *tool, const cli_option *options,
              int num_options);

/* The next option's key, with its value (NULL for a flag) in *value;
 * CLI_DONE when the options are over (operands are then argv[optind..],
 * getopt having moved them to the end); CLI_ERROR after reporting an
 * unknown option or a missing value. */
int cli_next(cli_parser *p, int argc, char **argv, const char **value);

/* "  -o, --output=FILE   help" for every option, aligned. */
void cli_print_options(const cli_parser *p, FILE *out);

/* "TOOL (fz) VERSION" and the LLVM version fz was built with. */
void cli_print_version(const char *tool, FILE *out);

/* Reports "TOOL: error: <printf>" and the pointer to --help; returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *tool, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A whole decimal integer in [min, max] (no sign on an unsigned one, no
 * blanks or trailing junk), else a usage error naming the option
 * (e.g. "--iters") and the text. */
bool cli_parse_int(const char *tool, const char *option, const char *text,
                   int64_t min, int64_t max, int64_t *out);
bool cli_parse_uint(const char *tool, const char *option, const char *text,
                    uint64_t max, uint64_t *out);

/* cli_parse_int's grammar and range, without the message: for a number
 * inside a larger value whose error names the whole. */
bool cli_int_in(const char *text, int64_t min, int64_t max, int64_t *out);

/* A whole finite number in [min, max], by strtod. */
bool cli_parse_double(const char *tool, const char *option, const char *text,
                      double min, double max, double *out);

#endif
