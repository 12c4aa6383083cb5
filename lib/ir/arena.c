/* arena.c - bump allocation for everything a fusion or a compilation owns.
 *
 * Memory in fz is owned by an arena per fusion (and, later, per
 * compilation), so that freeing is one call and IR nodes never need
 * individual frees. Blocks are chained; a request larger than the block
 * size gets a block of its own. Absorbing another arena splices its chain
 * into this one, so that work done in a scratch arena can be kept without
 * copying it.
 */
#include "fz/ir.h"

#include <stdlib.h>
#include <string.h>

enum { ARENA_BLOCK = 64 * 1024, ARENA_ALIGN = 16 };

typedef struct arena_block {
  struct arena_block *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} arena_block;

struct fz_arena {
  arena_block *head;
};

fz_arena *fz_arena_create(void) {
  fz_arena *a = calloc(1, sizeof *a);
  if (!a)
    FZ_DIE("out of memory creating an arena");
  return a;
}

void fz_arena_destroy(fz_arena *arena) {
  if (!arena)
    return;
  arena_block *b = arena->head;
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
  free(arena);
}

void *fz_arena_alloc(fz_arena *arena, size_t size) {
  size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (size == 0)
    size = ARENA_ALIGN;
  arena_block *b = arena->head;
  if (!b || b->size - b->used < size) {
    size_t block_size = size > ARENA_BLOCK ? size : ARENA_BLOCK;
    b = malloc(sizeof *b + block_size);
    if (!b)
      FZ_DIE("out of memory allocating %zu bytes in an arena", size);
    b->used = 0;
    b->size = block_size;
    b->next = arena->head;
    arena->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

void fz_arena_absorb(fz_arena *into, fz_arena *from) {
  arena_block *last = from->head;
  if (last) {
    while (last->next)
      last = last->next;
    /* behind into's head, which keeps serving into's allocations */
    if (into->head) {
      last->next = into->head->next;
      into->head->next = from->head;
    } else {
      into->head = from->head;
    }
  }
  free(from);
}

void fz_arena_reset(fz_arena *arena) {
  arena_block *keep = NULL, *b = arena->head;
  while (b) {
    arena_block *next = b->next;
    if (!keep && b->size == ARENA_BLOCK)
      keep = b; /* a standard block; larger ones were one request each */
    else
      free(b);
    b = next;
  }
  if (keep) {
    keep->used = 0;
    keep->next = NULL;
  }
  arena->head = keep;
}

char *fz_arena_strndup(fz_arena *arena, const char *s, size_t n) {
  char *p = fz_arena_alloc(arena, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *fz_arena_strdup(fz_arena *arena, const char *s) {
  return fz_arena_strndup(arena, s, strlen(s));
}

void fz_arena_push(fz_arena *arena, void ***items, int *count, int *capacity,
                   void *item) {
  if (*count == *capacity) {
    int cap = *capacity ? *capacity * 2 : 8;
    void **grown = fz_arena_alloc(arena, sizeof(void *) * (size_t)cap);
    if (*count)
      memcpy(grown, *items, sizeof(void *) * (size_t)*count);
    *items = grown;
    *capacity = cap;
  }
  (*items)[(*count)++] = item;
}
