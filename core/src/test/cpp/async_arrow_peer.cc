// An Arrow C++ peer for the async device stream tests on the GPU machine, compiled with g++ at test time
// against the headers and libarrow inside the pyarrow wheel (AsyncArrowCppTest). Arrow C++ is the peer on
// both sides: ExportAsyncRecordBatchReader produces for the library's consumer, and
// CreateAsyncDeviceStreamHandler consumes from the library's producer. Batches are one int64 column "v",
// batch b holding PEER_LEN values b * 1000 + j. Plain C entry points, so the test binds them with FFM.
#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/config.h>
#include <arrow/util/thread_pool.h>

#include <cstring>
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

arrow::Status consume(arrow::Future<arrow::AsyncRecordBatchGenerator> fut) {
  ARROW_ASSIGN_OR_RAISE(auto gen, fut.result());
  if (gen.schema->num_fields() != 1 || !gen.schema->field(0)->type()->Equals(arrow::int64())) {
    return arrow::Status::Invalid("unexpected schema ", gen.schema->ToString());
  }
  for (;;) {
    // Kept in a local: result() refers into the future, which must outlive the copy out of it.
    auto next = gen.generator();
    ARROW_ASSIGN_OR_RAISE(auto item, next.result());
    if (item.batch == nullptr) {
      return arrow::Status::OK();
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

// Starts Arrow C++'s producer on its own thread (it blocks while the consumer's demand is exhausted).
void cpp_produce_start(ArrowAsyncDeviceStreamHandler* handler, int n) {
  producer_error.clear();
  producer_thread = std::thread([handler, n] {
    arrow::Status st = produce(handler, n);
    if (!st.ok()) producer_error = st.ToString();
  });
}

// Joins the producer; 0 when it finished cleanly, else -1 with its status in err.
int cpp_produce_join(char* err, int len) {
  producer_thread.join();
  copy_error(producer_error, err, len);
  return producer_error.empty() ? 0 : -1;
}

// Makes a handler filled by CreateAsyncDeviceStreamHandler and starts reading from it on a thread.
ArrowAsyncDeviceStreamHandler* cpp_consume_start(int queue) {
  consumer_error.clear();
  consumer_sum = 0;
  consumer_batches = 0;
  consumer_handler = new ArrowAsyncDeviceStreamHandler();
  std::memset(consumer_handler, 0, sizeof *consumer_handler);
  consumer_pool = arrow::internal::ThreadPool::Make(2).ValueOrDie();
  auto fut = arrow::CreateAsyncDeviceStreamHandler(consumer_handler, consumer_pool.get(),
                                                   static_cast<uint64_t>(queue));
  consumer_thread = std::thread([fut] {
    arrow::Status st = consume(fut);
    if (!st.ok()) consumer_error = st.ToString();
  });
  return consumer_handler;
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
