package org.devicebridge.arrow.java;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;

/**
 * Zero-copy conversions between DLPack 1-D tensors and Arrow Java fixed-width vectors (int8..int64,
 * uint8..uint64, float16/32/64). Needs arrow-vector and arrow-memory-core on the class/module path.
 *
 * <p>Arrow's validity bitmap has no DLPack equivalent, so vectors with nulls are refused, as are Arrow's
 * bit-packed booleans (DLPack booleans take a byte each).
 *
 * <p>Stateless and thread-safe: its methods may run concurrently on any threads; each says who owns what
 * after a return and after a throw.
 */
public final class DLPackArrow {
    private DLPackArrow() {}

    /**
     * Exports the values of {@code vector} as a 1-D {@code DLManagedTensorVersioned} on the CPU without
     * copying. The export keeps a reference to the vector's data buffer (retained now, released by the
     * deleter), so the memory stays valid even if the vector is closed first; the consumer must not write
     * to it while the vector is in use.
     *
     * @param vector the vector to export; the caller keeps owning it
     * @return a live handle. After a return the caller still owns {@code vector} and owns the returned
     *         handle (see {@link ExportedTensor}); after a throw nothing was retained or exported.
     * @throws UnsupportedFeatureException for a type without a DLPack equivalent, or a vector with nulls
     */
    public static ExportedTensor exportVector(FieldVector vector) {
        requireNativeAccess();
        requireArrowJava("DLPackArrow.exportVector");
        return Impl.exportVector(vector);
    }

    /**
     * Exports every column of {@code root} as a 1-D tensor (see {@link #exportVector}), in schema order.
     *
     * @param root the batch; the caller keeps owning it
     * @return one live handle per column, owned by the caller. After a throw no export remains (those made
     *         before the failing column are closed) and the caller still owns {@code root}.
     */
    public static List<ExportedTensor> exportTable(VectorSchemaRoot root) {
        requireNativeAccess();
        requireArrowJava("DLPackArrow.exportTable");
        return Impl.exportTable(root);
    }

    /**
     * Turns a 1-D, compact, writable, host-accessible tensor into an Arrow vector without copying its data:
     * the vector's data buffer is the tensor's memory (wrapped through
     * {@link BufferAllocator#wrapForeignAllocation}), and releasing that buffer calls the tensor's deleter
     * exactly once. The vector gets an all-valid validity bitmap of its own.
     *
     * @param name the field name of the new vector
     * @param tensor the imported tensor; consumed by this call
     * @param allocator wraps the tensor memory and allocates the validity bitmap; the caller keeps owning it
     * @return a vector owned by the caller; {@code tensor} is CONSUMED. After a throw the tensor has already
     *         been released (closed), whatever the exception, as after every import.
     * @throws UnsupportedFeatureException for ndim != 1, non-compact strides, read-only or device memory,
     *         more than {@code Integer.MAX_VALUE} elements, or a dtype without an Arrow equivalent
     */
    public static FieldVector importVector(ImportedTensor tensor, BufferAllocator allocator, String name) {
        requireNativeAccess();
        requireArrowJava("DLPackArrow.importVector");
        return Impl.importVector(tensor, allocator, name);
    }

    /**
     * The bodies, which link against Arrow Java: in a class of their own, so that verifying {@code DLPackArrow}
     * loads no Arrow Java class and a JVM without Arrow Java gets the typed error first.
     */
    private static final class Impl {
        private Impl() {}

        static ExportedTensor exportVector(FieldVector vector) {
            Objects.requireNonNull(vector, "vector");
            String path = "vector '" + vector.getName() + "'";
            DType dtype = dtypeOf(vector.getField().getType(), path);
            int n = vector.getValueCount();
            if (vector.getNullCount() != 0) {
                throw new UnsupportedFeatureException(path, vector.getNullCount()
                        + " null values; DLPack has no validity bitmap");
            }
            ArrowBuf buf = vector.getDataBuffer();
            long bytes = Math.multiplyExact((long) n, dtype.byteSize());
            if (buf.capacity() < bytes) {
                throw new UnsupportedFeatureException(path, "data buffer holds " + buf.capacity() + " bytes but "
                        + n + " values need " + bytes);
            }
            MemorySegment data = bytes == 0 ? MemorySegment.ofAddress(buf.memoryAddress())
                    : MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(bytes);
            buf.getReferenceManager().retain();
            try {
                return DLPack.exportVersioned(TensorSpec.of(data, dtype, n), () -> buf.getReferenceManager().release());
            } catch (RuntimeException | Error e) {
                buf.getReferenceManager().release();
                throw e;
            }
        }

        static List<ExportedTensor> exportTable(VectorSchemaRoot root) {
            Objects.requireNonNull(root, "root");
            List<ExportedTensor> out = new ArrayList<>();
            try {
                for (FieldVector v : root.getFieldVectors()) {
                    out.add(exportVector(v));
                }
                return List.copyOf(out);
            } catch (RuntimeException | Error e) {
                out.forEach(ExportedTensor::close);
                throw e;
            }
        }

        static FieldVector importVector(ImportedTensor tensor, BufferAllocator allocator, String name) {
            Objects.requireNonNull(tensor, "tensor");
            ArrowType type;
            try {
                Objects.requireNonNull(allocator, "allocator");
                Objects.requireNonNull(name, "name");
                type = checkImportable(tensor);
            } catch (RuntimeException | Error e) {
                tensor.close(); // the one rule of every import: the input is released on every throw
                throw e;
            }
            MemorySegment seg = tensor.segment();
            int n = (int) tensor.elementCount();
            long size = seg.byteSize();
            long address = seg.address();
            Runnable release = tensor.detach();
            ArrowBuf data;
            try {
                data = allocator.wrapForeignAllocation(Foreign.allocation(size, address, release));
            } catch (RuntimeException | Error e) {
                release.run();
                throw e;
            }
            FieldVector v = null;
            try {
                v = new Field(name, FieldType.notNullable(type), null).createVector(allocator);
                v.loadFieldBuffers(new ArrowFieldNode(n, 0), java.util.Arrays.asList(allocator.getEmpty(), data));
                return v;
            } catch (RuntimeException | Error e) {
                if (v != null) {
                    v.close();
                }
                throw e;
            } finally {
                data.getReferenceManager().release(); // the vector holds its own reference (or none, after a throw)
            }
        }
        /** The Arrow type of a tensor {@link #importVector} can take; throws for one it cannot. */
        private static ArrowType checkImportable(ImportedTensor tensor) {
            String path = "tensor";
            if (tensor.ndim() != 1) {
                throw new UnsupportedFeatureException(path + ".ndim", "expected a 1-D tensor but found ndim " + tensor.ndim());
            }
            if (!tensor.isCompact()) {
                throw new UnsupportedFeatureException(path + ".strides", "expected stride 1 but found " + tensor.strides()[0]);
            }
            if (tensor.isReadOnly()) {
                throw new UnsupportedFeatureException(path + ".flags", "a read-only tensor cannot back a (writable) Arrow vector");
            }
            if (!tensor.device().kind().isHostAccessible()) {
                throw new UnsupportedFeatureException(path + ".device", "Arrow Java needs host memory but found "
                        + tensor.device().kind());
            }
            if (tensor.elementCount() > Integer.MAX_VALUE) {
                throw new UnsupportedFeatureException(path + ".shape", "Arrow vectors hold at most 2^31-1 values but found "
                        + tensor.elementCount());
            }
            return arrowTypeOf(tensor.dtype(), path + ".dtype");
        }

        static DType dtypeOf(ArrowType type, String path) {
            if (type instanceof ArrowType.Int i) {
                return switch (i.getBitWidth()) {
                    case 8 -> i.getIsSigned() ? DType.INT8 : DType.UINT8;
                    case 16 -> i.getIsSigned() ? DType.INT16 : DType.UINT16;
                    case 32 -> i.getIsSigned() ? DType.INT32 : DType.UINT32;
                    case 64 -> i.getIsSigned() ? DType.INT64 : DType.UINT64;
                    default -> throw new UnsupportedFeatureException(path, "integer width " + i.getBitWidth());
                };
            }
            if (type instanceof ArrowType.FloatingPoint f) {
                return switch (f.getPrecision()) {
                    case HALF -> DType.FLOAT16;
                    case SINGLE -> DType.FLOAT32;
                    case DOUBLE -> DType.FLOAT64;
                };
            }
            if (type instanceof ArrowType.Bool) {
                throw new UnsupportedFeatureException(path, "Arrow booleans are bit-packed; DLPack booleans take a byte each");
            }
            throw new UnsupportedFeatureException(path, "Arrow type " + type + " has no DLPack equivalent");
        }

        static ArrowType arrowTypeOf(DType dtype, String path) {
            if (dtype.code() == DType.KDL_INT || dtype.code() == DType.KDL_UINT) {
                return new ArrowType.Int(dtype.bits(), dtype.code() == DType.KDL_INT);
            }
            if (dtype.equals(DType.FLOAT16)) {
                return new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
            }
            if (dtype.equals(DType.FLOAT32)) {
                return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            }
            if (dtype.equals(DType.FLOAT64)) {
                return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            }
            throw new UnsupportedFeatureException(path, dtype + " has no fixed-width Arrow equivalent");
        }

        /**
         * Memory Arrow Java does not own, freed by {@code release}. In a class of its own, so that verifying
         * {@code DLPackArrow} does not load Arrow Java (a JVM without it gets the typed error first).
         */
        private static final class Foreign {
            private Foreign() {}

            static ForeignAllocation allocation(long size, long address, Runnable release) {
                return new ForeignAllocation(size, address) {
                    @Override
                    protected void release0() {
                        release.run();
                    }
                };
            }
        }
    }
}
