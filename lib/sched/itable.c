/* itable.c - see itable.h. Linear probing, at most half full. */
#include "sched/itable.h"

#include <string.h>

void fz_itable_init(fz_itable *t, fz_arena *arena) {
  *t = (fz_itable){.arena = arena};
}

void fz_itable_clear(fz_itable *t) {
  if (t->mask)
    memset(t->slots, 0xff, sizeof *t->slots * (t->mask + 1));
  t->count = 0;
}

int fz_itable_find(const fz_itable *t, uint64_t h,
                   bool (*same)(const void *ctx, int index), const void *ctx) {
  if (!t->mask)
    return -1;
  for (size_t i = (size_t)h & t->mask; t->slots[i] >= 0; i = (i + 1) & t->mask)
    if (t->hashes[i] == h && same(ctx, t->slots[i]))
      return t->slots[i];
  return -1;
}

static void place(int *slots, uint64_t *hashes, size_t mask, uint64_t h,
                  int index) {
  size_t i = (size_t)h & mask;
  while (slots[i] >= 0)
    i = (i + 1) & mask;
  slots[i] = index;
  hashes[i] = h;
}

void fz_itable_add(fz_itable *t, uint64_t h, int index) {
  if (2 * (t->count + 1) > t->mask + 1) {
    size_t cap = t->mask ? 2 * (t->mask + 1) : 64;
    int *slots = fz_arena_alloc(t->arena, sizeof *slots * cap);
    uint64_t *hashes = fz_arena_alloc(t->arena, sizeof *hashes * cap);
    memset(slots, 0xff, sizeof *slots * cap);
    for (size_t i = 0; t->mask && i <= t->mask; i++)
      if (t->slots[i] >= 0)
        place(slots, hashes, cap - 1, t->hashes[i], t->slots[i]);
    t->slots = slots;
    t->hashes = hashes;
    t->mask = cap - 1;
  }
  place(t->slots, t->hashes, t->mask, h, index);
  t->count++;
}
