// An Arrow C++ peer for the async device stream tests on the GPU machine, compiled with g++ at test time
// against the headers and libarrow inside the pyarrow wheel (AsyncArrowCppTest). Arrow C++ is the peer on
// both sides: ExportAsyncRecordBatchReader produces for the library's consumer, and
// CreateAsyncDeviceStreamHandler consumes from the library's producer. Batches are one int64 column "v",
// batch b holding PEER_LEN values b * 1000 + j. Plain C entry points, so the test binds them with FFM.
//
// The wheel is built without ARROW_CUDA, so Arrow C++ has no CUDA device of its own: for CUDA arrays the peer
// brings a minimal one (PeerCudaDevice, its memory manager, stream and sync event), handed to Arrow C++ through
// the DeviceMemoryMapper of CreateAsyncDeviceStreamHandler and through the memory manager of the buffers it
// exports. The CUDA driver is resolved with dlopen at first use, so the peer links without the CUDA toolkit
// and its CPU entry points work on machines without a driver.
#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/config.h>
#include <arrow/util/thread_pool.h>

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
constexpr int PEER_LEN = 1000;

void copy_error(const std::string& text, char* err, int len) {
  if (err != nullptr && len > 0) {
    std::strncpy(err, text.c_str(), static_cast<size_t>(len) - 1);
    err[len - 1] = 0;
  }
}

std::thread producer_thread;
std::string producer_error;

std::thread consumer_thread;
std::string consumer_error;
long long consumer_sum = 0;
int consumer_batches = 0;
ArrowAsyncDeviceStreamHandler* consumer_handler = nullptr;
// The consumer's own pool, shut down (its threads joined) in cpp_consume_join: Arrow's global CPU pool would
// keep threads that called into the JVM running into the process's exit.
std::shared_ptr<arrow::internal::ThreadPool> consumer_pool;

arrow::Result<std::shared_ptr<arrow::RecordBatch>> make_batch(const std::shared_ptr<arrow::Schema>& schema, int b) {
  arrow::Int64Builder builder;
  for (int j = 0; j < PEER_LEN; j++) {
    ARROW_RETURN_NOT_OK(builder.Append(static_cast<int64_t>(b) * 1000 + j));
  }
  ARROW_ASSIGN_OR_RAISE(auto values, builder.Finish());
  return arrow::RecordBatch::Make(schema, PEER_LEN, {values});
}

arrow::Status produce(ArrowAsyncDeviceStreamHandler* handler, int n) {
  auto schema = arrow::schema({arrow::field("v", arrow::int64())});
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int b = 0; b < n; b++) {
    ARROW_ASSIGN_OR_RAISE(auto batch, make_batch(schema, b));
    batches.push_back(batch);
  }
  return arrow::ExportAsyncRecordBatchReader(schema, arrow::MakeVectorGenerator(std::move(batches)),
                                             arrow::DeviceAllocationType::kCPU, handler)
      .status();
}

arrow::Status consume_cuda_batch(const std::shared_ptr<arrow::RecordBatch>& batch);

// Reads the handler's stream to its end; with `cuda`, the stream and every batch must be CUDA arrays.
arrow::Status consume(arrow::Future<arrow::AsyncRecordBatchGenerator> fut, bool cuda) {
  ARROW_ASSIGN_OR_RAISE(auto gen, fut.result());
  if (gen.schema->num_fields() != 1 || !gen.schema->field(0)->type()->Equals(arrow::int64())) {
    return arrow::Status::Invalid("unexpected schema ", gen.schema->ToString());
  }
  auto expected = cuda ? arrow::DeviceAllocationType::kCUDA : arrow::DeviceAllocationType::kCPU;
  if (gen.device_type != expected) {
    return arrow::Status::Invalid("expected the producer's device type ", static_cast<int>(expected),
                                  " but found ", static_cast<int>(gen.device_type));
  }
  for (;;) {
    // Kept in a local: result() refers into the future, which must outlive the copy out of it.
    auto next = gen.generator();
    ARROW_ASSIGN_OR_RAISE(auto item, next.result());
    if (item.batch == nullptr) {
      return arrow::Status::OK();
    }
    if (cuda) {
      ARROW_RETURN_NOT_OK(consume_cuda_batch(item.batch));
      consumer_batches++;
      continue;
    }
    ARROW_RETURN_NOT_OK(item.batch->ValidateFull());
    auto values = std::static_pointer_cast<arrow::Int64Array>(item.batch->column(0));
    for (int64_t j = 0; j < values->length(); j++) {
      consumer_sum += values->Value(j);
    }
    consumer_batches++;
  }
}
}  // namespace

// ---------------------------------------------------------------------------------------------------------
// CUDA arrays through the peer's own device

namespace {
// The driver API types the peer uses, declared here so that it builds without the CUDA toolkit.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
constexpr unsigned kEventDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING
constexpr unsigned kStreamNonBlocking = 0x1;   // CU_STREAM_NON_BLOCKING

struct Driver {
  std::string error;  // why the driver is unusable; empty when every entry point resolved and cuInit passed
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
};

template <typename F>
void resolve(void* lib, const char* name, F* fn, std::string* error) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (*fn == nullptr && error->empty()) *error = std::string("libcuda.so.1 lacks ") + name;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r{};
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      r.error = std::string("dlopen(libcuda.so.1): ") + (why != nullptr ? why : "unknown");
      return r;
    }
    // The versioned names are the ones cuda.h maps the plain names to.
    resolve(lib, "cuInit", &r.cuInit, &r.error);
    resolve(lib, "cuGetErrorName", &r.cuGetErrorName, &r.error);
    resolve(lib, "cuDeviceGet", &r.cuDeviceGet, &r.error);
    resolve(lib, "cuDevicePrimaryCtxRetain", &r.cuDevicePrimaryCtxRetain, &r.error);
    resolve(lib, "cuCtxPushCurrent_v2", &r.cuCtxPushCurrent, &r.error);
    resolve(lib, "cuCtxPopCurrent_v2", &r.cuCtxPopCurrent, &r.error);
    resolve(lib, "cuMemAlloc_v2", &r.cuMemAlloc, &r.error);
    resolve(lib, "cuMemFree_v2", &r.cuMemFree, &r.error);
    resolve(lib, "cuMemcpyHtoDAsync_v2", &r.cuMemcpyHtoDAsync, &r.error);
    resolve(lib, "cuMemcpyDtoH_v2", &r.cuMemcpyDtoH, &r.error);
    resolve(lib, "cuStreamCreate", &r.cuStreamCreate, &r.error);
    resolve(lib, "cuStreamDestroy_v2", &r.cuStreamDestroy, &r.error);
    resolve(lib, "cuStreamSynchronize", &r.cuStreamSynchronize, &r.error);
    resolve(lib, "cuStreamWaitEvent", &r.cuStreamWaitEvent, &r.error);
    resolve(lib, "cuEventCreate", &r.cuEventCreate, &r.error);
    resolve(lib, "cuEventDestroy_v2", &r.cuEventDestroy, &r.error);
    resolve(lib, "cuEventRecord", &r.cuEventRecord, &r.error);
    resolve(lib, "cuEventSynchronize", &r.cuEventSynchronize, &r.error);
    if (r.error.empty()) {
      CUresult rc = r.cuInit(0);
      if (rc != 0) r.error = "cuInit(0) returned CUresult " + std::to_string(rc);
    }
    return r;
  }();
  return d;
}

arrow::Status check(const char* call, CUresult rc) {
  if (rc == 0) return arrow::Status::OK();
  const char* name = nullptr;
  if (driver().cuGetErrorName == nullptr || driver().cuGetErrorName(rc, &name) != 0) name = nullptr;
  return arrow::Status::IOError("[", call, "] ", name != nullptr ? name : "CUDA error ", rc);
}

// What the test asserts after a stream: every device buffer the peer allocated freed, every event it created
// destroyed, and how often a sync event was waited on.
std::atomic<int> buffers_allocated{0};
std::atomic<int> buffers_freed{0};
std::atomic<int> events_created{0};
std::atomic<int> events_destroyed{0};
std::atomic<int> event_waits{0};

// The primary context of each device the peer touched (retained for the process's life, as the library does),
// made current around each driver call: buffers and events may be freed on any thread, a JVM thread included,
// whose own current context is put back afterwards.
class ContextScope {
 public:
  static arrow::Result<CUcontext> primary(int64_t device_id) {
    if (!driver().error.empty()) return arrow::Status::IOError(driver().error);
    static std::mutex mutex;
    static std::map<int64_t, CUcontext> contexts;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = contexts.find(device_id);
    if (it != contexts.end()) return it->second;
    CUdevice dev;
    ARROW_RETURN_NOT_OK(check("cuDeviceGet", driver().cuDeviceGet(&dev, static_cast<int>(device_id))));
    CUcontext ctx;
    ARROW_RETURN_NOT_OK(check("cuDevicePrimaryCtxRetain", driver().cuDevicePrimaryCtxRetain(&ctx, dev)));
    contexts[device_id] = ctx;
    return ctx;
  }

  explicit ContextScope(CUcontext ctx) : pushed_(driver().cuCtxPushCurrent(ctx) == 0) {}
  ~ContextScope() {
    CUcontext popped;
    if (pushed_) driver().cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_;
};

// Wraps a CUevent* (the C device interface's sync_event for CUDA); the release function, if any, destroys it.
class PeerCudaEvent : public arrow::Device::SyncEvent {
 public:
  PeerCudaEvent(CUcontext ctx, CUevent* event, release_fn_t release)
      : SyncEvent(event, release ? std::move(release) : [](void*) {}), ctx_(ctx) {}

  arrow::Status Wait() override {
    event_waits++;
    ContextScope scope(ctx_);
    return check("cuEventSynchronize", driver().cuEventSynchronize(*static_cast<CUevent*>(get_raw())));
  }

  arrow::Status Record(const arrow::Device::Stream& stream) override {
    ContextScope scope(ctx_);
    auto raw = static_cast<CUstream>(const_cast<void*>(stream.get_raw()));
    return check("cuEventRecord", driver().cuEventRecord(*static_cast<CUevent*>(get_raw()), raw));
  }

 private:
  CUcontext ctx_;
};

class PeerCudaStream : public arrow::Device::Stream {
 public:
  PeerCudaStream(CUcontext ctx, CUstream stream, release_fn_t release)
      : Stream(stream, release ? std::move(release) : [](void*) {}), ctx_(ctx) {}

  arrow::Status WaitEvent(const arrow::Device::SyncEvent& event) override {
    auto* raw = static_cast<CUevent*>(const_cast<arrow::Device::SyncEvent&>(event).get_raw());
    if (raw == nullptr) return arrow::Status::OK();
    ContextScope scope(ctx_);
    return check("cuStreamWaitEvent", driver().cuStreamWaitEvent(raw_stream(), *raw, 0));
  }

  arrow::Status Synchronize() const override {
    ContextScope scope(ctx_);
    return check("cuStreamSynchronize", driver().cuStreamSynchronize(raw_stream()));
  }

 private:
  CUstream raw_stream() const { return static_cast<CUstream>(const_cast<void*>(get_raw())); }
  CUcontext ctx_;
};

// A CUDA device as Arrow C++ sees it: device_type() kCUDA and the ordinal as device_id, which is what
// ExportDeviceRecordBatch writes into the ArrowDeviceArray.
class PeerCudaDevice : public arrow::Device {
 public:
  PeerCudaDevice(int64_t id, CUcontext ctx) : Device(/*is_cpu=*/false), id_(id), ctx_(ctx) {}

  const char* type_name() const override { return "peer_cuda"; }
  std::string ToString() const override { return "PeerCudaDevice(" + std::to_string(id_) + ")"; }
  bool Equals(const Device& other) const override {
    return std::strcmp(other.type_name(), type_name()) == 0 && other.device_id() == id_;
  }
  int64_t device_id() const override { return id_; }
  arrow::DeviceAllocationType device_type() const override { return arrow::DeviceAllocationType::kCUDA; }
  std::shared_ptr<arrow::MemoryManager> default_memory_manager() override;

  arrow::Result<std::shared_ptr<Stream>> MakeStream() override { return MakeStream(kStreamNonBlocking); }
  arrow::Result<std::shared_ptr<Stream>> MakeStream(unsigned int flags) override {
    ContextScope scope(ctx_);
    CUstream stream;
    ARROW_RETURN_NOT_OK(check("cuStreamCreate", driver().cuStreamCreate(&stream, flags)));
    CUcontext ctx = ctx_;
    return std::make_shared<PeerCudaStream>(ctx, stream, [ctx](void* s) {
      ContextScope inner(ctx);
      driver().cuStreamDestroy(static_cast<CUstream>(s));
    });
  }
  arrow::Result<std::shared_ptr<Stream>> WrapStream(void* stream, Stream::release_fn_t release) override {
    return std::make_shared<PeerCudaStream>(ctx_, static_cast<CUstream>(stream), std::move(release));
  }

  CUcontext context() const { return ctx_; }

 private:
  int64_t id_;
  CUcontext ctx_;
};

// Device memory from cuMemAlloc, freed (and counted) when Arrow drops the last reference to the buffer.
class PeerCudaBuffer : public arrow::Buffer {
 public:
  PeerCudaBuffer(CUdeviceptr ptr, int64_t size, std::shared_ptr<arrow::MemoryManager> mm, CUcontext ctx)
      : Buffer(reinterpret_cast<const uint8_t*>(ptr), size, std::move(mm)), ptr_(ptr), ctx_(ctx) {
    buffers_allocated++;
  }
  ~PeerCudaBuffer() override {
    ContextScope scope(ctx_);
    if (driver().cuMemFree(ptr_) == 0) buffers_freed++;
  }

 private:
  CUdeviceptr ptr_;
  CUcontext ctx_;
};

class PeerCudaMemoryManager : public arrow::MemoryManager {
 public:
  explicit PeerCudaMemoryManager(const std::shared_ptr<PeerCudaDevice>& device)
      : MemoryManager(device), ctx_(device->context()) {}

  arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> GetBufferReader(
      std::shared_ptr<arrow::Buffer>) override {
    return arrow::Status::NotImplemented("the peer's CUDA device reads buffers only by copying them");
  }
  arrow::Result<std::shared_ptr<arrow::io::OutputStream>> GetBufferWriter(
      std::shared_ptr<arrow::Buffer>) override {
    return arrow::Status::NotImplemented("the peer's CUDA device does not write into buffers");
  }
  arrow::Result<std::unique_ptr<arrow::Buffer>> AllocateBuffer(int64_t) override {
    return arrow::Status::NotImplemented("the peer allocates its CUDA buffers itself");
  }

  // An event created here is destroyed with the last reference to the SyncEvent (the batch's, and the
  // exported array's private data after ExportDeviceRecordBatch).
  arrow::Result<std::shared_ptr<arrow::Device::SyncEvent>> MakeDeviceSyncEvent() override {
    ContextScope scope(ctx_);
    auto event = std::make_unique<CUevent>();
    ARROW_RETURN_NOT_OK(check("cuEventCreate", driver().cuEventCreate(event.get(), kEventDisableTiming)));
    events_created++;
    CUcontext ctx = ctx_;
    return std::make_shared<PeerCudaEvent>(ctx_, event.release(), [ctx](void* raw) {
      auto* e = static_cast<CUevent*>(raw);
      ContextScope inner(ctx);
      if (driver().cuEventDestroy(*e) == 0) events_destroyed++;
      delete e;
    });
  }

  // The importer passes the producer's sync_event (a CUevent*) with a no-op release: the event stays the
  // producer's, alive until the imported array is released.
  arrow::Result<std::shared_ptr<arrow::Device::SyncEvent>> WrapDeviceSyncEvent(
      void* sync_event, arrow::Device::SyncEvent::release_fn_t release) override {
    return std::make_shared<PeerCudaEvent>(ctx_, static_cast<CUevent*>(sync_event), std::move(release));
  }

 protected:
  // Copies to the CPU with cuMemcpyDtoH, for RecordBatch::CopyTo(default_cpu_memory_manager()); the caller
  // has waited on the batch's sync event first. Other destinations are not supported (nullptr says so).
  arrow::Result<std::shared_ptr<arrow::Buffer>> CopyBufferTo(
      const std::shared_ptr<arrow::Buffer>& buf, const std::shared_ptr<arrow::MemoryManager>& to) override {
    if (!to->is_cpu()) return nullptr;
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> host, arrow::AllocateBuffer(buf->size()));
    if (buf->size() > 0) {
      ContextScope scope(ctx_);
      ARROW_RETURN_NOT_OK(check("cuMemcpyDtoH", driver().cuMemcpyDtoH(host->mutable_data(), buf->address(),
                                                                       static_cast<size_t>(buf->size()))));
    }
    return host;
  }

 private:
  CUcontext ctx_;
};

std::shared_ptr<arrow::MemoryManager> PeerCudaDevice::default_memory_manager() {
  return std::make_shared<PeerCudaMemoryManager>(std::static_pointer_cast<PeerCudaDevice>(shared_from_this()));
}

// One memory manager per device ordinal, kept for the process's life.
arrow::Result<std::shared_ptr<arrow::MemoryManager>> peer_cuda_memory_manager(int64_t device_id) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<arrow::MemoryManager>> managers;
  ARROW_ASSIGN_OR_RAISE(CUcontext ctx, ContextScope::primary(device_id));
  std::lock_guard<std::mutex> lock(mutex);
  auto& mm = managers[device_id];
  if (mm == nullptr) mm = std::make_shared<PeerCudaDevice>(device_id, ctx)->default_memory_manager();
  return mm;
}

// The DeviceMemoryMapper handed to CreateAsyncDeviceStreamHandler: CUDA arrays onto the peer's device.
arrow::Result<std::shared_ptr<arrow::MemoryManager>> peer_mapper(ArrowDeviceType type, int64_t device_id) {
  if (type == ARROW_DEVICE_CUDA) return peer_cuda_memory_manager(device_id);
  if (type == ARROW_DEVICE_CPU) return arrow::default_cpu_memory_manager();
  return arrow::Status::NotImplemented("the peer maps only CPU and CUDA arrays, not device type ", type);
}

// Batch b in device memory: filled on the peer's stream, with an event recorded after the fill as its sync
// event, so that a consumer that waits on the event reads the values.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> make_cuda_batch(const std::shared_ptr<arrow::Schema>& schema,
                                                                   int b, arrow::Device::Stream& stream) {
  ARROW_ASSIGN_OR_RAISE(auto mm, peer_cuda_memory_manager(0));
  CUcontext ctx = std::static_pointer_cast<PeerCudaDevice>(mm->device())->context();
  std::vector<int64_t> host(PEER_LEN);
  for (int j = 0; j < PEER_LEN; j++) host[j] = static_cast<int64_t>(b) * 1000 + j;
  const int64_t bytes = PEER_LEN * static_cast<int64_t>(sizeof(int64_t));
  std::shared_ptr<arrow::Buffer> values;
  {
    ContextScope scope(ctx);
    CUdeviceptr ptr;
    ARROW_RETURN_NOT_OK(check("cuMemAlloc", driver().cuMemAlloc(&ptr, static_cast<size_t>(bytes))));
    values = std::make_shared<PeerCudaBuffer>(ptr, bytes, mm, ctx);
    // From pageable memory the call returns once the source was staged, so `host` may go right after.
    ARROW_RETURN_NOT_OK(check("cuMemcpyHtoDAsync",
                              driver().cuMemcpyHtoDAsync(ptr, host.data(), static_cast<size_t>(bytes),
                                                         static_cast<CUstream>(const_cast<void*>(stream.get_raw())))));
  }
  ARROW_ASSIGN_OR_RAISE(auto event, mm->MakeDeviceSyncEvent());
  ARROW_RETURN_NOT_OK(event->Record(stream));
  auto column = arrow::ArrayData::Make(arrow::int64(), PEER_LEN, {nullptr, values}, /*null_count=*/0);
  return arrow::RecordBatch::Make(schema, PEER_LEN, {column}, arrow::DeviceAllocationType::kCUDA, event);
}

arrow::Status produce_cuda(ArrowAsyncDeviceStreamHandler* handler, int n) {
  auto schema = arrow::schema({arrow::field("v", arrow::int64())});
  ARROW_ASSIGN_OR_RAISE(auto mm, peer_cuda_memory_manager(0));
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Device::Stream> stream, mm->device()->MakeStream());
  // Batches are made on demand and not kept here: once the consumer released one, its memory is gone.
  auto next = std::make_shared<int>(0);
  arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>> gen =
      [schema, stream, next, n]() -> arrow::Future<std::shared_ptr<arrow::RecordBatch>> {
    if (*next >= n) return arrow::AsyncGeneratorEnd<std::shared_ptr<arrow::RecordBatch>>();
    return arrow::Future<std::shared_ptr<arrow::RecordBatch>>::MakeFinished(
        make_cuda_batch(schema, (*next)++, *stream));
  };
  return arrow::ExportAsyncRecordBatchReader(schema, std::move(gen), arrow::DeviceAllocationType::kCUDA, handler)
      .status();
}

// Reads CUDA batches the way a CUDA consumer of Arrow C++ would: wait on the batch's sync event (the peer's
// SyncEvent around the producer's CUevent), copy to the CPU (cuMemcpyDtoH through the peer's memory manager),
// validate the copy, sum.
arrow::Status consume_cuda_batch(const std::shared_ptr<arrow::RecordBatch>& batch) {
  if (batch->device_type() != arrow::DeviceAllocationType::kCUDA) {
    return arrow::Status::Invalid("expected a CUDA batch but found device type ",
                                  static_cast<int>(batch->device_type()));
  }
  const auto& values = batch->column_data(0)->buffers[1];
  if (values == nullptr || values->device_type() != arrow::DeviceAllocationType::kCUDA ||
      std::strcmp(values->device()->type_name(), "peer_cuda") != 0) {
    return arrow::Status::Invalid("expected the values on the peer's CUDA device but found ",
                                  values == nullptr ? std::string("none") : values->device()->ToString());
  }
  const auto& event = batch->GetSyncEvent();
  if (event == nullptr) return arrow::Status::Invalid("a CUDA batch without a sync event");
  ARROW_RETURN_NOT_OK(event->Wait());
  ARROW_ASSIGN_OR_RAISE(auto host, batch->CopyTo(arrow::default_cpu_memory_manager()));
  ARROW_RETURN_NOT_OK(host->ValidateFull());
  auto column = std::static_pointer_cast<arrow::Int64Array>(host->column(0));
  for (int64_t j = 0; j < column->length(); j++) consumer_sum += column->Value(j);
  return arrow::Status::OK();
}
}  // namespace

namespace {
// Makes a handler filled by CreateAsyncDeviceStreamHandler (with `mapper` for device arrays) and starts
// reading from it on a thread.
ArrowAsyncDeviceStreamHandler* consume_start(int queue, bool cuda, arrow::DeviceMemoryMapper mapper) {
  consumer_error.clear();
  consumer_sum = 0;
  consumer_batches = 0;
  consumer_handler = new ArrowAsyncDeviceStreamHandler();
  std::memset(consumer_handler, 0, sizeof *consumer_handler);
  consumer_pool = arrow::internal::ThreadPool::Make(2).ValueOrDie();
  auto fut = arrow::CreateAsyncDeviceStreamHandler(consumer_handler, consumer_pool.get(),
                                                   static_cast<uint64_t>(queue), std::move(mapper));
  consumer_thread = std::thread([fut, cuda] {
    arrow::Status st = consume(fut, cuda);
    if (!st.ok()) consumer_error = st.ToString();
  });
  return consumer_handler;
}
}  // namespace

extern "C" {

int peer_arrow_version(void) { return ARROW_VERSION; }

int peer_has_cuda(void) {
#ifdef ARROW_CUDA
  return 1;
#else
  return 0;
#endif
}

int peer_len(void) { return PEER_LEN; }

// Copies why the peer's CUDA device is unusable into err; 0 when it is usable (the driver loaded, device 0 found).
int peer_cuda_error(char* err, int len) {
  auto mm = peer_cuda_memory_manager(0);
  copy_error(mm.ok() ? std::string() : mm.status().ToString(), err, len);
  return mm.ok() ? 0 : -1;
}

// The peer's CUDA counters: device buffers allocated and freed, events created and destroyed, sync event waits.
void peer_cuda_counters(int* out) {
  out[0] = buffers_allocated.load();
  out[1] = buffers_freed.load();
  out[2] = events_created.load();
  out[3] = events_destroyed.load();
  out[4] = event_waits.load();
}

// Starts Arrow C++'s producer on its own thread (it blocks while the consumer's demand is exhausted).
void cpp_produce_start(ArrowAsyncDeviceStreamHandler* handler, int n) {
  producer_error.clear();
  producer_thread = std::thread([handler, n] {
    arrow::Status st = produce(handler, n);
    if (!st.ok()) producer_error = st.ToString();
  });
}

// Starts Arrow C++'s producer of CUDA batches on its peer device (the driver must be usable: see
// peer_cuda_error).
void cpp_produce_cuda_start(ArrowAsyncDeviceStreamHandler* handler, int n) {
  producer_error.clear();
  producer_thread = std::thread([handler, n] {
    arrow::Status st = produce_cuda(handler, n);
    if (!st.ok()) producer_error = st.ToString();
  });
}

// Joins the producer; 0 when it finished cleanly, else -1 with its status in err.
int cpp_produce_join(char* err, int len) {
  producer_thread.join();
  copy_error(producer_error, err, len);
  return producer_error.empty() ? 0 : -1;
}

// Starts Arrow C++'s consumer of CPU arrays (the default mapper: CPU only).
ArrowAsyncDeviceStreamHandler* cpp_consume_start(int queue) {
  return consume_start(queue, false, arrow::DefaultDeviceMemoryMapper);
}

// Starts Arrow C++'s consumer of CUDA arrays, mapped onto the peer's CUDA device; NULL (with the reason in
// err) without a usable CUDA driver.
ArrowAsyncDeviceStreamHandler* cpp_consume_cuda_start(int queue, char* err, int len) {
  auto mm = peer_cuda_memory_manager(0);
  if (!mm.ok()) {
    copy_error(mm.status().ToString(), err, len);
    return nullptr;
  }
  return consume_start(queue, true, peer_mapper);
}

// Joins the consumer (call after the handler was released) and frees the handler struct.
int cpp_consume_join(long long* sum, int* batches, char* err, int len) {
  consumer_thread.join();
  arrow::Status down = consumer_pool->Shutdown(/*wait=*/true);
  consumer_pool.reset();
  if (!down.ok() && consumer_error.empty()) consumer_error = down.ToString();
  *sum = consumer_sum;
  *batches = consumer_batches;
  copy_error(consumer_error, err, len);
  delete consumer_handler;
  consumer_handler = nullptr;
  return consumer_error.empty() ? 0 : -1;
}
}
