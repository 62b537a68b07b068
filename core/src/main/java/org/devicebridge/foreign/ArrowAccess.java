package org.devicebridge.foreign;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.ExportedArray;
import org.devicebridge.arrow.ExportedDeviceArray;
import org.devicebridge.arrow.ExportedDeviceStream;
import org.devicebridge.arrow.ExportedSchema;
import org.devicebridge.arrow.ExportedStream;
import org.devicebridge.arrow.HostCopies;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ValidationLevel;

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
     * Runs on {@code array} (host memory, validated at DEFAULT or FULL) the FULL content checks Arrow Java
     * relies on that its import level skipped: every offset, view and list-view bound, union type id and
     * offset, run end and dictionary index (not UTF-8). Nothing for an array validated at FULL.
     * The one call, at the start of the Arrow Java bridge's import, before it reads the view. {@code array}
     * stays a live handle owned by the caller, who releases it on a throw.
     *
     * @param array the imported array the bridge is about to read
     * @throws org.devicebridge.ValidationException with the category and field path of the first problem
     * @throws org.devicebridge.UnsupportedFeatureException if {@code array} is device memory or was validated
     *         below DEFAULT
     * @throws org.devicebridge.HandleClosedException if {@code array} is not live
     */
    void checkContentsArrowJavaTrusts(ImportedArray array);

    /**
     * A copy of the view under {@code root} whose buffers moved to the device: node {@code n}'s buffer
     * addresses are {@code addresses.get(n)} (nodes absent from the map keep theirs), lengths unchanged, and
     * its null count {@code nullCounts.get(n)} (nodes absent keep theirs); its buffers are not readable as
     * segments.
     */
    ArrayNode relocated(ArrayNode root, Map<ArrayNode, long[]> addresses, Map<ArrayNode, Long> nullCounts);

    /**
     * The view of the device array {@code array} (imported at any level) read again at {@code level}
     * through {@code copier}, as an import with that copier reads it: {@link DeviceCopier#prepare} first,
     * then host copies of what the level reads. The array keeps owning its struct; the view is valid while
     * it is live.
     *
     * @throws org.devicebridge.ValidationException if the contents are malformed
     * @throws org.devicebridge.HandleClosedException if {@code array} is not live
     */
    ArrayNode reread(ImportedArray array, ValidationLevel level, DeviceCopier copier);

    /**
     * The host array Arrow Java reads after a download: the view under {@code validatedRoot} (the root of a
     * device array's view whose every non-NULL buffer has a known length, validated at {@code level}) with
     * each buffer moved to its host copy, {@code copies.find(address, length)} for the very length the view
     * validated, so what the consumer reads is exactly what was validated (a copy that does not cover a
     * validated buffer, for example because the device memory changed between the validation that sized it
     * and the copy, is refused). Nothing is copied here. The returned array is host memory of device type
     * CPU, validated at {@code level}; it reads the copies while live. Their contents are checked again
     * here, where they lie (DEFAULT, or FULL if asked), since the device memory could have changed since
     * the view was validated; contents that imply more bytes than a buffer has are refused before any read.
     *
     * <p>Ownership: after a return the returned array owns {@code release} (the step that frees the
     * copies), which runs exactly once: when the array is closed or, after a hand-over to Arrow Java, when
     * the last Arrow buffer is released. After a throw the caller still owns the copies and {@code release}
     * has not run.
     *
     * @throws org.devicebridge.ValidationException {@code DEVICE} if no copy covers a buffer's validated bytes;
     *         {@code CONTENT} (or another category) if the copied contents fail the checks
     * @throws org.devicebridge.UnsupportedFeatureException if a non-NULL buffer's length is unknown
     * @throws IllegalArgumentException if {@code validatedRoot} is not the root of its view
     */
    ImportedArray hostView(ArrayNode validatedRoot, ValidationLevel level, HostCopies copies, Runnable release);

    /**
     * Makes {@code owner} the owner of the view under {@code root} (a view built for a device batch), unless
     * it has one: its host buffers are then handed out as segments of {@code owner}'s arena.
     */
    void bind(ArrayNode root, SegmentSource owner);

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
