/*
 * C baselines for the B2 and B4 benchmarks: the same work as the Java paths, done the way a native
 * producer and consumer pair does it, called in a loop through one FFM downcall so that the
 * per-operation C time is measured in the same JMH run as the Java figures.
 *
 * Written from the Arrow C Data Interface specification
 * (https://arrow.apache.org/docs/format/CDataInterface.html) and the DLPack 1.x header's documented
 * ABI; no code is taken from nanoarrow, Arrow C++ or dlpack.h. Compiled at benchmark set-up by
 * org.devicebridge.bench.CBaseline with `cc -O2 -shared -fPIC`.
 *
 * Threads: every batch and tensor lives in thread-local storage, so each JMH thread (-t 16,
 * @State(Scope.Thread)) works on its own data, as the Java states do. b2_prepare / b4_prepare must run on
 * the thread that then calls the loop (JMH runs thread-scoped @Setup on the worker thread).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ Arrow C Data Interface (spec) */

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif

/* Keeps the compiler from seeing through a pointer: it must assume the pointee was read and written
   (the struct really travels between a producer and a consumer that know nothing of each other). */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

#define B2_MAX_COLUMNS 1024
#define MAX_DEPTH 64

/* One int64 column: a validity bitmap (all valid) and the values, with the null count a producer keeps
   (Arrow C++ and nanoarrow cache it; no bitmap is counted per export). refs counts exported nodes. */
struct column {
  uint8_t* validity;
  int64_t* values;
  int64_t null_count;
  int64_t refs;
};

struct batch {
  int32_t columns;
  int64_t rows;
  int64_t refs;
  struct column* cols;
};

static __thread struct batch* tls_batch;

/* What one exported node holds; lives in the export's block, found through private_data. */
struct node_private {
  struct export_block* block; /* the root's: frees the block */
  struct column* column;      /* a child's: the column it keeps alive */
};

/* One allocation per export, as a careful producer makes it: the child structs, the pointer arrays and
   the per-node private data together. */
struct export_block {
  struct batch* batch;
  int32_t columns;
  struct node_private root_private;
  const void* root_buffers[1];
  /* followed by: struct ArrowArray* child_ptrs[columns]; struct ArrowArray child_structs[columns];
     struct node_private child_private[columns]; const void* child_buffers[columns][2]; */
};

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void batch_free(struct batch* b) {
  if (b == NULL) {
    return;
  }
  for (int32_t c = 0; c < b->columns; c++) {
    free(b->cols[c].validity);
    free(b->cols[c].values);
  }
  free(b->cols);
  free(b);
}

/* Builds the calling thread's batch: `columns` non-null int64 columns of `rows` seeded values (replacing
   any earlier one). Returns 0, or -1 for bad arguments or out of memory. */
int32_t b2_prepare(int32_t columns, int64_t rows, int64_t seed) {
  if (columns < 1 || columns > B2_MAX_COLUMNS || rows < 0 || rows > (INT64_MAX - 7) / 8) {
    return -1;
  }
  batch_free(tls_batch);
  tls_batch = NULL;
  struct batch* b = calloc(1, sizeof(*b));
  if (b == NULL) {
    return -1;
  }
  b->cols = calloc((size_t)columns, sizeof(struct column));
  if (b->cols == NULL) {
    free(b);
    return -1;
  }
  b->columns = columns;
  b->rows = rows;
  uint64_t state = (uint64_t)seed;
  size_t bitmap = (size_t)((rows + 7) / 8);
  for (int32_t c = 0; c < columns; c++) {
    struct column* col = &b->cols[c];
    col->validity = aligned_alloc(64, (bitmap + 63) / 64 * 64 + 64);
    col->values = aligned_alloc(64, ((size_t)rows * 8 + 63) / 64 * 64 + 64);
    if (col->validity == NULL || col->values == NULL) {
      b->columns = c + 1;
      batch_free(b);
      return -1;
    }
    memset(col->validity, 0xFF, bitmap);
    for (int64_t i = 0; i < rows; i++) {
      col->values[i] = (int64_t)splitmix64(&state);
    }
    col->null_count = 0;
  }
  tls_batch = b;
  return 0;
}

/* Frees the calling thread's batch. */
void b2_free(void) {
  batch_free(tls_batch);
  tls_batch = NULL;
}

/* ---------------------------------------------------------------- producer: shallow export */

static struct ArrowArray** child_ptrs(struct export_block* k) {
  return (struct ArrowArray**)(k + 1);
}

static struct ArrowArray* child_structs(struct export_block* k) {
  return (struct ArrowArray*)(child_ptrs(k) + k->columns);
}

static struct node_private* child_private(struct export_block* k) {
  return (struct node_private*)(child_structs(k) + k->columns);
}

static const void** child_buffers(struct export_block* k) {
  return (const void**)(child_private(k) + k->columns);
}

static __attribute__((noinline)) void release_child(struct ArrowArray* a) {
  struct node_private* p = a->private_data;
  __atomic_sub_fetch(&p->column->refs, 1, __ATOMIC_ACQ_REL);
  a->release = NULL;
}

static __attribute__((noinline)) void release_root(struct ArrowArray* a) {
  struct node_private* p = a->private_data;
  struct export_block* k = p->block;
  for (int64_t i = 0; i < a->n_children; i++) {
    struct ArrowArray* c = a->children[i];
    if (c->release != NULL) { /* a consumer may have moved a child out and released it already */
      c->release(c);
    }
  }
  __atomic_sub_fetch(&k->batch->refs, 1, __ATOMIC_ACQ_REL);
  free(k);
  a->release = NULL;
}

/* Exports the first `columns` columns of the batch as a struct array into `out` (caller-allocated, as
   the Java benchmark's structs are). Returns 0, or -1 when out of memory (nothing exported). */
static __attribute__((noinline)) int export_batch(struct batch* b, int32_t columns, struct ArrowArray* out) {
  size_t n = (size_t)columns;
  size_t size = sizeof(struct export_block) + n * (sizeof(struct ArrowArray*) + sizeof(struct ArrowArray)
      + sizeof(struct node_private) + 2 * sizeof(void*));
  struct export_block* k = malloc(size);
  if (k == NULL) {
    return -1;
  }
  k->batch = b;
  k->columns = columns;
  __atomic_add_fetch(&b->refs, 1, __ATOMIC_ACQ_REL);
  struct ArrowArray** ptrs = child_ptrs(k);
  struct ArrowArray* kids = child_structs(k);
  struct node_private* priv = child_private(k);
  const void** bufs = child_buffers(k);
  for (int32_t c = 0; c < columns; c++) {
    struct column* col = &b->cols[c];
    __atomic_add_fetch(&col->refs, 1, __ATOMIC_ACQ_REL);
    priv[c].block = NULL;
    priv[c].column = col;
    bufs[2 * c] = col->validity;
    bufs[2 * c + 1] = col->values;
    struct ArrowArray* a = &kids[c];
    a->length = b->rows;
    a->null_count = col->null_count;
    a->offset = 0;
    a->n_buffers = 2;
    a->n_children = 0;
    a->buffers = &bufs[2 * c];
    a->children = NULL;
    a->dictionary = NULL;
    a->release = release_child;
    a->private_data = &priv[c];
    ptrs[c] = a;
  }
  k->root_private.block = k;
  k->root_private.column = NULL;
  k->root_buffers[0] = NULL; /* a struct array has no validity here: null_count is 0 */
  out->length = b->rows;
  out->null_count = 0;
  out->offset = 0;
  out->n_buffers = 1;
  out->n_children = columns;
  out->buffers = k->root_buffers;
  out->children = ptrs;
  out->dictionary = NULL;
  out->private_data = &k->root_private;
  out->release = release_root;
  return 0;
}

/* ---------------------------------------------------------------- consumer: DEFAULT-level checks */

/* The layout the (reused) schema gives a node: struct<int64 x columns> or int64. */
enum kind { KIND_STRUCT, KIND_INT64 };

struct walk {
  const struct ArrowArray* ancestors[MAX_DEPTH + 1];
  int depth;
  int64_t checksum;
};

static int add_ok(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_add_overflow(a, b, r);
}

static int mul_ok(int64_t a, int64_t b, int64_t* r) {
  return !__builtin_mul_overflow(a, b, r);
}

/* The checks ArrayReader makes at DEFAULT for these layouts (an int64 column's values are not read at
   DEFAULT: only offsets of variable layouts are). Returns 0 when valid, -1 at the first problem. */
static int check_node(struct walk* w, const struct ArrowArray* a, enum kind kind, int64_t expected_children) {
  if (w->depth > MAX_DEPTH) {
    return -1;
  }
  if (((uintptr_t)a & (sizeof(void*) - 1)) != 0) {
    return -1;
  }
  for (int i = 0; i < w->depth; i++) { /* a tree, not a cycle */
    if (w->ancestors[i] == a) {
      return -1;
    }
  }
  w->ancestors[w->depth] = a;
  if (a->release == NULL) {
    return -1;
  }
  int64_t length = a->length, offset = a->offset, null_count = a->null_count, end;
  if (length < 0 || offset < 0 || !add_ok(offset, length, &end)) {
    return -1;
  }
  if (null_count < -1 || null_count > length) {
    return -1;
  }
  int64_t expected_buffers = kind == KIND_STRUCT ? 1 : 2;
  if (a->n_buffers != expected_buffers || a->n_children != expected_children) {
    return -1;
  }
  const void* buffers[2];
  if (a->buffers == NULL) {
    return -1;
  }
  for (int64_t i = 0; i < a->n_buffers; i++) {
    buffers[i] = a->buffers[i];
  }
  if (a->dictionary != NULL) {
    return -1;
  }
  if (a->n_children > 0) {
    if (a->children == NULL) {
      return -1;
    }
    w->depth++;
    for (int64_t i = 0; i < a->n_children; i++) {
      const struct ArrowArray* c = a->children[i];
      if (c == NULL || check_node(w, c, KIND_INT64, 0) != 0) {
        return -1;
      }
      if (c->length < end) { /* a struct's child covers parent offset + length */
        return -1;
      }
    }
    w->depth--;
  }
  int64_t sizes[2] = {0, 0};
  if (buffers[0] == NULL) {
    if (null_count > 0) {
      return -1;
    }
  } else {
    int64_t bits;
    if (!add_ok(end, 7, &bits)) {
      return -1;
    }
    sizes[0] = bits / 8;
  }
  if (kind == KIND_INT64 && !mul_ok(end, 8, &sizes[1])) {
    return -1;
  }
  for (int64_t i = 0; i < a->n_buffers; i++) {
    if (buffers[i] == NULL && sizes[i] > 0) {
      return -1;
    }
    w->checksum += sizes[i] ^ (int64_t)((uintptr_t)buffers[i] & 0xFFF);
  }
  w->checksum += length + null_count;
  return 0;
}

/*
 * Per iteration: export the calling thread's batch (its first `columns` columns) into a caller-allocated
 * ArrowArray, move it into the consumer's struct (the source is marked released, as the Java import
 * does), check it at DEFAULT, and release it through the root's callback. Returns a checksum of what was
 * checked, or -1 when the batch was not prepared on this thread, is too narrow, or a check failed.
 */
int64_t b2_export_import_release(int32_t columns, int64_t iterations) {
  struct batch* b = tls_batch;
  if (b == NULL || columns < 1 || columns > b->columns) {
    return -1;
  }
  int64_t checksum = 0;
  struct ArrowArray produced;
  for (int64_t it = 0; it < iterations; it++) {
    if (export_batch(b, columns, &produced) != 0) {
      return -1;
    }
    ESCAPE(&produced);
    struct ArrowArray owned = produced; /* move */
    produced.release = NULL;
    ESCAPE(&owned);
    struct walk w;
    w.depth = 0;
    w.checksum = 0;
    int bad = check_node(&w, &owned, KIND_STRUCT, columns);
    owned.release(&owned);
    ESCAPE(&owned);
    if (bad || owned.release != NULL) {
      return -1;
    }
    checksum += w.checksum;
  }
  if (__atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) != 0) {
    return -1; /* an export was not released */
  }
  return checksum;
}

/* ------------------------------------------------------- Arrow C Stream Interface (spec): B2's stream */

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};

#define ARROW_FLAG_NULLABLE 2
#define B2_ENOMEM 12

struct stream_private {
  struct batch* batch;
  int32_t columns;
};

static void release_child_schema(struct ArrowSchema* s) {
  s->release = NULL;
}

/* The schema's one block: the child pointers, the child structs and their names ("c0", "c1", ...). */
static void release_root_schema(struct ArrowSchema* s) {
  for (int64_t i = 0; i < s->n_children; i++) {
    if (s->children[i]->release != NULL) {
      s->children[i]->release(s->children[i]);
    }
  }
  free(s->private_data);
  s->release = NULL;
}

static int stream_get_schema(struct ArrowArrayStream* st, struct ArrowSchema* out) {
  struct stream_private* p = st->private_data;
  int32_t n = p->columns;
  char* block = malloc((size_t)n * (sizeof(struct ArrowSchema*) + sizeof(struct ArrowSchema) + 8));
  if (block == NULL) {
    return B2_ENOMEM;
  }
  struct ArrowSchema** ptrs = (struct ArrowSchema**)block;
  struct ArrowSchema* kids = (struct ArrowSchema*)(ptrs + n);
  char* names = (char*)(kids + n);
  for (int32_t c = 0; c < n; c++) {
    char* name = names + 8 * c;
    name[0] = 'c';
    int v = c, len = 1;
    char digits[8];
    int d = 0;
    do {
      digits[d++] = (char)('0' + v % 10);
      v /= 10;
    } while (v > 0);
    while (d > 0) {
      name[len++] = digits[--d];
    }
    name[len] = '\0';
    kids[c] = (struct ArrowSchema){"l", name, NULL, ARROW_FLAG_NULLABLE, 0, NULL, NULL, release_child_schema, NULL};
    ptrs[c] = &kids[c];
  }
  *out = (struct ArrowSchema){"+s", "", NULL, 0, n, ptrs, NULL, release_root_schema, block};
  return 0;
}

/* Every call exports the thread's batch again: an endless stream of the same batch. */
static int stream_get_next(struct ArrowArrayStream* st, struct ArrowArray* out) {
  struct stream_private* p = st->private_data;
  return export_batch(p->batch, p->columns, out) == 0 ? 0 : B2_ENOMEM;
}

static const char* stream_get_last_error(struct ArrowArrayStream* st) {
  (void)st;
  return NULL;
}

static void stream_release(struct ArrowArrayStream* st) {
  free(st->private_data);
  st->release = NULL;
}

/* Fills `out` with a stream of the calling thread's batch (its first `columns` columns): the schema
   struct<int64 c0, ...>, then the batch again on every get_next. The batch must outlive the stream.
   Returns 0, or -1 when the batch was not prepared on this thread, is too narrow, or out of memory. */
int32_t b2_stream_open(int32_t columns, struct ArrowArrayStream* out) {
  struct batch* b = tls_batch;
  if (b == NULL || columns < 1 || columns > b->columns) { /* at most B2_MAX_COLUMNS: names fit 8 bytes */
    return -1;
  }
  struct stream_private* p = malloc(sizeof(*p));
  if (p == NULL) {
    return -1;
  }
  p->batch = b;
  p->columns = columns;
  *out = (struct ArrowArrayStream){stream_get_schema, stream_get_next, stream_get_last_error, stream_release, p};
  return 0;
}

/*
 * The consumer of a stream whose schema it read once: per iteration, get_next, move the batch, check it at
 * DEFAULT, read value 0 of column 0, release it. Returns a checksum, or -1 on any failure.
 */
int64_t b2_stream_loop(int32_t columns, int64_t iterations) {
  struct ArrowArrayStream stream;
  if (b2_stream_open(columns, &stream) != 0) {
    return -1;
  }
  struct ArrowSchema schema;
  int64_t checksum = -1;
  if (stream.get_schema(&stream, &schema) != 0) {
    stream.release(&stream);
    return -1;
  }
  if (schema.n_children != columns) {
    goto done;
  }
  checksum = 0;
  struct ArrowArray produced;
  for (int64_t it = 0; it < iterations; it++) {
    ESCAPE(&stream);
    if (stream.get_next(&stream, &produced) != 0 || produced.release == NULL) {
      checksum = -1;
      goto done;
    }
    ESCAPE(&produced);
    struct ArrowArray owned = produced; /* move */
    produced.release = NULL;
    ESCAPE(&owned);
    struct walk w;
    w.depth = 0;
    w.checksum = 0;
    int bad = check_node(&w, &owned, KIND_STRUCT, columns);
    int64_t first = bad ? 0 : ((const int64_t*)owned.children[0]->buffers[1])[owned.children[0]->offset];
    owned.release(&owned);
    ESCAPE(&owned);
    if (bad || owned.release != NULL) {
      checksum = -1;
      goto done;
    }
    checksum += w.checksum + (first & 1);
  }
done:
  schema.release(&schema);
  stream.release(&stream);
  return checksum;
}

/* ------------------------------------------------------------------ DLPack 1.x (documented ABI) */

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct {
  int32_t device_type; /* DLDeviceType: kDLCPU = 1 */
  int32_t device_id;
} DLDevice;

typedef struct {
  uint8_t code; /* kDLFloat = 2 */
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DL_FLAG_READ_ONLY 1ULL
#define DL_FLAG_IS_COPIED 2ULL
#define DL_FLAG_IS_SUBBYTE_TYPE_PADDED 4ULL
#define DL_MAX_NDIM 64

/* B4's tensor: float32 8x16x32x64, every other element of the last dimension. */
static const int64_t B4_SHAPE[4] = {8, 16, 32, 64};
static const int64_t B4_STRIDES[4] = {16 * 32 * 128, 32 * 128, 128, 2};

struct tensor_source {
  float* data;
  int64_t bytes;
  int64_t refs;
};

static __thread struct tensor_source* tls_tensor;

/* Builds the calling thread's tensor data, seeded. Returns 0, or -1 when out of memory. */
int32_t b4_prepare(int64_t seed) {
  if (tls_tensor != NULL) {
    free(tls_tensor->data);
    free(tls_tensor);
    tls_tensor = NULL;
  }
  struct tensor_source* s = calloc(1, sizeof(*s));
  if (s == NULL) {
    return -1;
  }
  int64_t elements = B4_SHAPE[0] * B4_STRIDES[0];
  s->bytes = elements * 4;
  s->data = aligned_alloc(64, (size_t)s->bytes);
  if (s->data == NULL) {
    free(s);
    return -1;
  }
  uint64_t state = (uint64_t)seed;
  for (int64_t i = 0; i < elements; i++) {
    s->data[i] = (float)((splitmix64(&state) >> 11) * 0x1.0p-53);
  }
  tls_tensor = s;
  return 0;
}

/* Frees the calling thread's tensor data. */
void b4_free(void) {
  if (tls_tensor != NULL) {
    free(tls_tensor->data);
    free(tls_tensor);
    tls_tensor = NULL;
  }
}

static __attribute__((noinline)) void delete_tensor(DLManagedTensorVersioned* self) {
  struct tensor_source* s = self->manager_ctx;
  __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
  free(self);
}

/* Exports the tensor as a producer does: one block with the header, shape and strides. */
static __attribute__((noinline)) DLManagedTensorVersioned* export_tensor(struct tensor_source* s) {
  int32_t ndim = 4;
  DLManagedTensorVersioned* m = malloc(sizeof(*m) + 16 * (size_t)ndim);
  if (m == NULL) {
    return NULL;
  }
  int64_t* shape = (int64_t*)(m + 1);
  int64_t* strides = shape + ndim;
  memcpy(shape, B4_SHAPE, sizeof(B4_SHAPE));
  memcpy(strides, B4_STRIDES, sizeof(B4_STRIDES));
  __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
  m->version.major = 1;
  m->version.minor = 3;
  m->manager_ctx = s;
  m->deleter = delete_tensor;
  m->flags = 0;
  m->dl_tensor.data = s->data;
  m->dl_tensor.device.device_type = 1;
  m->dl_tensor.device.device_id = 0;
  m->dl_tensor.ndim = ndim;
  m->dl_tensor.dtype.code = 2;
  m->dl_tensor.dtype.bits = 32;
  m->dl_tensor.dtype.lanes = 1;
  m->dl_tensor.shape = shape;
  m->dl_tensor.strides = strides;
  m->dl_tensor.byte_offset = 0;
  return m;
}

/* The consumer's checks (DLPack.importVersioned's): version, flags, device, dtype, ndim, shape and strides
   with exact arithmetic, the byte range the tensor spans. Gives where that range starts (bytes from data)
   in *start, its size in *extent and the offset of element [0,...,0] inside it in *origin (what the
   Java segment() and originOffset() give); returns 0 when valid, -1 otherwise. */
static int check_tensor(const DLManagedTensorVersioned* m, int64_t* start, int64_t* extent, int64_t* origin) {
  if (m->version.major != 1) {
    return -1;
  }
  if ((m->flags & ~(DL_FLAG_READ_ONLY | DL_FLAG_IS_COPIED | DL_FLAG_IS_SUBBYTE_TYPE_PADDED)) != 0) {
    return -1;
  }
  const DLTensor* t = &m->dl_tensor;
  if (t->device.device_type != 1 || t->device.device_id != 0) {
    return -1;
  }
  if (t->dtype.code != 2 || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    return -1;
  }
  int32_t ndim = t->ndim;
  if (ndim < 0 || ndim > DL_MAX_NDIM || (ndim > 0 && (t->shape == NULL || t->strides == NULL))) {
    return -1;
  }
  if (t->data == NULL || t->byte_offset > (uint64_t)INT64_MAX) {
    return -1;
  }
  int64_t lo = 0, hi = 0, elements = 1; /* element offsets of the lowest and highest element */
  for (int32_t i = 0; i < ndim; i++) {
    int64_t n = t->shape[i], s = t->strides[i], span;
    if (n < 0 || !mul_ok(elements, n, &elements)) {
      return -1;
    }
    if (n == 0) {
      continue;
    }
    if (!mul_ok(n - 1, s, &span)) {
      return -1;
    }
    if (span < 0 ? !add_ok(lo, span, &lo) : !add_ok(hi, span, &hi)) {
      return -1;
    }
  }
  if (elements == 0) {
    *start = (int64_t)t->byte_offset;
    *extent = 0;
    *origin = 0;
    return 0;
  }
  int64_t bytes, first;
  if (!add_ok(hi - lo, 1, &bytes) || !mul_ok(bytes, 4, &bytes) || !mul_ok(lo, 4, &first)
      || !add_ok(first, (int64_t)t->byte_offset, &first) || first < 0) {
    return -1;
  }
  *start = first;
  *extent = bytes;
  *origin = -lo * 4;
  return 0;
}

/*
 * Per iteration: export the calling thread's tensor as a DLManagedTensorVersioned, check it as the
 * consumer does, read element [0,0,0,0], and call the deleter. Returns the sum of the elements read, as
 * a checksum, scaled to an integer, or -1 when the tensor was not prepared on this thread or a check
 * failed.
 */
int64_t b4_export_import_release(int64_t iterations) {
  struct tensor_source* s = tls_tensor;
  if (s == NULL) {
    return -1;
  }
  double sum = 0;
  for (int64_t it = 0; it < iterations; it++) {
    DLManagedTensorVersioned* m = export_tensor(s);
    if (m == NULL) {
      return -1;
    }
    ESCAPE(m);
    int64_t start, extent, origin;
    if (check_tensor(m, &start, &extent, &origin) != 0 || extent < origin + 4) {
      m->deleter(m);
      return -1;
    }
    const unsigned char* segment = (const unsigned char*)m->dl_tensor.data + start;
    float v;
    memcpy(&v, segment + origin, sizeof(v));
    sum += v + (double)(extent & 1);
    m->deleter(m);
  }
  if (__atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) != 0) {
    return -1;
  }
  return (int64_t)(sum * 1024.0);
}
