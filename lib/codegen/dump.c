/* dump.c - FZ_DUMP (dump.h): parsing it, naming units, writing dumps.
 *
 * Dumps to stderr are written under the stream's lock, so that executors
 * compiling in parallel threads do not interleave their lines. Unit
 * names are counted per fusion name in a small process-wide table.
 */
#include "codegen/dump.h"

#include "codegen/files.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kind_info {
  fz_dump_stage stage;
  const char *file; /* after "<unit>." or "<unit>.k<K>." */
  const char *comment;
  const char *title;
} kind_info;

static const kind_info KINDS[] = {
    [FZ_DUMP_KIND_FUSION] = {FZ_DUMP_FUSION, "fusion.fz", "//", "fusion"},
    [FZ_DUMP_KIND_SEGMENTS] = {FZ_DUMP_SEGMENTS, "segments.txt", "//",
                               "segments"},
    [FZ_DUMP_KIND_PLAN] = {FZ_DUMP_PLAN, "plan.txt", "//", "plan"},
    [FZ_DUMP_KIND_LLVM_LOWERED] = {FZ_DUMP_LLVM, "llvm-lowered.ll", ";",
                                   "LLVM IR as lowered"},
    [FZ_DUMP_KIND_LLVM_OPTIMIZED] = {FZ_DUMP_LLVM, "llvm-optimized.ll", ";",
                                     "LLVM IR after optimisation"},
    [FZ_DUMP_KIND_PTX] = {FZ_DUMP_PTX, "ptx", "//", "PTX"},
};

static const struct {
  const char *name;
  unsigned stages;
} NAMES[] = {
    {"fusion", FZ_DUMP_FUSION}, {"segments", FZ_DUMP_SEGMENTS},
    {"plan", FZ_DUMP_PLAN},     {"llvm", FZ_DUMP_LLVM},
    {"ptx", FZ_DUMP_PTX},
    {"all", FZ_DUMP_FUSION | FZ_DUMP_SEGMENTS | FZ_DUMP_PLAN | FZ_DUMP_LLVM |
                FZ_DUMP_PTX},
};
enum { NUM_NAMES = sizeof NAMES / sizeof NAMES[0] };

unsigned fz_dump_parse(const char *spec, fz_buf *warning) {
  unsigned stages = 0;
  int unknown = 0;
  fz_buf names = {0};
  for (const char *p = spec ? spec : ""; *p;) {
    size_t n = strcspn(p, ",");
    const char *word = p;
    p += n + (p[n] == ',');
    while (n > 0 && (*word == ' ' || *word == '\t'))
      word++, n--;
    while (n > 0 && (word[n - 1] == ' ' || word[n - 1] == '\t'))
      n--;
    if (n == 0)
      continue;
    int found = -1;
    for (int i = 0; i < NUM_NAMES && found < 0; i++)
      if (strlen(NAMES[i].name) == n && strncmp(NAMES[i].name, word, n) == 0)
        found = i;
    if (found >= 0) {
      stages |= NAMES[found].stages;
      continue;
    }
    fz_buf_printf(&names, "%s'%.*s'", unknown++ ? ", " : "", (int)n, word);
  }
  char *list = fz_buf_take(&names);
  if (unknown && warning) {
    fz_buf_printf(warning, "fz: FZ_DUMP: ignoring unknown stage%s %s; valid: ",
                  unknown > 1 ? "s" : "", list ? list : "");
    for (int i = 0; i < NUM_NAMES; i++)
      fz_buf_printf(warning, "%s%s", i ? ", " : "", NAMES[i].name);
  }
  free(list);
  return stages;
}

/* ---- configuration, read once ------------------------------------------- */

static struct {
  unsigned stages;
  char dir[4096]; /* "": stderr */
} config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void read_environment(void) {
  fz_buf warning = {0};
  config.stages = fz_dump_parse(getenv("FZ_DUMP"), &warning);
  char *text = fz_buf_take(&warning);
  if (text && *text)
    fprintf(stderr, "%s\n", text);
  free(text);
  const char *dir = getenv("FZ_DUMP_DIR");
  snprintf(config.dir, sizeof config.dir, "%s", dir ? dir : "");
}

bool fz_dump_wants(fz_dump_stage stage) {
  pthread_once(&config_once, read_environment);
  return (config.stages & stage) != 0;
}

void fz_dump_configure(unsigned stages, const char *dir) {
  pthread_once(&config_once, read_environment);
  config.stages = stages;
  snprintf(config.dir, sizeof config.dir, "%s", dir ? dir : "");
}

/* ---- units -------------------------------------------------------------- */

typedef struct name_count {
  char name[128];
  int count;
} name_count;

static struct {
  pthread_mutex_t lock;
  name_count *names;
  int num, cap;
} units = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* How many units were named `name` so far, this one included (0 when the
 * table cannot grow: then the name is reused). */
static int count_name(const char *name) {
  int count = 0;
  pthread_mutex_lock(&units.lock);
  for (int i = 0; i < units.num && !count; i++)
    if (strcmp(units.names[i].name, name) == 0)
      count = ++units.names[i].count;
  if (!count && units.num == units.cap) {
    int cap = units.cap ? 2 * units.cap : 16;
    name_count *grown = realloc(units.names, sizeof *grown * (size_t)cap);
    if (grown) {
      units.names = grown;
      units.cap = cap;
    }
  }
  if (!count && units.num < units.cap) {
    name_count *n = &units.names[units.num++];
    snprintf(n->name, sizeof n->name, "%s", name);
    count = n->count = 1;
  }
  pthread_mutex_unlock(&units.lock);
  return count;
}

void fz_dump_unit_begin(fz_dump_unit *unit, const char *fusion_name) {
  unit->name[0] = '\0';
  pthread_once(&config_once, read_environment);
  if (!config.stages)
    return;
  /* A file name: the fusion's name with anything unusual replaced. */
  char name[128];
  const char *from = fusion_name && *fusion_name ? fusion_name : "fusion";
  size_t n = 0;
  for (; from[n] && n + 1 < sizeof name; n++) {
    char c = from[n];
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '-';
    name[n] = plain ? c : '_';
  }
  name[n] = '\0';
  int count = count_name(name);
  if (count > 1)
    snprintf(unit->name, sizeof unit->name, "%s.%d", name, count);
  else
    snprintf(unit->name, sizeof unit->name, "%s", name);
}

/* ---- writing ------------------------------------------------------------ */

static void write_dump(FILE *out, const char *header, const char *text) {
  size_t n = strlen(text);
  fputs(header, out);
  fputs(text, out);
  if (n == 0 || text[n - 1] != '\n')
    fputc('\n', out);
}

void fz_dump_text(const fz_dump_unit *unit, int kernel, fz_dump_kind kind,
                  const char *detail, const char *text) {
  const kind_info *info = &KINDS[kind];
  if (!unit->name[0] || !fz_dump_wants(info->stage) || !text)
    return;
  char where[64] = "";
  if (kernel >= 0)
    snprintf(where, sizeof where, " kernel %d", kernel);
  char header[512];
  snprintf(header, sizeof header, "%s fz dump: @%s%s: %s%s%s%s\n",
           info->comment, unit->name, where, info->title, detail ? " (" : "",
           detail ? detail : "", detail ? ")" : "");
  if (!config.dir[0]) {
    flockfile(stderr);
    write_dump(stderr, header, text);
    funlockfile(stderr);
    return;
  }
  char path[4600];
  if (kernel >= 0)
    snprintf(path, sizeof path, "%s/%s.k%d.%s", config.dir, unit->name,
             kernel, info->file);
  else
    snprintf(path, sizeof path, "%s/%s.%s", config.dir, unit->name,
             info->file);
  FILE *f = fz_make_dirs(config.dir) ? fopen(path, "w") : NULL;
  if (f) {
    write_dump(f, header, text);
    if (fclose(f) == 0)
      return;
  }
  fprintf(stderr, "fz: FZ_DUMP: cannot write %s: %s\n", path,
          strerror(errno));
}

void fz_dump_fusion(const fz_dump_unit *unit, const fz_fusion *fusion) {
  if (!unit->name[0] || !fz_dump_wants(FZ_DUMP_FUSION))
    return;
  char *text = fz_print(fusion);
  fz_dump_text(unit, -1, FZ_DUMP_KIND_FUSION, "as compiled", text);
  free(text);
}

void fz_dump_segments(const fz_dump_unit *unit,
                      const fz_segmentation *segmentation) {
  if (!unit->name[0] || !fz_dump_wants(FZ_DUMP_SEGMENTS))
    return;
  fz_buf b = {0};
  fz_segmentation_print(segmentation, &b);
  char *text = fz_buf_take(&b);
  fz_dump_text(unit, -1, FZ_DUMP_KIND_SEGMENTS, NULL, text);
  free(text);
}
