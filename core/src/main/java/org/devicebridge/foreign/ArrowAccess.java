package org.devicebridge.foreign;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ExportedArray;
import org.devicebridge.arrow.ExportedDeviceArray;
import org.devicebridge.arrow.ExportedDeviceStream;
import org.devicebridge.arrow.ExportedSchema;
import org.devicebridge.arrow.ExportedStream;
import org.devicebridge.arrow.ImportedArray;

/**
 * What {@code org.devicebridge.arrow} lends its sibling packages ({@code arrow.java}, {@code arrow.cuda})
 * without making it public API: hand-overs of an imported array, node copies over other buffers, and the
 * construction of the export handles. Implemented in {@code org.devicebridge.arrow} and installed by its
 * static initialiser; reached through {@link Access#arrow()} (the JDK's "SharedSecrets" pattern).
 */
public interface ArrowAccess {

    /**
     * Moves ownership of {@code array}'s struct to the caller: the handle becomes CONSUMED (before anything
     * that can fail), and the returned step releases the struct; the caller runs it exactly once.
     *
     * @throws org.devicebridge.HandleClosedException if {@code array} is not live
     */
    Runnable transfer(ImportedArray array);

    /**
     * A copy of {@code node} (type, path, length, null count, offset) over other buffers, as device memory:
     * its buffers are not readable as segments. {@code addresses} and {@code lengths} have one entry per
     * buffer of {@code node}; {@code children} and {@code dictionary} are the copies of its own.
     */
    ArrayNode deviceCopy(ArrayNode node, long[] addresses, long[] lengths, List<ArrayNode> children,
                         ArrayNode dictionary);

    /** The owning handle of a library-allocated, filled {@code ArrowSchema}; it owns {@code struct} from now on. */
    ExportedSchema exportedSchema(MemorySegment struct);

    /** The owning handle of a library-allocated, filled {@code ArrowArray}; it owns {@code struct} from now on. */
    ExportedArray exportedArray(MemorySegment struct);

    /** The owning handle of a library-allocated, filled {@code ArrowDeviceArray}; it owns {@code struct} from now on. */
    ExportedDeviceArray exportedDeviceArray(MemorySegment struct);

    /** The owning handle of a library-allocated, filled {@code ArrowArrayStream}; it owns {@code struct} from now on. */
    ExportedStream exportedStream(MemorySegment struct);

    /**
     * The owning handle of a library-allocated, filled {@code ArrowDeviceArrayStream}; it owns {@code struct}
     * from now on.
     */
    ExportedDeviceStream exportedDeviceStream(MemorySegment struct);
}
