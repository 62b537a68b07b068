package org.devicebridge.foreign;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.arrow.ExportedArray;

/**
 * What {@code org.devicebridge.arrow.java} lends {@code arrow.cuda} without making it public API. Implemented
 * in {@code arrow.java} and installed by its static initialiser; reached through {@link Access#arrowJava()}
 * only after {@link ArrowJavaCheck#requireArrowJava} passed (its signatures name Arrow Java's classes).
 */
public interface ArrowJavaAccess {

    /**
     * {@code ArrowExport.exportRoot(root, provider)}, but every null count that a validity bitmap holds is
     * written as -1 (unknown, as the C Data Interface allows) instead of being counted: for an upload that
     * counts them itself while the copy engine moves the buffers.
     *
     * @param root the batch; the caller keeps owning it
     * @param provider the dictionaries of dictionary-encoded fields, or {@code null}; only read
     * @return the owning handle of the exported {@code ArrowArray}
     */
    ExportedArray exportRootNullCountsUnknown(VectorSchemaRoot root, DictionaryProvider provider);
}
