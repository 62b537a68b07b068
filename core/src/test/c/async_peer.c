/*
 * A native peer for the Arrow C async device stream tests (compiled at test time with gcc), on CPU device
 * arrays of int64 ("l"): batch i holds AP_LEN values i * 100 + j.
 *   ap_*  a producer (its own thread) that drives a handler the library implements, well or badly;
 *   ac_*  a consumer handler that the library's producer drives, well or badly;
 *   as_*  a plain ArrowDeviceArrayStream, the source the library's producer exports.
 * Every release, extraction and hand-back is counted so that a test can assert "exactly once".
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_c_abi.h"

#define AP_LEN 4

static atomic_int arrays_made, arrays_released, schemas_released;

int peer_arrays_made(void) { return atomic_load(&arrays_made); }
int peer_arrays_released(void) { return atomic_load(&arrays_released); }
int peer_schemas_released(void) { return atomic_load(&schemas_released); }

static void release_schema(struct ArrowSchema* s) {
    atomic_fetch_add(&schemas_released, 1);
    s->release = NULL;
}

static void fill_schema(struct ArrowSchema* s) {
    memset(s, 0, sizeof *s);
    s->format = "l";
    s->name = "v";
    s->flags = ARROW_FLAG_NULLABLE;
    s->release = release_schema;
}

struct batch { const void* buffers[2]; int64_t values[AP_LEN]; };

static void release_array(struct ArrowArray* a) {
    free(a->private_data);
    atomic_fetch_add(&arrays_released, 1);
    a->release = NULL;
}

static void fill_array(struct ArrowDeviceArray* out, int i) {
    struct batch* b = malloc(sizeof *b);
    for (int j = 0; j < AP_LEN; j++) b->values[j] = (int64_t) i * 100 + j;
    b->buffers[0] = NULL;
    b->buffers[1] = b->values;
    memset(out, 0, sizeof *out);
    out->array.length = AP_LEN;
    out->array.n_buffers = 2;
    out->array.buffers = b->buffers;
    out->array.private_data = b;
    out->array.release = release_array;
    out->device_id = -1;
    out->device_type = ARROW_DEVICE_CPU;
    atomic_fetch_add(&arrays_made, 1);
}

/* ---------------- ap: a producer driving the library's handler ---------------- */

enum { AP_GOOD = 0, AP_IGNORE_DEMAND, AP_ERROR_MID, AP_TASK_AFTER_END, AP_ERROR_AFTER_END, AP_NULL_SCHEMA,
       AP_NO_END, AP_EXTRACT_FAILS, AP_WRONG_DEVICE };

static struct {
    struct ArrowAsyncProducer producer;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t demand, requested, bad_requests;
    int cancelled, mode, n;
    struct ArrowAsyncDeviceStreamHandler* h;
    pthread_t thread;
} ap = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static atomic_int ap_made, ap_extracted, ap_discarded, ap_refused, ap_failed, ap_on_error;

int ap_tasks_made(void) { return atomic_load(&ap_made); }
int ap_tasks_extracted(void) { return atomic_load(&ap_extracted); }
int ap_tasks_discarded(void) { return atomic_load(&ap_discarded); }
int ap_tasks_refused(void) { return atomic_load(&ap_refused); }
int ap_tasks_failed(void) { return atomic_load(&ap_failed); }
long ap_requested(void) { pthread_mutex_lock(&ap.mu); long r = ap.requested; pthread_mutex_unlock(&ap.mu); return r; }
long ap_bad_requests(void) { return ap.bad_requests; }
int ap_cancelled(void) { pthread_mutex_lock(&ap.mu); int c = ap.cancelled; pthread_mutex_unlock(&ap.mu); return c; }

static void ap_request(struct ArrowAsyncProducer* self, int64_t n) {
    (void) self;
    pthread_mutex_lock(&ap.mu);
    if (n <= 0) ap.bad_requests++;
    else if (!ap.cancelled) { ap.demand += n; ap.requested += n; }
    pthread_cond_broadcast(&ap.cv);
    pthread_mutex_unlock(&ap.mu);
}

static void ap_cancel(struct ArrowAsyncProducer* self) {
    (void) self;
    pthread_mutex_lock(&ap.mu);
    ap.cancelled = 1;
    pthread_cond_broadcast(&ap.cv);
    pthread_mutex_unlock(&ap.mu);
}

struct task_data { int i; };

static int ap_extract(struct ArrowAsyncTask* task, struct ArrowDeviceArray* out) {
    struct task_data* d = task->private_data;
    int i = d->i;
    free(d);
    if (ap.mode == AP_EXTRACT_FAILS) { atomic_fetch_add(&ap_failed, 1); return EIO; }
    if (out == NULL) { atomic_fetch_add(&ap_discarded, 1); return 0; }
    fill_array(out, i);
    if (ap.mode == AP_WRONG_DEVICE) out->device_type = ARROW_DEVICE_CUDA_HOST;
    atomic_fetch_add(&ap_extracted, 1);
    return 0;
}

static int ap_send(int i) {
    struct ArrowAsyncTask task;
    struct task_data* d = malloc(sizeof *d);
    d->i = i;
    task.extract_data = ap_extract;
    task.private_data = d;
    atomic_fetch_add(&ap_made, 1);
    int rc = ap.h->on_next_task(ap.h, &task, NULL);
    if (rc != 0) { free(d); atomic_fetch_add(&ap_refused, 1); } /* refused: still ours */
    return rc;
}

static void* ap_run(void* arg) {
    (void) arg;
    struct ArrowAsyncDeviceStreamHandler* h = ap.h;
    struct ArrowSchema schema;
    fill_schema(&schema);
    int rc = h->on_schema(h, ap.mode == AP_NULL_SCHEMA ? NULL : &schema);
    if (schema.release != NULL) schema.release(&schema);
    if (rc != 0) goto out;
    for (int i = 0; i < ap.n; i++) {
        if (ap.mode != AP_IGNORE_DEMAND) {
            pthread_mutex_lock(&ap.mu);
            while (ap.demand == 0 && !ap.cancelled) pthread_cond_wait(&ap.cv, &ap.mu);
            int stop = ap.cancelled;
            if (!stop) ap.demand--;
            pthread_mutex_unlock(&ap.mu);
            if (stop) goto out; /* a successful cancel: just the release */
        }
        if (ap.mode == AP_ERROR_MID && i == ap.n / 2) {
            h->on_error(h, EIO, "disk gone", NULL);
            atomic_fetch_add(&ap_on_error, 1);
            goto out;
        }
        if (ap_send(i) != 0) goto out;
    }
    if (ap.mode == AP_NO_END) goto out;
    if (h->on_next_task(h, NULL, NULL) != 0) goto out;
    if (ap.mode == AP_TASK_AFTER_END) ap_send(ap.n);
    if (ap.mode == AP_ERROR_AFTER_END) h->on_error(h, EIO, "late error", NULL);
out:
    h->release(h);
    return NULL;
}

void ap_start(struct ArrowAsyncDeviceStreamHandler* h, int n, int mode) {
    memset(&ap.producer, 0, sizeof ap.producer);
    ap.producer.device_type = ARROW_DEVICE_CPU;
    ap.producer.request = ap_request;
    ap.producer.cancel = ap_cancel;
    ap.demand = ap.requested = ap.bad_requests = 0;
    ap.cancelled = 0;
    ap.mode = mode;
    ap.n = n;
    ap.h = h;
    atomic_store(&ap_made, 0);
    atomic_store(&ap_extracted, 0);
    atomic_store(&ap_discarded, 0);
    atomic_store(&ap_refused, 0);
    atomic_store(&ap_failed, 0);
    h->producer = &ap.producer;
    pthread_create(&ap.thread, NULL, ap_run, NULL);
}

void ap_join(void) { pthread_join(ap.thread, NULL); }

/* ---------------- as: a plain device stream, the library producer's source ---------------- */

static struct { int n, next, fail_at; } as;

static int as_get_schema(struct ArrowDeviceArrayStream* s, struct ArrowSchema* out) { (void) s; fill_schema(out); return 0; }

static int as_get_next(struct ArrowDeviceArrayStream* s, struct ArrowDeviceArray* out) {
    (void) s;
    if (as.next == as.fail_at) return EIO;
    if (as.next >= as.n) { memset(out, 0, sizeof *out); return 0; }
    fill_array(out, as.next++);
    return 0;
}

static const char* as_last_error(struct ArrowDeviceArrayStream* s) { (void) s; return "source broke"; }

static atomic_int streams_released;
int as_streams_released(void) { return atomic_load(&streams_released); }
static void as_release(struct ArrowDeviceArrayStream* s) { atomic_fetch_add(&streams_released, 1); s->release = NULL; }

/* fail_at < 0: never fails */
void as_fill(struct ArrowDeviceArrayStream* out, int n, int fail_at) {
    as.n = n;
    as.next = 0;
    as.fail_at = fail_at;
    out->device_type = ARROW_DEVICE_CPU;
    out->get_schema = as_get_schema;
    out->get_next = as_get_next;
    out->get_last_error = as_last_error;
    out->release = as_release;
    out->private_data = NULL;
}

/* ---------------- ac: a consumer handler driven by the library's producer ---------------- */

enum { AC_GOOD = 0, AC_BAD_REQUEST, AC_EXTRACT_TWICE, AC_REFUSE_TASK, AC_CANCEL_AFTER_2, AC_DEFER, AC_REFUSE_SCHEMA };

#define AC_MAX_DEFERRED 64
static struct {
    struct ArrowAsyncDeviceStreamHandler h;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int mode, window, received, requested, violations, ended, released, error_code, second_extract_rc;
    long sum;
    char message[256];
    struct ArrowAsyncTask deferred[AC_MAX_DEFERRED];
    int n_deferred;
} ac = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void ac_take(struct ArrowDeviceArray* a) {
    if (a->device_type != ARROW_DEVICE_CPU || a->array.length != AP_LEN) ac.violations++;
    const int64_t* v = a->array.buffers[1];
    for (int j = 0; j < AP_LEN; j++) ac.sum += v[j];
    a->array.release(&a->array);
}

static int ac_on_schema(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowSchema* schema) {
    if (schema == NULL || strcmp(schema->format, "l") != 0) ac.violations++;
    if (schema != NULL && schema->release != NULL) schema->release(schema);
    if (self->producer == NULL) { ac.violations++; return EINVAL; }
    if (ac.mode == AC_REFUSE_SCHEMA) return EINVAL;
    ac.requested += ac.mode == AC_BAD_REQUEST ? 0 : ac.window;
    self->producer->request(self->producer, ac.mode == AC_BAD_REQUEST ? 0 : ac.window);
    return 0;
}

static int ac_on_next_task(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowAsyncTask* task, const char* md) {
    (void) md;
    if (task == NULL) { ac.ended++; return 0; }
    if (++ac.received > ac.requested) ac.violations++;
    if (ac.mode == AC_REFUSE_TASK && ac.received == 2) return EINVAL;
    if (ac.mode == AC_DEFER) {
        if (ac.n_deferred == AC_MAX_DEFERRED) return ENOMEM;
        ac.deferred[ac.n_deferred++] = *task; /* the struct lives only for this call: copy it */
    } else {
        struct ArrowDeviceArray a;
        if (task->extract_data(task, &a) != 0) { ac.violations++; return EIO; }
        ac_take(&a);
        if (ac.mode == AC_EXTRACT_TWICE) ac.second_extract_rc = task->extract_data(task, &a);
    }
    if (ac.mode == AC_CANCEL_AFTER_2 && ac.received == 2) {
        self->producer->cancel(self->producer);
        self->producer->cancel(self->producer); /* idempotent */
        return 0;
    }
    ac.requested++;
    self->producer->request(self->producer, 1);
    return 0;
}

static void ac_on_error(struct ArrowAsyncDeviceStreamHandler* self, int code, const char* message, const char* md) {
    (void) self; (void) md;
    ac.error_code = code;
    strncpy(ac.message, message == NULL ? "" : message, sizeof ac.message - 1);
}

static void ac_release(struct ArrowAsyncDeviceStreamHandler* self) {
    pthread_mutex_lock(&ac.mu);
    ac.released++;
    self->release = NULL;
    pthread_cond_broadcast(&ac.cv);
    pthread_mutex_unlock(&ac.mu);
}

struct ArrowAsyncDeviceStreamHandler* ac_make(int window, int mode) {
    memset(&ac.h, 0, sizeof ac.h);
    ac.mode = mode;
    ac.window = window;
    ac.received = ac.requested = ac.violations = ac.ended = ac.released = ac.error_code = 0;
    ac.second_extract_rc = 0;
    ac.sum = 0;
    ac.n_deferred = 0;
    ac.message[0] = 0;
    ac.h.on_schema = ac_on_schema;
    ac.h.on_next_task = ac_on_next_task;
    ac.h.on_error = ac_on_error;
    ac.h.release = ac_release;
    return &ac.h;
}

/* Waits (up to seconds) for the handler's release; returns how many releases came. */
int ac_await_release(int seconds) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += seconds;
    pthread_mutex_lock(&ac.mu);
    while (ac.released == 0 && pthread_cond_timedwait(&ac.cv, &ac.mu, &t) == 0) {}
    int r = ac.released;
    pthread_mutex_unlock(&ac.mu);
    return r;
}

/* Requests one more and extracts each deferred task now (after the release): returns how many failed. */
int ac_drain(void) {
    int failed = 0;
    for (int i = 0; i < ac.n_deferred; i++) {
        struct ArrowDeviceArray a;
        /* as Arrow C++'s consumer does: request for a task taken before the release (the producer must still
           be valid while it has tasks out; the request is a no-op after the end) */
        ac.h.producer->request(ac.h.producer, 1);
        if (ac.deferred[i].extract_data(&ac.deferred[i], &a) != 0) failed++;
        else ac_take(&a);
    }
    ac.n_deferred = 0;
    return failed;
}

long ac_sum(void) { return ac.sum; }
int ac_received(void) { return ac.received; }
int ac_violations(void) { return ac.violations; }
int ac_ended(void) { return ac.ended; }
int ac_error_code(void) { return ac.error_code; }
const char* ac_message(void) { return ac.message; }
int ac_second_extract_rc(void) { return ac.second_extract_rc; }
