package org.devicebridge.arrow.java;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.arrow.ExportedArray;
import org.devicebridge.foreign.Access;
import org.devicebridge.foreign.ArrowJavaAccess;

/**
 * Lends this package's plumbing to {@code arrow.cuda} through {@link Access#arrowJava()} instead of public
 * methods: installed once, from this class's static initialiser.
 */
final class PackageAccess implements ArrowJavaAccess {
    static {
        Access.setArrowJava(new PackageAccess());
    }

    private PackageAccess() {}

    @Override
    public ExportedArray exportRootNullCountsUnknown(VectorSchemaRoot root, DictionaryProvider provider) {
        return ArrowExport.exportRootNullCountsUnknown(root, provider);
    }
}
