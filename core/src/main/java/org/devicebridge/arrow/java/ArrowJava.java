package org.devicebridge.arrow.java;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Iterator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayData;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;

/**
 * Arrow Java and the Arrow C Data, Device and Stream interfaces, in one call per job, as Arrow Java's own
 * {@code org.apache.arrow.c.Data} does: export a schema, field, vector or root ({@code export…}), and import
 * into a root or a vector ({@link #importVectorSchemaRoot(BufferAllocator, MemorySegment, MemorySegment,
 * DictionaryProvider.MapDictionaryProvider)}, {@link #importFieldVector(BufferAllocator, MemorySegment,
 * MemorySegment, DictionaryProvider.MapDictionaryProvider)}), or from an array already imported and viewed
 * with {@link org.devicebridge.arrow.ArrowC}. Arrow Java's memory on the FFM API is
 * {@link ArrowMemory} (plain, and pooled: recycled blocks).
 *
 * <p><b>Export.</b> Zero-copy export of Arrow Java data through the Arrow C Data Interface ({@code ArrowSchema},
 * {@code ArrowArray}), the C Device Data Interface ({@code ArrowDeviceArray} with
 * {@code device_type = ARROW_DEVICE_CPU}) and the C Stream Interface ({@code ArrowArrayStream},
 * {@code ArrowDeviceArrayStream}).
 *
 * <p>Each method fills a struct the caller allocated (a native {@link MemorySegment}, at least the struct's
 * size; a zero-length segment such as {@code MemorySegment.ofAddress(p)} is taken to point at a whole struct),
 * as a native engine that hands over its own struct needs. For a struct this library allocates, owned by a
 * handle, pass the call to the matching {@code allocate…} of {@link org.devicebridge.arrow.ExportedStruct}:
 * {@code ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null))}
 * (after a throw of the call the struct is freed and nothing is held). The struct's
 * {@code release} callback belongs to the consumer: it must be called exactly once, from any thread,
 * and frees everything the export holds. Buffers are not copied: the exported pointers are the
 * {@code ArrowBuf}s' own memory, and each export holds a reference to every buffer it points to, so the
 * data stays valid after the Java vectors are closed or reloaded, until the consumer releases it. The
 * exported data must not be modified while exported.
 *
 * <p>Dictionary-encoded vectors need the {@link DictionaryProvider} that holds their dictionaries
 * (an {@link ArrowReader} is one); every export takes it, {@code null} where no field is dictionary-encoded.
 * Extension types are exported as their storage type with the field's metadata
 * as Arrow Java holds it ({@code ARROW:extension:name} / {@code ARROW:extension:metadata} included), as arrow-c-data writes it. Exported arrays always
 * have {@code offset = 0}. Decimal32 and decimal64, which Arrow Java keeps in its 16-byte {@code DecimalVector}
 * under a 32- or 64-bit field, are the one copy: their values are narrowed exactly into 4- or 8-byte buffers the
 * export makes from the vector's allocator and frees in its release (a value that does not fit is a
 * {@link ValidationException}). A dense union's children follow the order its field lists them in (by type id). Rows a sparse {@code UnionVector} never set (type id 0, which Arrow Java reads as null) are exported with the id of the first child null at that row. What is exported is checked first (buffer sizes against lengths, first and
 * last offsets, child lengths, a vector's value count against the root's row count); a problem is a
 * {@link ValidationException} or {@link org.devicebridge.UnsupportedFeatureException} thrown before
 * anything is written, so after a throw the output struct is untouched and nothing is held.
 *
 * <p><b>Import.</b> Zero-copy import of validated arrays into Arrow Java ({@code arrow-vector}, an optional dependency).
 *
 * <p>Every Arrow buffer points at the producer's memory: all buffers of one import are slices of one
 * allocation made with {@link BufferAllocator#wrapForeignAllocation} (as the buffers of a vector Arrow Java
 * allocates itself share one), and the C struct is released exactly once, when the last of them is
 * released (closing the returned vectors and every vector the data was transferred to). The foreign bytes
 * are accounted to the allocator, as one allocation. The Arrow Java fields of a schema without
 * dictionaries are made once per thread and reused by the next import of that schema, or of an equal one.
 *
 * <p>Offsets: Arrow Java has no offset, so non-zero offsets (the array's own and those nested arrays
 * inherit from their parents) are applied here. Fixed-width, view, type-id and list-view buffers are
 * sliced without copying. Copied into {@code allocator} memory are: a validity or boolean bitmap whose first
 * element is not at a multiple of 8 bits (shifted into place), an offsets buffer whose first offset is not 0
 * (rebased to start at 0, while the data buffer is sliced), and decimal32/decimal64 values (widened). Arrow Java also
 * allocates validity buffers itself for nodes with no nulls or only nulls.
 *
 * <p>Where Arrow Java 19 holds a type its own way, the import holds it as Arrow Java's own readers (its IPC
 * reader, arrow-c-data) do, exactly: decimal32 and decimal64 keep their declared type over Arrow Java's 16-byte
 * {@code DecimalVector} (the values are widened into {@code allocator} memory); children of a struct that share
 * a name are all kept; a union directly under a fixed-size list is made whole (Arrow Java's own
 * {@code Field.createVector} cannot). The record batch's schema ({@link #importVectorSchemaRoot}) is the
 * imported schema exactly: names (non-canonical map and list child names included), metadata of every field
 * and of the schema, union type ids; the vectors' own {@code getField()} is Arrow Java's (canonical list and
 * map child names, unique names for union children that share one, minor-type numbers as sparse union ids).
 * The fields are plain Arrow Java {@link Field}s ({@code Schema.toJson()} is the source's). A field whose
 * {@code ARROW:extension:name} is registered in Arrow Java's {@code ExtensionTypeRegistry} comes back as that
 * extension type (and its vector as that extension's vector), as arrow-c-data gives it; an unregistered name keeps
 * the storage type and the metadata. Every buffer is readable to its length ({@code readableBytes()},
 * {@code nioBuffer()}), as Arrow Java's own import makes it.
 *
 * <p>What Arrow Java 19 cannot hold exactly raises {@link UnsupportedFeatureException} naming the field: a
 * sparse union its {@code UnionVector} would read from the wrong child (two children of one minor type, or a
 * struct, list or list-view child not named as its minor type; Arrow Java's own readers load those and then
 * read wrong values), run-end encoded arrays with a non-zero offset, a field whose registered extension type
 * refuses its storage type or metadata. The Arrow Java path needs host memory
 * validated at {@link ValidationLevel#DEFAULT} or {@link ValidationLevel#FULL}. Arrow Java trusts every offset,
 * union type id and offset, run end, dictionary index and view: for an array validated at DEFAULT the import
 * first runs those of FULL's checks (not UTF-8) once, and refuses malformed contents with a
 * {@link org.devicebridge.ValidationException} naming the field, the array released.
 */
public final class ArrowJava {
    private ArrowJava() {}

    // ------------------------------------------------------------------ schema

    /**
     * Exports {@code schema} as a struct-typed {@code ArrowSchema} (format {@code +s}, one child per
     * field, the schema's metadata) into {@code outSchema}, resolving dictionary-encoded fields through
     * {@code provider}. After a return the consumer owns the struct and must release it; after a throw
     * {@code outSchema} is untouched and the caller owns nothing new.
     *
     * @param schema the Arrow Java schema; only read
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outSchema where to write the {@code ArrowSchema}: native memory of at least its size, owned by the caller
     */
    public static void exportSchema(Schema schema, DictionaryProvider provider, MemorySegment outSchema) {
        ArrowJavaExport.schema(schema, provider, outSchema);
    }

    /**
     * Exports one field (its type, name, flags, metadata, children and dictionary) into
     * {@code outSchema}. After a return the consumer owns the struct; after a throw {@code outSchema} is
     * untouched and nothing is held.
     *
     * @param field the Arrow Java field; only read
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outSchema where to write the {@code ArrowSchema}: native memory of at least its size, owned by the caller
     */
    public static void exportField(Field field, DictionaryProvider provider, MemorySegment outSchema) {
        ArrowJavaExport.field(field, provider, outSchema);
    }

    // ------------------------------------------------------------------ arrays

    /**
     * Exports {@code vector} into {@code outArray} without copying its buffers, and its field into
     * {@code outSchema} unless that is {@code null}; dictionaries come from {@code provider}. After a return
     * the consumer owns both structs (and through the array a reference to each buffer) and must release
     * them; the caller still owns {@code vector} and may close it. After a throw both outputs are untouched
     * (a schema already written is released again) and nothing is held.
     *
     * @param vector the vector to export; the caller keeps owning it
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outArray where to write the {@code ArrowArray}: native memory of at least its size, owned by the caller
     * @param outSchema where to write the {@code ArrowSchema}: native memory of at least its size, owned by the
     *     caller; or {@code null} to export the array alone
     */
    public static void exportVector(FieldVector vector, DictionaryProvider provider, MemorySegment outArray,
                                    MemorySegment outSchema) {
        ArrowJavaExport.vector(vector, provider, outArray, outSchema);
    }

    /**
     * Exports the batch in {@code root} as a struct array (length = row count, one child per vector)
     * into {@code outArray}, and its schema into {@code outSchema} unless that is {@code null} (export
     * the schema once with {@link #exportSchema}, then batches alone); dictionaries come from
     * {@code provider}. After a return the consumer owns the structs; the caller still owns {@code root},
     * and may reload or close it. After a throw the outputs are untouched and nothing is held.
     *
     * @param root the batch; the caller keeps owning it
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outArray where to write the {@code ArrowArray}: native memory of at least its size, owned by the caller
     * @param outSchema where to write the {@code ArrowSchema}: native memory of at least its size, owned by the
     *     caller; or {@code null} to export the batch alone
     */
    public static void exportRoot(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment outArray,
                                  MemorySegment outSchema) {
        ArrowJavaExport.root(root, provider, outArray, outSchema);
    }

    /**
     * Describes the batch in {@code root} as {@link #exportRoot} would write it (a struct array of the
     * vectors, dictionaries from {@code provider}, the same checks and the same buffers the export makes:
     * zero-padded views, narrowed decimal32/decimal64, remapped union type ids), as an {@link ArrayData}
     * for {@link ArrowC#viewArray}, with no C struct in between. Borrows: each buffer is a read-only segment
     * of {@code arena} at the Arrow buffer's address, sized to its capacity (what may be read, not the exact
     * size, which {@code viewArray} derives); {@link MemorySegment#NULL} where a buffer is absent. Nothing is
     * copied but the buffers the export would make, and the sizes of view types' variadic buffers (in
     * {@code arena}).
     *
     * <p>Ownership: after a return {@code arena} holds a reference to every buffer described (one per
     * allocation) and the buffers made for the description, until it closes; the caller still owns
     * {@code root} and may reload or close it, and the description stays readable while {@code arena} is
     * open. After a throw no reference is held (what was allocated in {@code arena} is the arena's).
     *
     * @param root the batch; the caller keeps owning it
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param arena the scope of the description and of what it holds: closing it drops the references (a
     *     confined arena of this thread, or a shared one for a description read or closed elsewhere)
     * @return the description, readable while {@code arena} is open
     * @throws ValidationException if the root cannot be exported as it is (sizes, offsets, lengths), naming the field
     * @throws UnsupportedFeatureException if a vector has no C Data representation
     * @throws org.devicebridge.HandleClosedException if {@code arena} is closed
     * @throws org.devicebridge.InvalidArgumentException if {@code arena} is confined to another thread
     */
    public static ArrayData viewRoot(VectorSchemaRoot root, DictionaryProvider provider, Arena arena) {
        return ArrowJavaView.root(root, provider, arena);
    }

    // ------------------------------------------------------------------ device arrays (CPU)

    /**
     * Exports the batch in {@code root} as an {@code ArrowDeviceArray} with {@code device_type =
     * ARROW_DEVICE_CPU}, {@code device_id = -1} (the specification's convention for devices without an
     * id), {@code sync_event = NULL} and zeroed reserved fields. After a return the consumer owns the
     * struct and releases it through {@code array.release}; after a throw {@code outDeviceArray} is
     * untouched and nothing is held.
     *
     * @param root the batch; the caller keeps owning it
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outDeviceArray where to write the {@code ArrowDeviceArray}: native memory of at least its size,
     *     owned by the caller
     */
    public static void exportDeviceArray(VectorSchemaRoot root, DictionaryProvider provider,
                                         MemorySegment outDeviceArray) {
        ArrowJavaExport.deviceArray(root, provider, outDeviceArray);
    }

    // ------------------------------------------------------------------ streams

    /**
     * Exports {@code reader} as an {@code ArrowArrayStream}: {@code get_schema} exports the reader's
     * schema, {@code get_next} loads the next batch and exports it (a released array at the end), and an
     * exception from the reader becomes an errno from {@code get_next} with its message from
     * {@code get_last_error}. After a return the stream owns {@code reader} and closes it on release;
     * batches already exported stay valid after that. After a throw the caller still owns {@code reader}
     * and {@code outStream} is untouched.
     *
     * @param reader the batches; the stream owns it after a return
     * @param outStream where to write the stream struct: native memory of at least its size, owned by the caller
     */
    public static void exportStream(ArrowReader reader, MemorySegment outStream) {
        ArrowJavaExport.stream(reader, outStream);
    }

    /**
     * Exports the batches of {@code batches} (all of {@code schema}) as an {@code ArrowArrayStream}.
     * Each root the iterator returns is exported when the consumer asks for it; the roots stay owned by
     * whoever made them (they may be reused between batches, as an {@link ArrowReader} does), and an
     * exception from the iterator becomes the stream's error. After a return the stream owns the
     * iterator and closes it on release if it is {@link AutoCloseable}; after a throw the caller still
     * owns it.
     *
     * @param schema the Arrow Java schema; only read
     * @param batches the batches, in order; after a return the stream owns the iterator (not the roots)
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outStream where to write the stream struct: native memory of at least its size, owned by the caller
     */
    public static void exportStream(Schema schema, Iterator<? extends VectorSchemaRoot> batches,
                                    DictionaryProvider provider, MemorySegment outStream) {
        ArrowJavaExport.stream(schema, batches, provider, outStream);
    }

    /**
     * Exports {@code reader} as an {@code ArrowDeviceArrayStream} with {@code device_type =
     * ARROW_DEVICE_CPU}; each batch is a CPU {@code ArrowDeviceArray} as from {@link #exportDeviceArray}.
     * After a return the stream owns {@code reader} and closes it on release; after a throw the caller
     * still owns it and {@code outStream} is untouched.
     *
     * @param reader the batches; the stream owns it after a return
     * @param outStream where to write the stream struct: native memory of at least its size, owned by the caller
     */
    public static void exportDeviceStream(ArrowReader reader, MemorySegment outStream) {
        ArrowJavaExport.deviceStream(reader, outStream);
    }

    /**
     * {@link #exportStream(Schema, Iterator, DictionaryProvider, MemorySegment)} as an
     * {@code ArrowDeviceArrayStream} with {@code device_type = ARROW_DEVICE_CPU}. Ownership as there: after a
     * return the stream owns the iterator (not the roots); after a throw the caller still owns it.
     *
     * @param schema the Arrow Java schema; only read
     * @param batches the batches, in order; after a return the stream owns the iterator (not the roots)
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null} when there are none; only read
     * @param outStream where to write the stream struct: native memory of at least its size, owned by the caller
     */
    public static void exportDeviceStream(Schema schema, Iterator<? extends VectorSchemaRoot> batches,
                                          DictionaryProvider provider, MemorySegment outStream) {
        ArrowJavaExport.deviceStream(schema, batches, provider, outStream);
    }

    // ------------------------------------------------------------------ import

    /**
     * Imports a record batch from C structs into a new {@link VectorSchemaRoot} in one call, without copying
     * (see the class comment for the exceptions): moves and validates {@code arrowSchemaPtr} and
     * {@code arrowArrayPtr} (a struct array, validated at {@link ValidationLevel#DEFAULT} plus the index
     * checks Arrow Java relies on), then hands the array to Arrow Java, as Arrow Java's
     * {@code Data.importVectorSchemaRoot} does. Dictionaries of dictionary-encoded fields go into
     * {@code dictionaries}.
     *
     * <p>Ownership: after a return the caller owns the root (and the dictionaries added); the schema struct
     * was released, and the array struct is released when the last Arrow buffer is. After a throw both
     * structs have been released (a null allocator, or a struct that was NULL, already released or not native memory, is left
     * as it was), and nothing new is held.
     *
     * @param allocator allocates the Arrow Java buffers of the result; the caller keeps owning it
     * @param arrowArrayPtr the producer's {@code ArrowArray}; moved by this call
     * @param arrowSchemaPtr the producer's {@code ArrowSchema}; moved by this call
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @return the batch, owned by the caller
     * @throws ValidationException if a struct is malformed, naming the field
     * @throws UnsupportedFeatureException if Arrow Java cannot hold a type exactly
     */
    public static VectorSchemaRoot importVectorSchemaRoot(BufferAllocator allocator, MemorySegment arrowArrayPtr,
                                                          MemorySegment arrowSchemaPtr,
                                                          DictionaryProvider.MapDictionaryProvider dictionaries) {
        return ArrowJavaImport.importVectorSchemaRoot(allocator, arrowArrayPtr, arrowSchemaPtr, dictionaries);
    }

    /**
     * Imports one array from C structs into a new Arrow Java vector in one call, without copying: as
     * {@link #importVectorSchemaRoot(BufferAllocator, MemorySegment, MemorySegment,
     * DictionaryProvider.MapDictionaryProvider)}, for any type. Ownership as there: after a return the
     * caller owns the vector, the schema struct was released and the array struct is released with the last
     * Arrow buffer; after a throw both were released and nothing new is held.
     *
     * @param allocator allocates the Arrow Java buffers of the result; the caller keeps owning it
     * @param arrowArrayPtr the producer's {@code ArrowArray}; moved by this call
     * @param arrowSchemaPtr the producer's {@code ArrowSchema}; moved by this call
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @return the vector, owned by the caller
     * @throws ValidationException if a struct is malformed, naming the field
     * @throws UnsupportedFeatureException if Arrow Java cannot hold a type exactly
     */
    public static FieldVector importFieldVector(BufferAllocator allocator, MemorySegment arrowArrayPtr,
                                                MemorySegment arrowSchemaPtr,
                                                DictionaryProvider.MapDictionaryProvider dictionaries) {
        return ArrowJavaImport.importFieldVector(allocator, arrowArrayPtr, arrowSchemaPtr, dictionaries);
    }

    /**
     * Imports an array already imported with {@link ArrowC} (host memory, validated at DEFAULT or FULL)
     * into a new Arrow Java vector, without copying: for a caller that read the view first. Dictionaries of
     * dictionary-encoded fields are put into {@code dictionaries} (with fresh ids above the ones it holds);
     * the caller closes them.
     *
     * <p>Ownership: after a return the caller owns the vector (and the dictionaries it added), and
     * {@code array} is consumed: its struct is released when the last Arrow buffer is. After a throw
     * {@code array} has already been released (closed), whatever the exception, as after every import.
     *
     * @param allocator allocates the Arrow Java buffers of the result; the caller keeps owning it
     * @param array the imported array; consumed by this call
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @return the vector, owned by the caller
     * @throws UnsupportedFeatureException if Arrow Java cannot hold a type exactly, or if {@code array} is
     *         device memory or was validated below DEFAULT
     */
    public static FieldVector importFieldVector(BufferAllocator allocator, ImportedArray array,
                                                DictionaryProvider.MapDictionaryProvider dictionaries) {
        return ArrowJavaImport.importFieldVector(allocator, array, dictionaries);
    }

    /**
     * Imports an array already imported with {@link ArrowC} (a struct array: a record batch) into a new
     * {@link VectorSchemaRoot}, without copying; the struct's validity must have no nulls and its children
     * become the root's vectors. Ownership and exceptions as in
     * {@link #importFieldVector(BufferAllocator, ImportedArray, DictionaryProvider.MapDictionaryProvider)}:
     * after a return the caller owns the root; after a throw {@code array} has already been released.
     *
     * @param allocator allocates the Arrow Java buffers of the result; the caller keeps owning it
     * @param array the imported array; consumed by this call
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @return the batch, owned by the caller
     */
    public static VectorSchemaRoot importVectorSchemaRoot(BufferAllocator allocator, ImportedArray array,
                                                          DictionaryProvider.MapDictionaryProvider dictionaries) {
        return ArrowJavaImport.importVectorSchemaRoot(allocator, array, dictionaries);
    }

    /**
     * {@return the Arrow Java field for {@code schema}, exactly (names, metadata, type ids), for callers that
     * build vectors themselves} Dictionary ids are assigned from 0 in depth-first order.
     *
     * @param schema the imported field to convert; only read
     * @throws UnsupportedFeatureException if Arrow Java cannot represent a type of the tree exactly
     */
    public static Field toField(SchemaNode schema) {
        return ArrowJavaImport.toField(schema);
    }
}
