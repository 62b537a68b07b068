/*
 * Native side of the lifetime tests (org.devicebridge.lifetime), compiled at test time with gcc.
 *
 * hs_hold_and_call is a native call that holds a segment: it sums the bytes, calls back into Java (where a
 * test closes the handle that owns the bytes, from this thread, another one, or through the Cleaner), then
 * sums again. Its producers (an ArrowArray, a CPU ArrowDeviceArray, an ArrowArrayStream of such arrays, a
 * DLManagedTensorVersioned and a legacy DLManagedTensor) count every release/deleter call and POISON the
 * data on release (every byte set to 0xde), so a release that runs under the call shows up as a changed
 * second sum, and its count is exact. Poisoned blocks are not freed at once (so reading them stays
 * defined); hs_free_released frees them between tests.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_c_abi.h"
#include "dlpack.h"

#define HS_POISON 0xde

/* ---- counters ---- */

/* Releases of arrays, device arrays, stream batches and tensors, by the seed their data was made with:
 * tests give every kind of producer its own seed, so counts of two imports never mix. */
static atomic_long data_releases_by_seed[256];
static atomic_long stream_releases;

long hs_releases_of(uint8_t seed) { return atomic_load(&data_releases_by_seed[seed]); }
long hs_stream_releases(void) { return atomic_load(&stream_releases); }

/* ---- data blocks: poisoned on release, freed later ---- */

struct block {
    struct block* next;
    int64_t n;
    uint8_t seed;
    uint8_t data[];
};

static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block* graveyard;

/* The byte at index i of a block made with seed: never 0xde for every i, so poison always shows. */
static uint8_t byte_at(int64_t i, uint8_t seed) { return (uint8_t) (seed + i * 7); }

static struct block* new_block(int64_t n, uint8_t seed) {
    struct block* b = malloc(sizeof(struct block) + (size_t) (n > 0 ? n : 1));
    b->next = NULL;
    b->n = n;
    b->seed = seed;
    for (int64_t i = 0; i < n; i++) {
        b->data[i] = byte_at(i, seed);
    }
    return b;
}

/* Poisons the block, counts the release, keeps the memory (readable, poisoned) until hs_free_released. */
static void release_block(struct block* b) {
    memset(b->data, HS_POISON, (size_t) b->n);
    atomic_fetch_add(&data_releases_by_seed[b->seed], 1);
    pthread_mutex_lock(&graveyard_lock);
    b->next = graveyard;
    graveyard = b;
    pthread_mutex_unlock(&graveyard_lock);
}

/* Frees every block released so far. Call only when no test segment still refers to one. */
void hs_free_released(void) {
    pthread_mutex_lock(&graveyard_lock);
    struct block* b = graveyard;
    graveyard = NULL;
    pthread_mutex_unlock(&graveyard_lock);
    while (b != NULL) {
        struct block* next = b->next;
        free(b);
        b = next;
    }
}

/* The sum of the n bytes a producer made with seed, for the test's expectation. */
int64_t hs_expected_sum(int64_t n, uint8_t seed) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += byte_at(i, seed);
    }
    return s;
}

/* ---- the native call that holds a segment ---- */

static int64_t sum(const volatile uint8_t* data, int64_t n) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += data[i];
    }
    return s;
}

/* Sums data, calls cb, sums again into *second_sum; returns the first sum. */
int64_t hs_hold_and_call(const uint8_t* data, int64_t n, void (*cb)(void), int64_t* second_sum) {
    int64_t first = sum(data, n);
    cb();
    *second_sum = sum(data, n);
    return first;
}

/* ---- ArrowArray / ArrowDeviceArray: uint8 ("C"), no validity buffer ---- */

static void release_array(struct ArrowArray* a) {
    release_block((struct block*) a->private_data);
    free((void*) a->buffers);
    a->private_data = NULL;
    a->release = NULL;
}

static void fill_array(struct ArrowArray* a, int64_t n, uint8_t seed) {
    struct block* b = new_block(n, seed);
    const void** buffers = malloc(2 * sizeof(void*));
    buffers[0] = NULL;
    buffers[1] = b->data;
    memset(a, 0, sizeof *a);
    a->length = n;
    a->null_count = 0;
    a->offset = 0;
    a->n_buffers = 2;
    a->n_children = 0;
    a->buffers = buffers;
    a->children = NULL;
    a->dictionary = NULL;
    a->release = release_array;
    a->private_data = b;
}

void hs_make_array(struct ArrowArray* out, int64_t n, uint8_t seed) { fill_array(out, n, seed); }

void hs_make_cpu_device_array(struct ArrowDeviceArray* out, int64_t n, uint8_t seed) {
    memset(out, 0, sizeof *out);
    fill_array(&out->array, n, seed);
    out->device_id = -1;
    out->device_type = ARROW_DEVICE_CPU;
    out->sync_event = NULL;
}

/* ---- ArrowSchema "C" (uint8) and an ArrowArrayStream of `batches` arrays of n bytes ---- */

static void release_schema(struct ArrowSchema* s) {
    s->release = NULL;
}

void hs_make_schema(struct ArrowSchema* out) {
    memset(out, 0, sizeof *out);
    out->format = "C";
    out->name = "";
    out->flags = ARROW_FLAG_NULLABLE;
    out->release = release_schema;
}

struct stream_state {
    int remaining;
    int64_t n;
    uint8_t seed;
};

static int stream_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
    (void) s;
    hs_make_schema(out);
    return 0;
}

static int stream_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
    struct stream_state* st = s->private_data;
    if (st->remaining == 0) {
        memset(out, 0, sizeof *out); /* release == NULL: the end */
        return 0;
    }
    st->remaining--;
    fill_array(out, st->n, st->seed);
    return 0;
}

static const char* stream_get_last_error(struct ArrowArrayStream* s) {
    (void) s;
    return NULL;
}

static void stream_release(struct ArrowArrayStream* s) {
    free(s->private_data);
    s->private_data = NULL;
    s->release = NULL;
    atomic_fetch_add(&stream_releases, 1);
}

void hs_make_stream(struct ArrowArrayStream* out, int32_t batches, int64_t n, uint8_t seed) {
    struct stream_state* st = malloc(sizeof *st);
    st->remaining = batches;
    st->n = n;
    st->seed = seed;
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_get_last_error;
    out->release = stream_release;
    out->private_data = st;
}

/* ---- DLPack: a 1-d uint8 tensor of n elements on the CPU, compact (strides NULL) ---- */

struct tensor_ctx {
    struct block* block;
    int64_t shape[1];
};

static void fill_dl_tensor(DLTensor* t, struct tensor_ctx* ctx, int64_t n) {
    t->data = ctx->block->data;
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->ndim = 1;
    t->dtype.code = kDLUInt;
    t->dtype.bits = 8;
    t->dtype.lanes = 1;
    ctx->shape[0] = n;
    t->shape = ctx->shape;
    t->strides = NULL;
    t->byte_offset = 0;
}

static void delete_versioned(DLManagedTensorVersioned* self) {
    struct tensor_ctx* ctx = self->manager_ctx;
    release_block(ctx->block);
    free(ctx);
    free(self);
}

/* A new tensor (heap-allocated; its deleter frees it). */
DLManagedTensorVersioned* hs_make_versioned(int64_t n, uint8_t seed) {
    struct tensor_ctx* ctx = malloc(sizeof *ctx);
    ctx->block = new_block(n, seed);
    DLManagedTensorVersioned* t = calloc(1, sizeof *t);
    t->version.major = 1;
    t->version.minor = 0;
    t->manager_ctx = ctx;
    t->deleter = delete_versioned;
    t->flags = 0;
    fill_dl_tensor(&t->dl_tensor, ctx, n);
    return t;
}

static void delete_legacy(DLManagedTensor* self) {
    struct tensor_ctx* ctx = self->manager_ctx;
    release_block(ctx->block);
    free(ctx);
    free(self);
}

/* A new legacy (pre-1.0) tensor (heap-allocated; its deleter frees it). */
DLManagedTensor* hs_make_legacy(int64_t n, uint8_t seed) {
    struct tensor_ctx* ctx = malloc(sizeof *ctx);
    ctx->block = new_block(n, seed);
    DLManagedTensor* t = calloc(1, sizeof *t);
    t->manager_ctx = ctx;
    t->deleter = delete_legacy;
    fill_dl_tensor(&t->dl_tensor, ctx, n);
    return t;
}
