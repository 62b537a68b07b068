package org.devicebridge.arrow.cuda;

import java.util.List;
import java.util.Locale;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.NativeHandle;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.DeviceBuffer;

/**
 * An Arrow array (usually a record batch: a struct array) whose buffers are in CUDA device memory: the
 * schema, a tree of {@link ArrayNode}s with every buffer's device address ({@link ArrayNode#bufferPointer})
 * and byte length ({@link ArrayNode#bufferLength}, {@code -1} where an import at
 * {@link ValidationLevel#MINIMAL} did not establish it), and the device memory it references.
 *
 * <p>Made by {@link CudaArrow#upload} and {@link CudaArrow#copy} (one packed device allocation per batch) or
 * {@link CudaArrow#importDeviceArray} (the producer's memory, released through the producer's
 * {@code release} when this handle and every export of it are closed). {@link #close()} drops this handle's
 * references: device memory still referenced by an export made with {@link CudaArrow#exportDeviceArray}
 * lives until that export is released. Data is ready for work queued on the stream given when the batch
 * was made; work on other streams must wait for that stream first.
 *
 * <p>Thread safety: the accessors may be called from any thread while the batch is live; {@code close()}
 * is idempotent and thread-safe. The handle owns its references to the device memory (and, for an import,
 * the producer's struct).
 */
public final class CudaArrowBatch extends NativeHandle {
    private final SchemaNode schema;
    private final ArrayNode root;
    private final Device device;
    private final List<DeviceBuffer> memory;
    private final ImportedArray imported;

    /**
     * @param what what the batch is, for its description (e.g. "uploaded Arrow batch")
     * @param device where its memory lives: a CUDA kind and the device ordinal
     */
    CudaArrowBatch(String what, SchemaNode schema, ArrayNode root, Device device, Holdings holdings) {
        super(describe(what, root, device.ordinal()), holdings.release());
        this.schema = schema;
        this.root = root;
        this.device = device;
        this.memory = List.copyOf(holdings.memory());
        this.imported = holdings.imported();
    }

    /**
     * What a batch holds: the device allocations its buffers lie in, the step that releases them (and the
     * producer's struct) when the batch is closed, and the imported struct behind an imported batch, for reading
     * it again ({@code null} for a batch this library built).
     */
    record Holdings(List<DeviceBuffer> memory, AutoCloseable release, ImportedArray imported) {}

    private static String describe(String what, ArrayNode root, int device) {
        return String.format(Locale.ROOT, "%s (%s, length %d, device %d)", what, root.type(), root.length(), device);
    }

    /** {@return the type of the array (for a record batch: a struct whose children are the columns)} */
    public SchemaNode schema() {
        return schema;
    }

    /**
     * {@return the root node: lengths, null counts, offsets, device addresses and byte lengths of every buffer}
     * The addresses are valid while this batch is live.
     *
     * @throws org.devicebridge.HandleClosedException if the batch was closed
     */
    public ArrayNode root() {
        ensureLive();
        return root;
    }

    /**
     * {@return where the memory lives, as Arrow's {@code device_type} and {@code device_id} name it: a kind of
     * {@link DeviceKind#CUDA}, {@link DeviceKind#CUDA_HOST} or {@link DeviceKind#CUDA_MANAGED}, and the CUDA
     * device ordinal ({@code Device.cuda(device().ordinal())} is the CUDA device its streams and events are of)}
     */
    public Device device() {
        return device;
    }

    /** {@return number of rows (the root's length)} */
    public long length() {
        return root.length();
    }

    /**
     * The imported struct behind this batch, or {@code null} for a batch this library built (an upload):
     * borrowed, live while this batch is; checked live.
     */
    ImportedArray imported() {
        ensureLive();
        return imported;
    }

    /**
     * {@return the device allocations this batch holds, each buffer lying inside one of them: borrowed, live
     * while this batch is (take a reference with {@link DeviceBuffer#retain()} to keep one longer); what CUDA
     * IPC shares, since it shares whole allocations}
     *
     * @throws org.devicebridge.HandleClosedException if the batch is closed
     */
    public List<DeviceBuffer> memory() {
        ensureLive();
        return memory;
    }
}
