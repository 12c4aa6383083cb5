/* fuzz_parse.c - libFuzzer target for the text format.
 *
 * Any input must parse or fail cleanly (ASan and UBSan watch for the rest).
 * A fusion the parser accepts must pass the verifier: the parser builds
 * through the builder, which must never make what the verifier rejects.
 * When it parses, the printed text must parse again and print identically:
 * the printer's output is the canonical form, so print(parse(print(f))) ==
 * print(f). A failure of that property is turned into a crash so that
 * libFuzzer saves the input.
 */
#include "fz/fz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_fusion *f = NULL;
  fz_error err = {0};
  if (fz_parse("fuzz.fz", (const char *)data, size, &f, &err) != FZ_OK) {
    if (f || strstr(err.message, "error: ") == NULL)
      __builtin_trap(); /* failures leave no fusion and carry a diagnostic */
    return 0;
  }
  if (fz_verify(f, &err) != FZ_OK) {
    fprintf(stderr, "parsed fusion fails verification: %s\n", err.message);
    __builtin_trap();
  }
  char *printed = fz_print(f);
  if (!printed)
    __builtin_trap();
  fz_fusion *again = NULL;
  if (fz_parse("printed.fz", printed, strlen(printed), &again, &err) != FZ_OK) {
    fprintf(stderr, "printed text does not parse:\n%s\n%s\n", printed,
            err.message);
    __builtin_trap();
  }
  char *reprinted = fz_print(again);
  if (!reprinted || strcmp(printed, reprinted) != 0) {
    fprintf(stderr, "printing is not stable:\n%s\n---\n%s\n", printed,
            reprinted ? reprinted : "(null)");
    __builtin_trap();
  }
  free(reprinted);
  free(printed);
  fz_fusion_destroy(again);
  fz_fusion_destroy(f);
  return 0;
}
