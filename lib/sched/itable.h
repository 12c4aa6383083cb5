/* itable.h - a hash table of int indices, for the passes and builders that
 * must find "the first earlier thing equal to this one" in large fusions
 * without scanning every earlier thing (CSE's ops, the DAG's nodes and
 * accesses).
 *
 * The table stores only indices and their hashes; what an index stands
 * for, and when two are equal, is the caller's: a lookup gives the hash of
 * the key and a predicate that compares the key with a stored index.
 * Callers add an index only when the lookup found none equal to it, so a
 * key matches at most one stored index: the first one added for it.
 * Memory comes from an arena; growth doubles.
 */
#ifndef FZ_SCHED_ITABLE_H
#define FZ_SCHED_ITABLE_H

#include "fz/ir.h"

typedef struct fz_itable {
  fz_arena *arena;
  int *slots; /* -1: empty */
  uint64_t *hashes;
  size_t mask; /* capacity - 1; 0 before the first add */
  size_t count;
} fz_itable;

/* An empty table allocating in `arena`. */
void fz_itable_init(fz_itable *t, fz_arena *arena);
/* Empties the table, keeping its capacity. */
void fz_itable_clear(fz_itable *t);
/* The first added index with hash h for which same(ctx, index), or -1. */
int fz_itable_find(const fz_itable *t, uint64_t h,
                   bool (*same)(const void *ctx, int index), const void *ctx);
void fz_itable_add(fz_itable *t, uint64_t h, int index);

/* Combines x into the hash h: splitmix64's finaliser over the running
 * value, cheap and spreading pointers (multiples of 16) over every bit.
 * Inline: the DAG builders hash every node and map they look up. */
static inline uint64_t fz_hash_mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9u;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebu;
  h ^= h >> 31;
  return h;
}

#endif
