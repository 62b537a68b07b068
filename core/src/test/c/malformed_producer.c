/*
 * A native Arrow producer for the malformed-input matrix tests (compiled at test time with gcc).
 * Every struct it makes is heap-allocated the way a real producer does it: the root's release releases
 * (and frees) its children and dictionary through their own release callbacks, then marks itself
 * released. Releases are counted per kind so that a test can assert "exactly once".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arrow_c_abi.h"

static atomic_int root_releases;
static atomic_int child_releases;
static atomic_long last_release_tid;

int mp_root_releases(void) { return atomic_load(&root_releases); }
int mp_child_releases(void) { return atomic_load(&child_releases); }
long mp_last_release_tid(void) { return atomic_load(&last_release_tid); }
long mp_gettid(void) { return (long) syscall(SYS_gettid); }

void mp_reset(void) {
    atomic_store(&root_releases, 0);
    atomic_store(&child_releases, 0);
    atomic_store(&last_release_tid, 0);
}

/* ---- schemas ---- */

static void release_schema(struct ArrowSchema* s) {
    for (int64_t i = 0; i < s->n_children; i++) {
        struct ArrowSchema* c = s->children[i];
        if (c != NULL && c->release != NULL) {
            c->release(c);
        }
        free(c);
    }
    free(s->children);
    if (s->dictionary != NULL) {
        if (s->dictionary->release != NULL) {
            s->dictionary->release(s->dictionary);
        }
        free(s->dictionary);
    }
    if (s->private_data != NULL) {
        atomic_fetch_add(&root_releases, 1);
        atomic_store(&last_release_tid, mp_gettid());
    } else {
        atomic_fetch_add(&child_releases, 1);
    }
    s->release = NULL;
}

static void fill_schema(struct ArrowSchema* s, const char* format, int64_t n_children, int root) {
    memset(s, 0, sizeof *s);
    s->format = format;
    s->name = "";
    s->flags = 2;
    s->n_children = n_children;
    if (n_children > 0) {
        s->children = calloc((size_t) n_children, sizeof(struct ArrowSchema*));
        for (int64_t i = 0; i < n_children; i++) {
            s->children[i] = calloc(1, sizeof(struct ArrowSchema));
        }
    }
    s->release = release_schema;
    s->private_data = root ? (void*) 1 : NULL;
}

/* A valid struct<a: int32, b: utf8>. */
void mp_struct_schema(struct ArrowSchema* s) {
    fill_schema(s, "+s", 2, 1);
    fill_schema(s->children[0], "i", 0, 0);
    fill_schema(s->children[1], "u", 0, 0);
}

/* struct<a: int32, b: "q"> - an unknown format in the second child. */
void mp_struct_schema_bad_child_format(struct ArrowSchema* s) {
    mp_struct_schema(s);
    s->children[1]->format = "q";
}

/* struct<a: int32, b: int32> whose b is already released (a producer bug). */
void mp_struct_schema_released_child(struct ArrowSchema* s) {
    mp_struct_schema(s);
    s->children[1]->release(s->children[1]); /* counts as a child release */
}

/* int32 dictionary-encoded with a utf8 dictionary whose format is "d:99,1". */
void mp_dictionary_schema_bad_value_format(struct ArrowSchema* s) {
    fill_schema(s, "i", 0, 1);
    s->dictionary = calloc(1, sizeof(struct ArrowSchema));
    fill_schema(s->dictionary, "d:99,1", 0, 0);
}

/* ---- arrays ---- */

struct array_data {
    const void* buffers[3];
    int32_t values[8];
    int32_t offsets[8];
    char bytes[16];
};

static void release_array(struct ArrowArray* a) {
    for (int64_t i = 0; i < a->n_children; i++) {
        struct ArrowArray* c = a->children[i];
        if (c != NULL && c->release != NULL) {
            c->release(c);
        }
        free(c);
    }
    free(a->children);
    struct array_data* d = a->private_data;
    int root = d != NULL && d->bytes[15] == 1;
    free(d);
    if (root) {
        atomic_fetch_add(&root_releases, 1);
        atomic_store(&last_release_tid, mp_gettid());
    } else {
        atomic_fetch_add(&child_releases, 1);
    }
    a->release = NULL;
}

static struct array_data* fill_array(struct ArrowArray* a, int64_t length, int64_t n_buffers, int64_t n_children,
                                     int root) {
    memset(a, 0, sizeof *a);
    struct array_data* d = calloc(1, sizeof *d);
    d->bytes[15] = (char) root;
    a->length = length;
    a->n_buffers = n_buffers;
    a->buffers = d->buffers;
    a->n_children = n_children;
    if (n_children > 0) {
        a->children = calloc((size_t) n_children, sizeof(struct ArrowArray*));
        for (int64_t i = 0; i < n_children; i++) {
            a->children[i] = calloc(1, sizeof(struct ArrowArray));
        }
    }
    a->release = release_array;
    a->private_data = d;
    return d;
}

static void int32_child(struct ArrowArray* a, int64_t length, int root) {
    struct array_data* d = fill_array(a, length, 2, 0, root);
    for (int i = 0; i < 8; i++) {
        d->values[i] = i * 10;
    }
    d->buffers[1] = d->values;
}

static void utf8_child(struct ArrowArray* a, int64_t length, int root) {
    struct array_data* d = fill_array(a, length, 3, 0, root);
    for (int i = 0; i < 8; i++) {
        d->offsets[i] = i;
        d->bytes[i] = (char) ('a' + i);
    }
    d->buffers[1] = d->offsets;
    d->buffers[2] = d->bytes;
}

/* A valid int32 array of `length` (at most 8) values 0, 10, 20, ... */
void mp_int32_array(struct ArrowArray* a, int64_t length) {
    int32_child(a, length, 1);
}

/* A valid struct<int32, utf8> array of `length` (at most 7) rows, for mp_struct_schema. */
void mp_struct_array(struct ArrowArray* a, int64_t length) {
    fill_array(a, length, 1, 2, 1);
    int32_child(a->children[0], length, 0);
    utf8_child(a->children[1], length, 0);
}

/* struct<int32, utf8> whose utf8 child has a decreasing middle offset (caught at FULL only). */
void mp_struct_array_bad_offsets(struct ArrowArray* a) {
    mp_struct_array(a, 4);
    struct array_data* d = a->children[1]->private_data;
    d->offsets[2] = 3; /* 0 1 3 3 4 ... still monotonic */
    d->offsets[3] = 1; /* 0 1 3 1 4: decreasing at index 3 */
}

/* struct<int32, utf8> whose int32 child is shorter than the parent. */
void mp_struct_array_short_child(struct ArrowArray* a) {
    mp_struct_array(a, 4);
    a->children[0]->length = 2;
}

/* int32 array with a negative length. */
void mp_int32_array_negative_length(struct ArrowArray* a) {
    int32_child(a, 3, 1);
    a->length = -3;
}

/* ---- a native thread ---- */

static void* run_callback(void* fn) {
    ((void (*)(void)) fn)();
    return NULL;
}

/* Runs `fn` (a Java upcall) on a new native thread and waits for it; returns 0 on success. */
int mp_run_on_native_thread(void (*fn)(void)) {
    pthread_t t;
    if (pthread_create(&t, NULL, run_callback, (void*) fn) != 0) {
        return -1;
    }
    return pthread_join(t, NULL);
}

static void* release_array_thread(void* a) {
    struct ArrowArray* array = a;
    array->release(array);
    return NULL;
}

/* Releases `a` (any producer's) from a new native thread, as a native consumer on another thread would. */
int mp_release_array_on_native_thread(struct ArrowArray* a) {
    pthread_t t;
    if (pthread_create(&t, NULL, release_array_thread, a) != 0) {
        return -1;
    }
    return pthread_join(t, NULL);
}
